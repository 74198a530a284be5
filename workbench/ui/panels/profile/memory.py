"""The profile panel's Memory tab: memory by category over the profiled steps, its peak, the largest allocations.

The categories are stacked areas in a fixed order (parameters at the bottom, what the trace could not place on top),
so a band's height is its category and the top line the whole. Under the plot: what the numbers come from, a table
of the largest allocations with the stack that made each (in its tooltip) and, when the run recorded the CUDA
allocator, a button to the snapshot for pytorch.org/memory_viz.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QPushButton, QSplitter, QVBoxLayout, QWidget

from ....core.ground.memory_trace import Allocation, MemoryTimeline
from .ops import WARNING, Column, RowsModel, fit_columns, format_ms, make_plot, table_view

MIB = 2**20
CATEGORIES = {  # the stacking order, bottom up, with colours and words
    "parameters": ("#4e79a7", "the model's weights"),
    "gradients": ("#f28e2b", "the weights' gradients (from backward until zero_grad)"),
    "optimizer state": ("#b07aa1", "the optimizer's buffers (Adam's two moments, momentum…)"),
    "activations": ("#59a14f", "tensors the forward keeps for the backward, and temporaries"),
    "other": ("#bab0ac", "anything the trace could not put in a category"),
}
EXTRA_COLOURS = ("#e15759", "#76b7b2", "#edc948", "#ff9da7", "#9c755f")
SOURCE_WORDS = {"profiler": "from the profiler's memory events", "cuda allocator": "from the CUDA allocator history"}


def format_mib(n_bytes: float) -> str:
    """Bytes as MiB without the unit: '1,234.5', '12.0', '0.004' (a small allocation is not '0.0')."""
    mib = n_bytes / MIB
    return f"{mib:,.1f}" if abs(mib) >= 0.1 or mib == 0 else f"{mib:.3f}"


@dataclass(frozen=True)
class LargestRow:
    """A row of the largest allocations: the allocation, and the unit of its timeline's times."""

    allocation: Allocation
    unit: str  # "us" | "event"


def _stack_tip(row: LargestRow) -> str:
    stack = row.allocation.stack
    return ("Allocated at (innermost last):\n" + "\n".join(stack)) if stack else "No stack was recorded"


def _alive_text(row: LargestRow) -> str:
    """'1.500 – 5.200 ms', '0.000 ms – end'; 'event 12 – 40' when the timeline counts allocator events."""
    start, end = row.allocation.start_us, row.allocation.end_us
    if row.unit == "event":
        return f"event {start:,.0f} – " + (f"{end:,.0f}" if end is not None else "end")
    return f"{format_ms(start)} – {format_ms(end)} ms" if end is not None else f"{format_ms(start)} ms – end"


LARGEST_COLUMNS = (
    Column("MiB", "The allocation's size", lambda r: format_mib(r.allocation.bytes), lambda r: r.allocation.bytes,
           _stack_tip, numeric=True),
    Column("Category", "What the memory held (parameters, gradients, optimizer state, activations, other)",
           lambda r: r.allocation.category, lambda r: r.allocation.category, _stack_tip),
    Column("Where", "The op or line of code that allocated it (the whole stack is in the row's tooltip)",
           lambda r: r.allocation.where, lambda r: r.allocation.where.lower(), _stack_tip),
    Column("Alive", "From when to when it was allocated, on the plot's time axis ('end': still allocated when the "
           "record ended)", _alive_text, lambda r: r.allocation.start_us, _stack_tip),
)


@dataclass(frozen=True)
class MemoryStack:
    x: np.ndarray  # ms since the first profiled step, or the allocation event's number
    unit: str  # "us" | "event" (the timeline's time_unit)
    names: tuple[str, ...]  # the categories, bottom up
    tops: tuple[np.ndarray, ...]  # cumulative MiB: tops[i] = categories 0..i
    peak_x: float
    peak_mib: float


def memory_stack(memory: MemoryTimeline | None) -> MemoryStack | None:
    """The memory timeline as stacked MiB curves in the fixed category order (others after); None when empty."""
    if memory is None or not memory.times_us or not memory.categories:
        return None
    times = np.asarray(memory.times_us, dtype=np.float64)
    categories = memory.categories
    unit = memory.time_unit
    x = times / 1000.0 if unit == "us" else times
    names = tuple([c for c in CATEGORIES if c in categories] + [c for c in categories if c not in CATEGORIES])
    n = min([len(x), *(len(categories[c]) for c in names)])
    x = x[:n]
    tops, total = [], np.zeros(n)
    for name in names:
        total = total + np.asarray(categories[name][:n], dtype=np.float64) / MIB
        tops.append(total)
    at = int(np.argmax(total)) if n else 0
    peak_mib = memory.peak_bytes / MIB if memory.peak_bytes else float(total[at]) if n else 0.0
    peak_x = (memory.peak_us / 1000.0 if unit == "us" else memory.peak_us) if memory.peak_bytes else (
        float(x[at]) if n else 0.0)
    return MemoryStack(x, unit, names, tuple(tops), peak_x, peak_mib)


def _swatch(colour: str) -> pg.BarGraphItem:
    """A legend sample of a colour (never added to a plot): a filled square, like the stacked areas."""
    return pg.BarGraphItem(x=[], height=[], width=1, brush=colour, pen=pg.mkPen(None))


class MemoryTab(QSplitter):
    """The stacked plot over the caption, the largest allocations and the snapshot button; `open_folder(path)`
    opens the folder of the snapshot when the button is pressed."""

    def __init__(self, open_folder: Callable[[str], None], parent: QWidget | None = None):
        super().__init__(Qt.Vertical, parent)
        self.curves: dict[str, pg.PlotDataItem] = {}
        self.fills: list[pg.FillBetweenItem] = []
        self._items: list = []
        self.peak_line: pg.InfiniteLine | None = None
        self.stack: MemoryStack | None = None
        self.snapshot = ""
        self.plot = make_plot("profileMemory", "MiB", "ms since the first profiled step")
        self.caption = QLabel()
        self.caption.setObjectName("memoryCaption")
        self.caption.setTextFormat(Qt.PlainText)
        self.caption.setWordWrap(True)
        self.largest_model = RowsModel(LARGEST_COLUMNS, self)
        self.largest_table = table_view(self.largest_model, "largestTable", spoken="Largest allocations")
        self.open_snapshot = QPushButton("Open snapshot folder")
        self.open_snapshot.setObjectName("openSnapshotButton")
        self.open_snapshot.clicked.connect(lambda: open_folder(self.snapshot))
        below = QWidget()
        layout = QVBoxLayout(below)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.caption)
        layout.addWidget(self.largest_table, 1)
        layout.addWidget(self.open_snapshot, 0, Qt.AlignLeft)
        self.addWidget(self.plot)
        self.addWidget(below)
        self.setStretchFactor(0, 3)
        self.setStretchFactor(1, 2)
        self.setSizes([300, 200])

    def clear(self) -> None:
        self._draw(None, 0, profiled=False)
        self.snapshot = ""
        self.open_snapshot.hide()

    def show_memory(self, memory: MemoryTimeline | None, first_step: int, snapshot: str) -> None:
        """A profile's memory timeline (times since step `first_step` began) and its allocator snapshot's path
        ('' when none was written)."""
        self._draw(memory, first_step, profiled=True)
        self.snapshot = snapshot
        self.open_snapshot.setVisible(bool(snapshot))
        if snapshot:
            self.open_snapshot.setToolTip(
                f"Open the folder of {Path(snapshot).name}, the CUDA allocator's snapshot: drag the file "
                f"onto pytorch.org/memory_viz to see every allocation over time, with its stack\n{snapshot}")

    def _draw(self, memory: MemoryTimeline | None, first_step: int, profiled: bool) -> None:
        plot = self.plot.getPlotItem()
        for item in self._items:
            plot.removeItem(item)
        self._items, self.fills, self.curves = [], [], {}
        self.peak_line = None
        plot.legend.clear()
        self.stack = stack = memory_stack(memory)
        self.largest_model.set_rows([LargestRow(a, memory.time_unit) for a in memory.largest] if memory else [])
        if self.largest_model.rows:
            self.largest_table.sortByColumn(0, Qt.DescendingOrder)
            fit_columns(self.largest_table, self.largest_model)
        note = memory.note if memory else ""
        if stack is None:
            self.caption.setText(("Memory was not recorded in this profile" + (f": {note}" if note else "."))
                                 if profiled else "")
            return
        in_events = stack.unit == "event"
        source = memory.source
        plot.setLabel("bottom", "allocation event" if in_events else "ms since the allocator's first event"
                      if source == "cuda allocator" else f"ms since step {first_step} began" if first_step else "ms")
        below = plot.plot(stack.x, np.zeros(len(stack.x)), pen=pg.mkPen(None))  # drawn (invisibly): fills need it
        self._items.append(below)
        for i, (name, top) in enumerate(zip(stack.names, stack.tops)):
            colour, words = CATEGORIES.get(name, (EXTRA_COLOURS[i % len(EXTRA_COLOURS)], name))
            curve = plot.plot(stack.x, top, pen=pg.mkPen(colour, width=1))
            fill = pg.FillBetweenItem(below, curve, brush=pg.mkBrush(colour))
            fill.setZValue(-10)
            plot.addItem(fill)
            self._items += [curve, fill]
            self.curves[name] = curve
            self.fills.append(fill)
            plot.legend.addItem(_swatch(colour), name)
            sample = plot.legend.items[-1][0]
            sample.setToolTip(f"{name}: {words} (click to hide)")
            sample.sigClicked.connect(lambda swatch, parts=(curve, fill): [p.setVisible(swatch.isVisible())
                                                                           for p in parts])
            below = curve
        self.peak_line = pg.InfiniteLine(
            pos=stack.peak_x, angle=90, pen=pg.mkPen(WARNING, style=Qt.DashLine),
            label=f"peak {stack.peak_mib:,.1f} MiB", labelOpts={"position": 0.92, "color": WARNING})
        marker = pg.ScatterPlotItem([stack.peak_x], [stack.peak_mib], pen=None, brush=WARNING, size=8)
        for item in (self.peak_line, marker):
            plot.addItem(item)
            self._items.append(item)
        plot.enableAutoRange()
        where = "at allocation event" if in_events else "at"
        unit = "" if in_events else " ms"
        caption = (f"By category, {SOURCE_WORDS.get(source, 'from ' + source if source else 'as recorded')} · peak "
                   f"{stack.peak_mib:,.1f} MiB {where} {stack.peak_x:,.2f}{unit}")
        self.caption.setText(caption + (f" · {note}" if note else ""))
