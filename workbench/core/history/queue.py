"""The queue of runs, kept in the run history (torch-free): experiments lined up to train one after another, here or
on a host, worked by a runner that needs no window (run/queue_worker.py), and surviving a crash of either.

An entry is a TrainConfig, where it trains ("" for this computer, else a host as `Remote` names it, with its
Python), and a label. A sweep's trial is an entry too (`sweep` names the sweep): its settings are asked of the sweep's
study when it starts, so each trial learns from the trials that ended before it (run/sweep.py).

Its states: queued → running → finished | failed | cancelled, and `interrupted` for a running entry whose runner is
gone (killed, or the machine rebooted): retried, it is queued again. Each runner claims the first queued entry of
its place in one write transaction (BEGIN IMMEDIATE), so two runners (two windows, a window and `workbench queue
work`) never start the same entry. A runner is named by its machine, boot and pid: a pid alive after a reboot is
another process, and its entries are interrupted.

The tables are created on first use, outside the history's schema version: an older Workbench, which does not know
them, opens the history as before and leaves them alone."""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

from ..ground.codec import Record
from ..ground.config import TrainConfig
from ..ground.errors import WorkbenchError
from ..ground.processes import process_alive
from .naming import differing_settings, setting_text
from .queue_eta import estimate_seconds
from .runs import BUSY_TIMEOUT_S, RunStore, RunStoreError, default_db_path

QUEUED, RUNNING, FINISHED, FAILED, CANCELLED, INTERRUPTED = (
    "queued", "running", "finished", "failed", "cancelled", "interrupted")
ENDED = (FINISHED, FAILED, CANCELLED, INTERRUPTED)
HERE = ""  # an entry's place: this computer

TABLES = """
CREATE TABLE IF NOT EXISTS queue (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    position REAL NOT NULL,            -- the order: lowest first
    state TEXT NOT NULL,               -- queued | running | finished | failed | cancelled | interrupted
    place TEXT NOT NULL DEFAULT '',    -- '' this computer, else the host ([user@]host[:port])
    python TEXT NOT NULL DEFAULT 'python3',  -- the host's Python that has Workbench
    config TEXT NOT NULL,              -- TrainConfig JSON
    label TEXT NOT NULL DEFAULT '',
    sweep TEXT NOT NULL DEFAULT '',    -- a sweep's trial: the sweep's name (its settings asked of the study then)
    handed TEXT NOT NULL DEFAULT '',   -- handed over to its host's own queue: that queue's key and its index there
    across TEXT NOT NULL DEFAULT '',   -- a host set's entry (place: its hosts, by commas): AcrossHosts JSON
    runner TEXT NOT NULL DEFAULT '',   -- machine:boot:pid of the runner working it
    cancel INTEGER NOT NULL DEFAULT 0, -- asked to cancel while running
    run_id INTEGER,                    -- its run in the history, once it has one
    best_val_accuracy REAL,
    error TEXT NOT NULL DEFAULT '',
    created REAL NOT NULL,
    started REAL,
    ended REAL
);
CREATE TABLE IF NOT EXISTS queue_control (name TEXT PRIMARY KEY, value TEXT NOT NULL);
"""
# Added to a queue made before they were:
ADDED_COLUMNS = {column: "TEXT NOT NULL DEFAULT ''" for column in ("sweep", "handed", "across")}


class QueueError(WorkbenchError):
    kind = "config"


@dataclass(frozen=True)
class AcrossHosts(Record):
    """How an entry for a set of hosts trains: `processes` a host, meeting at `port` on the first (as
    `workbench train --hosts` does: the preflight first, then one torchrun a host)."""

    processes: int = 1
    port: int = 29500


@dataclass(frozen=True)
class QueueEntry(Record):
    id: int
    position: float
    state: str
    place: str
    config: TrainConfig
    python: str = "python3"
    label: str = ""
    sweep: str = ""
    handed: str = ""
    across: AcrossHosts | None = None
    runner: str = ""
    cancel: bool = False
    run_id: int | None = None
    best_val_accuracy: float | None = None
    error: str = ""
    created: float = 0.0
    started: float | None = None
    ended: float | None = None

    @property
    def where(self) -> str:
        return self.place or "this computer"

    @property
    def hosts(self) -> list[str]:
        """The hosts it trains on: none for this computer, one, or a host set's."""
        return self.place.split(",") if self.place else []

    @property
    def title(self) -> str:
        """Its label, or what it trains: the settings it changes from the defaults ("the defaults" when none)."""
        if self.label:
            return self.label
        config, defaults = self.config.to_dict(), TrainConfig().to_dict()
        changed = differing_settings([defaults, config])
        return " · ".join(setting_text(key, config[key]) for key in changed) or "the defaults"


def this_runner() -> str:
    """machine:boot:pid — who works an entry, and whether it still does."""
    return f"{socket.gethostname()}:{_boot_id()}:{os.getpid()}"


def runner_alive(runner: str) -> bool:
    """Whether the runner that claimed an entry still runs: on this machine, since this boot, its pid alive. A
    runner of another machine (a history on a shared disk) is taken as alive: only its own machine can tell."""
    machine, boot, pid = (runner.rsplit(":", 2) + ["", ""])[:3]
    if machine != socket.gethostname():
        return True
    return boot == _boot_id() and pid.isdigit() and process_alive(int(pid))


class RunQueue:
    """The queue of the history at `path` (the default history without one). One connection per object."""

    def __init__(self, path: str | Path | None = None):
        """A connection of its own, without the history's upgrade or recovery (RunStore's): the window opens the
        queue at once, and a history being upgraded is the Runs dock's to wait for."""
        self.path = Path(path) if path else default_db_path()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None,
                                      check_same_thread=False)
        except (sqlite3.DatabaseError, OSError) as exc:
            raise QueueError(f"cannot open the queue in {self.path}: {exc}",
                             "check the folder's permissions, or point --db / WORKBENCH_DB elsewhere") from None
        try:
            self.db.row_factory = sqlite3.Row
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.executescript(TABLES)
            have = {row[1] for row in self.db.execute("PRAGMA table_info(queue)")}
            for column, kind in ADDED_COLUMNS.items():
                if column not in have:
                    self.db.execute(f"ALTER TABLE queue ADD COLUMN {column} {kind}")
        except sqlite3.DatabaseError as exc:
            self.db.close()
            raise QueueError(f"cannot use the queue in {self.path}: {exc}",
                             "is it a Workbench history? point --db / WORKBENCH_DB at one") from None

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> RunQueue:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- reading -------------------------------------------------------------------------------------------------
    def entries(self) -> list[QueueEntry]:
        """Every entry, in the queue's order (the ended ones too: what ran, and how)."""
        self.recover()
        return [_entry(row) for row in self.db.execute("SELECT * FROM queue ORDER BY position, id")]

    def entry(self, entry_id: int) -> QueueEntry:
        row = self.db.execute("SELECT * FROM queue WHERE id = ?", (entry_id,)).fetchone()
        if row is None:
            raise QueueError(f"the queue has no entry {entry_id}", "workbench queue ls lists them")
        return _entry(row)

    def estimates(self, entries: list[QueueEntry]) -> dict[int, float | None]:
        """Each queued or running entry's seconds of training, from what the history has measured (queue_eta.py)."""
        return {entry.id: estimate_seconds(self.db, entry.config) for entry in entries
                if entry.state in (QUEUED, RUNNING)}

    @property
    def paused(self) -> bool:
        row = self.db.execute("SELECT value FROM queue_control WHERE name = 'paused'").fetchone()
        return row is not None and row[0] == "1"

    # -- changing ------------------------------------------------------------------------------------------------
    def add(self, config: TrainConfig, *, place: str = HERE, python: str = "python3", label: str = "",
            sweep: str = "", across: AcrossHosts | None = None) -> int:
        """Queue `config` last, for `place` (a host as str(Remote) names it, with its `python`); its id. `sweep`: a
        trial of that sweep (`config` is its base settings until the study says the trial's). `across`: `place` is
        a set of hosts (their names joined by commas), trained across them so."""
        if across is None and "," in place:
            raise QueueError(f"{place} is several hosts", "say how a run trains across them (AcrossHosts)")
        with self._writing():
            last = self.db.execute("SELECT COALESCE(MAX(position), 0) FROM queue").fetchone()[0]
            cursor = self.db.execute(
                "INSERT INTO queue (position, state, place, python, config, label, sweep, across, created) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (last + 1, QUEUED, place, python, config.to_json(), label, sweep,
                 json.dumps(across.to_dict()) if across else "", time.time()))
        return cursor.lastrowid

    def pending(self, sweep: str) -> list[QueueEntry]:
        """The queued and running trials of `sweep`."""
        return [_entry(row) for row in self.db.execute(
            "SELECT * FROM queue WHERE sweep = ? AND state IN (?, ?) ORDER BY position, id", (sweep, QUEUED, RUNNING))]

    def update(self, entry_id: int, config: TrainConfig) -> None:
        """A queued entry's settings, changed (Edit in the Queue dock); one that has started keeps its own."""
        entry = self.entry(entry_id)
        if entry.state != QUEUED:
            raise QueueError(f"entry {entry_id} is {entry.state}: only a queued entry is edited",
                             "queue the form's settings as a new entry instead")
        with self._writing():
            self.db.execute("UPDATE queue SET config = ? WHERE id = ? AND state = ?", (config.to_json(), entry_id,
                                                                                      QUEUED))

    def remove(self, entry_id: int) -> None:
        """Take an entry out; a running one is cancelled first (`cancel`)."""
        if self.entry(entry_id).state == RUNNING:
            raise QueueError(f"entry {entry_id} is running", f"cancel it first: workbench queue cancel {entry_id}")
        with self._writing():
            self.db.execute("DELETE FROM queue WHERE id = ?", (entry_id,))

    def move(self, entry_id: int, index: int) -> None:
        """Put a queued entry at `index` (0: next) among the queued ones."""
        entry = self.entry(entry_id)
        if entry.state != QUEUED:
            raise QueueError(f"entry {entry_id} is {entry.state}: only a queued entry moves")
        with self._writing():
            others = [row[0] for row in self.db.execute(
                "SELECT position FROM queue WHERE state = ? AND id != ? ORDER BY position, id", (QUEUED, entry_id))]
            index = max(0, min(index, len(others)))
            before = others[index - 1] if index > 0 else (others[0] - 2 if others else 0)
            after = others[index] if index < len(others) else before + 2
            self.db.execute("UPDATE queue SET position = ? WHERE id = ?", ((before + after) / 2, entry_id))

    def cancel(self, entry_id: int) -> str:
        """A queued entry is cancelled at once; a running one is asked to stop after its step (its runner sees the
        request and ends it as cancelled). The entry's state after."""
        with self._writing():
            self.db.execute("UPDATE queue SET state = ?, ended = ? WHERE id = ? AND state = ?",
                            (CANCELLED, time.time(), entry_id, QUEUED))
            self.db.execute("UPDATE queue SET cancel = 1 WHERE id = ? AND state = ?", (entry_id, RUNNING))
        return self.entry(entry_id).state

    def retry(self, entry_id: int) -> None:
        """Queue an ended entry again (not a finished one: queue its settings anew for that), at its place."""
        entry = self.entry(entry_id)
        if entry.state not in (FAILED, CANCELLED, INTERRUPTED):
            raise QueueError(f"entry {entry_id} is {entry.state}: only a failed, cancelled or interrupted entry is "
                             "retried")
        with self._writing():
            self.db.execute("UPDATE queue SET state = ?, runner = '', cancel = 0, error = '', handed = '', "
                            "started = NULL, ended = NULL WHERE id = ?", (QUEUED, entry_id))

    def resume(self, entry_id: int) -> str:
        """Queue an interrupted or cancelled entry again to go on from its run's checkpoint: its run continued, to
        the end it was set for. The checkpoint's path; a QueueError when there is none to go on from."""
        entry = self.entry(entry_id)
        if entry.state not in (CANCELLED, INTERRUPTED) or entry.run_id is None:
            raise QueueError(f"entry {entry_id} is {entry.state}" + (", with no run" if entry.run_id is None else "")
                             + ": only an interrupted or cancelled entry whose run started goes on from its checkpoint",
                             f"retry it instead: workbench queue retry {entry_id}")
        if entry.sweep:
            raise QueueError(f"entry {entry_id} is a sweep's trial: its study asks a new trial's settings",
                             f"retry it instead: workbench queue retry {entry_id}")
        try:
            with RunStore(self.path, recover=False) as store:
                checkpoint = store.get(entry.run_id, steps=False).checkpoint
        except RunStoreError as exc:
            raise QueueError(f"cannot read run #{entry.run_id}: {exc}", exc.hint) from None
        if not checkpoint:
            raise QueueError(f"run #{entry.run_id} of entry {entry_id} kept no checkpoint",
                             f"retry it: it trains from the start (workbench queue retry {entry_id})")
        self.retry(entry_id)
        with self._writing():
            self.db.execute("UPDATE queue SET config = ? WHERE id = ?",
                            (entry.config.replace(resume=checkpoint).to_json(), entry_id))
        return checkpoint

    def pause(self, paused: bool = True) -> None:
        """No entry starts while paused; the running ones go on."""
        with self._writing():
            self.db.execute("INSERT OR REPLACE INTO queue_control (name, value) VALUES ('paused', ?)",
                            ("1" if paused else "0",))

    # -- working (run/queue_worker.py) ---------------------------------------------------------------------------
    def claim(self, place: str = HERE, runner: str | None = None, device: str = "") -> QueueEntry | None:
        """The first queued entry of `place`, now running under `runner` (this process): atomically, so that no
        other runner claims it too. `device`: the CUDA device the runner's slot holds ("cuda:1"); an entry that
        asks for another CUDA device by its index is left to that device's runner. None when there is none, or
        the queue is paused."""
        runner = runner or this_runner()
        with self._writing():
            if self.paused:
                return None
            rows = self.db.execute("SELECT id, config FROM queue WHERE state = ? AND place = ? ORDER BY position, id",
                                   (QUEUED, place))
            chosen = next((row[0] for row in rows if fits_device(json.loads(row[1]).get("device", ""), device)), None)
            if chosen is None:
                return None
            self.db.execute("UPDATE queue SET state = ?, runner = ?, started = ? WHERE id = ?",
                            (RUNNING, runner, time.time(), chosen))
        return self.entry(chosen)

    def take_for_host(self, place: str) -> list[QueueEntry]:
        """The queued entries of the host `place`, taken to hand over to its own queue (run/queue_handover.py):
        running under this process until `handed` (or `not_handed`) says how it went. A sweep's trials stay: their
        study is here, and asks each trial's settings as it starts."""
        with self._writing():
            ids = [row[0] for row in self.db.execute(
                "SELECT id FROM queue WHERE state = ? AND place = ? AND sweep = '' ORDER BY position, id",
                (QUEUED, place))]
            self.db.executemany("UPDATE queue SET state = ?, runner = ?, started = ? WHERE id = ?",
                                [(RUNNING, this_runner(), time.time(), entry_id) for entry_id in ids])
        return [self.entry(entry_id) for entry_id in ids]

    def handed(self, ids: list[int], host_queue: str) -> None:
        """Entries `ids` are the requests of the host's queue `host_queue`, in that order: the host trains them."""
        with self._writing():
            self.db.executemany("UPDATE queue SET handed = ?, runner = '' WHERE id = ?",
                                [(f"{host_queue}:{index}", entry_id) for index, entry_id in enumerate(ids)])

    def not_handed(self, ids: list[int]) -> None:
        """The host could not take them: queued again, as they were."""
        with self._writing():
            self.db.executemany("UPDATE queue SET state = ?, runner = '', started = NULL "
                                "WHERE id = ? AND handed = ''", [(QUEUED, entry_id) for entry_id in ids])

    def with_host(self, place: str) -> list[QueueEntry]:
        """The entries of `place` its host trains (handed over, not yet known to have ended), in queue order."""
        return [_entry(row) for row in self.db.execute(
            "SELECT * FROM queue WHERE state = ? AND place = ? AND handed != '' ORDER BY position, id",
            (RUNNING, place))]

    def cancel_asked(self, entry_id: int) -> bool:
        row = self.db.execute("SELECT cancel FROM queue WHERE id = ?", (entry_id,)).fetchone()
        return row is None or bool(row[0])  # removed meanwhile: nothing to work for

    def trains(self, entry_id: int, config: TrainConfig, label: str) -> None:
        """A sweep's trial, started: the settings the study asked for, and which trial it is."""
        with self._writing():
            self.db.execute("UPDATE queue SET config = ?, label = ? WHERE id = ?", (config.to_json(), label, entry_id))

    def ended(self, entry_id: int, state: str, *, run_id: int | None = None, best: float | None = None,
              error: str = "") -> None:
        with self._writing():
            self.db.execute("UPDATE queue SET state = ?, run_id = COALESCE(?, run_id), best_val_accuracy = ?, "
                            "error = ?, ended = ?, cancel = 0 WHERE id = ?",
                            (state, run_id, best, error, time.time(), entry_id))

    def recover(self) -> list[int]:
        """Running entries whose runner is gone (killed, a crash, a reboot) become interrupted; their ids."""
        rows = self.db.execute("SELECT id, runner FROM queue WHERE state = ? AND handed = ''",
                               (RUNNING,)).fetchall()  # (a handed entry's runner is its host's queue)
        gone = [row[0] for row in rows if not runner_alive(row[1])]
        if gone:
            with self._writing():
                self.db.executemany("UPDATE queue SET state = ?, ended = ?, error = ? WHERE id = ? AND state = ?",
                                    [(INTERRUPTED, time.time(), "its runner stopped while it trained (killed, a "
                                      "crash or a reboot)", entry_id, RUNNING) for entry_id in gone])
        return gone

    def _writing(self):
        return _Transaction(self.db)


class _Transaction:
    """BEGIN IMMEDIATE … COMMIT (ROLLBACK on an error): one writer at a time, every reader seeing all or none."""

    def __init__(self, db: sqlite3.Connection):
        self.db = db

    def __enter__(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")

    def __exit__(self, kind, *exc) -> None:
        self.db.execute("ROLLBACK" if kind else "COMMIT")


def fits_device(asked: str, held: str) -> bool:
    """Whether an entry asking for device `asked` trains on a runner's slot that holds `held` ("" holds none, and
    takes any entry): only an entry naming a CUDA device by its index is bound to that device's slot."""
    return not held or not asked.startswith("cuda:") or asked == held


def state_changes(before: dict[int, str], entries: list[QueueEntry]) -> tuple[list[QueueEntry], list[QueueEntry]]:
    """The entries that started and those that ended since the queue was read with `before` (each entry's state
    then); an entry first seen already ended ended before that read."""
    started = [e for e in entries if e.state == RUNNING and before.get(e.id) != RUNNING]
    ended = [e for e in entries if e.state in ENDED and e.id in before and before[e.id] != e.state]
    return started, ended


def _entry(row: sqlite3.Row) -> QueueEntry:
    data = dict(row)
    across = AcrossHosts.from_dict(json.loads(data["across"])) if data["across"] else None
    return QueueEntry(**{**data, "config": TrainConfig.from_json(data["config"]), "cancel": bool(data["cancel"]),
                         "across": across})


def _boot_id() -> str:
    """This boot's id (Linux); "" elsewhere, where a pid alone says whether the runner lives."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()[:8]
    except OSError:
        return ""
