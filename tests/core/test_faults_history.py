"""Passing run-database problems (a write lock held by another process, a full disk) and a reused output folder:
the run's record catches up and ends as the run did; the folder never mixes two runs' files."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from workbench.core.ground.events import MemorySample, Notice, RunFailed, RunFinished, RunStarted, Step
from workbench.core.ground.results import RunResults
from workbench.core.history import recording, runs
from workbench.core.history.recording import RunRecorder
from workbench.core.history.runs import RunStore
from workbench.core.kernel.run_files import run_recorded
from workbench.core.run.run_request import RunRequest

from ..helpers import SMALL, VERSIONS

CHECKPOINT = "/runs/out/checkpoint.pt"


@pytest.fixture(autouse=True)
def fast(monkeypatch):
    monkeypatch.setattr(runs, "BUSY_TIMEOUT_S", 0.05)
    monkeypatch.setattr(recording, "MAX_RETRY_DELAY_S", 0.05)
    monkeypatch.setattr(recording, "FINAL_RETRY_S", 20.0)  # bounded: a test that hangs fails in 20 s, not forever


class Lock:
    """An exclusive write lock on the database from a second connection, as another process would hold it."""

    def __init__(self, db: Path):
        self.conn = sqlite3.connect(db, isolation_level=None, check_same_thread=False)
        self.held = False

    def take(self) -> None:
        self.conn.execute("BEGIN EXCLUSIVE")
        self.held = True

    def release(self) -> None:
        if self.held:
            self.held = False
            self.conn.execute("ROLLBACK")


def _started() -> RunStarted:
    return RunStarted(config=SMALL, device="cpu", device_name="CPU", versions=VERSIONS,
                      train_size=4000, val_size=1000, steps_per_epoch=125, total_steps=SMALL.max_steps)


def _step(i: int) -> Step:
    return Step(step=i, epoch=1, loss=1.0 / i, samples_per_s=1000.0, step_seconds=0.01, memory=MemorySample(rss=10.0))


def _finished(steps: int) -> RunFinished:
    return RunFinished(steps=steps, epochs=1, seconds=1.0, stopped=False,
                       results=RunResults(best_val_accuracy=0.5, checkpoint=CHECKPOINT))


def _drive(recorder: RunRecorder, steps: int, at: dict) -> list:
    """RunStarted, `steps` Steps and RunFinished into `recorder`; `at[k]()` runs before event k (0 = RunStarted)."""
    events = [_started(), *(_step(i) for i in range(1, steps + 1)), _finished(steps)]
    for k, event in enumerate(events):
        if k in at:
            at[k]()
        recorder(event)
    return events


def _history(tmp_path: Path) -> tuple[Path, "Lock", list, list]:
    """An empty run database, a lock on it (not taken yet), and the lists the recorder's notices and errors go to."""
    db = tmp_path / "runs.sqlite"
    RunStore(db).close()
    return db, Lock(db), [], []


def _recorder(db: Path, notices: list, errors: list) -> RunRecorder:
    return RunRecorder(RunStore(db), interval=0, on_notice=notices.append, on_error=errors.append)


def test_a_lock_held_mid_run_delays_the_record_but_loses_nothing(tmp_path):
    db, lock, notices, errors = _history(tmp_path)
    recorder = _recorder(db, notices, errors)
    events = _drive(recorder, 60, {10: lock.take, 40: lock.release})
    record = RunStore(db).get(recorder.run_id, with_events=True)
    assert record.events == events
    assert record.status == "finished" and record.steps == 60 and record.checkpoint == CHECKPOINT
    assert errors == []
    assert [n.level for n in notices] == ["warning", "info"]  # once behind, once caught up: not one per commit
    assert "falling behind" in notices[0].message and "locked" in notices[0].message
    assert "caught up" in notices[1].message


class Clock:
    """The recorder's monotonic clock, moved on only by the test (time.sleep, used at a run's end, moves it too)."""

    def __init__(self):
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds

    def advance(self, seconds: float) -> None:
        self.now += seconds


def test_a_lock_released_mid_run_is_caught_up_while_the_run_goes_on_not_only_at_its_end(tmp_path, monkeypatch):
    clock = Clock()
    monkeypatch.setattr(recording, "time", clock)  # no race with the retry delay: time passes only when told
    db, lock, notices, errors = _history(tmp_path)
    recorder = _recorder(db, notices, errors)
    seen = {}

    def look():  # from another connection, as the window reads a run as it trains
        with RunStore(db, recover=False) as reader:
            record = reader.get(recorder.run_id, with_events=True)
        seen.update(status=record.status, events=record.events, steps=record.steps, levels=[n.level for n in notices])

    def release_and_wait():
        lock.release()
        clock.advance(10.0)  # past any retry delay

    try:
        events = _drive(recorder, 60, {10: lock.take, 40: release_and_wait, 50: look})
    finally:
        lock.release()
    # Before event 50, with the run still going, every earlier event is in the database: written at event 40.
    assert seen["status"] == "running" and seen["events"] == events[:50] and seen["steps"] == 49
    assert seen["levels"] == ["warning", "info"]  # fell behind at event 10, caught up at event 40
    record = RunStore(db).get(recorder.run_id, with_events=True)
    assert record.events == events and record.status == "finished" and errors == []


def test_a_lock_held_at_the_end_is_waited_out_so_the_run_ends_as_it_did(tmp_path):
    db, lock, notices, errors = _history(tmp_path)
    recorder = _recorder(db, notices, errors)
    timer = threading.Timer(0.3, lock.release)

    def lock_for_a_while():
        lock.take()
        timer.start()

    try:
        events = _drive(recorder, 20, {21: lock_for_a_while})  # taken just before RunFinished
    finally:
        timer.join(timeout=20)
        lock.release()
    record = RunStore(db).get(recorder.run_id, with_events=True)
    assert record.events == events and record.status == "finished" and record.checkpoint == CHECKPOINT
    assert errors == [] and not recorder.failed


def test_a_lock_held_at_the_start_still_records_the_run(tmp_path):
    db, lock, notices, errors = _history(tmp_path)
    lock.take()
    recorder = _recorder(db, notices, errors)
    events = _drive(recorder, 30, {15: lock.release})
    [record] = RunStore(db).list()
    assert RunStore(db).get(record.id, with_events=True).events == events
    assert record.status == "finished" and record.checkpoint == CHECKPOINT
    assert errors == [] and [n.level for n in notices] == ["warning", "info"]


def test_a_lock_held_through_the_whole_run_and_past_its_end_is_one_clear_error(tmp_path, monkeypatch):
    monkeypatch.setattr(recording, "FINAL_RETRY_S", 0.3)
    db, lock, notices, errors = _history(tmp_path)
    lock.take()
    try:
        _drive(_recorder(db, notices, errors), 10, {})
    finally:
        lock.release()
    assert [n.level for n in notices] == ["warning"]
    assert len(errors) == 1 and "locked" in str(errors[0])  # the run could not be recorded: said once
    assert RunStore(db).list() == []


def test_a_full_disk_mid_run_is_caught_up_when_space_returns(tmp_path):
    db = tmp_path / "runs.sqlite"
    notices, errors = [], []
    recorder = _recorder(db, notices, errors)
    conn = recorder.store.db

    def fill():
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        conn.execute(f"PRAGMA max_page_count = {pages}")  # not one page more

    big = Notice("info", "x" * 5000)  # a few of these need new pages
    events = [_started(), *(_step(i) for i in range(1, 6))]
    for event in events:
        recorder(event)
    fill()
    for _ in range(5):
        recorder(big)
        events.append(big)
    assert recorder.behind is not None and recorder.behind.transient
    conn.execute("PRAGMA max_page_count = 1073741823")  # space again
    events.append(_finished(5))
    recorder(events[-1])
    record = RunStore(db).get(recorder.run_id, with_events=True)
    assert record.events == events and record.status == "finished" and record.checkpoint == CHECKPOINT
    assert [n.level for n in notices] == ["warning", "info"] and "full" in notices[0].message


def test_the_buffer_is_bounded_and_says_what_it_left_out(tmp_path, monkeypatch):
    monkeypatch.setattr(recording, "MAX_PENDING_EVENTS", 10)
    db, lock, notices, errors = _history(tmp_path)
    recorder = _recorder(db, notices, errors)
    events = _drive(recorder, 40, {5: lock.take, 35: lock.release})
    record = RunStore(db).get(recorder.run_id, with_events=True)
    assert record.status == "finished" and record.steps == 40 and record.checkpoint == CHECKPOINT
    assert events[0] in record.events and record.events[-1] == events[-1]
    assert recorder.dropped > 0 and len(record.events) == len(events) - recorder.dropped
    levels = [(n.level, n.message) for n in notices]
    assert [level for level, _ in levels] == ["warning", "warning", "info"]
    assert "cannot keep up" in levels[1][1] and f"{recorder.dropped} progress events were left out" in levels[2][1]


def test_a_real_run_with_the_database_locked_at_its_start_is_recorded_to_its_end(tmp_path):
    db = tmp_path / "runs.sqlite"
    RunStore(db).close()
    lock = Lock(db)
    lock.take()
    seen = []

    def sink(event):
        seen.append(event)
        if len(seen) == 5:
            lock.release()

    try:
        result = run_recorded(RunRequest(config=SMALL, out_dir=str(tmp_path / "out"), db=str(db)), sinks=(sink,))
    finally:
        lock.release()
    assert isinstance(result, RunFinished)
    [record] = RunStore(db).list()
    assert record.status == "finished" and record.steps == SMALL.max_steps
    assert record.checkpoint == str(tmp_path / "out" / "checkpoint.pt")
    notices = [e for e in seen if isinstance(e, Notice)]
    assert [n.level for n in notices] == ["warning", "info"] and "falling behind" in notices[0].message
    recorded = RunStore(db).get(record.id, with_events=True).events
    assert [e for e in recorded if not isinstance(e, Notice)] == [e for e in seen if not isinstance(e, Notice)]


@pytest.mark.slow
def test_a_failed_run_in_a_reused_folder_leaves_only_its_own_files(tmp_path):
    out, db = tmp_path / "out", tmp_path / "runs.sqlite"
    first = run_recorded(RunRequest(config=SMALL.replace(max_steps=3), out_dir=str(out), db=str(db)))
    assert isinstance(first, RunFinished)
    first_files = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    assert "checkpoint.pt" in first_files and "metrics.json" in first_files and "events.jsonl" in first_files
    events = []
    second = run_recorded(RunRequest(config=SMALL.replace(batch_size=10**6), out_dir=str(out), db=str(db)),
                          sinks=(events.append,))
    assert isinstance(second, RunFailed)
    [aside] = [p for p in out.iterdir() if p.is_dir()]
    assert aside.name.startswith("previous-")
    assert {p.name: p.read_bytes() for p in aside.iterdir()} == first_files  # moved, nothing deleted
    assert sorted(p.name for p in out.iterdir() if p.is_file()) == ["events.jsonl"]  # the failed run's only
    [moved] = [e for e in events if isinstance(e, Notice)]
    assert moved.level == "info" and str(aside) in moved.message
    third = run_recorded(RunRequest(config=SMALL.replace(max_steps=3), out_dir=str(out), db=str(db)))
    assert isinstance(third, RunFinished)
    assert len([p for p in out.iterdir() if p.is_dir() and p.name.startswith("previous-")]) == 2  # never merged
