"""Markers at steps of a plot: a vertical line a step, labelled with a glyph near the plot's top, its tooltip saying
what happened there, a click on it handed on. What a marker stands for, its colour and glyph, is the subclass's:
the compile timeline (compile/timeline.py) and the run's alerts (plots/alert_markers.py) on the loss plot. The plots
place the lines (`lines`) at their steps' x on the chosen x axis.

Markers closer on screen than CLOSE_PIXELS are one marker while they are that close: the first carries every glyph
('✂↻'), each line's tooltip says every step of the group, and a click on any of them hands on every step. Drawn
apart, steps 1 and 2 of a long run sat on one pixel column: their glyphs overprinted, the hover named one step and a
click chose the other. Groups are formed again when the view's range or size changes, or a marker moves.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyqtgraph as pg
from PySide6.QtCore import QObject, Qt, QTimer

CLOSE_PIXELS = 12  # about a glyph's width: closer than this, two glyphs overprint


@dataclass(frozen=True)
class Mark:
    """What one step's marker shows."""

    colour: str
    glyph: str
    tip: str


class StepMarkers(QObject):
    def __init__(self, plot: pg.PlotWidget, height: float, z: float, style: Qt.PenStyle = Qt.SolidLine):
        """`height`: where the glyphs sit (0…1 of the plot's height); `z`: under the curves (< 0), in the order the
        kinds of markers overlap."""
        super().__init__(plot)
        self.plot, self.height, self.z, self.style = plot, height, z, style
        self.lines: dict[int, pg.InfiniteLine] = {}
        self.marks: dict[int, Mark] = {}
        self.groups: dict[int, tuple[int, ...]] = {}  # step → the steps drawn as one marker with it
        self._regroup_soon = QTimer(self, singleShot=True, interval=0)
        self._regroup_soon.timeout.connect(self.regroup)
        view = plot.getPlotItem().getViewBox()
        view.sigXRangeChanged.connect(self._regroup_soon.start)
        view.sigResized.connect(self._regroup_soon.start)

    def clicked(self, steps: tuple[int, ...]) -> None:
        """A marker was clicked: `steps`, the steps drawn as that marker. The subclass hands them on."""
        raise NotImplementedError

    def mark(self, step: int, colour: str, glyph: str, tip: str) -> None:
        """The marker of `step`, drawn or redrawn."""
        self.marks[step] = Mark(colour, glyph, tip)
        pen = pg.mkPen(colour, width=2, style=self.style)
        line = self.lines.get(step)
        if line is None:
            line = pg.InfiniteLine(pos=step, angle=90, pen=pen, label=glyph,
                                   labelOpts={"position": self.height, "color": colour})
            line.setZValue(self.z)
            line.sigClicked.connect(lambda _line, _event: self.clicked(self.groups.get(step, (step,))))
            line.sigPositionChanged.connect(self._regroup_soon.start)
            self.plot.addItem(line)
            self.lines[step] = line
        else:
            line.setPen(pen)
        self._show(step, (step,))
        self._regroup_soon.start()

    def regroup(self) -> None:
        """Group the shown markers by how close they are on screen, now (it also follows the view by itself)."""
        view = self.plot.getPlotItem().getViewBox()
        (left, right), width = view.viewRange()[0], view.width()
        per_pixel = (right - left) / width if width > 0 and right > left else 0.0
        groups: list[list[int]] = []
        for x, step in sorted((line.value(), step) for step, line in self.lines.items() if line.isVisible()):
            if groups and x - self.lines[groups[-1][0]].value() < CLOSE_PIXELS * per_pixel:
                groups[-1].append(step)
            else:
                groups.append([step])
        for group in groups:
            for step in group:
                self._show(step, tuple(group))

    def _show(self, step: int, group: tuple[int, ...]) -> None:
        """`step`'s line as a member of `group`: the first member's label shows the group's glyphs, the others'
        none; every member's tooltip says the whole group."""
        self.groups[step] = group
        line, mark = self.lines[step], self.marks[step]
        label = line.label
        if step == group[0]:
            glyphs = "".join(dict.fromkeys(self.marks[each].glyph for each in group))
            if label.format != glyphs:
                label.setFormat(glyphs)  # not setText: the label writes its format again whenever the line moves
            label.setColor(mark.colour)
        if label.isVisibleTo(line) != (step == group[0]):
            label.setVisible(step == group[0])
        tip = mark.tip if len(group) == 1 else "\n\n".join(self.marks[each].tip for each in group)
        line.setToolTip(tip)
        label.setToolTip(tip)

    def clear(self) -> None:
        for line in self.lines.values():
            self.plot.removeItem(line)
        self.lines.clear()
        self.marks.clear()
        self.groups.clear()

    def set_opacity(self, opacity: float) -> None:
        for line in self.lines.values():
            line.setOpacity(opacity)
