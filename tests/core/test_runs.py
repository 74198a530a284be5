"""The run database: round-trip, batching, crash recovery, concurrent readers, and clear errors."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import threading

import pytest

from workbench.core import runs
from workbench.core.config import TrainConfig
from workbench.core.events import EpochEnd, Notice, RunFailed, RunFinished, RunStarted, Step
from workbench.core.runfiles import run_recorded
from workbench.core.runs import RunRecorder, RunStore, RunStoreError

SMALL = TrainConfig(epochs=1, max_steps=30, hidden_dim=16)


def _started(config: TrainConfig = SMALL) -> RunStarted:
    return RunStarted(config=config.to_dict(), device="cpu", device_name="CPU", versions={"torch": "x"},
                      train_size=4000, val_size=1000, steps_per_epoch=125, total_steps=30)


def _step(i: int) -> Step:
    return Step(step=i, epoch=1, loss=1.0 / i, samples_per_s=1000.0, step_seconds=0.01, memory={"rss": 10.0})


def test_a_real_run_round_trips(tmp_path):
    db = tmp_path / "runs.sqlite"
    events = []
    result = run_recorded(SMALL, tmp_path / "out", sinks=(events.append,), db=db)
    assert isinstance(result, RunFinished)
    store = RunStore(db)
    [record] = store.list()
    assert record.status == "finished" and record.steps == 30
    assert record.config == SMALL.to_dict()
    assert record.environment["device"] == "cpu" and "torch" in record.environment
    assert record.best_val_accuracy == pytest.approx(result.metrics["best_val_accuracy"])
    assert record.checkpoint == str(tmp_path / "out" / "checkpoint.pt")
    assert store.get(record.id, with_events=True).events == events  # the whole stream, in order, equal


def test_events_are_committed_in_batches_not_one_by_one(tmp_path):
    store = RunStore(tmp_path / "runs.sqlite")
    recorder = RunRecorder(store, interval=3600)
    recorder(_started())
    for i in range(1, 101):
        recorder(_step(i))
    reader = RunStore(tmp_path / "runs.sqlite")
    record = reader.get(recorder.run_id, with_events=True)
    assert record.status == "running" and record.events == []  # nothing committed yet: one batch pending
    recorder(RunFinished(steps=100, epochs=1, seconds=1.0, stopped=False, metrics={"best_val_accuracy": 0.5}))
    record = reader.get(recorder.run_id, with_events=True)
    assert record.status == "finished" and len(record.events) == 102 and record.best_val_accuracy == 0.5


def test_best_accuracy_only_grows_across_batches(tmp_path):
    store = RunStore(tmp_path / "runs.sqlite")
    recorder = RunRecorder(store, interval=0)  # commit every event
    recorder(_started())
    for epoch, accuracy in enumerate((0.8, 0.9, 0.85), 1):
        recorder(EpochEnd(epoch=epoch, train_loss=1.0, val_loss=1.0, val_accuracy=accuracy, seconds=1.0))
    assert store.get(recorder.run_id).best_val_accuracy == 0.9


def test_failed_and_stopped_runs_keep_their_status(tmp_path):
    db = tmp_path / "runs.sqlite"
    assert isinstance(run_recorded(SMALL.replace(lr=10.0), tmp_path / "a", db=db), RunFailed)
    stop = threading.Event()
    stop.set()
    assert run_recorded(SMALL, tmp_path / "b", stop=stop, db=db).stopped
    failed, stopped = RunStore(db).list()
    assert failed.status == "failed" and failed.failure["kind"] == "diverged"
    assert stopped.status == "stopped"


KILLED_WRITER = """
import sys, time
from workbench.core.runs import RunRecorder, RunStore
from workbench.core.events import RunStarted, Step
store = RunStore(sys.argv[1])
recorder = RunRecorder(store, interval=0)
recorder(RunStarted(config={"dataset": "mnist-sample", "backend": "eager", "mode": "default", "amp": "off",
                            "epochs": 1}, device="cpu", device_name="CPU", versions={}, train_size=1, val_size=1,
                    steps_per_epoch=1, total_steps=10**9))
step = 0
while True:
    step += 1
    recorder(Step(step=step, epoch=1, loss=1.0, samples_per_s=1.0, step_seconds=0.0, memory={}))
    if step == 50:
        print("running", flush=True)
"""


def test_a_run_killed_with_sigkill_leaves_a_readable_database_and_is_marked_interrupted(tmp_path):
    db = tmp_path / "runs.sqlite"
    proc = subprocess.Popen([sys.executable, "-c", KILLED_WRITER, str(db)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "running"
    os.kill(proc.pid, signal.SIGKILL)  # mid-way: no chance to clean up
    proc.wait(timeout=30)
    store = RunStore(db)  # opening recovers: the writer's process is gone
    [record] = store.list()
    assert record.status == "interrupted"
    events = store.get(record.id, with_events=True).events
    assert len(events) >= 50 and [e.step for e in events[1:]] == list(range(1, len(events)))
    assert sqlite3.connect(db).execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_a_reader_sees_consistent_data_while_a_writer_commits(tmp_path):
    db = tmp_path / "runs.sqlite"
    writer_store = RunStore(db)
    recorder = RunRecorder(writer_store, interval=0)
    recorder(_started())
    done = threading.Event()
    saw_the_middle = threading.Event()  # the reader read while the run was half written
    problems = []

    def read_continuously():
        reader = RunStore(db, recover=False)
        while not done.is_set():
            try:
                record = reader.get(recorder.run_id, with_events=True)
                steps = [e.step for e in record.events[1:]]
                if steps != list(range(1, len(steps) + 1)):
                    problems.append(f"torn read: {steps[-3:]}")
                if 150 <= len(steps) < 300:
                    saw_the_middle.set()
            except RunStoreError as exc:
                problems.append(str(exc))

    thread = threading.Thread(target=read_continuously)
    thread.start()
    for i in range(1, 301):
        recorder(_step(i))
        if i == 150:
            assert saw_the_middle.wait(timeout=30), "the reader never read during the writes"
    done.set()
    thread.join(timeout=30)
    assert problems == []
    assert len(RunStore(db).get(recorder.run_id, with_events=True).events) == 301


def test_locked_database_gives_a_clear_error(tmp_path, monkeypatch):
    db = tmp_path / "runs.sqlite"
    RunStore(db).close()
    monkeypatch.setattr(runs, "BUSY_TIMEOUT_S", 0.1)
    blocker = sqlite3.connect(db, isolation_level=None)
    blocker.execute("BEGIN EXCLUSIVE")
    try:
        store = RunStore(db, recover=False)
        with pytest.raises(RunStoreError, match="locked by another process"):
            store.start_run(SMALL.to_dict())
    finally:
        blocker.execute("ROLLBACK")


def test_read_only_database_gives_a_clear_error(tmp_path, monkeypatch):
    db = tmp_path / "runs.sqlite"
    RunStore(db).close()
    real_connect = sqlite3.connect
    monkeypatch.setattr(runs.sqlite3, "connect",
                        lambda path, **kw: real_connect(f"file:{path}?mode=ro", uri=True, **kw))
    store = RunStore(db, recover=False)
    with pytest.raises(RunStoreError, match="read-only"):
        store.start_run(SMALL.to_dict())


def test_corrupt_database_gives_a_clear_error(tmp_path):
    db = tmp_path / "runs.sqlite"
    db.write_bytes(b"this is not a database" * 100)
    with pytest.raises(RunStoreError, match="damaged"):
        RunStore(db)


def test_a_database_problem_never_fails_the_run(tmp_path, monkeypatch):
    db = tmp_path / "runs.sqlite"
    db.write_bytes(b"garbage" * 100)
    events = []
    result = run_recorded(SMALL, tmp_path / "out", sinks=(events.append,), db=db)
    assert isinstance(result, RunFinished)
    notices = [e for e in events if isinstance(e, Notice)]
    assert notices and "not recorded in the run history" in notices[0].message
    assert (tmp_path / "out" / "checkpoint.pt").is_file()


def test_unknown_id_and_delete(tmp_path):
    db = tmp_path / "runs.sqlite"
    run_recorded(SMALL, tmp_path / "out", db=db)
    store = RunStore(db)
    [record] = store.list()
    with pytest.raises(RunStoreError, match=f"no run with id {record.id + 7}"):
        store.get(record.id + 7)
    store.delete(record.id)
    assert store.list() == []
    assert store.db.execute("SELECT COUNT(*) FROM events").fetchone()[0] == 0


def test_newer_schema_is_refused(tmp_path):
    db = tmp_path / "runs.sqlite"
    RunStore(db).close()
    sqlite3.connect(db).execute(f"PRAGMA user_version={runs.SCHEMA_VERSION + 1}")
    with pytest.raises(RunStoreError, match="newer Workbench"):
        RunStore(db)
