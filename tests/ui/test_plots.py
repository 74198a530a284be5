"""The live plots, fed synthetic events (no training): legends, accuracy, smoothing, comparison, empty and dark."""

from __future__ import annotations

import numpy as np
import pytest

from workbench.core.ground.config import TrainConfig
from workbench.core.ground.events import CompileFinished, EpochEnd, RunStarted, Step
from workbench.core.history.curves import smooth
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


# -- accuracy, smoothing, comparison, empty state, dark mode ---------------------------------------------------------
def _curves(loss: list[float], compile_seconds: float | None = 2.0):
    from workbench.core.history.curves import Curves

    x = np.arange(1.0, len(loss) + 1)
    return Curves(step=x, loss=np.array(loss), throughput_step=x, throughput=x, memory={"rss": x},
                  val_step=x[-1:], val_loss=np.array([1.0]), val_accuracy=np.array([0.5]),
                  compile_seconds=compile_seconds)


def _learning(n: int = 6) -> list[Step]:
    return [Step(step=i, epoch=1, loss=2.0 / i, samples_per_s=1000.0, step_seconds=0.01, memory={"rss": 1.0},
                 accuracy=i / 10) for i in range(1, n + 1)]


@pytest.fixture
def panel(qtbot):
    panel = PlotsPanel()
    qtbot.addWidget(panel)
    return panel


def test_accuracy_is_plotted_per_step_and_per_epoch(panel):
    panel.add_events([_started(), *_learning(), EpochEnd(epoch=1, train_loss=1.0, val_loss=0.9, val_accuracy=0.7,
                                                       seconds=1.0)])
    x, y = panel.step_accuracy.buffer.view()
    assert x.tolist() == [1, 2, 3, 4, 5, 6] and y == pytest.approx([0.1, 0.2, 0.3, 0.4, 0.5, 0.6])
    assert panel.val_accuracy.buffer.view()[1].tolist() == [0.7] and panel.val_accuracy.buffer.view()[0][0] == 6
    assert panel.smooth_accuracy.buffer.view()[1] == pytest.approx(smooth(y, panel.weight))
    assert panel.accuracy_plot.getViewBox().linkedView(0) is panel.loss_plot.getViewBox()  # x-linked


def test_the_slider_re_smooths_the_live_and_the_compared_curves(panel):
    panel.add_events([_started(), *_learning()])
    overlay = _curves([3.0, 1.0, 2.0, 0.5])
    panel.set_overlays([("#1 eager", overlay)])
    raw = panel.step_loss.buffer.view()[1]
    assert panel.smooth_loss.buffer.view()[1] == pytest.approx(smooth(raw, 0.6))  # TensorBoard's default
    panel.smoothing_slider.setValue(900)
    assert panel.weight == 0.9 and panel.smoothing_value.text() == "0.900"
    assert panel.smooth_loss.buffer.view()[1] == pytest.approx(smooth(raw, 0.9))
    assert panel.smooth_loss.buffer.view()[1][0] == raw[0]  # debiased: no lag at the start
    loss_overlay = next(item for plot, item in panel.overlays if plot is panel.loss_plot)
    assert loss_overlay.getData()[1] == pytest.approx(smooth(overlay.loss, 0.9))
    panel.add_events(_learning(8)[6:])  # the live line goes on from where the whole-buffer pass left it
    assert panel.smooth_loss.buffer.view()[1] == pytest.approx(smooth(panel.step_loss.buffer.view()[1], 0.9))


def test_compared_runs_get_distinct_colours_their_compile_markers_and_dim_the_current_run(panel):
    from workbench.ui.panels.plots import DIMMED, PALETTE

    assert len(set(PALETTE)) == len(PALETTE) >= 8
    panel.add_events([_started(), CompileFinished("inductor", "default", 9.0), *_learning()])
    runs = [(f"#{i} lr=0.{i}", _curves([2.0, 1.0], compile_seconds=10.0 + i)) for i in range(3)]
    panel.set_overlays(runs)
    colours = {item.opts["pen"].color().name() for plot, item in panel.overlays if plot is panel.loss_plot}
    assert len(colours) == 3
    assert [m.label.format for m in panel.overlay_markers] == ["#0 compile 10.0 s", "#1 compile 11.0 s",
                                                                "#2 compile 12.0 s"]
    own = (panel.step_loss, panel.smooth_loss, panel.val_loss, panel.step_accuracy, panel.throughput,
           *panel.memory.values())
    assert all(s.item.opacity() == DIMMED for s in own) and panel.compile_marker.opacity() == DIMMED
    panel.set_overlays([])
    assert all(s.item.opacity() == 1.0 for s in own) and panel.compile_marker.opacity() == 1.0
    assert panel.overlays == [] and panel.overlay_markers == []


def test_legends_sit_outside_the_data(panel, qtbot):
    panel.resize(800, 1200)
    panel.show()
    panel.add_events([_started(), *_learning()])
    panel.set_overlays([("#1 eager", _curves([2.0, 1.0])), ("#2 aot_eager", _curves([2.0, 1.0]))])
    qtbot.wait(10)  # the plots' layouts settle in the event loop
    for plot in panel.plots:
        item = plot.getPlotItem()
        assert item.legend.items, plot.objectName()
        legend, data = item.legend.sceneBoundingRect(), item.getViewBox().sceneBoundingRect()
        assert legend.height() > 0 and not legend.intersects(data), plot.objectName()


def test_the_empty_plots_say_what_to_do_until_the_first_step(panel):
    assert panel.empty_text.isVisible() and "Press Train (Ctrl+R)" in panel.empty_text.toPlainText()
    panel.add_events([_started()])
    assert panel.empty_text.isVisible() and "Press Train" not in panel.empty_text.toPlainText()  # a run is starting
    panel.add_events(_learning(1))
    assert not panel.empty_text.isVisible()
    panel.reset()
    assert panel.empty_text.isVisible()


def test_a_new_run_resets_the_axes(panel):
    panel.add_events([_started(), *_learning()])
    panel.loss_plot.setXRange(2, 3)  # the user zoomed in
    assert panel.loss_plot.getViewBox().state["autoRange"] == [False, True]
    panel.add_events([_started()])
    assert panel.loss_plot.getViewBox().state["autoRange"] == [True, True]
    assert all(plot.getViewBox().state["autoRange"][1] for plot in panel.plots)  # x follows the loss plot


def test_only_the_loss_plot_ranges_the_shared_step_axis(panel):
    """The other plots follow the loss plot's steps. Were one of them to auto-range its steps too, the compile
    marker — all the throughput plot holds while step 1 compiles — would set the range of every plot to step 1
    and switch the loss plot's auto-range off for the rest of the run (seen in a real aot_eager run)."""
    panel.add_events([_started(backend="aot_eager")])
    assert panel.loss_plot.getViewBox().state["autoRange"][0]
    assert not any(plot.getViewBox().state["autoRange"][0] for plot in panel.plots[1:])


def test_dark_mode_switches_the_background_and_the_pens(panel):
    def background(plot):
        return plot.backgroundBrush().color().name()

    panel.add_events([_started(), *_learning()])
    assert {background(p) for p in panel.plots} == {"#ffffff"}
    light_pen = panel.smooth_loss.item.opts["pen"].color().name()
    panel.set_dark(True)
    assert {background(p) for p in panel.plots} == {"#1e1e1e"}
    assert panel.smooth_loss.item.opts["pen"].color().name() != light_pen
    assert panel.loss_plot.getPlotItem().getAxis("left").textPen().color().name() == "#d8d8d8"
    panel.set_dark(False)
    assert {background(p) for p in panel.plots} == {"#ffffff"}


def test_the_headline_follows_the_live_events_and_a_recorded_run(panel):
    panel.add_events([_started(), CompileFinished("inductor", "default", 4.0), *_learning(),
                      EpochEnd(epoch=1, train_loss=1.0, val_loss=0.9, val_accuracy=0.7, seconds=1.0)])
    assert panel.headline.figures()["best_val_accuracy"] == "70.00%"
    assert panel.headline.figures()["compile"] == "4.0 s"
    panel.show_curves(_curves([2.0, 1.0], compile_seconds=7.0))
    assert panel.headline.figures()["compile"] == "7.0 s" and panel.headline.figures()["eta"] == "—"


def test_system_samples_are_plotted_on_a_time_axis_with_each_gpu(panel):
    from workbench.core.ground.events import SystemSample

    gpu = {"cuda:0": {"util": 87.0, "memory_mib": 30_512.0, "power_w": 412.4, "temp_c": 61.0}}
    panel.add_events([RunStarted(config=TrainConfig().to_dict(), device="cuda:0", device_name="GPU", versions={},
                                 train_size=100, val_size=10, steps_per_epoch=4, total_steps=4),
                      SystemSample(seconds=0.5, cpu_process=180.0, cpu_machine=95.0, rss_mib=800.0, gpu=gpu),
                      SystemSample(seconds=1.0, cpu_process=170.0, cpu_machine=90.0, rss_mib=810.0, gpu=gpu)])
    panel.redraw()
    assert panel.point_counts()["system"] == 2
    x, y = panel.cpu_process.item.getData()
    assert list(x) == [0.5, 1.0] and list(y) == [180.0, 170.0]  # seconds, not steps
    assert list(panel.gpu_util["cuda:0"].item.getData()[1]) == [87.0, 87.0]
    title = panel.system_plot.getPlotItem().titleLabel.text
    assert "cuda:0 412 W, 61 °C, 30,512 MiB" in title
    assert panel.system_plot.getPlotItem().getViewBox().linkedView(0) is None  # not on the shared step axis
    assert [panel.machine_tabs.tabText(i) for i in range(2)] == ["Memory", "System"]
    panel.reset()
    assert panel.point_counts()["system"] == 0 and panel.gpu_util == {}
    assert panel.system_plot.getPlotItem().titleLabel.text == "System"
