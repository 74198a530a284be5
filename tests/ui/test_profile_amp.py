"""The AMP tab's loss-scale plot: a point a change of scale, drawn once, never repainting by itself."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject
from PySide6.QtWidgets import QApplication

from workbench.core.ground.events import MemorySample, Step
from workbench.ui.panels.profile.amp import AmpTab

IDLE_PASSES = 10
RUNAWAY = 50  # paints in one settle beyond which a repaint feeds itself (the filter then swallows the rest)


def _step(step: int) -> Step:
    """fp16 steps whose scale changes every 50 steps (doubling twice, then halving back)."""
    return Step(step=step, epoch=1, loss=1.0, samples_per_s=1.0, step_seconds=0.1, memory=MemorySample(),
                loss_scale=2.0 ** (16 + (step // 50) % 3))


class _Paints(QObject):
    def __init__(self, widget):
        super().__init__()
        self.count = 0
        widget.viewport().installEventFilter(self)

    def eventFilter(self, watched, event):
        if event.type() != QEvent.Paint:
            return False
        self.count += 1
        return self.count > RUNAWAY

    def settle(self) -> None:
        for _ in range(IDLE_PASSES):
            QApplication.processEvents()


def test_the_loss_scale_plot_stops_painting_once_the_steps_stop(qtbot):
    """Before: the plot auto-ranged its steps on a peak-downsampled curve of every step, whose bins' first steps
    moved the range's end, which changed the downsampling factor, which moved the range back: through the run
    lengths where the factor goes from one to two points a bin (5 points a pixel, two points a step), the plot
    repainted at every turn of the event loop once the steps had stopped."""
    tab = AmpTab()
    qtbot.addWidget(tab)
    tab.resize(300, 600)
    tab.show()
    qtbot.waitExposed(tab)
    paints = _Paints(tab.scale_plot)
    for step in range(1, 101):
        tab.append(_step(step))
    tab.redraw()
    paints.settle()
    view = tab.scale_plot.getViewBox()
    flip = int(5 * view.width() / (1 + 2 * view.suggestPadding(0)))
    for step in range(101, flip - 40):
        tab.append(_step(step))
    for step in range(flip - 40, flip + 40):
        tab.append(_step(step))
        tab.redraw()
        paints.settle()
        paints.count = 0
        paints.settle()
        assert paints.count == 0, f"{step} steps: {paints.count} paints without a new step"
    assert tab.scale_curve.getOriginalDataset()[0][-1] == flip + 39  # the curve runs to the last step
