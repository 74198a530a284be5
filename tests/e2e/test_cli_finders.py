"""`workbench lr-find` and `batch-find`: progress while they measure, the suggestion and how to use it, every point
as JSON; a range that cannot work is one clear error line."""

from __future__ import annotations

import json

from ..helpers import assert_one_error_line, call


def test_lr_find_suggests_a_learning_rate_and_writes_its_points(tmp_path, capsys):
    code, stdout, err = call(capsys, "lr-find", "--hidden-dim", "16", "--steps", "60", "--lr-min", "1e-4",
                             "--json", tmp_path / "lr.json")
    assert code == 0, err
    finding = json.loads((tmp_path / "lr.json").read_text())
    assert len(finding["points"]) == 60 and finding["lr_min"] == 1e-4
    assert "step   60  LR" in err  # a progress line every 20 steps
    assert "LR range test: 60 steps, LR from 0.0001 towards 1, eager;" in stdout
    assert f"suggested LR: {finding['suggestion']:.2e} — steepest descent" in stdout
    assert f"use it: workbench train --lr {finding['suggestion']:.2g}" in stdout


def test_a_range_that_does_not_grow_is_one_clear_error(capsys):
    code, _, err = call(capsys, "lr-find", "--lr-min", "1", "--lr-max", "0.1")
    assert code == 2 and "the range must grow" in assert_one_error_line(err)


def test_batch_find_measures_each_batch_size_and_suggests_one(tmp_path, capsys):
    code, stdout, err = call(capsys, "batch-find", "--hidden-dim", "16", "--largest", "64", "--json",
                             tmp_path / "batch.json")
    assert code == 0, err
    finding = json.loads((tmp_path / "batch.json").read_text())
    assert [point["batch_size"] for point in finding["points"]] == [16, 32, 64]
    for point in finding["points"]:
        assert f"batch {point['batch_size']:5d}  {point['samples_per_s']:10,.0f} samples/s" in stdout
    assert "cpu: measured every batch size up to 64" in stdout
    assert f"suggested batch size: {finding['suggestion']} — the fastest batch" in stdout
    assert f"use it: workbench train --batch-size {finding['suggestion']}" in stdout


def test_a_test_stopped_before_the_loss_turned_up_says_so_not_that_the_range_was_too_narrow(monkeypatch, capsys):
    from workbench.core.kernel import lr_finder

    stopped = lr_finder.LrFinding(  # what Ctrl+C on the plateau leaves
        points=(lr_finder.LrPoint(1, 1e-6, 2.3, 2.3),), suggestion=None, ended="stopped", compiled=False, recompiles=0,
        recompile_reasons=(), rule=lr_finder.RULE, lr_min=lr_finder.LR_MIN, lr_max=lr_finder.LR_MAX)
    monkeypatch.setattr(lr_finder, "find_lr", lambda config, **options: stopped)
    code, stdout, err = call(capsys, "lr-find")
    assert code != 0 and "LR range test: 1 steps" in stdout
    assert "stopped before the loss turned up" in assert_one_error_line(err) and "widen" not in err
