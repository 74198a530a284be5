"""The step plots' x axis (step, epoch, wall time, time since start) for the live run, a recorded one, the compared
runs and a continued run's parent; and seed groups overlaid as a mean line with a band."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pyqtgraph as pg
import pytest

from workbench.core.ground.config import TrainConfig
from workbench.core.ground.errors import WorkbenchError
from workbench.core.ground.events import CompileFinished, EpochEnd, MemorySample, RunStarted, Step
from workbench.core.history.curves import Curves, curves_from_events, smooth
from workbench.ui.panels.plots.plots import PlotsPanel

from ..helpers import VERSIONS

START = 1_700_000_000.0  # a Unix time: the live run started then
SPE = 4  # steps per epoch


def _started(wall: float | None = START, resumed_step: int = 0, total_steps: int = 8) -> RunStarted:
    return RunStarted(config=TrainConfig(), device="cpu", device_name="cpu", versions=VERSIONS, train_size=128,
                      val_size=32, steps_per_epoch=SPE, total_steps=total_steps, resumed_step=resumed_step, wall=wall)


def _step(i: int, wall: float | None) -> Step:
    """Step i: 0.5 s of its own, ended at `wall`."""
    return Step(step=i, epoch=1 + (i - 1) // SPE, loss=2.0 / i, samples_per_s=100.0 * i, step_seconds=0.5,
                memory=MemorySample(rss=10.0 * i), accuracy=i / 10, wall=wall)


def _run(n: int = 6, first: int = 1, start: float | None = START) -> list:
    """Steps first … first+n-1, step i ending 10 + i seconds after `start` (a 10 s compile before the first; None:
    no wall times), and the first epoch's end 2 s after its last step."""
    events = [_step(i, None if start is None else start + 10 + i) for i in range(first, first + n)]
    if first <= SPE < first + n:
        events.insert(SPE - first + 1, EpochEnd(epoch=1, train_loss=1.0, val_loss=0.9, val_accuracy=0.7, seconds=16,
                                                wall=None if start is None else start + 16))
    return events


@pytest.fixture
def panel(qtbot):
    panel = PlotsPanel()
    qtbot.addWidget(panel)
    panel.frames.timer.stop()  # the tests draw the frames
    return panel


def _x(item: pg.PlotDataItem) -> list[float]:
    x = item.getOriginalDataset()[0]
    return [] if x is None else x.tolist()  # pyqtgraph holds no array for no points


def _drawn(series) -> list[float]:
    return _x(series.item)


def _bottom(plot) -> pg.AxisItem:
    return plot.getPlotItem().getAxis("bottom")


# -- choosing the axis ------------------------------------------------------------------------------------------
def test_the_x_axis_box_changes_the_axis_and_says_so(panel, qtbot):
    box = panel.x_axis_box
    assert box.accessibleName() == "X axis" and panel.x_axis == "step"
    assert [box.itemText(i) for i in range(box.count())] == ["step", "epoch", "wall time", "time since start"]
    assert all(word in box.toolTip() for word in ("epoch:", "wall time:", "time since start:", "System"))
    with qtbot.waitSignal(panel.xAxisChanged) as changed:
        box.setCurrentIndex(1)
    assert changed.args == ["epoch"] and panel.x_axis == "epoch"
    with qtbot.waitSignal(panel.xAxisChanged) as changed:
        panel.set_x_axis("wall")  # from code (the window restoring its choice): the box follows
    assert changed.args == ["wall"] and box.currentText() == "wall time"
    with qtbot.assertNotEmitted(panel.xAxisChanged):
        panel.set_x_axis("wall")
    with pytest.raises(WorkbenchError, match="no x axis called 'time'") as refused:
        panel.set_x_axis("time")
    assert "step, epoch, wall, elapsed" in refused.value.hint and panel.x_axis == "wall"


def test_each_axis_places_the_live_runs_points(panel):
    panel.add_events([_started(), CompileFinished("inductor", "default", 9.0), *_run()])
    panel.redraw()
    assert _drawn(panel.step_loss) == [1, 2, 3, 4, 5, 6]
    expected = {"epoch": [0.25, 0.5, 0.75, 1.0, 1.25, 1.5],
                "wall": [START + 11 + i for i in range(6)],
                "elapsed": [11.0, 12, 13, 14, 15, 16]}
    for kind, x in expected.items():
        panel.set_x_axis(kind)
        panel.redraw()
        assert _drawn(panel.step_loss) == pytest.approx(x), kind
        assert _drawn(panel.smooth_loss) == pytest.approx(x) and _drawn(panel.throughput) == pytest.approx(x)
        assert _drawn(panel.memory["rss"]) == pytest.approx(x) and _drawn(panel.step_accuracy) == pytest.approx(x)
        assert _drawn(panel.val_loss) == pytest.approx([x[SPE - 1]])  # at its epoch's last step
        assert panel.compile_marker.value() == pytest.approx(x[0])  # the compiling step, the run's first
        low, high = panel.loss_plot.getViewBox().viewRange()[0]
        assert low <= x[0] and x[-1] <= high, kind
    assert isinstance(_bottom(panel.loss_plot), pg.DateAxisItem) is False  # the last one chosen: elapsed
    panel.set_x_axis("wall")
    assert all(isinstance(_bottom(plot), pg.DateAxisItem) for plot in panel.plots)
    assert not isinstance(_bottom(panel.system_plot), pg.DateAxisItem)  # the system plot keeps its seconds
    assert _bottom(panel.throughput_plot).labelText == "wall time"
    panel.add_events(_run(2, first=7))  # later steps are placed as they come
    panel.redraw()
    assert _drawn(panel.step_loss)[-2:] == pytest.approx([START + 17, START + 18])
    panel.set_x_axis("step")
    panel.redraw()
    assert _drawn(panel.step_loss) == [1, 2, 3, 4, 5, 6, 7, 8]
    assert _bottom(panel.memory_plot).labelText == "step" and panel.compile_marker.value() == 1


def test_compile_markers_wait_for_their_steps_time(panel):
    """On a time axis a marker's x is its step's time: one that comes before its step is hidden until it has one."""
    from workbench.core.ground.events import CompileEvent

    panel.set_x_axis("elapsed")
    panel.add_events([_started(), CompileFinished("inductor", "default", 9.0),
                      CompileEvent(step=2, kind="recompile", title="recompiled")])
    panel.redraw()
    marker, [timeline] = panel.compile_marker, panel.timeline.lines.values()
    assert not marker.isVisible() and not timeline.isVisible()
    panel.add_events(_run(3))
    panel.redraw()
    assert marker.isVisible() and marker.value() == 11 and timeline.isVisible() and timeline.value() == 12


def test_a_run_recorded_before_wall_times_adds_up_its_step_times_and_says_so(panel):
    old = curves_from_events([_started(wall=None), *_run(start=None)])
    panel.show_curves(old)
    panel.set_x_axis("elapsed")
    panel.redraw()
    assert _drawn(panel.step_loss) == pytest.approx([0.5, 1.0, 1.5, 2.0, 2.5, 3.0])
    assert _bottom(panel.throughput_plot).labelText == "seconds since start (from step times)"
    assert not panel.empty_text.isVisible()
    panel.set_x_axis("wall")  # no wall time at all: nothing drawn, and the plot says why
    panel.redraw()
    assert _drawn(panel.step_loss) == [] and panel.empty_text.isVisible()
    assert "no wall time" in panel.empty_text.textItem.toPlainText()
    panel.set_x_axis("epoch")
    panel.redraw()
    assert not panel.empty_text.isVisible() and _drawn(panel.step_loss)[-1] == 1.5
    panel.show_curves(curves_from_events([_started(), *_run()]))  # a run with wall times: the plain label
    panel.set_x_axis("elapsed")
    assert _bottom(panel.throughput_plot).labelText == "seconds since start"


def test_compared_runs_follow_the_axis(panel):
    panel.add_events([_started(), *_run()])
    recorded = curves_from_events([_started(wall=START + 1000), *_run(4, start=START + 1000)])
    old = curves_from_events([_started(wall=None), *_run(4, start=None)])
    panel.set_overlays([("#1 eager", recorded), ("#2 old", old)])
    panel.set_x_axis("epoch")
    loss = [item for plot, item in panel.overlays if plot is panel.loss_plot]
    assert [_x(item) for item in loss] == [[0.25, 0.5, 0.75, 1.0]] * 2
    assert loss[0].getOriginalDataset()[1] == pytest.approx(smooth(recorded.loss, panel.weight))
    panel.set_x_axis("elapsed")  # each from its own start
    loss = [item for plot, item in panel.overlays if plot is panel.loss_plot]
    assert _x(loss[0]) == [11, 12, 13, 14]
    assert _x(loss[1]) == [0.5, 1.0, 1.5, 2.0]
    assert _bottom(panel.throughput_plot).labelText == "seconds since start (from step times)"
    panel.set_x_axis("wall")
    names = [item.name() for plot, item in panel.overlays if plot is panel.loss_plot]
    assert names == ["#1 eager", "#2 old (no wall time)"]
    loss = [item for plot, item in panel.overlays if plot is panel.loss_plot]
    assert _x(loss[0]) == [START + 1011 + i for i in range(4)]
    assert _x(loss[1]) == []
    low, high = panel.loss_plot.getViewBox().viewRange()[0]
    assert low <= START + 11 and START + 1014 <= high  # the live run's and the compared run's times


def test_a_continued_runs_parent_follows_the_axis_and_its_time_goes_on_from_the_parents(panel):
    parent = curves_from_events([_started(wall=START - 100), *_run(4, start=START - 100)])  # steps end 11 … 14 s in
    panel.add_events([_started(resumed_step=4), *_run(2, first=5)])
    panel.show_parent("#1", parent)
    panel.set_x_axis("epoch")
    panel.redraw()
    drawn = {plot: item for plot, item in panel.parent_items}
    assert _x(drawn[panel.loss_plot]) == [0.25, 0.5, 0.75, 1.0]
    assert _drawn(panel.step_loss) == [1.25, 1.5]
    panel.set_x_axis("elapsed")
    panel.redraw()
    drawn = {plot: item for plot, item in panel.parent_items}
    assert _x(drawn[panel.accuracy_plot]) == [11, 12, 13, 14]
    assert _drawn(panel.step_loss) == [14 + 15, 14 + 16]  # after the parent's 14 s


def test_the_table_and_the_description_use_the_chosen_x(panel, qtbot):
    from datetime import datetime

    panel.add_events([_started(), *_run()])
    panel.set_x_axis("epoch")
    panel.redraw()
    assert panel.loss_plot.accessibleDescription().startswith("Loss at epoch 1.5: per step 0.333;")
    table = panel.show_table(panel.loss_plot)
    qtbot.addWidget(table)
    assert table.model.header()[0] == "epoch"
    assert [table.model.cell(row, 0) for row in range(3)] == ["1.5", "1.25", "1"]
    panel.set_x_axis("wall")  # the open table follows
    stamp = datetime.fromtimestamp(START + 16)
    assert table.model.header()[0] == "wall time"
    assert table.model.cell(0, 0) == stamp.strftime("%Y-%m-%d %H:%M:%S.000")
    panel.redraw()
    assert panel.loss_plot.accessibleDescription().startswith(f"Loss at {stamp:%Y-%m-%d %H:%M:%S}:")
    panel.set_x_axis("elapsed")
    panel.redraw()
    assert panel.loss_plot.accessibleDescription().startswith("Loss at 16 seconds since start:")
    assert panel.description(panel.system_plot) == "System: no points yet"


# -- seed groups ------------------------------------------------------------------------------------------------
def _member(losses: list[float], accuracies: list[float], started: float) -> Curves:
    x = np.arange(1.0, len(losses) + 1)
    return Curves(step=x, loss=np.array(losses), throughput_step=x, throughput=1000 * np.array(losses),
                  accuracy=np.array(accuracies), memory={"rss": 500 + 10 * np.array(losses)}, wall=started + 10 * x,
                  step_seconds=np.full(len(x), 10.0), started=started, steps_per_epoch=2)


GROUP = [_member([4.0, 2.0, 1.0], [0.1, 0.3, 0.5], started=START),
         _member([2.0, 4.0, 3.0], [0.3, 0.5, 0.9], started=START + 3600)]


def _bands(panel, plot) -> list[pg.FillBetweenItem]:
    return [drawn.fill for shown, drawn in panel.group_bands if shown is plot]


def test_a_seed_group_is_one_mean_line_with_a_band_on_every_step_plot(panel):
    panel.set_smoothing(0.0)  # the raw values: the band's numbers by hand
    panel.set_group_overlays([("inductor · seeds 0, 1: #4, #5", GROUP)])
    [fill] = _bands(panel, panel.loss_plot)
    low, high = (curve.getData() for curve in fill.curves)
    assert low[0].tolist() == [1, 2, 3] and low[1].tolist() == [2, 2, 1] and high[1].tolist() == [4, 4, 3]
    mean = next(item for plot, item in panel.overlays if plot is panel.loss_plot)
    assert mean.getOriginalDataset()[1].tolist() == [3, 3, 2]
    assert mean.name() == "inductor · seeds 0, 1: #4, #5 (mean, min–max)"
    legend = panel.loss_plot.getPlotItem().legend
    assert [legend.names[label] for _sample, label in legend.items][-1] == mean.name()  # one entry for the group
    [fill] = _bands(panel, panel.accuracy_plot)
    low, high = (curve.getData()[1] for curve in fill.curves)
    assert low == pytest.approx([0.1, 0.3, 0.5]) and high == pytest.approx([0.3, 0.5, 0.9])
    assert fill.brush().color().alpha() < 255  # translucent
    for plot, scale, offset in ((panel.throughput_plot, 1000, 0), (panel.memory_plot, 10, 500)):  # not smoothed
        [fill] = _bands(panel, plot)
        low, high = (curve.getData()[1] for curve in fill.curves)
        assert low.tolist() == [offset + scale * v for v in (2, 2, 1)]
        assert high.tolist() == [offset + scale * v for v in (4, 4, 3)]
    table = dict((name, y.tolist()) for name, _x, y in panel.table_series(panel.loss_plot))
    assert table["inductor · seeds 0, 1: #4, #5 lowest"] == [2, 2, 1]
    panel.set_group_overlays([("g", GROUP)], spread="std")  # ±1σ: sample standard deviation of two is |a-b|/√2
    [fill] = _bands(panel, panel.loss_plot)
    low, high = (curve.getData()[1] for curve in fill.curves)
    spread = np.array([2.0, 2.0, 2.0]) / np.sqrt(2)
    assert low == pytest.approx(np.array([3, 3, 2]) - spread) and high == pytest.approx(np.array([3, 3, 2]) + spread)
    assert next(item for plot, item in panel.overlays if plot is panel.loss_plot).name() == "g (mean ± 1σ)"
    with pytest.raises(WorkbenchError, match="no band called 'range'"):
        panel.set_group_overlays([("g", GROUP)], spread="range")
    panel.set_group_overlays([])
    assert panel.group_bands == [] and panel.overlays == []


def test_a_seed_group_follows_the_axis_and_comes_after_the_single_runs_colours(panel):
    from workbench.ui.panels.plots.plots import PALETTE

    panel.set_overlays([("#1 eager", GROUP[0])])
    panel.set_group_overlays([("g", GROUP)])
    mean = [item for plot, item in panel.overlays if plot is panel.loss_plot][-1]
    assert mean.opts["pen"].color().name() == PALETTE[1]
    panel.set_x_axis("epoch")
    [fill] = _bands(panel, panel.loss_plot)
    assert fill.curves[0].getData()[0].tolist() == [0.5, 1.0, 1.5]
    panel.set_x_axis("wall")  # each step at the members' mean time
    mean = [item for plot, item in panel.overlays if plot is panel.loss_plot][-1]
    assert _x(mean) == [START + 1800 + 10 * i for i in (1, 2, 3)]
    panel.set_overlays([])  # the single runs go, the group stays
    assert [item.name() for plot, item in panel.overlays if plot is panel.loss_plot] == [
        "g (mean, min–max)"]
    old = [replace(member, wall=None, started=None) for member in GROUP]  # recorded before wall times
    panel.set_group_overlays([("old", old)])
    assert [(plot, item.name()) for plot, item in panel.overlays] == [(plot, "old (no wall time)")
                                                                      for plot in panel.plots]
    assert not panel.group_bands


def test_comparing_runs_draws_those_that_differ_only_by_seed_as_a_group(waiting_window):
    from workbench.core.history.runs import RunRecord
    from workbench.ui.panels.runs.runs import LoadedRun

    def loaded(run_id: int, seed: int, backend: str, curves: Curves) -> LoadedRun:
        record = RunRecord(id=run_id, created="2025-01-01T00:00:00+00:00", status="finished",
                           config=TrainConfig(seed=seed, backend=backend).to_dict(), environment={}, steps=3,
                           best_val_accuracy=None, samples_per_s=None, compile_seconds=None, peak_memory_mib=None,
                           backend_used=None, failure=None, out_dir=None, checkpoint=None)
        return LoadedRun(record, curves, ())

    plots = waiting_window.plots
    waiting_window.recorded_runs.compare([loaded(1, 0, "inductor", GROUP[0]), loaded(2, 1, "inductor", GROUP[1]),
                                          loaded(3, 0, "aot_eager", GROUP[0])])
    names = [item.name() for plot, item in plots.overlays if plot is plots.loss_plot]
    assert names[0] == "#3 aot_eager" and len(names) == 2
    assert names[1].endswith("seeds 0, 1: #1, #2 (mean, min–max)")
    assert len(_bands(plots, plots.loss_plot)) == 1
    waiting_window.recorded_runs.compare([])
    assert plots.overlays == [] and plots.group_bands == []


def test_an_imported_run_says_where_it_came_from_when_compared(waiting_window):
    from workbench.core.history.runs import RunRecord
    from workbench.ui.panels.runs.runs import LoadedRun

    def loaded(run_id: int, environment: dict) -> LoadedRun:
        record = RunRecord(id=run_id, created="2025-01-01T00:00:00+00:00", status="finished",
                           config=TrainConfig(lr=run_id / 1000).to_dict(), environment=environment, steps=3,
                           best_val_accuracy=None, samples_per_s=None, compile_seconds=None, peak_memory_mib=None,
                           backend_used=None, failure=None, out_dir=None, checkpoint=None)
        return LoadedRun(record, GROUP[run_id - 1], None)

    plots = waiting_window.plots
    waiting_window.recorded_runs.compare([loaded(1, {}), loaded(2, {"imported_from": {"source": "TensorBoard"}})])
    names = [item.name() for plot, item in plots.overlays if plot is plots.loss_plot]
    assert names == ["#1 lr=0.001", "#2 lr=0.002 (from TensorBoard)"]
