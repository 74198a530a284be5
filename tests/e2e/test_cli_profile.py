"""`workbench profile` and what `train`/`runs show` print about a profiled, mixed-precision run."""

from __future__ import annotations

import gzip
import json

from ..helpers import assert_one_error_line, call


def test_profile_runs_a_short_profiled_run_and_prints_where_the_time_went(tmp_path, capsys):
    out, db = tmp_path / "run", tmp_path / "runs.sqlite"
    code, stdout, err = call(capsys, "profile", "--profile-steps", "4", "--hidden-dim", "16", "--amp", "bf16",
                             "--out", out, "--db", db)
    assert code == 0, err
    assert "finished: 16 steps" in stdout  # 4 profiled + the lead-in: a short run unless told otherwise
    assert "\nprofile: steps 4–7, " in stdout and "ms a profiled step against" in stdout
    assert " ms self CPU " in stdout and "aten::" in stdout  # the heaviest ops
    assert f"profile trace: {out / 'profile' / 'trace.json.gz'}" in stdout
    with gzip.open(out / "profile" / "trace.json.gz", "rt") as fh:
        assert any(e.get("name") == "ProfilerStep#4" for e in json.load(fh)["traceEvents"])
    assert "\namp bf16: " in stdout and "recommended: " in stdout
    code, shown, _ = call(capsys, "runs", "show", "1", "--db", db)
    assert code == 0 and "\nprofile: steps 4–7, " in shown and "\namp bf16: " in shown


def test_profile_with_zero_steps_is_one_clear_error(tmp_path, capsys):
    code, _, err = call(capsys, "profile", "--profile-steps", "0", "--out", tmp_path / "run")
    assert code == 2 and "profiles nothing" in assert_one_error_line(err)


def test_an_overflowing_fp16_run_reports_its_skipped_steps(tmp_path, capsys):
    code, stdout, err = call(capsys, "train", "--amp", "fp16", "--loss-scale", str(2.0 ** 40), "--max-steps", "5",
                             "--hidden-dim", "16", "--out", tmp_path / "run", "--db", tmp_path / "runs.sqlite")
    assert code == 0, err
    assert "amp loss scaling: 5 step(s) skipped (100.0%)" in stdout
    assert "first non-finite gradient: core_block.fc1.weight at step 1" in stdout


def test_profile_runs_as_many_epochs_as_its_window_needs(tmp_path, capsys):
    code, stdout, err = call(capsys, "profile", "--profile-steps", "20", "--hidden-dim", "16", "--batch-size",
                             "1000", "--out", tmp_path / "run", "--db", tmp_path / "runs.sqlite")
    assert code == 0, err
    assert "finished: 32 steps, 8 epoch(s)" in stdout  # 4 steps an epoch: not cut at the default 5 epochs
    assert "\nprofile: steps 4–23, " in stdout


# -- continuing a run -------------------------------------------------------------------------------------------
def test_train_resume_continues_a_run_by_id_and_the_history_links_them(tmp_path, capsys):
    db = tmp_path / "runs.sqlite"
    common = ("--hidden-dim", "16", "--batch-size", "250", "--db", db)
    code, _, err = call(capsys, "train", "--epochs", "1", "--out", tmp_path / "first", *common)
    assert code == 0, err
    code, stdout, err = call(capsys, "train", "--resume", "1", "--epochs", "2", "--out", tmp_path / "second", *common)
    assert code == 0, err
    assert "finished: 32 steps, 2 epoch(s)" in stdout  # 16 steps an epoch: the second epoch only, then both counted
    code, shown, _ = call(capsys, "runs", "show", "2", "--db", db)
    assert f"continues:   #1 (from {(tmp_path / 'first' / 'checkpoint.pt').resolve()})" in shown
    code, _, err = call(capsys, "train", "--resume", str(tmp_path / "second"), "--lr", "0.1", "--epochs", "3",
                        "--out", tmp_path / "third", *common)
    assert code == 2 and "lr: 0.004 → 0.1" in assert_one_error_line(err)
