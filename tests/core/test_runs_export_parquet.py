"""The run history as Parquet (`runs export --parquet`): the CSV's table, typed, read back by pyarrow and pandas as
they are; without pyarrow, one clear error and no file."""

from __future__ import annotations

import sys

import pytest

pq = pytest.importorskip("pyarrow.parquet")

from workbench.core.history.runs import RunStore  # noqa: E402
from workbench.core.history.runs_export import (PARQUET_HINT, RunsExportError, export_csv,  # noqa: E402
                                                export_parquet)

from ..support.runs_export import FINAL_METRICS, read_csv, record_history  # noqa: E402


@pytest.fixture
def store(tmp_path):
    record_history(tmp_path / "runs.sqlite")
    with RunStore(tmp_path / "runs.sqlite") as store:
        store.set_tags(1, ["best", "bf16"])
        yield store


def test_parquet_is_the_csvs_table_with_its_types(store, tmp_path):
    rows = export_parquet(store, None, tmp_path / "out" / "runs.parquet")
    table = pq.read_table(tmp_path / "out" / "runs.parquet")
    assert table.num_rows == rows == export_csv(store, None, tmp_path / "runs.csv")
    csv = read_csv(tmp_path / "runs.csv")
    assert table.column_names == list(csv[0])
    types = {name: str(table.schema.field(name).type) for name in table.column_names}
    assert (types["run_id"], types["step"], types["value"], types["tags"]) == ("int64", "int64", "double",
                                                                               "list<element: string>")
    assert (types["config.lr"], types["config.epochs"], types["config.backend"]) == ("double", "int64", "string")
    assert types["config.max_steps"] == "int64"  # None in these runs: a null of the setting's own type elsewhere
    data = table.to_pylist()
    loss = {r["step"]: r["value"] for r in data if r["run_id"] == 1 and r["metric"] == "train/loss"}
    assert loss == {i: 2.0 / i + 0.1 for i in range(1, 7)}  # exact, not rounded through text
    finals = {r["metric"]: (r["step"], r["value"]) for r in data
              if r["run_id"] == 1 and r["metric"].startswith("final")}
    assert finals == {f"final/{m}": (None, v) for m, v in {**FINAL_METRICS, "steps": 6.0}.items()}
    first = next(r for r in data if r["run_id"] == 1)
    assert first["tags"] == ["best", "bf16"] and first["config.lr"] == 0.01 and first["config.max_steps"] is None


def test_pandas_reads_it_as_it_is(store, tmp_path):
    pd = pytest.importorskip("pandas")
    export_parquet(store, [2], tmp_path / "two.parquet")
    frame = pd.read_parquet(tmp_path / "two.parquet")
    assert set(frame["run_id"]) == {2} and frame.loc[frame["metric"] == "train/loss", "value"].tolist() == [2.1, 1.1]


def test_without_pyarrow_it_says_how_to_get_it_and_writes_nothing(store, tmp_path, monkeypatch):
    for name in [name for name in sys.modules if name.partition(".")[0] == "pyarrow"]:
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(RunsExportError) as error:
        export_parquet(store, None, tmp_path / "runs.parquet")
    assert error.value.hint == PARQUET_HINT and "pip install 'workbench[parquet]'" in PARQUET_HINT
    assert not (tmp_path / "runs.parquet").exists()
