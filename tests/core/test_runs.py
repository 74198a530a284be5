"""The run database: round-trip, batching, crash recovery, concurrent readers, and clear errors."""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from workbench.core.kernel import run_files
from workbench.core.history import runs
from workbench.core.ground.config import TrainConfig
from workbench.core.ground.errors import WorkbenchError
from workbench.core.ground.events import EpochEnd, Notice, RunFailed, RunFinished, Step, from_json, to_json
from workbench.core.ground.results import RunResults
from workbench.core.kernel.run_files import run_recorded
from workbench.core.run.run_request import RunRequest
from workbench.core.history.recording import RunRecorder
from workbench.core.history.runs import RunStore, RunStoreError

from ..helpers import REPO_ROOT, SMALL, read_only_medium
from ..support.history_events import started, step


def recorded(config: TrainConfig, out_dir: Path, *, db: Path, **kwargs) -> RunFinished | RunFailed:
    """`run_recorded` of a request for `config` (out_dir kept as given: relative stays relative)."""
    return run_recorded(RunRequest(config=config, out_dir=str(out_dir), db=str(db)), **kwargs)


def test_a_real_run_round_trips(tmp_path):
    db = tmp_path / "runs.sqlite"
    events = []
    result = recorded(SMALL, tmp_path / "out", sinks=(events.append,), db=db)
    assert isinstance(result, RunFinished)
    store = RunStore(db)
    [record] = store.list()
    assert record.status == "finished" and record.steps == SMALL.max_steps
    assert record.config == SMALL.to_dict()
    assert record.environment["device"] == "cpu" and "torch" in record.environment
    assert record.best_val_accuracy == pytest.approx(result.results.best_val_accuracy)
    assert record.checkpoint == str(tmp_path / "out" / "checkpoint.pt")
    assert store.get(record.id, with_events=True).events == events  # the whole stream, in order, equal


def test_events_are_committed_in_batches_not_one_by_one(tmp_path):
    store = RunStore(tmp_path / "runs.sqlite")
    recorder = RunRecorder(store, interval=3600)
    recorder(started())
    for i in range(1, 101):
        recorder(step(i))
    reader = RunStore(tmp_path / "runs.sqlite")
    record = reader.get(recorder.run_id, with_events=True)
    assert record.status == "running" and record.events == []  # nothing committed yet: one batch pending
    recorder(RunFinished(steps=100, epochs=1, seconds=1.0, stopped=False, results=RunResults(best_val_accuracy=0.5)))
    record = reader.get(recorder.run_id, with_events=True)
    assert record.status == "finished" and len(record.events) == 102 and record.best_val_accuracy == 0.5


def test_best_accuracy_only_grows_across_batches(tmp_path):
    store = RunStore(tmp_path / "runs.sqlite")
    recorder = RunRecorder(store, interval=0)  # commit every event
    recorder(started())
    for epoch, accuracy in enumerate((0.8, 0.9, 0.85), 1):
        recorder(EpochEnd(epoch=epoch, train_loss=1.0, val_loss=1.0, val_accuracy=accuracy, seconds=1.0))
    assert store.get(recorder.run_id).best_val_accuracy == 0.9


def test_failed_and_stopped_runs_keep_their_status(tmp_path):
    db = tmp_path / "runs.sqlite"
    assert isinstance(recorded(SMALL.replace(lr=10.0), tmp_path / "a", db=db), RunFailed)
    stop = threading.Event()
    stop.set()
    assert recorded(SMALL, tmp_path / "b", stop=stop, db=db).stopped
    failed, stopped = RunStore(db).list()
    assert failed.status == "failed" and failed.failure["kind"] == "diverged"
    assert stopped.status == "stopped"


KILLED_WRITER = """
import sys, time
sys.path.insert(0, sys.argv[2])
from tests.helpers import VERSIONS
from workbench.core.history.recording import RunRecorder
from workbench.core.history.runs import RunStore
from workbench.core.ground.config import TrainConfig
from workbench.core.ground.events import MemorySample, RunStarted, Step
store = RunStore(sys.argv[1])
recorder = RunRecorder(store, interval=0)
recorder(RunStarted(config=TrainConfig(dataset="mnist-sample", backend="eager", mode="default", amp="off", epochs=1),
                    device="cpu", device_name="CPU", versions=VERSIONS, train_size=1, val_size=1,
                    steps_per_epoch=1, total_steps=10**9))
step = 0
while True:
    step += 1
    recorder(Step(step=step, epoch=1, loss=1.0, samples_per_s=1.0, step_seconds=0.0, memory=MemorySample()))
    if step == 50:
        print("running", flush=True)
"""


def test_a_run_killed_with_sigkill_leaves_a_readable_database_and_is_marked_interrupted(tmp_path):
    db = tmp_path / "runs.sqlite"
    proc = subprocess.Popen([sys.executable, "-c", KILLED_WRITER, str(db), str(REPO_ROOT)], stdout=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout.readline().strip() == "running"
    finally:
        os.kill(proc.pid, signal.SIGKILL)  # mid-way: no chance to clean up (and never left writing forever)
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
    recorder(started())
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
    try:
        for i in range(1, 301):
            recorder(step(i))
            if i == 150:
                assert saw_the_middle.wait(timeout=30), "the reader never read during the writes"
    finally:
        done.set()  # a failed assert must not leave the reader spinning (pytest would never exit)
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


def _history(folder: Path) -> tuple[Path, int]:
    """A database in `folder` with one finished run of two steps: (its path, the run's id)."""
    db = folder / "runs.sqlite"
    with RunStore(db) as store:
        recorder = RunRecorder(store, interval=0)
        for event in (started(), step(1), step(2), RunFinished(steps=2, epochs=1, seconds=1.0, stopped=False,
                                                               results=RunResults(best_val_accuracy=0.5))):
            recorder(event)
    return db, recorder.run_id


def test_a_history_on_a_read_only_medium_is_read_but_not_written(tmp_path, monkeypatch):
    """Regression: it could not even be listed ('unable to open database file'); it is now opened read-only."""
    db, run_id = _history(tmp_path)
    before = db.read_bytes()
    read_only_medium(monkeypatch, tmp_path)
    store = RunStore(db)
    assert store.read_only
    [record] = store.list()
    assert record.status == "finished" and record.steps == 2
    assert len(store.get(run_id, with_events=True).events) == 4
    for write in (lambda: store.start_run(SMALL.to_dict()), lambda: store.delete(run_id)):
        with pytest.raises(RunStoreError, match="is read-only: runs can be listed, shown and exported") as info:
            write()
        assert "--db" in info.value.hint
    with pytest.raises(RunStoreError, match="is read-only"):
        RunStore(db, writing=True)  # a recorder is refused at once, not retried as if the problem would pass
    store.close()
    assert db.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["runs.sqlite"]


def test_a_read_only_history_a_writer_has_open_is_read_with_its_latest_commits(tmp_path, monkeypatch):
    """Commits still in the write-ahead log (another process has the file open) are read too: not an immutable
    open, which would see only what is in the file itself."""
    db, run_id = _history(tmp_path)
    writer = RunStore(db)
    newer = writer.start_run(SMALL.to_dict())  # in runs.sqlite-wal until the last connection closes
    read_only_medium(monkeypatch, tmp_path)
    assert [r.id for r in RunStore(db).list()] == [run_id, newer]
    writer.close()


def test_an_empty_read_only_history_says_it_cannot_be_set_up(tmp_path, monkeypatch):
    db = tmp_path / "runs.sqlite"
    db.write_bytes(b"")
    read_only_medium(monkeypatch, tmp_path)
    with pytest.raises(RunStoreError, match="is read-only and holds no run history"):
        RunStore(db)


def test_a_run_recorded_into_a_read_only_history_trains_and_says_it_is_not_recorded(tmp_path, monkeypatch):
    db, _ = _history(tmp_path / "history")
    read_only_medium(monkeypatch, tmp_path / "history")
    events = []
    assert isinstance(recorded(SMALL, tmp_path / "out", sinks=(events.append,), db=db), RunFinished)
    [notice] = [e for e in events if isinstance(e, Notice)]
    assert notice.message.startswith("this run is not recorded in the run history: the run database")
    assert "is read-only" in notice.message and "falling behind" not in notice.message


def test_corrupt_database_gives_a_clear_error(tmp_path):
    db = tmp_path / "runs.sqlite"
    db.write_bytes(b"this is not a database" * 100)
    with pytest.raises(RunStoreError, match="damaged"):
        RunStore(db)


def test_a_database_problem_never_fails_the_run(tmp_path, monkeypatch):
    db = tmp_path / "runs.sqlite"
    db.write_bytes(b"garbage" * 100)
    events = []
    result = recorded(SMALL, tmp_path / "out", sinks=(events.append,), db=db)
    assert isinstance(result, RunFinished)
    notices = [e for e in events if isinstance(e, Notice)]
    assert notices and "not recorded in the run history" in notices[0].message
    assert (tmp_path / "out" / "checkpoint.pt").is_file()


def test_a_relative_output_folder_is_recorded_as_an_absolute_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    recorded(SMALL.replace(max_steps=3), Path("out"), db=tmp_path / "runs.sqlite")
    [record] = RunStore(tmp_path / "runs.sqlite").list()
    assert record.out_dir == str(tmp_path / "out")
    assert record.checkpoint == str(tmp_path / "out" / "checkpoint.pt")  # readable from any working folder
    assert RunStore(tmp_path / "runs.sqlite").id_for_out_dir("out") == record.id


def _lines_of(path) -> list:
    return [from_json(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_a_notice_about_recording_comes_before_the_terminal_event(tmp_path):
    db = tmp_path / "runs.sqlite"
    db.write_bytes(b"garbage" * 100)  # cannot be opened: the notice is pending when the first event comes
    events, lines = [], []
    too_big = SMALL.replace(batch_size=10**6)  # fails before anything else is emitted
    result = recorded(too_big, tmp_path / "out", sinks=(events.append,), line_sinks=(lines.append,), db=db)
    assert isinstance(result, RunFailed)
    assert [type(e) for e in events] == [Notice, RunFailed]
    assert "not recorded in the run history" in events[0].message
    assert [from_json(line) for line in lines] == events
    assert _lines_of(tmp_path / "out" / "events.jsonl") == events


def test_a_database_failing_at_the_last_commit_is_noticed_before_the_terminal_event(tmp_path, monkeypatch):
    real_append = RunStore.append_events

    def append(self, run_id, first_seq, events, summary=None, lines=None):
        if summary and "status" in summary:
            raise RunStoreError("disk full")
        real_append(self, run_id, first_seq, events, summary, lines)

    monkeypatch.setattr(RunStore, "append_events", append)
    events = []
    result = recorded(SMALL.replace(max_steps=3), tmp_path / "out", sinks=(events.append,),
                          db=tmp_path / "runs.sqlite")
    assert isinstance(result, RunFinished) and events[-1] == result
    assert isinstance(events[-2], Notice) and "disk full" in events[-2].message
    assert _lines_of(tmp_path / "out" / "events.jsonl") == events


def test_run_files_that_cannot_be_written_at_the_end_are_a_notice_not_a_traceback(tmp_path, monkeypatch):
    def disk_full(tmp, target):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(run_files, "commit", disk_full)
    events = []
    result = recorded(SMALL.replace(max_steps=3), tmp_path / "out", sinks=(events.append,),
                          db=tmp_path / "runs.sqlite")
    assert isinstance(result, RunFinished) and not result.stopped  # the run itself finished
    assert [e for e in events if isinstance(e, (RunFinished, RunFailed))] == [result] and events[-1] == result
    problem = events[-2]
    assert isinstance(problem, Notice) and problem.level == "error"
    assert problem.message == f"cannot write {tmp_path / 'out' / 'events.jsonl'}: No space left on device"
    assert not [p.name for p in (tmp_path / "out").iterdir() if p.name.startswith(".")]  # no temp file left
    assert RunStore(tmp_path / "runs.sqlite").list()[0].status == "finished"


def test_unknown_id_and_delete(tmp_path):
    db = tmp_path / "runs.sqlite"
    recorded(SMALL, tmp_path / "out", db=db)
    store = RunStore(db)
    [record] = store.list()
    with pytest.raises(RunStoreError, match=f"no run with id {record.id + 7}"):
        store.get(record.id + 7)
    store.delete(record.id)
    assert store.list() == []
    assert store.db.execute("SELECT COUNT(*) FROM events").fetchone()[0] == 0


def test_a_full_database_says_so_rather_than_failing_to_roll_back(tmp_path):
    store = RunStore(tmp_path / "runs.sqlite")
    run_id = store.start_run(SMALL.to_dict())
    pages = store.db.execute("PRAGMA page_count").fetchone()[0]
    store.db.execute(f"PRAGMA max_page_count = {pages}")  # not one page more: the next write fills it
    big = [Notice("info", "x" * 10_000)] * 20
    with pytest.raises(RunStoreError, match="database or disk is full"):
        store.append_events(run_id, 0, big)
    assert not store.db.in_transaction


def test_a_database_error_while_finding_a_folders_run_is_a_run_store_error(tmp_path):
    store = RunStore(tmp_path / "runs.sqlite")
    store.db.execute("DROP TABLE events")
    store.db.execute("DROP TABLE runs")  # damaged: what the GUI would otherwise get as a raw sqlite3 error
    with pytest.raises(RunStoreError, match="no such table: runs"):
        store.id_for_out_dir(tmp_path / "out")


@pytest.mark.parametrize("data", ['{"type": "FromTheFuture", "x": 1}',
                                  '{"type": "Notice", "level": "info", "message": "m", "colour": "red"}',
                                  '{"type": "Notice", "level": "info", "mess'],
                         ids=["unknown type", "unknown field", "damaged"])
def test_an_event_this_version_cannot_read_is_a_run_store_error(tmp_path, data):
    store = RunStore(tmp_path / "runs.sqlite")
    run_id = store.start_run(SMALL.to_dict())
    store.db.execute("INSERT INTO events (run_id, seq, type, data) VALUES (?, 0, 'x', ?)", (run_id, data))
    assert store.get(run_id).id == run_id  # the run itself still opens
    with pytest.raises(RunStoreError, match=f"run #{run_id} .* holds data this Workbench cannot read"):
        store.get(run_id, with_events=True)


def test_newer_schema_is_refused(tmp_path):
    db = tmp_path / "runs.sqlite"
    RunStore(db).close()
    sqlite3.connect(db).execute(f"PRAGMA user_version={runs.SCHEMA_VERSION + 1}")
    with pytest.raises(RunStoreError, match="newer Workbench"):
        RunStore(db)


# -- schema 2: the user's words about a run, its size on disk ---------------------------------------------------
V1_HISTORY = Path(__file__).parents[1] / "data" / "history-v1.sqlite"  # written by the previous release


def _raw(db: Path, sql: str) -> list[tuple]:
    with contextlib.closing(sqlite3.connect(db)) as raw:
        return raw.execute(sql).fetchall()


def test_a_history_of_the_previous_release_is_migrated_and_keeps_its_runs(tmp_path):
    db = tmp_path / "runs.sqlite"
    shutil.copy(V1_HISTORY, db)
    rows, events = _raw(db, "SELECT * FROM runs ORDER BY id"), _raw(db, "SELECT * FROM events ORDER BY run_id, seq")
    assert _raw(db, "PRAGMA user_version") == [(1,)] and len(rows) == 2
    with RunStore(db) as store:
        records = store.list()
        assert [(r.id, r.status, r.name, r.notes, r.tags, r.archived, r.disk_bytes) for r in records] == [
            (1, "finished", "", "", (), False, None), (2, "finished", "", "", (), False, None)]
        assert [len(store.get(r.id, with_events=True).events) for r in records] == [35, 38]
        store.rename(1, "seed 0")
    assert _raw(db, "PRAGMA user_version") == [(runs.SCHEMA_VERSION,)] == [(4,)]
    width = len(rows[0])  # every column it had keeps its value, every event its data, in its order
    assert [row[:width] for row in _raw(db, "SELECT * FROM runs ORDER BY id")] == rows
    # The other events' rows are as they were; the steps are columns, read back each as it was, in its place.
    assert _raw(db, "SELECT * FROM events ORDER BY run_id, seq") == [row for row in events if row[2] != "Step"]
    with RunStore(db) as store:
        assert store.get(1).name == "seed 0"
        for run_id in (1, 2):
            stream = store.get(run_id, with_events=True).events
            assert [type(event).__name__ for event in stream] == [kind for rid, _, kind, _ in events if rid == run_id]
            assert [to_json(event) for event in stream if isinstance(event, Step)] == [  # as read before the move
                to_json(from_json(data)) for rid, _seq, kind, data in events if rid == run_id and kind == "Step"]


def test_a_read_only_history_of_the_previous_release_is_read_as_it_is(tmp_path, monkeypatch):
    db = tmp_path / "runs.sqlite"
    shutil.copy(V1_HISTORY, db)
    before = db.read_bytes()
    read_only_medium(monkeypatch, tmp_path)
    with RunStore(db) as store:
        assert store.read_only
        assert [(r.id, r.status, r.name, r.tags) for r in store.list()] == [(1, "finished", "", ()),
                                                                            (2, "finished", "", ())]
        assert len(store.get(2, with_events=True).events) == 38
        with pytest.raises(RunStoreError, match="is read-only"):
            store.rename(1, "x")
    assert db.read_bytes() == before


def test_listing_reads_no_events_and_finding_a_folders_run_uses_an_index(tmp_path):
    """What keeps `workbench runs` fast at thousands of runs (measured in scripts/, not timed here)."""
    store = RunStore(tmp_path / "runs.sqlite")
    run_id = store.start_run(SMALL.to_dict(), str(tmp_path / "out"))
    store.append_events(run_id, 0, [started(), *map(step, range(1, 50))])
    statements: list[str] = []
    store.db.set_trace_callback(statements.append)
    [record] = store.list()
    assert record.events == [] and statements and not any("events" in s for s in statements)
    plan = store.db.execute("EXPLAIN QUERY PLAN SELECT id FROM runs WHERE out_dir = ? ORDER BY id DESC LIMIT 1",
                            ("x",)).fetchall()
    assert "runs_by_out_dir" in str([tuple(row) for row in plan])
    plan = store.db.execute("EXPLAIN QUERY PLAN SELECT id, pid FROM runs WHERE status = 'running' AND host = ?",
                            ("x",)).fetchall()
    assert "runs_by_status" in str([tuple(row) for row in plan])


@pytest.fixture
def store(tmp_path):
    with RunStore(tmp_path / "runs.sqlite") as store:
        for _ in range(3):
            store.start_run(SMALL.to_dict())
        yield store


def test_name_notes_and_tags_are_kept_and_the_runs_end_is_not_touched(store):
    updated = store.get(1).updated
    store.rename(1, "  warm-up  ")
    store.set_notes(1, "# lr too high\n\n- diverged at step 40\n\n")
    assert store.set_tags(1, [" baseline", "amp", "baseline ", "ablation"]) == ("baseline", "amp", "ablation")
    with RunStore(store.path) as again:
        record = again.get(1)
    assert (record.name, record.notes, record.tags) == ("warm-up", "# lr too high\n\n- diverged at step 40",
                                                        ("baseline", "amp", "ablation"))
    assert record.updated == updated and store.get(2).name == "" and store.get(2).tags == ()
    store.rename(1, "")
    assert store.get(1).name == ""


def test_tags_are_added_after_and_removed_in_place(store):
    store.set_tags(2, ["a", "b"])
    assert store.add_tags(2, ["c", "a", "d"]) == ("a", "b", "c", "d")
    assert store.remove_tags(2, ["b", "never-had"]) == ("a", "c", "d")
    assert store.add_tags(2, "e") == ("a", "c", "d", "e")  # one tag, not its letters
    assert store.get(2).tags == ("a", "c", "d", "e")


@pytest.mark.parametrize("tags, words", [(["two words"], "has a space in it: a tag is one word"),
                                         (["tab\there"], "has a space in it"),
                                         (["x" * 41], "is 41 characters long"),
                                         (["ok", "  "], "a tag cannot be empty")])
def test_a_bad_tag_is_a_clear_error_and_changes_nothing(store, tags, words):
    store.set_tags(1, ["kept"])
    with pytest.raises(WorkbenchError, match=words):
        store.set_tags(1, tags)
    with pytest.raises(WorkbenchError, match=words):
        store.add_tags(1, tags)
    assert store.get(1).tags == ("kept",)
    assert store.set_tags(1, ["x" * 40]) == ("x" * 40,)  # the longest allowed


def test_a_name_is_one_line(store):
    with pytest.raises(WorkbenchError, match="one line"):
        store.rename(1, "first\nsecond")


def test_archiving_several_runs_and_an_unknown_one_changes_none(store):
    store.set_archived([1, 3], True)
    assert [r.archived for r in store.list()] == [True, False, True]
    with pytest.raises(RunStoreError, match="no run with id 9"):
        store.set_archived([2, 9], True)
    assert [r.archived for r in store.list()] == [True, False, True]
    store.set_archived([1], False)
    assert [r.archived for r in store.list()] == [False, False, True]


@pytest.mark.parametrize("change", [lambda s: s.rename(9, "x"), lambda s: s.set_notes(9, "x"),
                                    lambda s: s.set_tags(9, ["x"]), lambda s: s.add_tags(9, ["x"]),
                                    lambda s: s.remove_tags(9, ["x"]), lambda s: s.set_disk_bytes(9, 1),
                                    lambda s: s.measure_disk(9)],
                         ids=["rename", "notes", "set_tags", "add_tags", "remove_tags", "disk", "measure"])
def test_an_unknown_run_is_the_clear_error(store, change):
    with pytest.raises(RunStoreError, match="no run with id 9 ") as info:
        change(store)
    assert info.value.hint == "recent ids: 3, 2, 1"


def test_measuring_a_runs_folder_keeps_its_size(store, tmp_path):
    folder = tmp_path / "run"
    (folder / "profile").mkdir(parents=True)
    (folder / "checkpoint.pt").write_bytes(b"x" * 1000)
    (folder / "profile" / "trace.json").write_bytes(b"y" * 234)
    here = store.start_run(SMALL.to_dict(), str(folder))
    there = store.start_run(SMALL.to_dict(), str(folder), host="gpu-box")  # the same path, on another computer
    gone = store.start_run(SMALL.to_dict(), str(tmp_path / "gone"))
    assert [store.measure_disk(i) for i in (here, there, gone, 1)] == [1234, None, None, None]
    assert [store.get(i).disk_bytes for i in (here, there, gone)] == [1234, None, None]


def test_a_run_that_ends_records_its_folders_size(tmp_path):
    store = RunStore(tmp_path / "runs.sqlite")
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "checkpoint.pt").write_bytes(b"x" * 4321)
    finished = RunFinished(steps=1, epochs=1, seconds=1.0, stopped=False, results=RunResults())
    for host, size in ((None, 4321), ("gpu-box", None)):  # a remote run's folder is on its host: not measured
        recorder = RunRecorder(store, out_dir=str(folder), host=host, interval=3600)
        for event in (started(), step(1), finished):
            recorder(event)
        assert store.get(recorder.run_id).disk_bytes == size


def test_a_real_runs_size_is_its_folders(tmp_path):
    recorded(SMALL.replace(max_steps=3), tmp_path / "out", db=tmp_path / "runs.sqlite")
    [record] = RunStore(tmp_path / "runs.sqlite").list()
    checkpoint = (tmp_path / "out" / "checkpoint.pt").stat().st_size
    assert checkpoint < record.disk_bytes <= sum(p.stat().st_size for p in (tmp_path / "out").rglob("*"))
