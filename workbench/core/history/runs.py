"""Run history: every run, from the GUI or the CLI, in one SQLite database (stdlib sqlite3, WAL mode).

A run's row holds its config, environment, status and summary; its whole event stream is kept alongside, so any
run can be re-opened, compared or turned into a report later. Events are written in batched transactions (see
recording.py: a commit every RECORD_INTERVAL seconds), so recording costs a sliver of training time. WAL keeps the
file readable after a crash or SIGKILL; a run whose process is gone while it still says "running" is marked
"interrupted" the next time the database is opened.

Beside what a run records, a row keeps what its user says about it (a name, a Markdown note, tags, an archive flag)
and the size of its folder on disk. Those came with schema 2: a schema 1 history (the previous release's) gains
their columns when it is first opened for writing, and is read as it is (with none of them set) when it cannot be.

Schema 3 keeps a run's steps as typed columns (step_columns.py: one compressed block per recorded batch, about 30
bytes a step instead of 340 of JSON) and its other events as JSON rows; each step keeps its place (seq) in the
stream, so the events read back as they were recorded. Curves are read from the columns without making an event a
step (`step_block`). An older history moves its steps into blocks when it is first opened for writing, run by run,
saying how far it has got; opened read-only it is read as it is.
"""

from __future__ import annotations

import heapq
import json
import os
import socket
import sqlite3
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Sequence

from ..ground import paths
from ..ground.errors import WorkbenchError, first_line
from ..ground.events import Event, Step, from_dict, to_json
from ..ground.processes import process_alive
from .schema import READABLE_VERSIONS, SCHEMA_VERSION, reclaim, upgrade
from .records import ENDED, RunRecord, record_of_row
from .trash import folder_bytes
from .words import clean_tags, unicode_text

if TYPE_CHECKING:
    from .step_columns import StepBlock
    from .step_levels import StepView

BUSY_TIMEOUT_S = 5.0  # wait this long for another process's write lock before giving up


class RunStoreError(WorkbenchError):
    kind = "io"
    transient = False  # a problem that passes by itself (a lock, a full disk): worth retrying


def default_db_path() -> Path:
    return Path(os.environ.get("WORKBENCH_DB") or paths.data_dir() / "runs.sqlite")


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class RunStore:
    """The run database. One connection per object; open one per thread or process that uses it."""

    def __init__(self, path: str | Path | None = None, *, recover: bool = True, writing: bool = False,
                 reading: bool = False, progress: Callable[[str], None] | None = None):
        """`recover`: mark the runs whose process is gone as interrupted (not when opened read-only). `writing`:
        the caller is there to write (a run's recorder), so a read-only history is refused now rather than at each
        write, where it would look like a passing problem worth retrying. `reading`: only there to read (the
        Python API): the history is never written, not even upgraded, and is read beside a window writing it.
        `progress`: where an upgrade of an older history says how far it has got (stderr without one)."""
        self.path = Path(path) if path else default_db_path()
        self.db: sqlite3.Connection | None = None
        self._tables: set[str] | None = None
        try:
            if reading and not self.path.is_file():
                raise RunStoreError(f"there is no run history at {self.path}",
                                    "give the path of a runs.sqlite, or train a run first")
            self.read_only = reading or _read_only(self.path)
            if self.read_only and writing:
                raise self._read_only_error()
            if reading and not _read_only(self.path):  # a plain connection (it shares the writer's WAL), kept
                self.db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None,  # from writing
                                          check_same_thread=False)
                self.db.execute("PRAGMA query_only=ON")
            elif self.read_only:
                self.db = sqlite3.connect(_read_only_uri(self.path), uri=True, timeout=BUSY_TIMEOUT_S,
                                          isolation_level=None, check_same_thread=False)
            else:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self.db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None,
                                          check_same_thread=False)
                self.db.execute("PRAGMA journal_mode=WAL")
                self.db.execute("PRAGMA synchronous=NORMAL")  # WAL + NORMAL: a crash loses at most the last commit
            self.db.row_factory = sqlite3.Row
            self.db.execute("PRAGMA foreign_keys=ON")
            self._migrate(progress)
            if recover and not self.read_only:
                self.mark_interrupted()
        except (sqlite3.DatabaseError, OSError, RunStoreError) as exc:
            if self.db is not None:
                self.db.close()
            if isinstance(exc, RunStoreError):
                raise
            if isinstance(exc, sqlite3.DatabaseError):
                raise self.database_error(exc) from None
            raise RunStoreError(f"cannot open the run database {self.path}: {exc.strerror or exc}",
                                "check the folder's permissions, or point --db / WORKBENCH_DB elsewhere") from None

    def database_error(self, exc: Exception) -> RunStoreError:
        text = first_line(exc)
        if "locked" in text or "busy" in text:
            error = RunStoreError(f"the run database {self.path} is locked by another process",
                                  f"wait for it to finish, or use another database with --db ({text})")
            error.transient = True
            return error
        if "readonly" in text or "read-only" in text:
            return self._read_only_error()
        if "not a database" in text or "malformed" in text or "corrupt" in text:
            return RunStoreError(f"the run database {self.path} is damaged ({text})",
                                 "move it aside (Workbench starts a new one) or restore it from a backup")
        error = RunStoreError(f"run database error in {self.path}: {text}")
        error.transient = "full" in text or "disk I/O" in text
        return error

    def _read_only_error(self) -> RunStoreError:
        return RunStoreError(f"the run database {self.path} is read-only: runs can be listed, shown and exported "
                             f"but not recorded or removed",
                             "make it and its folder writable, or use another database with --db / WORKBENCH_DB")

    def _migrate(self, progress: Callable[[str], None] | None) -> None:
        """A new history gets the whole schema; an older one the migrations from its version on, in one
        transaction (a migration cut short leaves the history as it was). A read-only one cannot be changed: it
        is read as it is when this version can read its schema."""
        version = self.db.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise RunStoreError(f"{self.path} was written by a newer Workbench (schema {version})",
                                "upgrade Workbench, or use another database with --db")
        if version == SCHEMA_VERSION or (self.read_only and version in READABLE_VERSIONS):
            return
        if self.read_only:
            raise RunStoreError(f"the run database {self.path} is read-only and holds no run history this "
                                f"Workbench can read (schema {version}); setting it up would write to it",
                                "make it and its folder writable, or use another database with --db / WORKBENCH_DB")
        with self.db:
            self.db.execute("BEGIN IMMEDIATE")
            version = self.db.execute("PRAGMA user_version").fetchone()[0]  # another process may have just done it
            moved = upgrade(self.db, version, self._write_block, f"upgrading the run history {self.path}", progress)
        if moved:
            reclaim(self.db)

    def _write_block(self, run_id: int, seqs: list[int], steps: list[Step]) -> None:
        from .step_columns import block_of, pack  # numpy: not for a listing (`workbench runs` starts faster)

        self.db.execute("INSERT INTO step_blocks (run_id, first_seq, first_step, last_step, count, data) "
                        "VALUES (?, ?, ?, ?, ?, ?)",
                        (run_id, seqs[0], steps[0].step, steps[-1].step, len(steps), pack(block_of(seqs, steps))))

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> "RunStore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- writing ----------------------------------------------------------------------------------------------
    def start_run(self, config: dict, out_dir: str | None = None, host: str | None = None) -> int:
        """A new row for a run that has started; `host`: where it trains, when not here (a remote run recorded in
        this computer's history: its files are on that host)."""
        now = _now()
        try:
            cursor = self.db.execute(
                "INSERT INTO runs (created, updated, status, host, pid, config, dataset, backend, mode, amp, epochs,"
                " out_dir, model) VALUES (?, ?, 'running', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (now, now, host or socket.gethostname(), os.getpid(), json.dumps(config), config["dataset"],
                 config["backend"], config["mode"], config["amp"], config["epochs"], out_dir,
                 str(config.get("model", "sandwich"))))
        except sqlite3.DatabaseError as exc:
            raise self.database_error(exc) from None
        return int(cursor.lastrowid)

    def append_events(self, run_id: int, first_seq: int, events: list[Event], summary: dict | None = None,
                      lines: list[str] | None = None) -> None:
        """One transaction: the events (with their JSON lines when the caller has them: the steps' are not needed),
        its steps as one block of columns, and an update of the run's row."""
        steps = [(first_seq + i, e) for i, e in enumerate(events) if isinstance(e, Step)]
        rows = [(run_id, first_seq + i, type(e).__name__, lines[i] if lines else to_json(e))
                for i, e in enumerate(events) if not isinstance(e, Step)]
        try:
            self.db.execute("BEGIN IMMEDIATE")
            try:
                self.db.executemany("INSERT INTO events (run_id, seq, type, data) VALUES (?, ?, ?, ?)", rows)
                if steps:  # the batch's steps: one block of columns
                    self._write_block(run_id, [seq for seq, _step in steps], [step for _seq, step in steps])
                if summary:
                    columns = ", ".join(_ASSIGN.get(k, f"{k} = ?") for k in summary)
                    self.db.execute(f"UPDATE runs SET {columns}, updated = ? WHERE id = ?",
                                    (*summary.values(), _now(), run_id))
                if summary and summary.get("status") in ENDED:  # its steps are all in: its levels
                    self._write_levels(run_id)
                self.db.execute("COMMIT")
            except BaseException:
                if self.db.in_transaction:  # some errors (SQLITE_FULL) have rolled it back already
                    self.db.execute("ROLLBACK")
                raise
        except sqlite3.DatabaseError as exc:
            raise self.database_error(exc) from None

    def mark_interrupted(self) -> list[int]:
        """Runs that say 'running' but whose process on this host is gone were killed: say so."""
        host = socket.gethostname()
        rows = self.db.execute("SELECT id, pid FROM runs WHERE status = 'running' AND host = ?", (host,)).fetchall()
        dead = [row["id"] for row in rows if not process_alive(row["pid"])]
        if dead:
            with self.db:
                self.db.execute("BEGIN IMMEDIATE")
                self.db.executemany("UPDATE runs SET status = 'interrupted', updated = ? WHERE id = ?",
                                    [(_now(), run_id) for run_id in dead])
                for run_id in dead:
                    self._write_levels(run_id)
        return dead

    def _write_levels(self, run_id: int) -> None:
        """The levels of a run whose steps have stopped coming (step_levels.py), in the caller's transaction; a run
        whose blocks cannot be read gets none (it is read from its columns, which say what is wrong)."""
        from .step_levels import write_levels

        try:
            block = self.step_block(run_id)
        except RunStoreError:
            return
        write_levels(self.db, run_id, block)

    def delete(self, run_id: int) -> None:
        """Forget the run's row and events (its files stay: removal.delete_runs moves them to the trash too)."""
        self.get(run_id)  # unknown id → clear error
        try:
            with self.db:
                self.db.execute("BEGIN")
                self._delete(run_id)
        except sqlite3.DatabaseError as exc:
            raise self.database_error(exc) from None

    def _delete(self, run_id: int) -> None:
        self.db.execute("DELETE FROM events WHERE run_id = ?", (run_id,))
        for table in ("step_blocks", "step_levels"):
            if table in self.tables:
                self.db.execute(f"DELETE FROM {table} WHERE run_id = ?", (run_id,))
        self.db.execute("DELETE FROM runs WHERE id = ?", (run_id,))

    def forget(self, run_id: int) -> "StoredRun":
        """Delete the run's row and events and return them exactly as they were stored, for `put_back` (Undo)."""
        try:
            with self.db:
                self.db.execute("BEGIN IMMEDIATE")
                row = self.db.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone()
                if row is None:
                    self.get(run_id)  # the clear error
                events = tuple(tuple(r) for r in self.db.execute(
                    "SELECT seq, type, data FROM events WHERE run_id = ? ORDER BY seq", (run_id,)))
                blocks = tuple(tuple(r) for r in self.db.execute(
                    "SELECT first_seq, first_step, last_step, count, data FROM step_blocks WHERE run_id = ? "
                    "ORDER BY first_seq", (run_id,)))
                self._delete(run_id)
        except sqlite3.DatabaseError as exc:
            raise self.database_error(exc) from None
        return StoredRun(row=dict(zip(row.keys(), row)), events=events, blocks=blocks)

    def put_back(self, stored: "StoredRun") -> None:
        """Write a forgotten run again: the same id, row and events."""
        columns = ", ".join(stored.row)
        try:
            with self.db:
                self.db.execute("BEGIN IMMEDIATE")
                self.db.execute(f"INSERT INTO runs ({columns}) VALUES ({', '.join('?' * len(stored.row))})",
                                tuple(stored.row.values()))
                self.db.executemany("INSERT INTO events (run_id, seq, type, data) VALUES (?, ?, ?, ?)",
                                    [(stored.run_id, *event) for event in stored.events])
                self.db.executemany("INSERT INTO step_blocks (run_id, first_seq, first_step, last_step, count, data)"
                                    " VALUES (?, ?, ?, ?, ?, ?)", [(stored.run_id, *block) for block in stored.blocks])
                if stored.row["status"] != "running":
                    self._write_levels(stored.run_id)
        except sqlite3.IntegrityError:
            raise RunStoreError(f"cannot put run #{stored.run_id} back into {self.path}: a run with that id is "
                                "there already") from None
        except sqlite3.DatabaseError as exc:
            raise self.database_error(exc) from None

    def change_count(self) -> int:
        """SQLite's data_version: it moves when another connection (a CLI run, another window, a host's copy) has
        committed to the history since this one last looked; its own writes leave it. A cheap question: nothing is
        read."""
        try:
            return int(self.db.execute("PRAGMA data_version").fetchone()[0])
        except sqlite3.DatabaseError as exc:
            raise self.database_error(exc) from None

    def listing_state(self) -> int:
        """What the Runs list shows of the history, as one number: which runs there are, with their status, name,
        tags and archived flag — not their progress, which a training run commits every few seconds (asked only
        once `change_count` has moved, so a run in training does not have the whole history listed again)."""
        try:
            rows = self.db.execute("SELECT id, status, name, tags, archived FROM runs").fetchall()
        except sqlite3.DatabaseError as exc:
            raise self.database_error(exc) from None
        return hash(tuple(tuple(row) for row in rows))

    def check_writable(self) -> None:
        """Refuse now, before anything else is done, what a read-only history would refuse later."""
        if self.read_only:
            raise self._read_only_error()

    # -- what the user says about a run -----------------------------------------------------------------------
    # None of these touch `updated`: it keeps the run's end (RunRecord.duration_s).
    def rename(self, run_id: int, name: str) -> None:
        """Name the run ("" takes its name away: it is "#ID" again)."""
        name = unicode_text(name.strip(), "a run's name")
        if "\n" in name or "\r" in name:
            raise WorkbenchError("a run's name is one line", "put the rest in its notes")
        self._set(run_id, "name", name)

    def set_notes(self, run_id: int, text: str) -> None:
        """The run's note (Markdown), as written; trailing blank lines and spaces are left out."""
        self._set(run_id, "notes", unicode_text(text.rstrip(), "a run's note"))

    def set_tags(self, run_id: int, tags: Sequence[str]) -> tuple[str, ...]:
        """Replace the run's tags (see `clean_tags`); returns them."""
        tags = clean_tags(tags)
        self._set(run_id, "tags", json.dumps(list(tags)))
        return tags

    def add_tags(self, run_id: int, tags: Sequence[str]) -> tuple[str, ...]:
        """Add tags after the run's own (those it has already stay where they are); returns them all."""
        added = clean_tags(tags)
        return self._change_tags(run_id, lambda have: (*have, *added))

    def remove_tags(self, run_id: int, tags: Sequence[str]) -> tuple[str, ...]:
        """Take tags away (one it does not have is no error); returns the ones left."""
        gone = {tag.strip() for tag in tags}
        return self._change_tags(run_id, lambda have: tuple(tag for tag in have if tag not in gone))

    def _change_tags(self, run_id: int, change) -> tuple[str, ...]:
        """Read, change and write a run's tags in one transaction: another process's change in between is kept."""
        try:
            with self.db:
                self.db.execute("BEGIN IMMEDIATE")
                tags = self.set_tags(run_id, change(self.get(run_id).tags))
        except sqlite3.DatabaseError as exc:
            raise self.database_error(exc) from None
        return tags

    def set_archived(self, run_ids: Sequence[int], archived: bool) -> None:
        """Archive runs (hidden from the list unless archived runs are shown), or bring them back. Every id must be
        a run's: one that is not changes none of them."""
        ids = list(dict.fromkeys(run_ids))
        try:
            with self.db:
                self.db.execute("BEGIN IMMEDIATE")
                for run_id in ids:
                    self._set(run_id, "archived", int(archived))
        except sqlite3.DatabaseError as exc:
            raise self.database_error(exc) from None

    def set_disk_bytes(self, run_id: int, n: int | None) -> None:
        self._set(run_id, "disk_bytes", n)

    def measure_disk(self, run_id: int) -> int | None:
        """Measure what the run's folder holds now and keep it (not in a read-only history); None when its folder is
        not on this computer or no longer there. For runs recorded before sizes were (RunRecorder measures a run's
        folder when it ends)."""
        folder = self.get(run_id).folder
        n = folder_bytes(folder) if folder is not None else None
        if not self.read_only:
            self.set_disk_bytes(run_id, n)
        return n

    def _set(self, run_id: int, column: str, value) -> None:
        """One column of one run; an unknown id is the clear error `get` gives."""
        self.check_writable()  # (a schema 1 history read as it is has no such column to complain about)
        try:
            changed = self.db.execute(f"UPDATE runs SET {column} = ? WHERE id = ?", (value, run_id)).rowcount
        except sqlite3.DatabaseError as exc:
            raise self.database_error(exc) from None
        if not changed:
            self.get(run_id)

    # -- reading ----------------------------------------------------------------------------------------------
    def list(self, environment: bool = True) -> list[RunRecord]:
        """Every run, by id; without `environment` (a listing that does not show it) their environments are left
        empty: a third of what listing 20,000 runs decoded."""
        columns = "*" if environment else ", ".join(name for name in self.run_columns if name != "environment")
        try:
            return [record_of_row(r) for r in self.db.execute(f"SELECT {columns} FROM runs ORDER BY id")]
        except sqlite3.DatabaseError as exc:
            raise self.database_error(exc) from None

    def id_for_out_dir(self, out_dir: str | Path) -> int | None:
        """The newest run that wrote into `out_dir` (how the GUI finds the run it just trained). Runs record their
        folder resolved (runfiles.run_recorded), so it is looked up resolved too."""
        try:
            row = self.db.execute("SELECT id FROM runs WHERE out_dir = ? ORDER BY id DESC LIMIT 1",
                                  (str(Path(out_dir).resolve()),)).fetchone()
        except sqlite3.DatabaseError as exc:
            raise self.database_error(exc) from None
        return int(row[0]) if row else None

    def get(self, run_id: int, *, with_events: bool = False, steps: bool = True,
            kinds: tuple[type, ...] | None = None) -> RunRecord:
        """The run's row; `with_events`: with its events, in the order recorded (`steps`=False: all but its steps,
        which `step_block` reads as columns: what curves need, without an event a step; `kinds`: only events of
        these types, and no steps)."""
        with self.snapshot():  # its rows and its step blocks as of one moment: a writer may commit in between
            return self._get(run_id, with_events, steps, kinds)

    def _get(self, run_id: int, with_events: bool, steps: bool, kinds: tuple[type, ...] | None) -> RunRecord:
        try:
            row = self.db.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone()
            if row is None:
                known = [r[0] for r in self.db.execute("SELECT id FROM runs ORDER BY id DESC LIMIT 5")]
                raise RunStoreError(f"no run with id {run_id} in {self.path}",
                                    f"recent ids: {', '.join(map(str, known))}" if known else "no runs recorded yet")
            names = tuple(kind.__name__ for kind in kinds or ())
            only = (f" AND type IN ({', '.join('?' * len(names))})" if kinds is not None
                    else "" if steps else " AND type != 'Step'")  # (an older history's steps are events)
            lines = self.db.execute(f"SELECT seq, data FROM events WHERE run_id = ?{only} ORDER BY seq",
                                    (run_id, *names)).fetchall() if with_events else []
        except sqlite3.DatabaseError as exc:
            raise self.database_error(exc) from None
        with self._readable(run_id):
            record = record_of_row(row)
            if with_events and steps and kinds is None and self.has_blocks:
                record.events = [event for _seq, event in self._with_steps(run_id, lines)]
            else:
                record.events = [from_dict(json.loads(line)) for _seq, line in lines]
        return record

    def _with_steps(self, run_id: int, lines: list, after_seq: int = -1) -> list[tuple[int, Event]]:
        """Event rows (seq, JSON) and the run's steps after `after_seq` (from its columns), as (seq, event) in the
        order they were recorded."""
        events = [(seq, from_dict(json.loads(line))) for seq, line in lines]
        block = self.step_block(run_id, after_seq)
        return list(heapq.merge(events, zip(block.seq.tolist(), block.steps()), key=lambda pair: pair[0]))

    def get_with_columns(self, run_id: int) -> RunRecord:
        """The run's row and events, its steps as columns (`step_columns`) rather than an event each: what a report
        reads (a run of 20,000 steps made 20,000 Step objects to count its steady ones)."""
        record = self.get(run_id, with_events=True, steps=False)
        record.step_columns = self.step_block(run_id)
        return record

    def events_after(self, run_id: int, after_seq: int) -> list[tuple[int, Event]]:
        """The run's events recorded after `after_seq`, as (seq, event) in order: a cursor. What follows a run
        recorded by another process reads each time: the new events only, however long the run already is."""
        try:
            lines = self.db.execute("SELECT seq, data FROM events WHERE run_id = ? AND seq > ? AND type != 'Step' "
                                    "ORDER BY seq", (run_id, after_seq)).fetchall()
        except sqlite3.DatabaseError as exc:
            raise self.database_error(exc) from None
        with self._readable(run_id):
            return self._with_steps(run_id, lines, after_seq)

    def last_seq(self, run_id: int) -> int:
        """Where the run's recorded stream is: its last event's seq (-1: none yet), the cursor `events_after` takes."""
        try:
            last = self.db.execute("SELECT MAX(seq) FROM events WHERE run_id = ?", (run_id,)).fetchone()[0]
            block = self.db.execute("SELECT data FROM step_blocks WHERE run_id = ? ORDER BY first_seq DESC LIMIT 1",
                                    (run_id,)).fetchone() if self.has_blocks else None
        except sqlite3.DatabaseError as exc:
            raise self.database_error(exc) from None
        if block is not None:
            from .step_columns import unpack

            with self._readable(run_id):
                last = max(last if last is not None else -1, int(unpack(block[0]).seq[-1]))
        return -1 if last is None else last

    @contextmanager
    def snapshot(self):
        """Reads in one snapshot of the history (a read transaction, WAL): a batch another process commits meanwhile
        is seen whole by the next snapshot, never half by this one. Inside one already, it is that one."""
        if self.db.in_transaction:
            yield self
            return
        self.db.execute("BEGIN")
        try:
            yield self
        finally:
            self.db.execute("COMMIT")

    def step_block(self, run_id: int, after_seq: int = -1) -> "StepBlock":
        """The run's steps as columns (those recorded after `after_seq`): from its blocks, or, in a history read as
        it is from before them, from its Step events."""
        try:
            if self.has_blocks:
                data = [r[0] for r in self.db.execute(
                    "SELECT data FROM step_blocks WHERE run_id = ? AND first_seq > ? ORDER BY first_seq",
                    (run_id, after_seq))]
            else:
                rows = self.db.execute("SELECT seq, data FROM events WHERE run_id = ? AND type = 'Step' AND seq > ?"
                                       " ORDER BY seq", (run_id, after_seq)).fetchall()
        except sqlite3.DatabaseError as exc:
            raise self.database_error(exc) from None
        from .step_columns import block_of, joined, unpack  # numpy: only for what reads steps

        with self._readable(run_id):
            if self.has_blocks:
                return joined([unpack(blob) for blob in data])
            return block_of([seq for seq, _line in rows], [from_dict(json.loads(line)) for _seq, line in rows])

    def step_view(self, run_id: int, rows: int, steps: tuple[float, float] | None = None) -> "StepView":
        """About `rows` of the run's steps between `steps` (first, last; None: all): every step where there are no
        more, else its finest level that has no more there (step_levels.read_view). A history read as it is from
        before levels reads its columns."""
        from .step_levels import StepView, read_view

        with self._readable(run_id):
            if "step_levels" in self.tables:
                try:
                    return read_view(self.db, run_id, rows, steps)
                except sqlite3.DatabaseError as exc:
                    raise self.database_error(exc) from None
            block = self.step_block(run_id)
            if steps is not None:
                block = block.take(((block.step >= steps[0]) & (block.step <= steps[1])).nonzero()[0])
            return StepView(block, 0, 1.0)

    @contextmanager
    def _readable(self, run_id: int):
        """What a run's stored data cannot be read as (an event of a newer version's, a damaged block) is said as
        the history's error, naming the run."""
        try:
            yield
        except (ValueError, TypeError, RecursionError) as exc:
            raise RunStoreError(f"run #{run_id} in {self.path} holds data this Workbench cannot read: "
                                f"{first_line(exc)}", "upgrade Workbench to open this run") from None

    @property
    def has_blocks(self) -> bool:
        """Whether the history keeps steps as columns (schema 3; an older one read as it is does not)."""
        return "step_blocks" in self.tables

    @property
    def run_columns(self) -> list[str]:
        """The runs table's columns: an older history read as it is lacks the newer ones."""
        return [row[1] for row in self.db.execute("PRAGMA table_info(runs)")]

    @property
    def tables(self) -> set[str]:
        """The history's tables: an older one read as it is lacks the newer ones."""
        if self._tables is None:
            self._tables = {row[0] for row in self.db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        return self._tables


@dataclass(frozen=True)
class StoredRun:
    """A run's row and events exactly as the history stored them (RunStore.forget → put_back: Undo)."""

    row: dict  # column → value
    events: tuple[tuple[int, str, str], ...]  # (seq, type, data)
    blocks: tuple[tuple, ...] = ()  # (first_seq, first_step, last_step, count, data): its steps

    @property
    def run_id(self) -> int:
        return self.row["id"]


def _read_only(path: Path) -> bool:
    """A history this process may not write (a read-only medium, another user's file or folder) is opened
    read-only, so that it can still be listed, shown and exported. WAL mode writes beside the file (its -wal and
    -shm), so the folder counts too. What does not exist yet is created: not read-only."""
    return path.exists() and not (os.access(path, os.W_OK) and os.access(path.parent, os.W_OK))


def _read_only_uri(path: Path) -> str:
    """SQLite reads a WAL database read-only only through an existing -wal and -shm, which it cannot create in a
    folder it may not write ('unable to open database file'). Without them no writer has the file open and every
    commit is in the file itself: it is opened immutable (no -shm, no locks)."""
    wal = all(Path(f"{path}{suffix}").exists() for suffix in ("-wal", "-shm"))
    return path.resolve().as_uri() + ("?mode=ro" if wal else "?mode=ro&immutable=1")


# Columns that only ever grow while a run is recorded in batches.
_ASSIGN = {"best_val_accuracy": "best_val_accuracy = MAX(COALESCE(best_val_accuracy, 0), ?)"}
