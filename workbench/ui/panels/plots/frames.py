"""The live plots' frames: the plots due a redraw are drawn one an event-loop turn.

Drawn together, four plots' new points, ranges and paints held the GUI thread for one stretch as long as all of
them (tens of milliseconds on a busy CPU): a click, a keystroke or the run's next events waited for the whole
frame. One plot a turn, the event loop runs between them. The next frame waits for what this one cost, paints
included, over FRAME_BUDGET, so however long a run grows the plots take about a tenth of the GUI thread.
"""

from __future__ import annotations

import time
from typing import Callable, Sequence

from PySide6.QtCore import QObject, QTimer

from .items import TimedPlot

REDRAW_MS = 33  # fastest frame interval (~30 Hz)
FRAME_BUDGET = 0.1  # share of wall time the frames may take; slower frames stretch the interval
MAX_REDRAW_MS = 500


class Frames(QObject):
    """On a timer, draws with `draw(plot)` the first of the plots `due()` names, then the next one at the next
    turn of the event loop until none is due; `plots` are all of them, whose paints count into a frame's cost."""

    def __init__(self, plots: Sequence[TimedPlot], due: Callable[[], list[TimedPlot]],
                 draw: Callable[[TimedPlot], None], parent: QObject):
        super().__init__(parent)
        self.plots, self.due, self.draw = plots, due, draw
        self.timer = QTimer(self)
        self.timer.setSingleShot(True)
        self.timer.timeout.connect(self._tick)
        self.timer.start(REDRAW_MS)
        self._work = 0.0  # seconds this frame's turns have taken so far
        self._painted = 0.0  # the plots' paint seconds already counted

    def draw_all(self) -> None:
        """Every plot due, now (a recorded run; tests)."""
        while due := self.due():
            self.draw(due[0])

    def _tick(self) -> None:
        started = time.perf_counter()
        due = self.due()
        if due:
            self.draw(due[0])
        self._work += time.perf_counter() - started
        if due and self.due():
            self.timer.start(0)  # the next plot, once the event loop has run (and painted this one)
            return
        painted = sum(plot.paint_seconds for plot in self.plots)
        seconds = self._work + painted - self._painted
        self._work, self._painted = 0.0, painted
        self.timer.start(int(min(MAX_REDRAW_MS, max(REDRAW_MS, 1000 * seconds / FRAME_BUDGET))))
