"""Repeat with seeds: one configuration queued once per seed, each a recorded run of its own, trained one after
another by the queue's runner; cancelling the seeds ends them, a failed seed does not; the seeds the history already
has are left out when asked."""

from __future__ import annotations

import threading

import pytest

from workbench.core.ground.config import TrainConfig
from workbench.core.ground.events import EpochEnd, RunFailed, RunFinished
from workbench.core.ground.results import RunResults
from workbench.core.history.queue import RunQueue
from workbench.core.history.runs import RunRecord, RunStore
from workbench.core.run import queue_worker
from workbench.core.run.seeds import (SeedRun, SeedsError, counted_seeds, parse_seeds, queue_seeds, runs_of,
                                      seed_run, seeds_done)

BASE = TrainConfig(hidden_dim=64, batch_size=250, epochs=2, seed=0)


def fake_start_run(db, outcomes: dict[int, list[float] | RunFailed], requests: list, held: int | None = None):
    """start_run without processes: the seed's run is recorded in the history (as a real run's is) and reports its
    accuracies epoch by epoch, until stopped; or fails, when its outcome is a RunFailed. The `held` seed waits after
    its first epoch until it is stopped (as a long run would still be training)."""

    def start_run(request, emit, stop, process=None):
        requests.append(request)
        with RunStore(db) as store:
            store.start_run(request.config.to_dict(), out_dir=request.out_dir)
        outcome = outcomes[request.config.seed]
        if isinstance(outcome, RunFailed):
            emit(outcome)
            return outcome
        for epoch, accuracy in enumerate(outcome, 1):
            emit(EpochEnd(epoch=epoch, train_loss=0.5, val_loss=0.5, val_accuracy=accuracy, seconds=1.0))
            if request.config.seed == held:
                assert stop.wait(60), "the held seed was never stopped"
            if stop.is_set():
                return RunFinished(steps=epoch, epochs=epoch, seconds=1.0, stopped=True)
        return RunFinished(steps=len(outcome), epochs=len(outcome), seconds=1.0, stopped=False,
                           results=RunResults(samples_per_s=1000.0 + request.config.seed))
    return start_run


def _work(db, tmp_path, monkeypatch, outcomes, requests, on_event=lambda event: None, held=None):
    """The queue's runner trains the queued seeds, with `fake_start_run`; how each seed's entry ended."""
    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path / "data"))  # the place locks
    monkeypatch.setattr(queue_worker, "start_run", fake_start_run(db, outcomes, requests, held))
    done = queue_worker.work(str(db), threading.Event(), cuda_devices=0, runs_dir=tmp_path / "runs",
                             say=lambda line: None, emit=on_event)
    return [seed_run(entry) for entry, _state in done.ended]


def test_each_seed_is_queued_as_the_same_settings_and_trains_as_a_run_of_its_own_in_order(tmp_path, monkeypatch):
    db, requests = tmp_path / "runs.sqlite", []
    ids = queue_seeds(BASE, [5, 1, 7], of="#3", db=db)
    with RunQueue(db) as queue:
        assert [queue.entry(i).label for i in ids] == ["seed 5 of #3", "seed 1 of #3", "seed 7 of #3"]
    runs = _work(db, tmp_path, monkeypatch, {5: [0.90, 0.92], 1: [0.91, 0.89], 7: [0.5, 0.6]}, requests)
    assert [r.config for r in requests] == [BASE.replace(seed=seed) for seed in (5, 1, 7)]  # only the seed differs
    assert len({r.out_dir for r in requests}) == 3 and all(r.out_dir.startswith(str(tmp_path / "runs"))
                                                           for r in requests)
    assert runs == [SeedRun(5, 1, "finished", 0.92, None), SeedRun(1, 2, "finished", 0.91, None),
                    SeedRun(7, 3, "finished", 0.6, None)]  # the best epoch's accuracy; the history's run ids


def test_cancelling_the_seeds_ends_the_running_one_after_its_step_and_runs_no_more(tmp_path, monkeypatch):
    db, requests = tmp_path / "runs.sqlite", []
    ids = queue_seeds(BASE, [0, 1, 2], of="#1", db=db)

    def cancel_at_seed_1(event):
        if isinstance(event, EpochEnd) and requests[-1].config.seed == 1:  # the second seed's first epoch
            with RunQueue(db) as queue:  # as the dialog's Stop does
                for entry_id in ids:
                    queue.cancel(entry_id)

    runs = _work(db, tmp_path, monkeypatch, dict.fromkeys(range(3), [0.8, 0.9, 0.95]), requests, cancel_at_seed_1,
                 held=1)
    assert [r.config.seed for r in requests] == [0, 1]  # seed 2 never started
    assert [(r.seed, r.status) for r in runs] == [(0, "finished"), (1, "stopped")]
    assert runs[1].note == "stopped before it ended" and runs[1].best_val_accuracy == 0.8


def test_a_failed_seed_is_said_and_the_next_seed_still_trains(tmp_path, monkeypatch):
    db, requests = tmp_path / "runs.sqlite", []
    diverged = RunFailed(kind="diverged", message="loss is nan")
    queue_seeds(BASE, [0, 1, 2], of="#1", db=db)
    runs = _work(db, tmp_path, monkeypatch, {0: [0.9], 1: diverged, 2: [0.93]}, requests)
    assert [(r.seed, r.status, r.note) for r in runs] == [(0, "finished", ""), (1, "failed", "loss is nan"),
                                                          (2, "finished", "")]
    assert runs[1].run_id == 2 and runs[1].best_val_accuracy is None


def _finished(store: RunStore, config: TrainConfig, status: str = "finished", best: float = 0.9) -> int:
    run_id = store.start_run(config.to_dict())
    store.append_events(run_id, 0, [], {"status": status, "best_val_accuracy": best})
    return run_id


def test_the_seeds_the_history_has_finished_are_left_out_only_when_asked(tmp_path):
    db = tmp_path / "runs.sqlite"
    with RunStore(db) as store:
        _finished(store, BASE.replace(seed=0))
        _finished(store, BASE.replace(seed=1), status="failed")  # no sample of seed 1: it runs again
        _finished(store, BASE.replace(seed=2, lr=0.01))  # other settings: not this configuration's seed 2
        _finished(store, BASE.replace(seed=3, profile_steps=10))  # profiling changes nothing that is trained
    with RunQueue(db) as queue:
        queued = lambda ids: [queue.entry(i).config.seed for i in ids]  # noqa: E731
        assert queued(queue_seeds(BASE, [0, 1, 2, 3, 4], of="#1", db=db, skip_done=True)) == [1, 2, 4]
        assert queued(queue_seeds(BASE, [0, 3], of="#1", db=db)) == [0, 3]
    with pytest.raises(SeedsError, match="the history has finished every one of these seeds"):
        queue_seeds(BASE, [0, 3], of="#1", db=db, skip_done=True)


def _record(run_id: int, config: dict, status: str = "finished") -> RunRecord:
    return RunRecord(id=run_id, created="", status=status, config=config, environment={}, steps=1,
                     best_val_accuracy=0.9, samples_per_s=1.0, compile_seconds=None, peak_memory_mib=None,
                     backend_used="eager", failure=None, out_dir=None, checkpoint=None)


def test_the_runs_of_a_configuration_differ_from_it_only_by_seed():
    seedless = {key: value for key, value in BASE.to_dict().items() if key != "seed"}  # a damaged row's config
    records = [_record(8, seedless), _record(4, BASE.replace(seed=2).to_dict()),
               _record(1, BASE.replace(seed=1).to_dict()),
               _record(2, BASE.replace(seed=1, amp="bf16").to_dict()),
               _record(3, BASE.replace(seed=1, resume="/runs/1/checkpoint.pt").to_dict()),  # a continuation
               _record(5, {}), _record(6, BASE.replace(seed=2).to_dict(), status="stopped"),
               _record(7, BASE.replace(seed=1).to_dict())]
    runs = runs_of(BASE, records)
    assert [r.id for r in runs] == [1, 4, 6, 7]  # oldest first; a row whose config is unreadable is none of them
    assert seeds_done(runs) == {1: 7, 2: 4}  # the newest finished run of each seed; a stopped one is no sample


@pytest.mark.parametrize("text, expected", [("0, 1, 2", (0, 1, 2)), ("7 3,,  9 ", (7, 3, 9)), ("42", (42,))])
def test_seeds_are_read_as_written(text, expected):
    assert parse_seeds(text) == expected


@pytest.mark.parametrize("text, message", [
    ("", "no seeds to run"), ("0, x", "'x' is not a seed"), ("1.5", "'1.5' is not a seed"),
    ("-1", "'-1' is not a seed"), ("²", "'²' is not a seed"), ("4294967296", "4294967296 is not a seed"),
    ("1, 2, 1", "seed 1 is given twice")])
def test_seeds_that_cannot_be_are_refused_with_what_to_write(text, message):
    with pytest.raises(SeedsError, match=message) as refused:
        parse_seeds(text)
    assert refused.value.hint


def test_a_number_of_seeds_counts_from_the_runs_own():
    assert counted_seeds(7, 3) == (7, 8, 9)
    with pytest.raises(SeedsError, match="no seeds to run"):
        counted_seeds(0, 0)


def test_seeds_that_cannot_run_are_refused_before_anything_is_queued(tmp_path):
    db = tmp_path / "runs.sqlite"
    with pytest.raises(SeedsError, match="continue another run"):
        queue_seeds(BASE.replace(resume="/runs/1/checkpoint.pt"), [0, 1], of="#1", db=db)
    with pytest.raises(SeedsError, match="seed 0 is given twice"):
        queue_seeds(BASE, [0, 0], of="#1", db=db)
    with RunQueue(db) as queue:
        assert queue.entries() == []
