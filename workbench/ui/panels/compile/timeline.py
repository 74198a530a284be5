"""The compile timeline: what the compiler did, at the step it did it — markers on the loss plot, and a list.

A marker is a dashed line at a step, one per step however many events share it, coloured by the most telling of
them (a fallback over a recompile over a graph). Clicking one selects that step in the Compile panel's timeline
list, which shows each event's details and the user's source line.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (QAbstractItemView, QHeaderView, QPlainTextEdit, QSplitter, QTreeWidget,
                               QTreeWidgetItem, QVBoxLayout, QWidget)

from ....core.ground.compile_kinds import compile_kind
from ....core.ground.events import CompileEvent
from ..step_markers import StepMarkers


def summary(events: list[CompileEvent]) -> str:
    """'◆ 2 graphs compiled · ○ 2 cache misses': a step's events, by kind, most telling first."""
    counts: dict[str, int] = defaultdict(int)
    for event in events:
        counts[event.kind] += 1
    parts = []
    for kind in sorted(counts, key=lambda k: -compile_kind(k).rank):
        style = compile_kind(kind)
        parts.append(f"{style.glyph} {counts[kind]} {style.one if counts[kind] == 1 else style.many}")
    return " · ".join(parts)


class TimelineMarkers(StepMarkers):
    """The markers on a plot; `stepsClicked(steps)` when one is clicked (the steps drawn as that marker)."""

    stepsClicked = Signal(tuple)

    def __init__(self, plot: pg.PlotWidget):
        super().__init__(plot, height=0.96, z=-5, style=Qt.DotLine)
        self.events: dict[int, list[CompileEvent]] = defaultdict(list)

    def add(self, events: list[CompileEvent]) -> None:
        for event in events:
            self.events[event.step].append(event)
        for step in {e.step for e in events}:
            self._draw(step)

    def _draw(self, step: int) -> None:
        events = self.events[step]
        style = max((compile_kind(e.kind) for e in events), key=lambda kind: kind.rank)
        tip = f"step {step:,}: {summary(events)}\n" + "\n".join(f"  {e.title}" for e in events[:12])
        tip += ("\n  …" if len(events) > 12 else "") + "\n(click: details in the Compile panel)"
        self.mark(step, style.colour, style.glyph, tip)

    def clicked(self, steps: tuple[int, ...]) -> None:
        self.stepsClicked.emit(steps)

    def clear(self) -> None:
        super().clear()
        self.events.clear()


class TimelineView(QWidget):
    """The Compile panel's timeline: one row per event (step, what and where); the selected events' details below,
    the most telling first (a clicked marker selects every event of its step)."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.list = QTreeWidget()
        self.list.setObjectName("timelineList")
        self.list.setAccessibleName("Compile events")
        self.list.setColumnCount(2)
        self.list.setHeaderLabels(["Step", "Event"])
        self.list.setRootIsDecorated(False)
        self.list.setUniformRowHeights(True)
        self.list.setSelectionMode(QAbstractItemView.ExtendedSelection)
        header = self.list.header()
        header.setSectionResizeMode(0, QHeaderView.ResizeToContents)
        header.setSectionResizeMode(1, QHeaderView.Stretch)
        self.list.itemSelectionChanged.connect(self._show_selected)
        self.detail = QPlainTextEdit()
        self.detail.setObjectName("timelineDetail")
        self.detail.setAccessibleName("Compile event details")
        self.detail.setReadOnly(True)
        self.detail.setPlaceholderText("Select an event (or click a marker on the loss plot) for its details and "
                                       "the line of your code it came from.")
        split = QSplitter(Qt.Vertical)
        split.addWidget(self.list)
        split.addWidget(self.detail)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 2)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(split)
        self.events: list[CompileEvent] = []

    def add(self, events: list[CompileEvent]) -> None:
        for event in events:
            self.events.append(event)
            style = compile_kind(event.kind)
            where = f" — {Path(event.frames[-1].file).name}:{event.frames[-1].line}" if event.frames else ""
            phase = " (eval)" if event.phase == "eval" else ""
            item = QTreeWidgetItem([f"{event.step:,}{phase}", f"{style.glyph} {event.title}{where}"])
            item.setForeground(1, pg.mkColor(style.colour))
            item.setToolTip(1, event.title + (f"\n{event.where}: {event.frames[-1].source}" if event.frames else ""))
            item.setData(0, Qt.UserRole, len(self.events) - 1)
            self.list.addTopLevelItem(item)

    def clear(self) -> None:
        self.list.clear()
        self.events.clear()
        self.detail.clear()

    def select_steps(self, steps: tuple[int, ...]) -> None:
        """Select every event of `steps` (a clicked marker's) and show the first."""
        self.list.clearSelection()
        first = None
        for row in range(self.list.topLevelItemCount()):
            item = self.list.topLevelItem(row)
            if self.events[item.data(0, Qt.UserRole)].step in steps:
                item.setSelected(True)
                first = first or item
        if first is not None:
            self.list.scrollToItem(first)

    def selected(self) -> list[CompileEvent]:
        """The selected events, the most telling kind first (then in the order they happened)."""
        rows = sorted(item.data(0, Qt.UserRole) for item in self.list.selectedItems())
        return sorted((self.events[row] for row in rows), key=lambda e: -compile_kind(e.kind).rank)

    def _show_selected(self) -> None:
        self.detail.setPlainText("\n\n".join(describe(event) for event in self.selected()))


def describe(event: CompileEvent) -> str:
    """An event in full: what, when, the user's stack (innermost last) and Dynamo's own words."""
    lines = [f"Step {event.step:,} ({event.phase}) · {compile_kind(event.kind).one}"
             + (f" · frame {event.compile_id}" if event.compile_id else ""), event.title]
    if event.frames:
        lines.append("Your code (innermost last):")
        for frame in event.frames:
            lines.append(f'  File "{frame.file}", line {frame.line}, in {frame.function}')
            if frame.source:
                lines.append(f"    {frame.source}")
    if event.detail:
        lines += ["Details:", event.detail]
    return "\n".join(lines)
