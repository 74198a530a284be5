"""What `workbench runs` prints of each run, read from the columns it prints and nothing else.

Listing 20,000 runs as RunRecords decoded 40,000 JSON documents (every run's settings and tags) and checked sixteen
columns a row: 0.7 s. A listing without a query needs none of the settings but the model, which schema 4 keeps as a
column: it reads eleven plain columns, and a run's tags only when it has some. A query (`--where`) may name any
setting: its runs are read as records and listed the same way (`listed`).
"""

from __future__ import annotations

import socket
import sqlite3
from dataclasses import dataclass

from ..ground.config import setup_label
from .naming import model_name
from .query import Query
from .records import RunRecord, tags_of
from .runs import RunStore

_COLUMNS = ("id", "name", "created", "dataset", "model", "backend", "mode", "amp", "epochs", "best_val_accuracy",
            "samples_per_s", "status", "host", "archived", "tags")


@dataclass(frozen=True)
class ListedRun:
    """One line of a listing."""

    id: int
    name: str
    created: str
    dataset: str
    model: str  # as shown: 'Sandwich', 'net.py:Net'
    setup: str  # setup_label: 'inductor · max-autotune · bf16'
    epochs: str
    best_val_accuracy: float | None
    samples_per_s: float | None
    status: str  # 'damaged' for a row this version cannot read in full
    elsewhere: str  # the host it trained on when not this computer
    archived: bool
    tags: tuple[str, ...]


def listed(record: RunRecord) -> ListedRun:
    """A run read in full, as a listing shows it (a damaged row's settings may hold anything: shown as text)."""
    c = record.config
    return ListedRun(id=record.id, name=record.name, created=record.created, dataset=str(c.get("dataset", "—")),
                     model=model_name(str(c.get("model", "sandwich"))) if c else "—",
                     setup=setup_label(c) if c else "—", epochs=str(c.get("epochs", "—")),
                     best_val_accuracy=record.best_val_accuracy, samples_per_s=record.samples_per_s,
                     status=record.status, elsewhere=record.elsewhere, archived=record.archived, tags=record.tags)


def list_runs(store: RunStore, query: Query) -> tuple[list[ListedRun], int]:
    """The runs `query` matches, and how many runs the history holds."""
    if not query.empty or "model" not in store.run_columns:  # (an older history read as it is has no model column)
        records = store.list(environment=False)
        return [listed(r) for r in records if query.matches(r)], len(records)
    try:
        rows = store.db.execute(f"SELECT {', '.join(_COLUMNS)}, substr(config, 1, 1) || substr(config, -1, 1) "
                                f"FROM runs ORDER BY id").fetchall()
    except sqlite3.DatabaseError as exc:
        raise store.database_error(exc) from None
    here = socket.gethostname()
    return [_listed_row(tuple(row), here) for row in rows], len(rows)


def _listed_row(row: tuple, here: str) -> ListedRun:
    """A row of _COLUMNS (and its config's first and last character) as a line; what is not of its column's type
    (a row this version did not write) is left out and the run said to be damaged, as RunRecord does."""
    (run_id, name, created, dataset, model, backend, mode, amp, epochs, best, speed, status, host, archived,
     tags, ends) = row
    damaged = ends != "{}" or not all(type(v) is str for v in (name, created, dataset, model, backend, mode, amp,
                                                               status, host))
    numbers = []
    for value in (best, speed):
        good = value is None or type(value) in (int, float) and value == value
        damaged |= not good
        numbers.append(value if good else None)
    words = tags_of(tags)
    damaged |= words is None
    return ListedRun(id=run_id, name=str(name), created=str(created), dataset=str(dataset),
                     model=model_name(str(model)), setup=setup_label({"backend": backend, "mode": mode, "amp": amp}),
                     epochs=str(epochs), best_val_accuracy=numbers[0], samples_per_s=numbers[1],
                     status="damaged" if damaged else status, elsewhere=host if host and host != here else "",
                     archived=bool(archived), tags=words or ())

