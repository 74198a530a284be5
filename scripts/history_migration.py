"""Upgrade a copy of an older run history (schema 1, 2 or 3) to this version's, timed, then compare every event.

    .venv/bin/python scripts/history_migration.py OLD.sqlite [--keep COPY.sqlite]

Method: OLD is copied (it is never changed); the copy is opened for writing, which upgrades it (the steps move into
columns, a long run's levels are built), and the time of that open is printed with the sizes before and after. Then
every run's events are read back from the copy and compared, event by event and in order, with the old file's rows
as this version reads a row (`to_json(from_json(row))`): any difference is printed and the exit status is 1.
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from workbench.core.ground.events import from_json, to_json  # noqa: E402
from workbench.core.history.runs import RunStore  # noqa: E402
from workbench.core.history.schema import SCHEMA_VERSION  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old", type=Path)
    parser.add_argument("--keep", type=Path, default=None, help="where the upgraded copy goes (default: a temp file)")
    args = parser.parse_args()
    copy = args.keep or Path(tempfile.mkdtemp(prefix="workbench-migration-")) / "history.sqlite"
    for suffix in ("", "-wal", "-shm"):
        if Path(f"{args.old}{suffix}").exists():
            shutil.copyfile(f"{args.old}{suffix}", f"{copy}{suffix}")
    before = _size(copy)
    with contextlib.closing(sqlite3.connect(copy)) as raw:
        version = raw.execute("PRAGMA user_version").fetchone()[0]
        run_ids = [row[0] for row in raw.execute("SELECT id FROM runs ORDER BY id")]
    print(__doc__.split("Method: ", 1)[1].strip(), "\n")
    started = time.perf_counter()
    RunStore(copy, recover=False).close()
    took = time.perf_counter() - started
    print(f"upgraded schema {version} → {SCHEMA_VERSION}: {len(run_ids):,} runs in {took:.1f} s; "
          f"{before / 1e6:,.0f} MB → {_size(copy) / 1e6:,.0f} MB on disk")
    differences = events = 0
    with contextlib.closing(sqlite3.connect(f"{args.old.resolve().as_uri()}?mode=ro", uri=True)) as old, \
            RunStore(copy, recover=False) as store:
        for run_id in run_ids:
            expected = [to_json(from_json(row[0])) for row in old.execute(
                "SELECT data FROM events WHERE run_id = ? ORDER BY seq", (run_id,))]
            found = [to_json(event) for event in store.get(run_id, with_events=True).events]
            events += len(expected)
            if found != expected:
                differences += 1
                at = next((i for i, (a, b) in enumerate(zip(found, expected)) if a != b), min(len(found),
                                                                                             len(expected)))
                print(f"run #{run_id}: event {at} differs ({len(found)} events read, {len(expected)} before)")
    print(f"compared {events:,} events of {len(run_ids):,} runs: "
          + ("every one the same, in order" if not differences else f"{differences} runs differ"))
    return 1 if differences else 0


def _size(db: Path) -> int:
    return sum(path.stat().st_size for path in db.parent.glob(db.name + "*"))


if __name__ == "__main__":
    sys.exit(main())
