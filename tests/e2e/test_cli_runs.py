"""`workbench runs` and `workbench report` on the run history, end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workbench.core.history.runs import RunStore

from ..core.test_runs_export import read_csv, record_history
from ..helpers import assert_one_error_line, call, read_only_medium


@pytest.fixture
def db(tmp_path, capsys):
    path = tmp_path / "runs.sqlite"
    for backend in ("eager", "aot_eager"):
        code, _, err = call(capsys, "train", "--epochs", "1", "--max-steps", "30", "--hidden-dim", "32",
                            "--backend", backend, "--out", tmp_path / backend, "--db", path)
        assert code == 0, err
    return path


def test_runs_lists_every_training_run(db, capsys):
    code, out, _ = call(capsys, "runs", "--db", db)
    lines = out.strip().splitlines()
    assert code == 0 and len(lines) == 3  # header + two runs
    assert " eager · off " in lines[1] and "finished" in lines[1]
    assert " aot_eager · off " in lines[2]


def test_runs_show_prints_config_summary_and_compile_report(db, capsys):
    code, out, _ = call(capsys, "runs", "show", "2", "--db", db)
    assert code == 0
    assert out.startswith("run 2 · finished")
    assert '"backend": "aot_eager"' in out and "compile report:" in out and "graphs:" in out
    # The compiled run's payback and its recompile forecast against what happened (the eval graph's recompile).
    assert "\npayback: " in out and ("paid for itself" in out or "pays off after" in out or "never:" in out)
    assert "recompile forecast: confirmed: forward recompiles for validation" in out
    _, eager, _ = call(capsys, "runs", "show", "1", "--db", db)
    assert "payback" not in eager and "recompile forecast" not in eager  # nothing compiled
    assert "\nsystem: CPU " in eager and "% of a core (machine " in eager and "peak RSS" in eager


def test_runs_rm_removes_and_unknown_ids_fail_cleanly(db, capsys):
    code, out, _ = call(capsys, "runs", "rm", "1", "--db", db)
    assert code == 0 and "removed run 1" in out
    code, out, _ = call(capsys, "runs", "--db", db)
    assert len(out.strip().splitlines()) == 2
    code, _, err = call(capsys, "runs", "show", "1", "--db", db)
    assert code == 2 and "no run with id 1" in assert_one_error_line(err)


def test_db_given_before_the_action_is_the_one_used(db, capsys):
    """`runs --db X show|rm` must act on X, not on the default database (here an empty one)."""
    code, out, err = call(capsys, "runs", "--db", db, "show", "2")
    assert code == 0, err
    assert out.startswith("run 2 · finished")
    code, out, err = call(capsys, "runs", "--db", db, "rm", "1")
    assert code == 0, err
    with RunStore(db) as store:
        assert [r.id for r in store.list()] == [2]


def test_empty_history(tmp_path, capsys):
    code, out, _ = call(capsys, "runs", "--db", tmp_path / "new.sqlite")
    assert code == 0 and "no runs recorded yet" in out


def test_a_damaged_database_is_one_error_line(tmp_path, capsys):
    path = tmp_path / "runs.sqlite"
    path.write_bytes(b"garbage" * 200)
    code, _, err = call(capsys, "runs", "--db", path)
    assert code == 2 and "damaged" in assert_one_error_line(err)


def test_a_read_only_history_is_listed_shown_and_exported_but_not_changed(tmp_path, capsys, monkeypatch):
    """Regression: on a read-only medium even `workbench runs` failed ('unable to open database file')."""
    history = tmp_path / "history"
    history.mkdir()
    record_history(history / "runs.sqlite")
    read_only_medium(monkeypatch, history)
    code, out, err = call(capsys, "runs", "--db", history / "runs.sqlite")
    assert code == 0, err
    assert [line.split()[-1] for line in out.strip().splitlines()[1:]] == ["finished", "failed"]
    code, out, err = call(capsys, "runs", "--db", history / "runs.sqlite", "show", "1")
    assert code == 0 and out.startswith("run 1 · finished"), err
    code, _, err = call(capsys, "runs", "--db", history / "runs.sqlite", "export", "--csv", tmp_path / "runs.csv")
    assert code == 0 and {r["run_id"] for r in read_csv(tmp_path / "runs.csv")} == {"1", "2"}, err
    code, _, err = call(capsys, "runs", "--db", history / "runs.sqlite", "rm", "1")
    line = assert_one_error_line(err)
    assert code == 2 and "is read-only" in line and "--db" in line


def test_report_of_two_runs_writes_html_and_json(db, tmp_path, capsys):
    out = tmp_path / "report.html"
    code, stdout, err = call(capsys, "report", "1", "2", "--out", out, "--db", db)
    assert code == 0, err
    assert f"wrote {out}" in stdout and out.with_suffix(".json").is_file()
    html = out.read_text()
    assert "<svg" in html and "Comparison" in html and "http://" not in html and "https://" not in html
    assert "<th>CPU, training process (mean)</th><td>" in html and "% of a core" in html  # the system metrics


def test_report_errors_are_one_line(db, tmp_path, capsys):
    code, _, err = call(capsys, "report", "99", "--out", tmp_path / "r.html", "--db", db)
    assert code == 2 and "no run with id 99" in assert_one_error_line(err)
    blocker = tmp_path / "file"
    blocker.write_text("x")
    code, _, err = call(capsys, "report", "1", "--out", blocker / "r.html", "--db", db)
    assert code == 2
    assert_one_error_line(err)
    assert not list(tmp_path.glob("*.tmp")) and not (blocker.parent / "r.html").exists()


@pytest.mark.parametrize("argv", [["runs"], ["runs", "show", "1"], ["--help"], ["report", "--help"]],
                         ids=["runs", "runs show", "--help", "report --help"])
def test_reading_the_history_and_help_never_import_torch(db, argv):
    """`workbench runs` and `--help` must answer at once: PyTorch takes seconds to import."""
    import subprocess
    import sys

    code = ("import sys\nfrom workbench.cli import main\ntry:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
            "print('TORCH', 'torch' in sys.modules)")
    extra = ["--db", str(db)] if argv[0] == "runs" else []
    out = subprocess.run([sys.executable, "-c", code, *argv[:1], *extra, *argv[1:]], capture_output=True,
                         text=True, timeout=120)
    assert "TORCH False" in out.stdout, out.stdout + out.stderr


def test_report_imports_no_model_file_without_consent_and_never_one_from_the_current_folder(
        tmp_path, capsys, monkeypatch, planted_break_spec):
    """A run of a user-defined network, trained with a relative model spec: the history keeps the absolute path,
    and `report` run from another folder holding a file of the same name never imports that file — without
    --trust-model-code it imports nothing and says the evaluation needs consent."""
    example = Path(planted_break_spec.rpartition(":")[0])
    db = tmp_path / "runs.sqlite"
    monkeypatch.chdir(example.parent)
    code, _, err = call(capsys, "train", "--model", f"{example.name}:PlantedBreakNet", "--epochs", "1",
                        "--max-steps", "5", "--hidden-dim", "16", "--out", tmp_path / "run", "--db", db)
    assert code == 0, err
    with RunStore(db) as store:
        assert store.get(1).config["model"] == planted_break_spec  # recorded as the absolute path

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    marker = tmp_path / "decoy-imported"
    (elsewhere / example.name).write_text(f"open({str(marker)!r}, 'w').close()\n", encoding="utf-8")
    monkeypatch.chdir(elsewhere)
    code, _, err = call(capsys, "report", "1", "--out", tmp_path / "r.html", "--db", db)
    assert code == 0, err
    assert not marker.exists()
    html = (tmp_path / "r.html").read_text()
    assert "evaluation was skipped" in html and "needs consent" in html and "--trust-model-code" in html

    code, _, err = call(capsys, "report", "1", "--trust-model-code", "--out", tmp_path / "t.html", "--db", db)
    assert code == 0, err
    assert not marker.exists()  # consent to the run's own file, by its absolute path: not this folder's
    evaluation = json.loads((tmp_path / "t.json").read_text())["runs"][0]["evaluation"]
    assert "unavailable" not in evaluation, evaluation


def test_a_damaged_history_row_is_shown_as_damaged_and_the_report_still_covers_every_run(db, capsys, tmp_path):
    """A row this version did not write (garbage config JSON, text in a numeric column) never costs the others."""
    import sqlite3

    with sqlite3.connect(db) as raw:
        raw.execute("UPDATE runs SET config = '{garbage', best_val_accuracy = 'abc' WHERE id = 1")
    code, out, _ = call(capsys, "runs", "--db", db)
    lines = out.strip().splitlines()
    assert code == 0 and "damaged" in lines[1] and " aot_eager · off " in lines[2]
    code, out, _ = call(capsys, "runs", "--db", db, "show", "1")
    assert code == 0 and "config is not a JSON object" in out
    code, out, err = call(capsys, "report", "1", "2", "--db", db, "--out", tmp_path / "both.html")
    assert code == 0, err
    assert (tmp_path / "both.html").is_file() and (tmp_path / "both.json").is_file()
