"""The live plots, fed synthetic events (no training): legends, accuracy, smoothing, comparison, empty and dark,
readable axes and markers, text alternatives (descriptions, tables) and a continued run's parent."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtWidgets import QApplication

from workbench.core.ground.config import TrainConfig
from workbench.core.ground.events import CompileFinished, EpochEnd, MemorySample, RunStarted, Step
from workbench.core.history.curves import smooth
from workbench.ui.panels.plots.plots import PlotsPanel

from ..helpers import VERSIONS

CUDA_MEMORY = MemorySample(allocated=10.0, reserved=200.0, peak=30.0)


def _started(**config) -> RunStarted:
    return RunStarted(config=TrainConfig(**config), device="cuda:0", device_name="a GPU", versions=VERSIONS,
                      train_size=4000, val_size=1000, steps_per_epoch=15, total_steps=15)


def _steps(n: int = 3) -> list[Step]:
    return [Step(step=i, epoch=1, loss=1.0, samples_per_s=1000.0, step_seconds=0.01, memory=CUDA_MEMORY)
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
    panel.show_curves(curves, None, started.config.to_dict())
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
    return [Step(step=i, epoch=1, loss=2.0 / i, samples_per_s=1000.0, step_seconds=0.01, memory=MemorySample(rss=1.0),
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


def test_compared_runs_get_distinct_colours_their_compile_markers_and_dim_the_current_run(panel, qtbot):
    from workbench.ui.panels.plots.plots import DIMMED, PALETTE

    assert len(set(PALETTE)) == len(PALETTE) >= 8
    panel.add_events([_started(), CompileFinished("inductor", "default", 9.0), *_learning()])
    runs = [(f"#{i} lr=0.{i}", _curves([2.0, 1.0], compile_seconds=10.0 + i)) for i in range(3)]
    panel.set_overlays(runs)
    qtbot.waitUntil(lambda: len(panel.overlay_markers) == 3)  # drawn DRAWN_AT_ONCE per event-loop turn
    colours = {item.opts["pen"].color().name() for plot, item in panel.overlays if plot is panel.loss_plot}
    assert len(colours) == 3
    names = ["#0 compile 10.0 s", "#1 compile 11.0 s", "#2 compile 12.0 s"]
    assert [m.toolTip() for m in panel.overlay_markers] == names
    legend = panel.throughput_plot.getPlotItem().legend
    assert [legend.names[label] for sample, label in legend.items if sample.item in panel.overlay_markers] == names
    own = (panel.step_loss, panel.smooth_loss, panel.val_loss, panel.step_accuracy, panel.throughput,
           *panel.memory.values())
    assert all(s.item.opacity() == DIMMED for s in own) and panel.compile_marker.opacity() == DIMMED
    panel.set_overlays([])
    assert all(s.item.opacity() == 1.0 for s in own) and panel.compile_marker.opacity() == 1.0
    assert panel.overlays == [] and panel.overlay_markers == []


def test_many_compared_runs_are_drawn_a_few_per_turn_and_a_newer_comparison_wins(panel, qtbot):
    """Twenty long runs drawn in one go froze the window (1.4 s): about STEPS_AT_ONCE of their steps are drawn per
    event-loop turn, and the plots are painted once, after the last."""
    from PySide6.QtWidgets import QApplication

    from workbench.ui.panels.plots.compared import ITEMS_COST, STEPS_AT_ONCE

    def compared() -> int:
        return sum(plot is panel.loss_plot for plot, _item in panel.overlays)

    panel.add_events([_started(), *_learning()])
    long = _curves([2.0, 1.0] * ((STEPS_AT_ONCE // 2 - ITEMS_COST) // 2))  # half a turn with its items: two a turn
    panel.set_overlays([(f"#{i}", long) for i in range(5)])
    assert compared() == 2 and not panel.loss_plot.updatesEnabled()  # the rest follow on the next turns
    qtbot.waitUntil(lambda: compared() == 5)
    qtbot.waitUntil(lambda: all(plot.updatesEnabled() for plot in panel.plots))
    panel.set_overlays([(f"#{i}", _curves([2.0, 1.0])) for i in range(5)])
    assert compared() == 5  # short runs: all in one turn
    panel.set_overlays([(f"#{i}", long) for i in range(5)])
    panel.set_overlays([("#a", _curves([2.0, 1.0])), ("#b", _curves([2.0, 1.0]))])  # before the first has ended
    for _turn in range(3):  # the turns in which the replaced drawing's next pieces would have been drawn
        QApplication.processEvents()
    assert compared() == 2


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


def _fitted(qtbot, panel) -> None:
    """Wait until the compared runs are drawn and every legend has fitted what it lists."""
    qtbot.waitUntil(lambda: all(plot.updatesEnabled() for plot in panel.plots))
    qtbot.waitUntil(lambda: not any(plot.getPlotItem().legend.fit_soon.isActive() for plot in panel.plots))
    QApplication.processEvents()  # the layout's pass after a resize
    for plot in panel.plots:  # as the fit queued after that pass would (a busy machine may not have run it yet)
        plot.getPlotItem().legend.fit()


def test_compared_legends_fold_and_leave_each_plot_its_data(panel, qtbot):
    """Two compared runs, a seed group and the live run in the plots' share of a 1366×768 window: each legend takes
    at most LEGEND_SHARE of its plot, the entries that do not fit fold into "+N more" (whose tooltip names them),
    and a taller panel unfolds them. Squeezed, no plot is lower than MIN_PLOT_HEIGHT."""
    from workbench.ui.panels.plots.legend import LEGEND_SHARE
    from workbench.ui.panels.plots.plots import MIN_PLOT_HEIGHT

    panel.resize(700, 200)
    panel.show()
    panel.add_events([_started(), *_learning(), EpochEnd(epoch=1, train_loss=1.0, val_loss=0.9, val_accuracy=0.7,
                                                         seconds=1.0)])
    panel.redraw()
    panel.set_overlays([("#1 eager · off", _curves([2.0, 1.0])), ("#2 aot_eager · bf16", _curves([2.0, 1.5]))])
    panel.set_group_overlays([("inductor · off · seeds 0, 1, 2: #4, #5, #6",
                               [_curves([2.0, 1.0]), _curves([2.5, 1.2]), _curves([1.8, 0.9])])])
    _fitted(qtbot, panel)
    for plot in panel.plots:
        assert plot.height() >= MIN_PLOT_HEIGHT, plot.objectName()
        legend = plot.getPlotItem().legend
        listed = [legend.names[label] for _sample, label in legend.listed()]
        shown = [legend.names[label] for _sample, label in legend.listed() if label.isVisible()]
        assert legend.height() <= LEGEND_SHARE * plot.height(), plot.objectName()
        assert shown + legend.folded == listed, plot.objectName()  # nothing lost: shown, or named in "more"
        assert legend.more.isVisible() == bool(legend.folded)
        assert legend.more.toolTip().splitlines() == legend.folded
    loss = panel.loss_plot.getPlotItem().legend
    assert loss.folded and loss.more.text == f"+{len(loss.folded)} more"
    panel.resize(700, 1600)
    _fitted(qtbot, panel)
    assert not any(plot.getPlotItem().legend.folded for plot in panel.plots)


def test_the_live_runs_entries_are_listed_while_its_curves_draw(panel, qtbot):
    """Before a run, or comparing recorded runs without one, no entry names a curve that is not there."""
    legend = panel.loss_plot.getPlotItem().legend

    def listed() -> list[str]:
        return [legend.names[label] for _sample, label in legend.listed()]

    assert listed() == []
    panel.set_overlays([("#1 eager", _curves([2.0, 1.0]))])
    _fitted(qtbot, panel)
    assert listed() == ["#1 eager"] and legend.sample(panel.step_loss.item).isVisible() is False
    panel.add_events([_started(), *_learning()])
    panel.redraw()
    _fitted(qtbot, panel)
    assert listed() == ["this run, step", "this run, smoothed", "#1 eager"]  # no validation point yet
    assert legend.sample(panel.step_loss.item).isVisible()
    panel.reset()
    assert listed() == ["#1 eager"]


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
    from workbench.core.ground.events import GpuReading, SystemSample

    gpu = {"cuda:0": GpuReading(util=87.0, memory_mib=30_512.0, power_w=412.4, temp_c=61.0)}
    panel.add_events([RunStarted(config=TrainConfig(), device="cuda:0", device_name="GPU", versions=VERSIONS,
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


# -- readability: axes, ticks, markers, names ---------------------------------------------------------------------
def _below_one() -> list:
    """A run whose loss and accuracy stay under 1: pyqtgraph's SI prefixes wrote them in thousandths."""
    return [_started(), *(Step(step=i, epoch=1, loss=0.9 / i, samples_per_s=1000.0, step_seconds=0.01,
                               memory=MemorySample(rss=1.0), accuracy=0.1 + i / 10) for i in range(1, 7)),
            EpochEnd(epoch=1, train_loss=0.5, val_loss=0.3, val_accuracy=0.65, seconds=1.0)]


def test_axes_show_the_values_themselves(panel):
    """Before: 'fraction right (x0.001)' with ticks 100 … 700, and loss '(x0.001)'."""
    panel.add_events(_below_one())
    panel.redraw()
    for plot in panel.all_plots:
        for side in ("left", "bottom"):
            axis = plot.getPlotItem().getAxis(side)
            assert axis.autoSIPrefixScale == 1.0 and "x0.0" not in axis.labelString(), (plot.objectName(), side)
    assert panel.accuracy_plot.getPlotItem().getAxis("left").labelText == "fraction right"


def _step_ticks(plot) -> list[float]:
    axis = plot.getPlotItem().getAxis("bottom")
    low, high = plot.getViewBox().viewRange()[0]
    return [value for _spacing, values in axis.tickValues(low, high, 300) for value in values]


def test_the_step_axis_ticks_whole_steps_only(panel):
    """Before: 0.2, 0.4 … on an empty plot, 1.5, 2.5 on a short run."""
    for plot in panel.plots:
        assert _step_ticks(plot) and all(value == int(value) for value in _step_ticks(plot)), plot.objectName()
    panel.add_events([_started(), *_learning(3)])
    panel.redraw()
    for plot in panel.plots:
        ticks = _step_ticks(plot)
        assert ticks and all(value == int(value) for value in ticks), (plot.objectName(), ticks)
    axis = panel.loss_plot.getPlotItem().getAxis("bottom")
    assert axis.tickStrings([2_000_000.0], 1.0, 1_000_000.0) == ["2,000,000"]  # not 2e+06


def test_the_last_validation_dot_is_whole_however_narrow_the_plot(qtbot):
    """The step axis spans the steps exactly; the view's padding, a share of the range, left a dot at the last step
    only ~w/12 pixels on a narrow plot: less than the dot's radius, and it was cut at the plot's edge."""
    import pyqtgraph as pg
    from PySide6.QtCore import QPointF

    from workbench.ui.panels.plots.items import SpanViewBox

    view = SpanViewBox()
    plot = pg.PlotWidget(viewBox=view)
    qtbot.addWidget(plot)
    plot.resize(90, 120)
    plot.show()
    qtbot.waitExposed(plot)
    plot.plot([1.0, 10.0], [0.5, 0.6], pen=None, symbol="o", symbolSize=9)
    view.cover([np.array([1.0, 10.0])], None, fresh=True)
    qtbot.waitUntil(lambda: view.width() > 0)
    view.updateAutoRange()
    right = view.mapViewToScene(QPointF(10.0, 0.6)).x()
    assert view.sceneBoundingRect().right() - right >= 9 / 2 + 1, view.width()


def _swatch(panel, points) -> str:
    """The colour in the middle of a legend entry's swatch, as the legend paints it."""
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QImage, QPainter

    legend = next(plot.getPlotItem().legend for plot in panel.plots if points.item in plot.getPlotItem().items)
    sample = next(sample for sample, _label in legend.items if sample.item is points.item)
    image = QImage(20, 20, QImage.Format_ARGB32)
    image.fill(Qt.transparent)
    painter = QPainter(image)
    sample.paint(painter)
    painter.end()
    return image.pixelColor(10, 10).name()


def test_the_val_swatch_has_the_colour_of_the_dots_in_both_themes(panel):
    """Before: the swatch drew the scatter's own brush, which took the dots' colour only along with points:
    pyqtgraph's default purple until the first validation, beside red dots."""
    from workbench.ui.panels.plots.style import DARK, LIGHT

    for theme in (LIGHT, DARK, LIGHT):
        panel.set_dark(theme is DARK)
        for points in (panel.val_loss, panel.val_accuracy):
            assert _swatch(panel, points) == theme.marker
    panel.add_events([_started(), *_learning(), EpochEnd(epoch=1, train_loss=1.0, val_loss=0.9, val_accuracy=0.7,
                                                         seconds=1.0)])
    panel.redraw()
    panel.set_dark(True)
    dots = panel.val_loss.item.scatter.points()[0].brush().color().name()
    assert dots == _swatch(panel, panel.val_loss) == DARK.marker


def _loss_legend(panel) -> list[str]:
    legend = panel.loss_plot.getPlotItem().legend
    return [legend.names[label] for _sample, label in legend.items]


def test_comparing_runs_names_the_current_run_in_the_legends(panel):
    """Before: the compared runs' entries were named ('#1 eager'), the current run's only 'step', 'smoothed',
    'val': which run they were was anyone's guess."""
    from workbench.ui.panels.plots.plots import DIMMED

    panel.add_events([_started(), *_learning(), EpochEnd(epoch=1, train_loss=1.0, val_loss=0.9, val_accuracy=0.7,
                                                         seconds=1.0)])
    assert _loss_legend(panel) == ["step", "smoothed", "val"]
    panel.set_overlays([("#1 eager", _curves([2.0, 1.0]))])
    assert _loss_legend(panel) == ["this run, step", "this run, smoothed", "this run, val", "#1 eager"]
    panel.set_run_name("#3")
    assert _loss_legend(panel) == ["#3 step", "#3 smoothed", "#3 val", "#1 eager"]
    legend = panel.loss_plot.getPlotItem().legend  # the swatches are dimmed with the curves they stand for
    assert [legend.sample(s.item).opacity() for s in (panel.step_loss, panel.val_loss)] == [DIMMED, DIMMED]
    memory = panel.memory_plot.getPlotItem().legend
    assert [memory.names[label] for _sample, label in memory.items] == ["#3 process RSS (CPU)", "#1 eager (rss)"]
    panel.set_overlays([])
    assert _loss_legend(panel) == ["step", "smoothed", "val"] and legend.sample(panel.val_loss.item).opacity() == 1


# -- text alternatives ------------------------------------------------------------------------------------------------
def test_each_plot_has_a_name_and_describes_its_latest_values(panel, qtbot):
    assert [plot.accessibleName() for plot in panel.all_plots] == ["Loss plot", "Accuracy plot", "Throughput plot",
                                                                     "Memory plot", "System plot"]
    panel.frames.timer.stop()  # the test draws the frames
    panel.add_events([_started(), *_learning(), EpochEnd(epoch=1, train_loss=1.0, val_loss=0.9, val_accuracy=0.7,
                                                         seconds=1.0)])
    panel.redraw()
    smoothed = smooth(np.array([2.0 / i for i in range(1, 7)]), panel.weight)[-1]
    assert panel.loss_plot.accessibleDescription() == (
        f"Loss at step 6: per step 0.333; smoothed {smoothed:.3g}; validation 0.9 (cross-entropy)")
    assert panel.throughput_plot.accessibleDescription() == "Throughput at step 6: samples/s 1,000 (samples/s)"
    assert panel.system_plot.accessibleDescription() == "System: no points yet"
    panel.add_events(_learning(8)[6:])  # events alone describe nothing: the frame that draws the plot does
    assert "at step 6:" in panel.loss_plot.accessibleDescription()
    panel.frames.timer.start(0)
    qtbot.waitUntil(lambda: panel.loss_plot.accessibleDescription().startswith(
        "Loss at step 8: per step 0.25;"), timeout=5000)
    assert "validation 0.9 at step 6" in panel.loss_plot.accessibleDescription()
    assert panel.accuracy_plot.accessibleDescription().startswith("Accuracy at step 8: per step 0.8;")


def test_show_as_table_lists_the_plots_series_newest_first(panel, qtbot):
    from PySide6.QtWidgets import QApplication, QToolButton

    from ..support.accessibility import audit

    panel.add_events([_started(), *_learning(), EpochEnd(epoch=1, train_loss=1.0, val_loss=0.9, val_accuracy=0.7,
                                                         seconds=1.0)])
    panel.redraw()
    menu = panel.findChild(QToolButton, "plotTableButton").menu()
    assert [action.text() for action in menu.actions()] == ["Loss", "Accuracy", "Throughput", "Memory", "System"]
    assert "Show as table…" in [a.text() for a in panel.loss_plot.getViewBox().menu.actions()]
    menu.actions()[0].trigger()
    table = panel.tables[panel.loss_plot]
    qtbot.addWidget(table)
    assert table.isVisible() and table.windowTitle() == "Loss as a table"
    assert audit(panel.show_table(panel.accuracy_plot)) == ([], [])  # every control named, none alike
    model = table.model
    assert model.header() == ["step", "per step", "smoothed", "validation"]
    rows = [[model.cell(row, column) for column in range(4)] for row in range(model.rowCount())]
    assert [row[0] for row in rows] == ["6", "5", "4", "3", "2", "1"]  # newest first
    assert rows[0][1] == "0.333333" and rows[0][3] == "0.9" and rows[1][3] == ""  # one validation, at step 6
    table.copy()
    assert QApplication.clipboard().text().splitlines()[:2] == ["step\tper step\tsmoothed\tvalidation",
                                                                "\t".join(rows[0])]
    panel.add_events(_learning(8)[6:])
    panel.redraw()
    table.limit.setCurrentIndex(0)  # the latest 100: all eight
    assert model.rowCount() == 8 and model.cell(0, 0) == "8"
    panel.set_overlays([("#1 eager", _curves([2.0, 1.0]))])
    assert panel.show_table(panel.loss_plot) is table and model.header()[-1] == "#1 eager"


def test_the_table_shows_the_latest_rows_of_a_long_run_only_when_asked_all(qtbot):
    from workbench.ui.panels.plots.table import PlotTable, XScale

    x = np.arange(1.0, 1_000_001)
    series = [("step", x, x / 10), ("val", x[999::1000], np.ones(1000))]
    table = PlotTable("Loss", lambda: XScale("step"), lambda: series)
    qtbot.addWidget(table)
    assert table.model.rowCount() == 1000 and table.model.cell(0, 0) == "1000000"
    assert table.model.cell(999, 0) == "999001" and table.model.cell(0, 2) == "1"
    table.limit.setCurrentIndex(table.limit.count() - 1)  # all
    assert table.model.rowCount() == 1_000_000


# -- a continued run ------------------------------------------------------------------------------------------------
def test_a_continued_run_shows_its_parents_curves_before_its_own_steps(panel):
    from workbench.ui.panels.plots.plots import PARENT_OPACITY

    from dataclasses import replace

    parent = replace(_curves([2.0, 1.5, 1.0, 0.8]), accuracy=np.array([0.2, 0.4, 0.5, 0.6]))
    panel.add_events([RunStarted(config=TrainConfig(), device="cpu", device_name="cpu", versions=VERSIONS,
                                 train_size=4000, val_size=1000, steps_per_epoch=4, total_steps=8, resumed_step=4),
                      *_learning(8)[4:]])
    panel.show_parent("#1", parent)
    panel.redraw()
    drawn = {plot: item for plot, item in panel.parent_items}
    assert set(drawn) == {panel.loss_plot, panel.accuracy_plot}
    loss = drawn[panel.loss_plot]
    assert list(loss.getOriginalDataset()[0]) == [1, 2, 3, 4] and loss.opacity() == PARENT_OPACITY
    assert loss.getOriginalDataset()[1] == pytest.approx(smooth(parent.loss, panel.weight))
    assert _loss_legend(panel)[-1] == "#1 (continued from)"
    low, high = panel.loss_plot.getViewBox().viewRange()[0]
    assert low < 1 and high >= 8  # the parent's steps and the continuation's on one axis
    assert drawn[panel.accuracy_plot].getOriginalDataset()[1] == pytest.approx(smooth(parent.accuracy,
                                                                                       panel.weight))
    panel.set_smoothing(0.9)
    assert panel.parent_items[0][1].getOriginalDataset()[1] == pytest.approx(smooth(parent.loss, 0.9))
    panel.reset()
    assert panel.parent_items == [] and "#1 (continued from)" not in _loss_legend(panel)


def test_compile_markers_are_named_in_the_legend_not_over_the_curves(panel, qtbot):
    """A label on the plot sat on the throughput curve, which fills the plot's height: the marker's name is a
    legend entry (a dashed swatch, dimmed with the line) and the line's tooltip, and nothing is drawn in the data."""
    from workbench.core.ground.events import CompileFinished
    from workbench.ui.panels.plots.plots import DIMMED

    panel.add_events([_started(), CompileFinished("inductor", "default", 1.1), *_learning(200)])
    panel.redraw()
    marker = panel.compile_marker
    assert not hasattr(marker, "label") and marker.toolTip() == "compile step: 1.1 s"
    legend = panel.throughput_plot.getPlotItem().legend
    assert [legend.names[label] for _sample, label in legend.listed()] == ["samples/s", "compile step: 1.1 s"]
    panel.set_overlays([("#1 eager", _curves([2.0, 1.0]))])
    qtbot.waitUntil(lambda: len(panel.overlay_markers) == 1)
    assert legend.sample(marker).opacity() == marker.opacity() == DIMMED
    panel.reset()
    assert "compile step: 1.1 s" not in [legend.names[label] for _sample, label in legend.items]


def test_every_chart_of_the_window_shows_the_values_themselves(waiting_window):
    """The dataset's class counts, Predict's probabilities, the profile's charts: no SI prefix on any axis, as on
    the live plots."""
    import pyqtgraph as pg

    charts = waiting_window.findChildren(pg.PlotWidget)
    assert len(charts) >= 8
    prefixed = [(chart.objectName() or type(chart).__name__, side) for chart in charts for side in ("left", "bottom")
                if chart.getPlotItem().getAxis(side).autoSIPrefix]
    assert prefixed == []


def test_thinning_keeps_each_stretchs_highest_and_lowest_the_last_short_stretch_and_gaps():
    from workbench.ui.panels.plots.items import peaks

    x, y = peaks(np.arange(10.0), np.array([1, 5, 2, 2, np.nan, 3, 0, 4, 9, 1.0]), 4)
    assert list(x) == [2, 2, 6, 6, 9, 9]  # each stretch at its middle step; the last (2 steps) at its end
    assert list(y[:2]) == [5, 1] and np.isnan(y[2:4]).all() and list(y[4:]) == [9, 1]


def test_a_long_compared_run_is_drawn_thinned_with_its_peaks_and_its_table_keeps_every_value(panel, qtbot):
    """20 runs of 20,000 steps drawn point by point froze the window: a recorded curve is drawn as at most about
    DRAWN_POINTS points, each stretch's highest and lowest value kept, while its table reads every step."""
    from workbench.ui.panels.plots.items import DRAWN_POINTS

    loss = np.ones(20_000)
    loss[12_345] = 50.0  # a spike thinning must keep
    panel.set_smoothing(0.0)
    panel.set_overlays([("#1", _curves(list(loss)))])
    qtbot.waitUntil(lambda: bool(panel.overlays))
    item = next(item for plot, item in panel.overlays if plot is panel.loss_plot)
    drawn_x, drawn_y = item.curve.getData()
    assert len(drawn_x) <= DRAWN_POINTS and drawn_y.max() == 50.0
    [(_name, x, y)] = [s for s in panel.table_series(panel.loss_plot) if s[0].startswith("#1")]
    assert len(x) == 20_000
