"""A quick run of the GUI benchmark (the real window, a heartbeat, in-app vs headless), so it cannot rot."""

from __future__ import annotations

from workbench.core.config import TrainConfig
from workbench.ui.bench_gui import format_gui_report, run_gui_bench


def test_gui_bench_measures_both_paths_and_the_heartbeat(qapp, monkeypatch, tmp_path):
    monkeypatch.setenv("WORKBENCH_CONFIG_DIR", str(tmp_path / "user-config"))
    report = run_gui_bench(TrainConfig(epochs=2, hidden_dim=32), pairs=1,
                           compile_config=TrainConfig(epochs=2, hidden_dim=32, backend="aot_eager"))
    assert len(report["in_app_samples_per_s"]) == len(report["headless_samples_per_s"]) == 1
    assert report["in_app_samples_per_s"][0] > 0 and report["headless_samples_per_s"][0] > 0
    assert report["steady"]["ticks"] > 0 and report["steady"]["max_ms"] >= report["steady"]["p99_ms"]
    compiled = report["compile_run"]
    assert compiled["config"]["backend"] == "aot_eager" and compiled["compiling"]["ticks"] > 0
    text = format_gui_report(report)
    assert "ratio" in text and "longest stall" in text and "method:" in text
    # the benchmark kept to its temporary folder
    assert not (tmp_path / "user-config").exists()
