"""`workbench export`: the parity table on the terminal, the files beside the checkpoint, one clear error line."""

from __future__ import annotations

import json

from ..helpers import assert_one_error_line, call


def test_export_prints_the_parity_table_and_writes_the_files(tmp_path, capsys):
    code, _, err = call(capsys, "train", "--epochs", "1", "--hidden-dim", "16", "--batch-size", "250", "--out",
                        tmp_path / "run", "--db", tmp_path / "runs.sqlite")
    assert code == 0, err
    code, stdout, err = call(capsys, "export", tmp_path / "run" / "checkpoint.pt", "--compile-backend", "aot_eager")
    assert code == 0, err
    out = tmp_path / "run" / "export-pt2"
    for name in ("eager", "compiled (aot_eager)", "exported (.pt2, reloaded)"):
        assert any(line.startswith(name) and line.endswith("ok") for line in stdout.splitlines()), stdout
    assert "method: 1000 validation images in batches of 250" in stdout
    assert f"wrote {out}: model.pt2" in stdout
    assert json.loads((out / "parity.json").read_text())["passed"] is True


def test_export_of_a_missing_checkpoint_is_one_clear_error(tmp_path, capsys):
    code, _, err = call(capsys, "export", tmp_path / "nope.pt")
    assert code == 2 and "does not exist" in assert_one_error_line(err)
