"""Markers at steps of a plot: a vertical line a step, labelled with a glyph near the plot's top, its tooltip saying
what happened there, a click on it handed on. What a marker stands for, its colour and glyph, is the subclass's:
the compile timeline (compile_timeline.py) and the run's alerts (alert_markers.py) on the loss plot. The plots place
the lines (`lines`) at their steps' x on the chosen x axis."""

from __future__ import annotations

from typing import Callable

import pyqtgraph as pg
from PySide6.QtCore import QObject, Qt


class StepMarkers(QObject):
    def __init__(self, plot: pg.PlotWidget, height: float, z: float, style: Qt.PenStyle = Qt.SolidLine):
        """`height`: where the glyphs sit (0…1 of the plot's height); `z`: under the curves (< 0), in the order the
        kinds of markers overlap."""
        super().__init__(plot)
        self.plot, self.height, self.z, self.style = plot, height, z, style
        self.lines: dict[int, pg.InfiniteLine] = {}

    def mark(self, step: int, colour: str, glyph: str, tip: str, clicked: Callable[[], None]) -> None:
        """The marker of `step`, drawn or redrawn; `clicked()` when it is clicked (given with its first drawing)."""
        pen = pg.mkPen(colour, width=2, style=self.style)
        line = self.lines.get(step)
        if line is None:
            line = pg.InfiniteLine(pos=step, angle=90, pen=pen, label=glyph,
                                   labelOpts={"position": self.height, "color": colour})
            line.setZValue(self.z)
            line.sigClicked.connect(lambda _line, _event: clicked())
            self.plot.addItem(line)
            self.lines[step] = line
        else:
            line.setPen(pen)
            line.label.setText(glyph)
            line.label.setColor(colour)
        line.setToolTip(tip)
        line.label.setToolTip(tip)

    def clear(self) -> None:
        for line in self.lines.values():
            self.plot.removeItem(line)
        self.lines.clear()

    def set_opacity(self, opacity: float) -> None:
        for line in self.lines.values():
            line.setOpacity(opacity)
