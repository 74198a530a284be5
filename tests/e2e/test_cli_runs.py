"""`workbench runs` and `workbench report` on the run history, end to end."""

from __future__ import annotations

import io
import json
import re
import sys
from pathlib import Path

import pytest

from workbench.core.history.runs import RunStore

from ..helpers import assert_one_error_line, call, read_only_medium
from ..support.runs_export import read_csv, record_history


@pytest.fixture(autouse=True)
def home_trash(tmp_path, monkeypatch) -> Path:
    """This test's own desktop trash: `runs rm` moves run folders there (never into the user's)."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    return tmp_path / "xdg" / "Trash"


def _train_two(folder: Path) -> Path:
    """Run #1 eager and #2 aot_eager (30 steps each) in folder/eager and folder/aot_eager, recorded in
    folder/runs.sqlite."""
    from workbench import cli

    path = folder / "runs.sqlite"
    for backend in ("eager", "aot_eager"):
        assert cli.main(["train", "--epochs", "1", "--max-steps", "30", "--hidden-dim", "32", "--backend", backend,
                         "--out", str(folder / backend), "--db", str(path)]) == 0
    return path


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    """The two runs, trained once for the module's tests that only read them (training costs seconds)."""
    return _train_two(tmp_path_factory.mktemp("trained"))


@pytest.fixture
def db(trained, tmp_path) -> Path:
    """This test's own copy of the shared history; the run folders it names stay shared, so a test that moves them
    (runs rm) trains its own (own_db)."""
    import sqlite3

    copy = tmp_path / "runs.sqlite"
    source, target = sqlite3.connect(trained), sqlite3.connect(copy)
    source.backup(target)
    source.close()
    target.close()
    return copy


@pytest.fixture
def own_db(tmp_path) -> Path:
    return _train_two(tmp_path)


def test_runs_lists_every_training_run(db, capsys):
    code, out, _ = call(capsys, "runs", "--db", db)
    lines = out.strip().splitlines()
    assert code == 0 and len(lines) == 3  # header + two runs
    assert " eager · off " in lines[1] and "finished" in lines[1]
    assert " aot_eager · off " in lines[2]
    assert " model " in lines[0] and " Sandwich " in lines[1]  # which network each run trained


def test_runs_show_prints_config_summary_and_compile_report(db, capsys):
    code, out, _ = call(capsys, "runs", "show", "2", "--db", db)
    assert code == 0
    assert out.startswith("run 2 · finished")
    assert '"backend": "aot_eager"' in out and "compile report:" in out and "graphs:" in out
    # The compiled run's payback and its recompile forecast against what happened (the eval graph's recompile).
    assert "\npayback: " in out and ("paid for itself" in out or "pays off after" in out or "never:" in out)
    assert "recompile forecast: confirmed: forward recompiles for validation" in out
    # the row's figures rounded and named as the window shows them, not JSON floats
    assert re.search(r"\nbest val accuracy: \d+\.\d\d%\n", out) and re.search(r"\nsamples/s: +[\d,]+\n", out)
    assert not re.search(r"\d\.\d{7,}", out.split("compile report:")[0])
    _, eager, _ = call(capsys, "runs", "show", "1", "--db", db)
    assert "payback" not in eager and "recompile forecast" not in eager  # nothing compiled
    assert "\nsystem: CPU " in eager and "% of a core (machine " in eager and "peak RSS" in eager


def test_runs_rm_removes_and_unknown_ids_fail_cleanly(own_db, capsys, tmp_path, home_trash):
    db = own_db
    files = sorted(p.name for p in (tmp_path / "eager").iterdir())
    code, out, _ = call(capsys, "runs", "rm", "1", "--yes", "--db", db)
    assert code == 0 and f"removed run 1\nmoved {tmp_path / 'eager'} (" in out
    assert f") to the trash: {home_trash / 'files' / 'eager'}\n" in out
    assert not (tmp_path / "eager").exists() and sorted(p.name for p in (home_trash / "files" / "eager").iterdir()) \
        == files == ["checkpoint.pt", "checkpoint.safetensors", "events.jsonl", "metrics.json"]
    assert "\nfreed " in out and (tmp_path / "aot_eager" / "checkpoint.pt").is_file()
    code, out, _ = call(capsys, "runs", "--db", db)
    assert len(out.strip().splitlines()) == 2
    code, _, err = call(capsys, "runs", "show", "1", "--db", db)
    assert code == 2 and "no run with id 1" in assert_one_error_line(err)


def test_db_given_before_the_action_is_the_one_used(own_db, capsys):
    """`runs --db X show|rm` must act on X, not on the default database (here an empty one)."""
    db = own_db
    code, out, err = call(capsys, "runs", "--db", db, "show", "2")
    assert code == 0, err
    assert out.startswith("run 2 · finished")
    code, out, err = call(capsys, "runs", "--db", db, "rm", "1", "--yes")
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
        tmp_path, capsys, monkeypatch, planted_break_spec, samples_dir):
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

    # predict takes the kernel's own job: the same consent, said with the command line's flag
    checkpoint, digit = tmp_path / "run" / "checkpoint.pt", samples_dir / "digit_7.png"
    code, _, err = call(capsys, "predict", checkpoint, digit)
    assert code != 0 and "--trust-model-code" in err and len(err.strip().splitlines()) <= 2, err
    code, out, err = call(capsys, "predict", "--trust-model-code", checkpoint, digit)
    assert code == 0 and f"{digit}: " in out, err
    assert not marker.exists()


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


# -- the user's words about runs, archiving, removing, a new run from an old one ----------------------------------
@pytest.fixture
def history(tmp_path) -> Path:
    """Two runs written straight into a history (no training): #1 finished, #2 failed."""
    path = tmp_path / "history.sqlite"
    record_history(path)
    return path


def test_runs_are_named_noted_tagged_and_archived_from_the_command_line(history, capsys, monkeypatch):
    assert call(capsys, "runs", "rename", "1", "warm", "up", "--db", history)[1] == "run 1 is now called 'warm up'\n"
    code, out, _ = call(capsys, "runs", "tag", "1", "baseline", "amp", "baseline", "--db", history)
    assert code == 0 and out == "run 1's tags: baseline, amp\n"
    assert call(capsys, "runs", "untag", "1", "amp", "--db", history)[1] == "run 1's tags: baseline\n"
    monkeypatch.setattr(sys, "stdin", io.StringIO("# too high\n\n- lr 0.01 <b>\n"))
    assert call(capsys, "runs", "note", "1", "-", "--db", history)[1] == "run 1's note: 3 lines\n"
    _answering(monkeypatch, "n\n")  # archive asks first: a no leaves the run listed
    code, out, _ = call(capsys, "runs", "archive", "2", "--db", history)
    assert code == 0 and "archive 1 run (2)? They leave the list" in out and out.endswith("nothing was archived\n")
    _answering(monkeypatch, "")  # no one to answer (a script): an error that names --yes
    code, _, err = call(capsys, "runs", "archive", "2", "--db", history)
    assert code != 0 and "--yes" in assert_one_error_line(err)
    with RunStore(history) as store:
        assert not store.get(2).archived
    _answering(monkeypatch, "y\n")
    code, out, _ = call(capsys, "runs", "archive", "2", "--db", history)
    assert code == 0 and "archived 2" in out

    code, out, _ = call(capsys, "runs", "--db", history)
    lines = out.strip().splitlines()
    assert code == 0 and len(lines) == 3 and lines[0].split()[:3] == ["id", "name", "when"]
    assert lines[1].split()[:3] == ["1", "warm", "up"] and lines[1].endswith("finished  [baseline]")
    assert lines[2] == "1 archived run not shown (--all shows them)"
    code, out, _ = call(capsys, "runs", "--all", "--db", history)
    assert out.strip().splitlines()[2].endswith("failed · archived")
    code, out, _ = call(capsys, "runs", "show", "1", "--db", history)
    assert out.startswith("run 1 · finished") and "\nname:        warm up\ntags:        baseline\n" \
        "notes:\n  # too high\n\n  - lr 0.01 <b>\nconfig: " in out
    call(capsys, "runs", "unarchive", "2", "--db", history)  # unarchiving hides nothing: it does not ask
    assert len(call(capsys, "runs", "--db", history)[1].strip().splitlines()) == 3
    code, out, _ = call(capsys, "runs", "archive", "2", "--yes", "--db", history)  # scripts: --yes
    assert code == 0 and "archived 2" in out and "?" not in out
    call(capsys, "runs", "unarchive", "2", "--db", history)

    code, _, err = call(capsys, "runs", "tag", "1", "two words", "--db", history)
    assert code == 2 and "a tag is one word" in assert_one_error_line(err)
    code, _, err = call(capsys, "runs", "archive", "1", "7", "--db", history)
    assert code == 2 and "no run with id 7" in assert_one_error_line(err)
    with RunStore(history) as store:
        assert [(r.tags, r.archived) for r in store.list()] == [(("baseline",), False), ((), False)]


def _answering(monkeypatch, answer: str) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(answer))


def test_runs_rm_asks_before_it_acts(history, tmp_path, capsys, monkeypatch, home_trash):
    folder = tmp_path / "run1"
    folder.mkdir()
    (folder / "checkpoint.pt").write_bytes(b"x" * 2500)
    with RunStore(history) as store:
        store.db.execute("UPDATE runs SET out_dir = ? WHERE id = 1", (str(folder),))
    for answer in ("n\n", "\n", "whatever\n"):  # anything but yes is no
        _answering(monkeypatch, answer)
        code, out, _ = call(capsys, "runs", "rm", "1", "2", "--db", history)
        assert code == 0 and out == (f"run 1: its folder {folder} (2.5 kB) goes to the trash\n"
                                     "remove 2 runs from the history? [y/N] nothing was removed\n")
    _answering(monkeypatch, "")  # nobody to ask (stdin closed)
    code, _, err = call(capsys, "runs", "rm", "1", "--db", history)
    assert code == 2 and "give --yes to remove without asking" in assert_one_error_line(err)
    assert folder.is_dir() and len(RunStore(history).list()) == 2

    _answering(monkeypatch, "y\n")
    code, out, _ = call(capsys, "runs", "rm", "1", "2", "--db", history)
    assert code == 0 and out.endswith(f"[y/N] removed run 1\nremoved run 2\nmoved {folder} (2.5 kB) to the trash: "
                                      f"{home_trash / 'files' / 'run1'}\nfreed 2.5 kB (once the trash is emptied)\n")
    assert not folder.exists() and RunStore(history).list() == []


def test_runs_rm_refuses_a_running_run(history, capsys):
    with RunStore(history) as store:
        store.start_run(store.get(1).config)  # this process: alive, so it stays "running"
    code, out, err = call(capsys, "runs", "rm", "3", "--yes", "--db", history)
    assert code == 2 and "run 3 was not removed: it is still running: stop it first" in assert_one_error_line(err)
    assert [r.id for r in RunStore(history).list()] == [1, 2, 3]


def test_train_from_a_run_takes_its_settings_and_the_options_given(history, tmp_path, capsys):
    code, _, err = call(capsys, "train", "--from", "1", "--lr", "0.003", "--max-steps", "3", "--out",
                        tmp_path / "again", "--db", history)
    assert code == 0, err
    with RunStore(history) as store:
        first, new = store.get(1).config, store.list()[-1]
    assert new.id == 3 and new.out_dir == str(tmp_path / "again") and new.status == "finished"
    assert new.config == {**first, "lr": 0.003, "max_steps": 3}  # hidden_dim 16, 2 epochs: run 1's, not defaults
    for bad, words in (("99", "no run with id 99"), (tmp_path / "nowhere", "--from .*nowhere: no such run")):
        code, _, err = call(capsys, "train", "--from", bad, "--db", history, "--out", tmp_path / "never")
        assert code == 2 and re.search(words, assert_one_error_line(err))
    assert not (tmp_path / "never").exists()


def test_runs_where_lists_only_the_runs_that_match_and_a_query_it_cannot_read_is_one_line(history, capsys):
    call(capsys, "runs", "tag", "1", "baseline", "--db", history)
    code, out, _ = call(capsys, "runs", "--where", "tag:baseline status=finished", "--db", history)
    lines = out.strip().splitlines()
    assert code == 0 and [line.split()[0] for line in lines[1:-1]] == ["1"]
    assert lines[-1] == "1 of 2 runs match 'tag:baseline status=finished'"
    code, out, _ = call(capsys, "runs", "--where", "status=failed", "--db", history)
    assert [line.split()[0] for line in out.strip().splitlines()[1:-1]] == ["2"]
    assert call(capsys, "runs", "--where", "acc>0.99", "--db", history)[1] == \
        "no run matches 'acc>0.99' (2 in the history)\n"
    code, _, err = call(capsys, "runs", "--where", "bakend=inductor", "--db", history)
    line = assert_one_error_line(err)
    assert code == 2 and "unknown field 'bakend'" in line and "did you mean backend?" in line


def test_runs_diff_shows_only_what_differs_with_the_setting_that_explains_it(history, capsys):
    code, out, _ = call(capsys, "runs", "diff", "1", "2", "--db", history)
    assert code == 0 and out.startswith("settings:\n")
    assert "status" in out and "finished" in out and "failed" in out
    settings_rows = out.split("\n\n")[0].splitlines()[2:]
    assert all(row.split()[0] != "seed" for row in settings_rows)  # equal settings are left out
    code, _, err = call(capsys, "runs", "diff", "1", "--db", history)
    assert code == 2 and "two" in assert_one_error_line(err)
