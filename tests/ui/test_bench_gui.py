"""A quick run of the GUI benchmark (the real window, a heartbeat, in-app vs headless), so it cannot rot."""

from __future__ import annotations

import pytest
from workbench.core.ground.config import TrainConfig
from workbench.ui.bench_gui import format_gui_report, run_gui_bench


@pytest.mark.slow
def test_gui_bench_measures_both_paths_and_the_heartbeat(qapp, monkeypatch, tmp_path):
    monkeypatch.setenv("WORKBENCH_CONFIG_DIR", str(tmp_path / "user-config"))
    from workbench.cli.bench import headless_samples_per_s

    report = run_gui_bench(TrainConfig(epochs=2, hidden_dim=32), headless_samples_per_s, pairs=1,
                           compile_config=TrainConfig(epochs=2, hidden_dim=32, backend="aot_eager"))
    assert len(report["in_app_samples_per_s"]) == len(report["headless_samples_per_s"]) == 1
    assert report["in_app_samples_per_s"][0] > 0 and report["headless_samples_per_s"][0] > 0
    assert report["steady"]["ticks"] > 0 and report["steady"]["max_ms"] >= report["steady"]["p99_ms"]
    compiled = report["compile_run"]
    assert compiled["config"]["backend"] == "aot_eager" and compiled["compiling"]["ticks"] > 0
    assert report["explain"]["ticks"] > 0 and report["explain"]["seconds"] > 0
    text = format_gui_report(report)
    assert "Explain in the kernel" in text
    assert "ratio" in text and "longest stall" in text and "method:" in text
    # the benchmark kept to its temporary folder
    assert not (tmp_path / "user-config").exists()


def test_the_in_app_run_refuses_a_config_the_form_cannot_hold_or_a_train_that_does_not_start(window, monkeypatch):
    import pytest

    from workbench.ui.bench_gui import _app_run
    from workbench.ui.support.heartbeat import Heartbeat

    heartbeat = Heartbeat(parent=window)
    config = TrainConfig(epochs=1, hidden_dim=16, device="cuda:7")  # the form offers no such device here
    window.setup.set_config(config)
    with pytest.raises(RuntimeError, match="cannot train this configuration"):
        _app_run(window, config, heartbeat)
    config = TrainConfig(epochs=1, hidden_dim=16)
    window.setup.set_config(config)
    monkeypatch.setattr(window.runner, "start", lambda request: False)  # e.g. a run still alive
    with pytest.raises(RuntimeError, match="did not start the run"):
        _app_run(window, config, heartbeat)  # returns instead of waiting forever for a run that never began
