"""The Python API (workbench.api): runs listed with the query language, their steps, epochs and results as a table,
read-only beside a writer, and an older history read as it is (never upgraded by a reader)."""

from __future__ import annotations

import contextlib
import shutil
import sqlite3
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from workbench.api import STEP_COLUMNS, QueryError, RunStoreError, open_history
from workbench.core.ground.config import TrainConfig
from workbench.core.ground.events import EpochEnd, MemorySample, RunFinished, Step
from workbench.core.ground.results import RunResults
from workbench.core.history.runs import RunStore

PREVIOUS = Path(__file__).parents[1] / "data" / "previous-release" / "runs.sqlite"


def _step(n: int) -> Step:
    return Step(step=n, epoch=1, loss=1.0 / n, samples_per_s=100.0 * n, step_seconds=0.01,
                memory=MemorySample(rss=500.0), accuracy=None if n == 1 else n / 10)


@pytest.fixture
def db(tmp_path):
    path = tmp_path / "runs.sqlite"
    with RunStore(path) as store:
        for backend, accuracy in (("eager", 0.8), ("inductor", 0.95)):
            run_id = store.start_run(TrainConfig(backend=backend).to_dict())
            results = RunResults(best_val_accuracy=accuracy, backend_used=backend)
            end = RunFinished(steps=3, epochs=1, seconds=1.0, stopped=False, results=results)
            store.append_events(run_id, 0, [_step(1), _step(2), EpochEnd(epoch=1, train_loss=0.5, val_loss=0.6,
                                                                         val_accuracy=accuracy, seconds=1.0),
                                            _step(3), end],
                                {"status": "finished", "best_val_accuracy": accuracy})
        store.rename(2, "compiled")
    return path


def test_runs_are_filtered_with_the_query_language_and_read_as_tables(db):
    with open_history(db) as history:
        assert [run.label for run in history.runs()] == ["#1", "#2 compiled"]
        [run] = history.runs("backend=inductor acc>0.9")
        assert run.settings["backend"] == "inductor" and run.results.best_val_accuracy == 0.95
        steps = run.steps()  # a DataFrame with pandas, a dict of numpy arrays without: read alike
        assert list(steps) == list(STEP_COLUMNS)
        assert steps["step"].tolist() == [1, 2, 3] and steps["samples_per_s"].tolist() == [100.0, 200.0, 300.0]
        assert np.isnan(steps["accuracy"][0]) and steps["accuracy"][1:].tolist() == [0.2, 0.3]  # None → NaN
        assert run.epochs()["val_accuracy"].tolist() == [0.95]
        table = history.table("status=finished")
        assert list(table["id"]) == [1, 2] and list(table["settings.backend"]) == ["eager", "inductor"]
        with pytest.raises(QueryError, match="acc>"):
            history.runs("acc>")
        with pytest.raises(RunStoreError, match="no run with id 9"):
            history.run(9)


def test_tables_are_data_frames_where_pandas_is_installed(db, monkeypatch):
    made = []
    monkeypatch.setitem(sys.modules, "pandas", types.SimpleNamespace(DataFrame=lambda table: made.append(table)
                                                                      or "a frame"))
    with open_history(db) as history:
        assert history.run(1).steps() == "a frame" and made[0]["step"].tolist() == [1, 2, 3]


def test_reading_writes_nothing_and_sees_what_a_writer_commits(db):
    with open_history(db) as history, RunStore(db) as writer:
        run = history.run(1)
        writer.append_events(1, 5, [_step(4)])  # a run writing while a notebook reads
        assert run.steps()["step"].tolist() == [1, 2, 3, 4]
        with pytest.raises(sqlite3.OperationalError):  # the reader's connection cannot write
            history.store.db.execute("UPDATE runs SET name = 'x'")


def test_an_older_history_is_read_as_it_is_never_upgraded(tmp_path):
    path = tmp_path / "runs.sqlite"
    shutil.copyfile(PREVIOUS, path)
    with open_history(path) as history:
        steps = history.run(1).steps()
        assert steps["step"].tolist() == list(range(1, 41))
        others = history.store.get(1, with_events=True, steps=False).events  # its steps are events there
        assert others and not any(isinstance(event, Step) for event in others)
    with contextlib.closing(sqlite3.connect(path)) as raw:
        assert raw.execute("PRAGMA user_version").fetchone()[0] == 2


def test_a_history_that_is_not_there_says_so(tmp_path):
    with pytest.raises(RunStoreError, match="there is no run history at"):
        open_history(tmp_path / "nope.sqlite")
    assert not (tmp_path / "nope.sqlite").exists()
