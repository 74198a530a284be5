"""A sweep through the queue (run/sweep.py queue_sweep, run/queue_worker.py): its trials are queue entries whose
settings the study chooses as each starts, worked by the same runner as any entry, with the study kept whole: trial
0 the base settings, the pruner stopping a trial below the median, each trial pointing at its run."""

from __future__ import annotations

import threading

import pytest

from workbench.cli import main
from workbench.core.ground.config import TrainConfig
from workbench.core.history.queue import FINISHED, QUEUED, RunQueue
from workbench.core.history.runs import RunStore
from workbench.core.run import queue_worker
from workbench.core.run.sweep import SweepError, SweepSettings, load_trials, queue_sweep

from ..support.fake_sweep import fake_start_run

BASE = TrainConfig(hidden_dim=64, batch_size=250)


def test_a_queued_sweep_asks_each_trial_of_its_study_as_it_starts_and_prunes_through_the_queue(tmp_path,
                                                                                                   monkeypatch):
    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path / "data"))  # the place locks
    db = str(tmp_path / "runs.sqlite")
    stops: list[bool] = []
    good = [0.90, 0.92, 0.93, 0.94]
    monkeypatch.setattr(queue_worker, "start_run", fake_start_run([good, good, good, [0.5, 0.6, 0.7, 0.8]], stops))
    ids = queue_sweep(BASE, SweepSettings("q", ("lr",), "random", trials=4), epochs=4, db=db)
    with RunQueue(db) as queue:
        assert [queue.entry(i).state for i in ids] == [QUEUED] * 4
        assert queue.entry(ids[0]).title == "sweep q · trial"  # its settings are the study's to choose, later
    done = queue_worker.work(db, threading.Event(), cuda_devices=0, say=lambda line: None)
    assert [state for _entry, state in done.ended] == [FINISHED] * 4
    trials = load_trials("q", db)
    assert [t.state for t in trials] == ["complete"] * 3 + ["pruned"] and stops == [True]
    assert trials[0].params == {"lr": BASE.lr}  # trial 0: the base settings, as a sweep's own loop has it
    assert len({t.params["lr"] for t in trials}) == 4  # each trial its own point (the study is loaded anew for each)
    with RunQueue(db) as queue:
        entries = [queue.entry(i) for i in ids]
    assert [e.label for e in entries] == [f"sweep q · trial {n}" for n in range(4)]
    assert [e.config.lr for e in entries] == [t.params["lr"] for t in trials]  # what each entry trained
    assert entries[3].error == "pruned after epoch 2: below the median" and entries[3].best_val_accuracy == 0.6
    assert all(e.config.epochs == 4 and e.config.hidden_dim == 64 for e in entries)


def test_queueing_a_sweep_again_adds_only_the_trials_it_still_needs(tmp_path):
    db = str(tmp_path / "runs.sqlite")
    settings = SweepSettings("again", ("lr", "hidden_dim"), "tpe", trials=3)
    assert len(queue_sweep(BASE, settings, epochs=1, db=db)) == 3
    with pytest.raises(SweepError, match="has its 3 trials finished or queued already"):
        queue_sweep(BASE, settings, epochs=1, db=db)
    more = queue_sweep(TrainConfig(), SweepSettings("again", ("batch_size",), "grid", trials=5), epochs=9, db=db)
    with RunQueue(db) as queue:
        added = [queue.entry(i) for i in more]
    # Resumed by name: two more trials, of the settings and epochs it was made with.
    assert len(added) == 2 and all(e.config.hidden_dim == 64 and e.config.epochs == 1 for e in added)


def test_a_trial_of_a_deleted_sweep_fails_alone_and_the_queue_goes_on(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path / "data"))
    db = str(tmp_path / "runs.sqlite")
    monkeypatch.setattr(queue_worker, "start_run", fake_start_run([[0.9]], []))
    with RunQueue(db) as queue:
        orphan = queue.add(BASE, sweep="gone", label="sweep gone · trial")
        plain = queue.add(BASE.replace(epochs=1))
    done = queue_worker.work(db, threading.Event(), cuda_devices=0, say=lambda line: None)
    assert [(e.id, state) for e, state in done.ended] == [(orphan, "failed"), (plain, FINISHED)]
    assert done.ended[0][0].error == "no sweep named 'gone'"


@pytest.mark.slow  # real runs
def test_a_sweep_queued_from_the_command_line_trains_real_runs_with_its_study_intact(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path / "data"))
    db = str(tmp_path / "runs.sqlite")
    tiny = ["--device", "cpu", "--epochs", "1", "--max-steps", "20", "--hidden-dim", "16", "--db", db]
    assert main(["sweep", "cli", "--queue", "--search", "lr", "--sampler", "random", "--trials", "2", *tiny]) == 0
    assert "queued 2 trial(s) of sweep cli on this computer" in capsys.readouterr().out
    assert main(["queue", "--db", db, "work"]) == 0
    assert "the queue is done: 2 finished" in capsys.readouterr().out
    trials = load_trials("cli", db)
    with RunQueue(db) as queue, RunStore(db) as store:
        entries = queue.entries()
        assert [t.state for t in trials] == ["complete", "complete"]
        assert [e.run_id for e in entries] == [t.run_id for t in trials]  # each trial points at its run
        for trial in trials:
            record = store.get(trial.run_id)
            assert record.status == "finished" and record.config["lr"] == trial.params["lr"]
            assert trial.val_accuracy == record.best_val_accuracy
    assert main(["sweep", "cli", "--show", "--db", db]) == 0
    assert "best: trial" in capsys.readouterr().out
