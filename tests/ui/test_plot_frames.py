"""The live plots' frame budget, counted rather than timed (the machines are noisy): each plot paints once a frame,
the step axis moves a few dozen times a run instead of every frame, nothing repaints once the events stop, and
compared runs' legends keep every plot inside its widget."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest
from PySide6.QtCore import QEvent, QObject
from PySide6.QtWidgets import QApplication

from workbench.core.ground.config import TrainConfig
from workbench.core.ground.events import EpochEnd, MemorySample, RunStarted, Step, SystemSample
from workbench.core.history.curves import Curves
from workbench.core.history.naming import run_label
from workbench.ui.panels.plots.frames import REDRAW_MS
from workbench.ui.panels.plots.items import HEADROOM
from workbench.ui.panels.plots.plots import PlotsPanel

from ..helpers import VERSIONS

STEPS_PER_EPOCH = 125
IDLE_PASSES = 20
# Paints of one plot while the event loop settles once, beyond which a repaint feeds itself: the guard swallows the
# rest, which ends the loop (it was a paint that set the next range), and the test fails instead of hanging in it.
RUNAWAY = 50


def _started(total_steps: int) -> RunStarted:
    return RunStarted(config=TrainConfig(), device="cpu", device_name="cpu", versions=VERSIONS, train_size=4000,
                      val_size=1000, steps_per_epoch=STEPS_PER_EPOCH, total_steps=total_steps)


def _steps(first: int, last: int) -> list:
    """What a run sends: noisy falling loss, rising accuracy, steady throughput, growing memory, a validation at
    each epoch's end and a system sample now and then."""
    events = []
    for step in range(first, last + 1):
        noise = ((step * 7919) % 100) / 1000
        events.append(Step(step=step, epoch=1 + step // STEPS_PER_EPOCH, loss=2.3 / (1 + step / 300) + noise,
                           samples_per_s=20_000 + 1000 * noise, step_seconds=0.0016,
                           memory=MemorySample(rss=900 + step / 100),
                           accuracy=min(1.0, step / 3000 + noise)))
        if step % STEPS_PER_EPOCH == 0:
            events.append(EpochEnd(epoch=step // STEPS_PER_EPOCH, train_loss=1.0, val_loss=1 / (1 + step / 500),
                                   val_accuracy=0.9, seconds=1.0))
        if step % 100 == 0:
            events.append(SystemSample(seconds=step / 600, cpu_process=100.0, cpu_machine=50.0, rss_mib=900.0))
    return events


class _Paints(QObject):
    """Counts the paint events of the plots' viewports, by plot; `runaway` once one plot paints more than RUNAWAY
    times in one `settle()`."""

    def __init__(self, plots):
        super().__init__()
        self.counts: Counter[str] = Counter()
        self.settling: Counter[str] = Counter()
        self.runaway = False
        for plot in plots:
            plot.viewport().installEventFilter(self)

    def eventFilter(self, watched, event):
        if event.type() != QEvent.Paint:
            return False
        name = watched.parent().objectName()
        self.counts[name] += 1
        self.settling[name] += 1
        self.runaway = self.runaway or self.settling[name] > RUNAWAY
        return self.runaway

    def settle(self) -> None:
        self.settling.clear()
        for _ in range(IDLE_PASSES):
            QApplication.processEvents()
        assert not self.runaway, f"a repaint fed itself: {dict(self.settling)}"


@pytest.fixture
def shown(qtbot):
    panel = PlotsPanel()
    qtbot.addWidget(panel)
    panel.frames.timer.stop()  # the test draws the frames
    panel.resize(1000, 600)
    panel.show()
    qtbot.waitExposed(panel)
    return panel


@pytest.fixture
def paints(shown):
    paints = _Paints(shown.plots)
    paints.settle()
    paints.counts.clear()
    return paints


def _x_changes(panel: PlotsPanel) -> Counter:
    changes: Counter[str] = Counter()
    panel.loss_plot.getViewBox().sigXRangeChanged.connect(lambda *_: changes.update(["x"]))
    return changes


def test_each_plot_paints_once_a_frame_and_the_step_axis_moves_a_few_dozen_times_a_run(shown, paints):
    """Before: every frame moved the step axis of all four plots and painted each of them twice (the paint ranged
    the axis, which re-clipped the linked plots' curves and asked for another paint)."""
    total, per_batch = 3000, 20
    x_changes = _x_changes(shown)
    shown.add_events([_started(total)])
    frames = 0
    for first in range(1, total + 1, per_batch):
        shown.add_events(_steps(first, first + per_batch - 1))
        shown.redraw()
        frames += 1
        paints.settle()
    assert shown.point_counts()["loss"] == total
    assert x_changes["x"] <= 1 + math.log(total) / math.log(1 + HEADROOM)  # it grows by HEADROOM at a time
    for plot in shown.plots:  # a few more when a y axis widens for longer labels
        assert paints.counts[plot.objectName()] <= 1.1 * frames, plot.objectName()
    assert shown.loss_plot.getViewBox().viewRange()[0][1] >= total  # the whole run is in view


def test_a_frame_draws_one_plot_an_event_loop_turn(shown, paints):
    """Drawn in one go, the four plots' points, ranges and paints held the GUI thread as long as all of them: a
    frame now draws the first plot whose curves changed and lets the event loop run before the next, and a plot
    whose steps follow the loss plot's catches up with a longer axis in its own turn."""
    shown.add_events([_started(500), *_steps(1, 500)])
    shown.frames.timer.timeout.emit()  # a frame's first turn

    def drawn(series) -> int:
        x = series.item.getData()[0]
        return 0 if x is None else len(x)

    steps = shown.loss_plot.getViewBox().viewRange()[0]
    assert drawn(shown.step_loss) == 500 and drawn(shown.step_accuracy) == drawn(shown.throughput) == 0
    assert shown.accuracy_plot.getViewBox().viewRange()[0] != steps  # it follows the longer axis in its own turn
    assert shown.frames.timer.isActive() and shown.frames.timer.interval() == 0  # the next plot, next turn
    paints.settle()
    assert drawn(shown.step_accuracy) == drawn(shown.throughput) == 500
    assert shown.accuracy_plot.getViewBox().viewRange()[0] == steps
    assert shown.frames.timer.interval() >= REDRAW_MS  # the frame is over: the next one waits
    assert all(paints.counts[plot.objectName()] >= 1 for plot in shown.plots)


def test_the_step_axis_is_the_steps_span_whatever_the_curves_draw(shown, paints):
    """Before: the loss plot ranged its steps on its drawn curves, which peak-downsampling starts at a bin's first
    step: a factor that changed the range changed the factor back, and the plots repainted one another for ever."""
    shown.add_events([_started(500), *_steps(1, 500)])
    shown.redraw()
    paints.settle()
    before = shown.loss_plot.getViewBox().viewRange()[0]
    shown.loss_plot.getPlotItem().setDownsampling(ds=4, auto=False, mode="peak")
    paints.settle()
    assert shown.loss_plot.getViewBox().viewRange()[0] == before


def test_nothing_repaints_once_the_events_stop(shown, paints):
    """One step a frame through the run lengths where, before, the loss plot's auto-downsampling went from one to
    two points a bin (an x range of 2 × 5 points a pixel): at one of them it flipped on every paint, and the window
    repainted at 100% CPU, answering nothing else, after the run had ended."""
    view = shown.loss_plot.getViewBox()
    flip = int(2 * 5 * view.width() / (1 + 2 * view.suggestPadding(0)))
    x_changes = _x_changes(shown)
    shown.add_events([_started(10 * flip), *_steps(1, flip - 40)])
    shown.redraw()
    paints.settle()
    for step in range(flip - 39, flip + 40):
        shown.add_events(_steps(step, step))
        shown.redraw()
        paints.settle()
        paints.counts.clear()
        x_changes.clear()
        paints.settle()
        assert not paints.counts and not x_changes, f"step {step}: {dict(paints.counts)}, {dict(x_changes)}"


def _run(seed: int) -> Curves:
    x = np.arange(1.0, 501)
    noise = np.random.default_rng(seed).random(500)
    return Curves(step=x, loss=2 / (1 + x / 50) + noise / 10, throughput_step=x, throughput=20_000 + noise,
                  memory={"rss": 900 + x / 10}, val_step=x[124::125], val_loss=np.array([1.0, 0.8, 0.7, 0.6]),
                  val_accuracy=np.array([0.8, 0.85, 0.9, 0.92]), compile_seconds=3.0)


def test_comparing_two_runs_keeps_every_plot_inside_its_widget(shown, paints):
    """Before: four legend columns of the compared runs' names were wider than a plot, which grew past its widget
    (titles off-centre, axes and legends cut) and stayed so after the comparison, until the window was resized.
    These names differ in five settings: even one of them is wider than a plot, and is cut in the middle."""
    configs = [TrainConfig(backend="inductor", mode="max-autotune", amp="bf16", lr=0.001).to_dict(),
               TrainConfig(backend="aot_eager", amp="fp16", batch_size=256).to_dict()]
    keys = ["amp", "backend", "batch_size", "lr", "mode"]
    shown.add_events([_started(500), *_steps(1, 500)])
    shown.redraw()

    def wider() -> dict[str, tuple[float, int]]:
        paints.settle()
        return {p.objectName(): (p.getPlotItem().width(), p.width()) for p in shown.plots
                if p.getPlotItem().width() > p.width()}

    runs = [(run_label(12 + i, config, keys), _run(i)) for i, config in enumerate(configs)]
    shown.set_overlays(runs)
    assert wider() == {}
    legend = shown.accuracy_plot.getPlotItem().legend
    assert [label.toolTip() for _, label in legend.items][-2:] == [f"{name} (validation)" for name, _ in runs]
    shown.set_overlays([])
    assert wider() == {}
    assert [label.text for _, label in legend.items] == ["step", "smoothed", "val"]
