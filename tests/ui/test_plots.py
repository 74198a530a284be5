"""The live plots, fed synthetic events: what the memory legend says for runs that replay CUDA graphs."""

from __future__ import annotations

import pytest

from workbench.core.ground.config import TrainConfig
from workbench.core.ground.events import RunStarted, Step
from workbench.ui.panels.plots import PlotsPanel

CUDA_MEMORY = {"allocated": 10.0, "reserved": 200.0, "peak": 30.0}


def _started(**config) -> RunStarted:
    return RunStarted(config=TrainConfig(**config).to_dict(), device="cuda:0", device_name="a GPU", versions={},
                      train_size=4000, val_size=1000, steps_per_epoch=15, total_steps=15)


def _steps(n: int = 3) -> list[Step]:
    return [Step(step=i, epoch=1, loss=1.0, samples_per_s=1000.0, step_seconds=0.01, memory=dict(CUDA_MEMORY))
            for i in range(1, n + 1)]


def _legend(panel: PlotsPanel) -> list[str]:
    return [label.text for _, label in panel.memory_plot.getPlotItem().legend.items]


@pytest.mark.parametrize("config", [dict(backend="cudagraphs"), dict(backend="inductor", mode="reduce-overhead")],
                         ids=["cudagraphs", "reduce-overhead"])
def test_cuda_graph_runs_say_their_pool_is_in_reserved(qtbot, config):
    panel = PlotsPanel()
    qtbot.addWidget(panel)
    panel.add_events([_started(**config), *_steps()])
    assert _legend(panel) == ["CUDA allocated (CUDA-graph pool is in reserved)", "CUDA reserved",
                              "CUDA peak allocated"]
    assert panel.memory["reserved"].buffer.size == 3  # the curve that holds the pool is drawn
    # the next run, without CUDA graphs, gets the plain legend back
    panel.add_events([_started(backend="inductor", mode="default"), *_steps()])
    assert _legend(panel) == ["CUDA allocated", "CUDA reserved", "CUDA peak allocated"]


def test_a_recorded_cuda_graph_run_reopened_is_labelled_as_it_was_live(qtbot):
    from workbench.core.history.curves import curves_from_events

    panel = PlotsPanel()
    qtbot.addWidget(panel)
    started = _started(backend="cudagraphs")
    curves = curves_from_events([started, *_steps()])
    panel.show_curves(curves, None, started.config)
    assert _legend(panel)[0] == "CUDA allocated (CUDA-graph pool is in reserved)"
    panel.show_curves(curves, None, TrainConfig().to_dict())
    assert _legend(panel)[0] == "CUDA allocated"
