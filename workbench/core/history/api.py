"""The run history from a notebook or a script: runs listed and filtered with the query language of `workbench runs
--where`, their settings and results, and their steps as a table (pandas when it is installed, else a dict of numpy
arrays). Read-only, and safe beside a window or a run writing the same history: nothing is ever written, not even
an upgrade of an older history (it is read as it is).

    from workbench.api import open_history

    with open_history() as history:                      # the default history, or open_history("runs.sqlite")
        for run in history.runs("backend=inductor acc>0.9"):
            steps = run.steps()                         # step, epoch, loss, accuracy, samples_per_s, …
            print(run.label, run.results.best_val_accuracy, steps["loss"][-1])
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..ground.events import EpochEnd
from ..ground.results import RunResults
from .naming import run_name
from .query import parse_query
from .runs import RunRecord, RunStore
from .step_columns import FLAGS, FLOATS, OPTIONAL

STEP_COLUMNS = ("step", "epoch", *FLOATS, *FLAGS)  # a run's steps() table, in this order


@dataclass(frozen=True)
class HistoryRun:
    """One run as the history keeps it: what the Runs dock lists, and its data on demand."""

    id: int
    name: str  # the user's name for it ("" when none was given)
    status: str
    created: str  # ISO 8601, UTC
    settings: dict[str, Any]  # its TrainConfig, as a plain dict
    tags: tuple[str, ...]
    notes: str
    host: str
    history: "History" = field(repr=False, compare=False)

    @property
    def label(self) -> str:
        """'#7', or '#7 warm-up' when it has a name: what the window calls it."""
        return f"{run_name(self.id)} {self.name}".strip()

    @property
    def results(self) -> RunResults | None:
        """What it measured, as it ended (None: it did not finish)."""
        return self.history.store.get(self.id, with_events=True, steps=False).results

    def steps(self):
        """Every step: STEP_COLUMNS, one row a step (a value a step did not record is NaN). A pandas DataFrame when
        pandas is installed, else a dict of numpy arrays."""
        block = self.history.store.step_block(self.id)
        table: dict[str, np.ndarray] = {"step": block.step, "epoch": block.epoch}
        for name in FLOATS:
            values = block.values[name]
            table[name] = np.where(block.present[name], values, np.nan) if name in OPTIONAL else values
        table.update(block.flags)
        return _frame(table)

    def epochs(self):
        """Every epoch's end: epoch, train_loss, val_loss, val_accuracy, seconds (a DataFrame, or a dict)."""
        ends = [e for e in self.history.store.get(self.id, with_events=True, steps=False).events
                if isinstance(e, EpochEnd)]
        return _frame({name: np.array([getattr(e, name) for e in ends], dtype=np.int64 if name == "epoch" else float)
                       for name in ("epoch", "train_loss", "val_loss", "val_accuracy", "seconds")})


class History:
    """A run history opened for reading (`open_history`); close it, or use it in a `with` block."""

    def __init__(self, path: str | Path | None = None):
        self.store = RunStore(path, recover=False, reading=True)

    @property
    def path(self) -> Path:
        return self.store.path

    def runs(self, where: str = "") -> list[HistoryRun]:
        """The runs that match `where` (the query language of `workbench runs --where` and the Runs dock's box:
        'backend=inductor acc>0.9 tag:baseline'), oldest first. A query it cannot read raises QueryError, which
        says what and where."""
        return [self._run(record) for record in self._matching(where)]

    def run(self, run_id: int) -> HistoryRun:
        """The run with this id ('#7' is 7); RunStoreError when there is none."""
        return self._run(self.store.get(run_id))

    def table(self, where: str = ""):
        """One row a matching run: id, name, status, created, its results' figures and every setting (as
        `settings.NAME`). A DataFrame, or a dict of lists."""
        records = self._matching(where)
        keys = list(dict.fromkeys(key for record in records for key in record.config))
        table: dict[str, list] = {column: [] for column in (*SUMMARY, *(f"settings.{key}" for key in keys))}
        for record in records:
            for column in SUMMARY:
                table[column].append(getattr(record, column))
            for key in keys:
                table[f"settings.{key}"].append(record.config.get(key))
        return _frame(table)

    def _matching(self, where: str) -> list[RunRecord]:
        query = parse_query(where)  # read once: QueryError for a term it cannot read, before any row
        return [record for record in self.store.list() if query.matches(record)]

    def _run(self, record: RunRecord) -> HistoryRun:
        return HistoryRun(id=record.id, name=record.name, status=record.status, created=record.created,
                          settings=dict(record.config), tags=record.tags, notes=record.notes, host=record.host,
                          history=self)

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> "History":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


SUMMARY = ("id", "name", "status", "created", "steps", "best_val_accuracy", "samples_per_s", "compile_seconds",
           "peak_memory_mib")  # a run's row in History.table, before its settings


def open_history(path: str | Path | None = None) -> History:
    """The history at `path` (default: the one the window and the CLI use, or WORKBENCH_DB), read-only."""
    return History(path)


def _frame(table: dict):
    """A pandas DataFrame of `table` when pandas is installed, else `table` itself."""
    try:
        import pandas
    except ImportError:
        return table
    return pandas.DataFrame(table)
