"""The profile panel's Timeline tab: the profiled steps on a time axis, one lane per CPU thread and GPU stream.

Steps, compiled regions, other regions, ops and kernels are bars, nested spans lower in their lane; a bar kind is one
BarGraphItem (a few items, not one per span: a profile has thousands). Pointing at a bar names it under the plot,
found from the spans (the items know nothing of them).
"""

from __future__ import annotations

import math
import re
from typing import Sequence

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from ..plots.style import LIGHT, Theme
from ....core.ground.profile_trace import ProfileTables, Span
from .ops import format_ms, make_plot, set_ticks

# A bar's kind: (brush, pen, legend words). Compiled regions get the one strong colour.
BAR_STYLES = {
    "step": ("#f2f2f2", "#8c8c8c", "step"),
    "compiled": ("#e15759", None, "compiled region"),
    "region": ("#edc948", None, "optimizer"),
    "op": ("#4e79a7", None, "op"),
    "kernel": ("#59a14f", None, "kernel (GPU)"),
}
KIND_WORDS = {"step": "training step", "compiled": "compiled region", "region": "region", "op": "op on the CPU",
              "kernel": "GPU kernel"}
MAX_STEP_LABELS = 8  # step numbers drawn above the bars, at most (every k-th step when there are more)
LANE_PAD = 0.06  # of a lane's band left empty above and below its bars
TIMELINE_HINT = "Hover over (or click) a bar for its name and duration · drag to pan, wheel to zoom"


def lane_order(spans: Sequence[Span]) -> list[str]:
    """The lanes, top to bottom: the CPU ("CPU", then its threads by number), then the GPU streams by number."""
    def key(name: str):
        parts = [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name)]
        return (not name.upper().startswith("CPU"), parts)

    return sorted({s.lane for s in spans}, key=key)


def bar_kind(span: Span) -> str:
    if span.kind == "region":  # "Torch-Compiled Region: 0/0", "CompiledFunction(Backward)", "## Call CompiledFxGraph…"
        return "compiled" if "compiled" in span.name.lower() and not span.name.startswith("Optimizer") else "region"
    return span.kind if span.kind in BAR_STYLES else "op"


def _pick(spans: Sequence[Span], x_ms: float, depth: int | None = None) -> Span | None:
    """Of spans (one lane's), the one under x_ms: at `depth`, or the deepest (then the shortest) of any depth."""
    x_us = x_ms * 1000.0
    best = None
    for span in spans:
        if not span.start_us <= x_us <= span.start_us + span.dur_us:
            continue
        if depth is not None and span.depth != depth:
            continue
        if best is None or (span.depth, -span.dur_us) > (best.depth, -best.dur_us):
            best = span
    return best


def span_at(spans: Sequence[Span], lane_index: int, x_ms: float, depth: int | None = None) -> Span | None:
    """The span drawn at x_ms (ms since the first profiled step) in lane `lane_index` of lane_order(spans): at
    `depth` when given, else the deepest there; None between spans."""
    lanes = lane_order(spans)
    if not 0 <= lane_index < len(lanes):
        return None
    return _pick([s for s in spans if s.lane == lanes[lane_index]], x_ms, depth)


def describe_span(span: Span) -> str:
    """'aten::addmm · op on the CPU · 0.412 ms · CPU, from 3.120 ms'."""
    kind = KIND_WORDS.get(bar_kind(span), span.kind)
    return f"{span.name} · {kind} · {format_ms(span.dur_us)} ms · {span.lane}, from {format_ms(span.start_us)} ms"


class TimelineTab(QWidget):
    """The timeline plot and, under it, the name of the bar pointed at (or how to point)."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.theme: Theme = LIGHT
        self.lanes: list[str] = []
        self._lane_spans: list[list[Span]] = []
        self._lane_rows: list[int] = []
        self.bars: dict[str, pg.BarGraphItem] = {}
        self.step_labels: list[pg.TextItem] = []
        self.plot = make_plot("profileTimeline", "", "ms since the first profiled step")
        item = self.plot.getPlotItem()
        item.invertY(True)  # the first lane (the CPU) on top
        item.setMouseEnabled(x=True, y=False)
        item.hideButtons()
        self.hint = TIMELINE_HINT
        self.info = QLabel(TIMELINE_HINT)
        self.info.setWordWrap(True)  # a long span name must wrap, never widen the dock past the screen
        self.info.setToolTip("Bars: steps (outlined), compiled regions, other regions, ops on the CPU, kernels on "
                             "the GPU; a span nested in another sits lower in its row. The trace (Open trace folder) "
                             "has every event")
        self.info.setObjectName("timelineInfo")
        self.info.setTextFormat(Qt.PlainText)
        self.info.setTextInteractionFlags(Qt.TextSelectableByMouse)
        scene = self.plot.scene()
        self._hover_proxy = pg.SignalProxy(scene.sigMouseMoved, rateLimit=20, slot=lambda args: self._point(args[0]))
        scene.sigMouseClicked.connect(lambda event: self._point(event.scenePos()))
        layout = QVBoxLayout(self)
        layout.addWidget(self.plot, 1)
        layout.addWidget(self.info)

    def clear(self) -> None:
        self.show_summary(ProfileTables(), 0)

    def show_summary(self, summary: ProfileTables, first_step: int) -> None:
        """The spans of a profile summary, in ms since step `first_step` began."""
        plot = self.plot.getPlotItem()
        for item in [*self.bars.values(), *self.step_labels]:
            plot.removeItem(item)
        self.bars, self.step_labels = {}, []
        plot.legend.clear()
        spans = summary.spans
        self.lanes = lane_order(spans)
        index = {lane: i for i, lane in enumerate(self.lanes)}
        self._lane_spans = [[] for _ in self.lanes]
        for span in spans:
            self._lane_spans[index[span.lane]].append(span)
        self._lane_rows = [1 + max(s.depth for s in lane) for lane in self._lane_spans]
        bars: dict[str, list[list[float]]] = {}
        for span in spans:
            y0, height = self._band(index[span.lane], span.depth)
            columns = bars.setdefault(bar_kind(span), [[], [], [], []])
            for column, value in zip(columns, (span.start_us / 1000, span.dur_us / 1000, y0, height)):
                column.append(value)
        for kind, (brush, pen, words) in BAR_STYLES.items():  # steps first: drawn under the rest
            if kind not in bars:
                continue
            x0, width, y0, height = (np.asarray(c) for c in bars[kind])
            item = pg.BarGraphItem(x0=x0, width=width, y0=y0, height=height, brush=brush,
                                   pen=pg.mkPen(pen, width=1) if pen else pg.mkPen(None))
            plot.addItem(item)
            plot.legend.addItem(item, words)
            self.bars[kind] = item
        steps = summary.steps
        every = max(1, math.ceil(len(steps) / MAX_STEP_LABELS))  # labels that would overlap are left out
        for step in steps[::every]:
            label = pg.TextItem(str(step.step), anchor=(0, 1), color=self.theme.foreground)
            label.setPos(step.start_us / 1000, 0)
            plot.addItem(label)
            self.step_labels.append(label)
        set_ticks(plot.getAxis("left"), [[(i + 0.5, lane) for i, lane in enumerate(self.lanes)], []])
        plot.setLabel("bottom", f"ms since step {first_step} began" if first_step else "ms")
        if self.lanes:
            plot.setYRange(-0.35, len(self.lanes), padding=0)
            plot.enableAutoRange(axis="x")
        left_out = summary.spans_left_out
        hint = TIMELINE_HINT + (f" · {left_out:,} short ops and kernels not drawn (the trace has them all)"
                                if left_out else "")
        self.hint = hint if spans else "No timeline in this profile"
        self.info.setText(self.hint)

    def set_theme(self, theme: Theme) -> None:
        """The step labels' colour, those drawn and those to come (the panel styles the plot)."""
        self.theme = theme
        for label in self.step_labels:
            label.setColor(theme.foreground)

    def _band(self, lane: int, depth: int) -> tuple[float, float]:
        """(top, height) of a bar at `depth` in `lane`: the lane's band split into a row per depth, top down."""
        row = (1 - 2 * LANE_PAD) / self._lane_rows[lane]
        return lane + LANE_PAD + depth * row, row * 0.9

    def span_under(self, x_ms: float, y: float) -> Span | None:
        """The span drawn at a point of the timeline (data coordinates: y's whole part is the lane)."""
        lane = math.floor(y)
        if not 0 <= lane < len(self.lanes):
            return None
        depth = math.floor((y - lane - LANE_PAD) / ((1 - 2 * LANE_PAD) / self._lane_rows[lane]))
        return _pick(self._lane_spans[lane], x_ms, depth)

    def _point(self, scene_pos) -> None:
        box = self.plot.getPlotItem().getViewBox()
        if not self.lanes or not box.sceneBoundingRect().contains(scene_pos):
            return
        point = box.mapSceneToView(scene_pos)
        span = self.span_under(point.x(), point.y())
        self.info.setText(describe_span(span) if span else self.hint)
