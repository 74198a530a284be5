"""`workbench runs export`: the history as CSV and TensorBoard files from the command line, in one clean line each."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from ..helpers import assert_one_error_line, call
from ..support.runs_export import read_csv, record_history, values, without_tensorboard


@pytest.fixture
def db(tmp_path):
    record_history(tmp_path / "runs.sqlite")
    return tmp_path / "runs.sqlite"


def test_export_writes_csv_and_tensorboard_of_every_run(db, tmp_path, capsys):
    code, out, err = call(capsys, "runs", "export", "--csv", tmp_path / "runs.csv", "--tensorboard", tmp_path / "tb",
                          "--db", db)
    assert code == 0, err
    assert f"rows to {tmp_path / 'runs.csv'}" in out and f"tensorboard --logdir {tmp_path / 'tb'}" in out
    rows = read_csv(tmp_path / "runs.csv")
    assert {r["run_id"] for r in rows} == {"1", "2"}
    assert values(rows, 2, "train/loss") == {1: 2.1, 2: 1.1}
    assert sorted(p.name for p in (tmp_path / "tb").iterdir()) == ["run-1-eager-off", "run-2-aot_eager-bf16"]
    events = EventAccumulator(str(tmp_path / "tb" / "run-1-eager-off")).Reload()
    assert [e.step for e in events.Scalars("val/accuracy")] == [3, 6]


def test_export_writes_parquet_that_pyarrow_reads(db, tmp_path, capsys):
    pq = pytest.importorskip("pyarrow.parquet")
    code, out, err = call(capsys, "runs", "export", "--parquet", tmp_path / "runs.parquet", "--db", db)
    assert code == 0, err
    table = pq.read_table(tmp_path / "runs.parquet")
    assert f"wrote {table.num_rows:,} rows to {tmp_path / 'runs.parquet'}" in out
    assert set(table.column("run_id").to_pylist()) == {1, 2}


def test_export_of_chosen_runs_with_the_db_given_first(db, tmp_path, capsys):
    code, out, err = call(capsys, "runs", "--db", db, "export", "2", "--csv", tmp_path / "two.csv")
    assert code == 0, err
    assert {r["run_id"] for r in read_csv(tmp_path / "two.csv")} == {"2"}


def test_export_errors_are_one_line(db, tmp_path, capsys):
    code, _, err = call(capsys, "runs", "export", "--db", db)
    assert code == 2 and "--csv FILE, --parquet FILE, --tensorboard DIR, or several" in assert_one_error_line(err)
    code, _, err = call(capsys, "runs", "export", "9", "--csv", tmp_path / "r.csv", "--db", db)
    assert code == 2 and "no run with id 9" in assert_one_error_line(err)
    blocker = tmp_path / "file"
    blocker.write_text("x")
    code, _, err = call(capsys, "runs", "export", "--tensorboard", blocker, "--db", db)
    assert code == 2 and f"cannot write {blocker}/run-1-eager-off" in assert_one_error_line(err)
    assert not (tmp_path / "r.csv").exists() and not list(tmp_path.glob("**/*.tmp"))


def test_without_tensorboard_nothing_is_written_and_one_line_says_how_to_get_it(db, tmp_path, capsys,
                                                                                   monkeypatch):
    without_tensorboard(monkeypatch)
    code, _, err = call(capsys, "runs", "export", "--csv", tmp_path / "runs.csv", "--tensorboard", tmp_path / "tb",
                        "--db", db)
    assert code == 2 and "pip install 'workbench[tensorboard]'" in assert_one_error_line(err)
    assert not (tmp_path / "runs.csv").exists() and not (tmp_path / "tb").exists()


def test_export_never_imports_torch(db, tmp_path):
    """`workbench runs` answers at once: PyTorch takes seconds to import, and the history has no need of it."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "workbench", "runs", "export", "--csv",
                           tmp_path / "runs.csv", "--tensorboard", tmp_path / "tb", "--db", db],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert re.search(r"\| +tensorboard$", done.stderr, re.M)  # what -X importtime lists is what was imported
    assert not re.search(r"\| +torch$", done.stderr, re.M)
