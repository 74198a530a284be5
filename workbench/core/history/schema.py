"""The run history's tables, and what brings a history of an earlier version's up to this one's.

Schema 1: runs and their events (JSON rows). Schema 2: the user's words about a run (name, note, tags, archive)
and its size on disk. Schema 3: a run's steps as typed columns, one compressed block per recorded batch
(step_columns.py), the other events staying JSON rows; an older history's steps move into blocks on its first
writable open, run by run, saying how far it has got (a history of thousands of runs takes tens of seconds).
Schema 4: a long run's steps at coarser levels too (step_levels.py: a min/max pyramid, chunked), built on upgrade for
every run that has ended; and its model as a column, so that a listing reads no JSON (listing.py).
"""

from __future__ import annotations

import json
import sqlite3
import sys
import time
from typing import Callable

from ..ground.events import Step, from_dict

SCHEMA_VERSION = 4
STEPS_AS_COLUMNS = 3  # the first schema that keeps steps as columns: an older one's steps move on upgrade
MIGRATED_BLOCK = 4096  # steps a block holds when an older history's steps are moved into blocks

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created TEXT NOT NULL,
    updated TEXT NOT NULL,
    status TEXT NOT NULL,              -- running | finished | stopped | failed | interrupted
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    config TEXT NOT NULL,              -- TrainConfig JSON
    environment TEXT NOT NULL DEFAULT '{}',
    dataset TEXT NOT NULL,
    backend TEXT NOT NULL,
    mode TEXT NOT NULL,
    amp TEXT NOT NULL,
    epochs INTEGER NOT NULL,
    steps INTEGER NOT NULL DEFAULT 0,
    best_val_accuracy REAL,
    samples_per_s REAL,
    compile_seconds REAL,
    peak_memory_mib REAL,
    backend_used TEXT,
    failure TEXT,                      -- RunFailed as JSON
    out_dir TEXT,
    checkpoint TEXT,
    name TEXT NOT NULL DEFAULT '',
    notes TEXT NOT NULL DEFAULT '',    -- Markdown
    tags TEXT NOT NULL DEFAULT '[]',   -- a JSON list of words
    archived INTEGER NOT NULL DEFAULT 0,
    disk_bytes INTEGER,                -- the size of its folder (NULL: not measured, or not on this computer)
    model TEXT NOT NULL DEFAULT 'sandwich'  -- config's model, for a listing that reads no JSON
);
CREATE TABLE IF NOT EXISTS events (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    type TEXT NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS step_blocks (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    first_seq INTEGER NOT NULL,        -- the seq of its first step in the run's event stream
    first_step INTEGER NOT NULL,
    last_step INTEGER NOT NULL,
    count INTEGER NOT NULL,
    data BLOB NOT NULL,                -- step_columns.pack
    PRIMARY KEY (run_id, first_seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS step_levels (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    level INTEGER NOT NULL,            -- bins of 2**level steps
    first_step INTEGER NOT NULL,
    last_step INTEGER NOT NULL,
    count INTEGER NOT NULL,
    data BLOB NOT NULL,                -- step_columns.pack of the rows the level keeps
    PRIMARY KEY (run_id, level, first_step)
) WITHOUT ROWID;
"""
_BLOCKS_AT, _LEVELS_AT = (SCHEMA.index(f"CREATE TABLE IF NOT EXISTS {table}")
                          for table in ("step_blocks", "step_levels"))
STEP_BLOCKS, STEP_LEVELS = SCHEMA[_BLOCKS_AT:_LEVELS_AT], SCHEMA[_LEVELS_AT:]
# Every open looks for runs still "running" (mark_interrupted); the window looks a run up by its folder after each
# run, and a removal compares every run's folder: with thousands of runs neither should read the whole table.
INDEXES = """
CREATE INDEX IF NOT EXISTS runs_by_status ON runs (status);
CREATE INDEX IF NOT EXISTS runs_by_out_dir ON runs (out_dir);
"""
# What brings a history of schema N to N + 1, in place: its rows keep their ids, their events and their values.
MIGRATIONS = {
    1: """
ALTER TABLE runs ADD COLUMN name TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN notes TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN tags TEXT NOT NULL DEFAULT '[]';
ALTER TABLE runs ADD COLUMN archived INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN disk_bytes INTEGER;
""",
    2: STEP_BLOCKS,  # and the steps move from the events into it (_steps_into_blocks)
    3: STEP_LEVELS + """
ALTER TABLE runs ADD COLUMN model TEXT NOT NULL DEFAULT 'sandwich';
UPDATE runs SET model = json_extract(config, '$.model')
    WHERE json_valid(config) AND json_type(config, '$.model') = 'text';
""",  # and every ended run's levels are built (_levels_of_ended_runs)
}
READABLE_VERSIONS = (1, 2, 3, 4)  # schemas whose runs this version reads as they are (read-only: not migrated)


def upgrade(db: sqlite3.Connection, version: int, write_block: Callable[[int, list[int], list[Step]], None],
            what: str, say: Callable[[str], None] | None = None) -> bool:
    """Bring the history at `db` (in a transaction) from `version` to SCHEMA_VERSION, saying how far a long job has
    got (`say`: a line at a time; stderr without one); True when steps were moved into blocks (the file then has
    space to give back: `reclaim`)."""
    say = say or _on_stderr
    script = SCHEMA if version == 0 else "".join(MIGRATIONS[v] for v in range(version, SCHEMA_VERSION))
    for statement in (script + INDEXES).split(";"):  # (no statement holds a semicolon of its own)
        db.execute(statement)
    moved = 0 < version < STEPS_AS_COLUMNS and _steps_into_blocks(db, write_block, _Progress(
        f"{what}: steps as columns", say))
    if 0 < version < SCHEMA_VERSION:
        _levels_of_ended_runs(db, _Progress(f"{what}: levels of long runs", say))
    db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
    return moved


def _steps_into_blocks(db: sqlite3.Connection, write_block, progress: "_Progress") -> bool:
    """Schema 2 → 3: every run's Step events become blocks of columns, each step at its seq. A run whose steps
    cannot be read keeps its rows as they are. True when there were steps to move."""
    runs = [row[0] for row in db.execute("SELECT DISTINCT run_id FROM events WHERE type = 'Step'")]
    progress.total = len(runs)
    for done, run_id in enumerate(runs, 1):
        rows = db.execute("SELECT seq, data FROM events WHERE run_id = ? AND type = 'Step' ORDER BY seq",
                          (run_id,)).fetchall()
        try:
            steps = [from_dict(json.loads(data)) for _seq, data in rows]
        except (ValueError, TypeError, RecursionError):
            continue
        for start in range(0, len(rows), MIGRATED_BLOCK):
            write_block(run_id, [seq for seq, _data in rows[start:start + MIGRATED_BLOCK]],
                        steps[start:start + MIGRATED_BLOCK])
        db.execute("DELETE FROM events WHERE run_id = ? AND type = 'Step'", (run_id,))
        progress.at(done)
    progress.end()
    return bool(runs)


def _levels_of_ended_runs(db: sqlite3.Connection, progress: "_Progress") -> None:
    """Schema 3 → 4: the levels of every long run that has ended (one still training builds its own at its end)."""
    from .step_columns import joined, unpack  # numpy: not for a listing
    from .step_levels import LEAST_STEPS, write_levels

    runs = [row[0] for row in db.execute(
        "SELECT run_id FROM step_blocks JOIN runs ON runs.id = run_id WHERE status != 'running' "
        "GROUP BY run_id HAVING SUM(count) >= ?", (LEAST_STEPS,))]
    progress.total = len(runs)
    for done, run_id in enumerate(runs, 1):
        try:
            block = joined([unpack(blob) for (blob,) in db.execute(
                "SELECT data FROM step_blocks WHERE run_id = ? ORDER BY first_seq", (run_id,))])
        except ValueError:  # a damaged block: the run is read from its columns, and says what is wrong there
            continue
        write_levels(db, run_id, block)
        progress.at(done)
    progress.end()


def reclaim(db: sqlite3.Connection) -> None:
    """Give the disk back the space the moved steps' rows held (VACUUM: the file is rewritten). Another process
    holding the history open can keep it from happening now: then the space is reused by later runs."""
    try:
        db.execute("VACUUM")
    except sqlite3.DatabaseError:
        pass


class _Progress:
    """A line every few seconds while a long job goes on ("…: 400 of 2,000 runs"), and one at its end; nothing for
    a job that ends within the first interval."""

    INTERVAL_S = 2.0

    def __init__(self, what: str, say: Callable[[str], None]):
        self.what, self.say, self.total = what, say, 0
        self.started = self.said = time.monotonic()

    def at(self, done: int) -> None:
        now = time.monotonic()
        if now - self.said >= self.INTERVAL_S:
            self.said = now
            self.say(f"{self.what}: {done:,} of {self.total:,} runs")

    def end(self) -> None:
        if self.said != self.started:
            self.say(f"{self.what}: done, {self.total:,} runs in {time.monotonic() - self.started:.0f} s")


def _on_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
