"""Repeat with seeds: one configuration trained once per seed, each a recorded run of its own, one after another;
a stop ends the queue, a failed seed does not; the seeds the history already has are left out when asked."""

from __future__ import annotations

import threading

import pytest

from workbench.core.ground.config import ConfigError, TrainConfig
from workbench.core.ground.events import EpochEnd, RunFailed, RunFinished
from workbench.core.ground.results import RunResults
from workbench.core.history.runs import RunRecord, RunStore
from workbench.core.run import seeds
from workbench.core.run.seeds import (SeedProgress, SeedRun, SeedsError, counted_seeds, parse_seeds, run_seeds,
                                      runs_of, seeds_done)

BASE = TrainConfig(hidden_dim=64, batch_size=250, epochs=2, seed=0)


def fake_start_run(db, outcomes: dict[int, list[float] | RunFailed], requests: list):
    """start_run without processes: the seed's run is recorded in the history (as a real run's is) and reports its
    accuracies epoch by epoch, until stopped; or fails, when its outcome is a RunFailed."""

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
            if stop.is_set():
                return RunFinished(steps=epoch, epochs=epoch, seconds=1.0, stopped=True)
        return RunFinished(steps=len(outcome), epochs=len(outcome), seconds=1.0, stopped=False,
                           results=RunResults(samples_per_s=1000.0 + request.config.seed))
    return start_run


def test_each_seed_trains_the_same_settings_as_a_run_of_its_own_in_order(tmp_path, monkeypatch):
    db, requests, heard, progress = tmp_path / "runs.sqlite", [], [], []
    monkeypatch.setattr(seeds, "start_run", fake_start_run(db, {5: [0.90, 0.92], 1: [0.91, 0.89], 7: [0.5, 0.6]},
                                                           requests))
    runs = run_seeds(BASE, [5, 1, 7], cuda_devices=0, db=db, runs_dir=tmp_path / "runs",
                     on_event=lambda seed, event: heard.append((seed, event.epoch)), on_progress=progress.append)
    assert [r.config for r in requests] == [BASE.replace(seed=seed) for seed in (5, 1, 7)]  # only the seed differs
    assert len({r.out_dir for r in requests}) == 3 and all(r.out_dir.startswith(str(tmp_path / "runs"))
                                                           for r in requests)
    assert runs == [SeedRun(5, 1, "finished", 0.92, 1005.0), SeedRun(1, 2, "finished", 0.91, 1001.0),
                    SeedRun(7, 3, "finished", 0.6, 1007.0)]  # the best epoch's accuracy; the history's run ids
    assert heard == [(5, 1), (5, 2), (1, 1), (1, 2), (7, 1), (7, 2)]
    assert [(p.done, p.total, p.last) for p in progress] == [(0, 3, None), *((i + 1, 3, runs[i]) for i in range(3))]
    assert progress[0].eta_seconds is None and progress[-1].eta_seconds == 0
    assert SeedProgress.from_dict(progress[1].to_dict()) == progress[1]  # plain data, for the window's thread


def test_the_eta_is_the_runs_left_times_the_mean_run_so_far(tmp_path, monkeypatch):
    clock = iter([0.0, 10.0, 10.0, 30.0, 30.0, 60.0])  # runs of 10, 20 and 30 seconds
    monkeypatch.setattr(seeds, "monotonic", lambda: next(clock))
    monkeypatch.setattr(seeds, "start_run", fake_start_run(tmp_path / "runs.sqlite", dict.fromkeys(range(3), [0.9]),
                                                           []))
    progress = []
    run_seeds(BASE, [0, 1, 2], cuda_devices=0, db=tmp_path / "runs.sqlite", runs_dir=tmp_path / "runs",
              on_progress=progress.append)
    assert [p.eta_seconds for p in progress] == [None, 2 * 10.0, 1 * 15.0, 0.0]


def test_a_stop_ends_the_running_seed_after_its_step_and_runs_no_more(tmp_path, monkeypatch):
    db, requests, stop = tmp_path / "runs.sqlite", [], threading.Event()
    monkeypatch.setattr(seeds, "start_run", fake_start_run(db, dict.fromkeys(range(3), [0.8, 0.9, 0.95]), requests))

    def on_event(seed, event):
        if seed == 1:  # during the second seed's first epoch
            stop.set()

    runs = run_seeds(BASE, [0, 1, 2], cuda_devices=0, db=db, runs_dir=tmp_path / "runs", on_event=on_event,
                     stop=stop)
    assert [r.config.seed for r in requests] == [0, 1]  # seed 2 never started
    assert [(r.seed, r.status) for r in runs] == [(0, "finished"), (1, "stopped")]
    assert runs[1].note == "stopped before it ended" and runs[1].best_val_accuracy == 0.8
    assert runs[1].samples_per_s is None  # a stopped run measured no steady rate here
    assert run_seeds(BASE, [3], cuda_devices=0, db=db, stop=stop) == []  # stopped before it began: nothing runs


def test_a_failed_seed_is_said_and_the_next_seed_still_trains(tmp_path, monkeypatch):
    db, requests = tmp_path / "runs.sqlite", []
    diverged = RunFailed(kind="diverged", message="loss is nan")
    monkeypatch.setattr(seeds, "start_run", fake_start_run(db, {0: [0.9], 1: diverged, 2: [0.93]}, requests))
    runs = run_seeds(BASE, [0, 1, 2], cuda_devices=0, db=db, runs_dir=tmp_path / "runs")
    assert [(r.seed, r.status, r.note) for r in runs] == [(0, "finished", ""), (1, "failed", "diverged: loss is nan"),
                                                          (2, "finished", "")]
    assert runs[1].run_id == 2 and runs[1].best_val_accuracy is None and runs[1].samples_per_s is None


def _finished(store: RunStore, config: TrainConfig, status: str = "finished", best: float = 0.9) -> int:
    run_id = store.start_run(config.to_dict())
    store.append_events(run_id, 0, [], {"status": status, "best_val_accuracy": best})
    return run_id


def test_the_seeds_the_history_has_finished_are_left_out_only_when_asked(tmp_path, monkeypatch):
    db, requests = tmp_path / "runs.sqlite", []
    with RunStore(db) as store:
        _finished(store, BASE.replace(seed=0))
        _finished(store, BASE.replace(seed=1), status="failed")  # no sample of seed 1: it runs again
        _finished(store, BASE.replace(seed=2, lr=0.01))  # other settings: not this configuration's seed 2
        _finished(store, BASE.replace(seed=3, profile_steps=10))  # profiling changes nothing that is trained
    monkeypatch.setattr(seeds, "start_run", fake_start_run(db, dict.fromkeys(range(5), [0.9]), requests))
    progress = []
    runs = run_seeds(BASE, [0, 1, 2, 3, 4], cuda_devices=0, db=db, runs_dir=tmp_path / "runs", skip_done=True,
                     on_progress=progress.append)
    assert [r.seed for r in runs] == [1, 2, 4] and progress[0].total == 3
    requests.clear()
    assert [r.seed for r in run_seeds(BASE, [0, 3], cuda_devices=0, db=db, runs_dir=tmp_path / "runs")] == [0, 3]


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


def test_settings_that_cannot_run_are_refused_before_anything_starts(tmp_path, monkeypatch):
    requests = []
    monkeypatch.setattr(seeds, "start_run", fake_start_run(tmp_path / "runs.sqlite", {}, requests))
    with pytest.raises(SeedsError, match="continue another run"):
        run_seeds(BASE.replace(resume="/runs/1/checkpoint.pt"), [0, 1], cuda_devices=0, db=tmp_path / "runs.sqlite")
    with pytest.raises(ConfigError, match="CUDA graphs"):  # this machine has no CUDA
        run_seeds(BASE.replace(backend="inductor", mode="reduce-overhead"), [0, 1], cuda_devices=0,
                  db=tmp_path / "runs.sqlite", runs_dir=tmp_path / "runs")
    with pytest.raises(SeedsError, match="seed 0 is given twice"):
        run_seeds(BASE, [0, 0], cuda_devices=0, db=tmp_path / "runs.sqlite")
    assert requests == [] and not (tmp_path / "runs").exists()  # no run, and no empty folder for one
