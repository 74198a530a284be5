"""Line charts as inline SVG: self-contained (no plotting library, no network) and small (min/max downsampling).

Used by the HTML report; every run is one coloured polyline, epochs can be markers, and things that happened at a
step (the compile timeline) can be small marks in lanes along the bottom of the plot area.
"""

from __future__ import annotations

import dataclasses
import html
import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

MAX_POINTS = 800  # per series, after min/max downsampling
LANE_H = 8  # px: one lane of step marks per kind, stacked up from the bottom of the plot area
MARK_W = 4  # px: a step mark's width
MAX_TIP_LINES = 8  # lines of one mark's tooltip; the rest are counted


@dataclass
class Series:
    color: str
    x: np.ndarray
    y: np.ndarray
    marker_x: np.ndarray = dataclasses.field(default_factory=lambda: np.empty(0))
    marker_y: np.ndarray = dataclasses.field(default_factory=lambda: np.empty(0))

    def finite(self) -> "Series":
        """Without NaN/inf (a memory key some steps lack, a blown-up loss), lines downsampled."""
        x, y = _finite(self.x, self.y)
        return Series(self.color, *downsample(x, y), *_finite(self.marker_x, self.marker_y))


@dataclass(frozen=True)
class StepMark:
    """Something that happened at a step: a small mark in its kind's lane, with `text` as its tooltip."""

    step: float
    kind: str  # one lane per kind, in the order the kinds first appear
    color: str
    text: str


CHART_W, CHART_H = 760, 260
MARGIN_L, MARGIN_R, MARGIN_T, MARGIN_B = 64, 16, 12, 36


def downsample(xs, ys, max_points: int = MAX_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """At most `max_points` points: each bucket keeps its min and max, so spikes survive and the file stays small."""
    x, y = np.asarray(xs, dtype=float), np.asarray(ys, dtype=float)
    if len(x) <= max_points:
        return x, y
    edges = np.linspace(0, len(x), max_points // 2 + 1).astype(int)
    keep: list[int] = []
    for a, b in zip(edges[:-1], edges[1:]):
        if b > a:
            keep.extend(sorted({a + int(np.argmin(y[a:b])), a + int(np.argmax(y[a:b]))}))
    return x[keep], y[keep]


def nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """Round tick values (1, 2, 5 × 10^k apart) covering [lo, hi]; the first and last become the axis ends."""
    if not hi > lo:
        pad = abs(lo) * 0.05 or 1.0
        lo, hi = lo - pad, hi + pad
    raw = (hi - lo) / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw)
    first, last = math.floor(lo / step + 1e-9), math.ceil(hi / step - 1e-9)
    return [i * step for i in range(first, last + 1)]


def tick_labels(ticks: list[float]) -> list[str]:
    """Short labels with as many decimals as the tick spacing needs: 0.25, 1.5k, 2M."""
    if not ticks:
        return []
    step = ticks[1] - ticks[0] if len(ticks) > 1 else 1.0
    top = max(abs(t) for t in ticks)
    scale, suffix = (1e6, "M") if top >= 1e6 else (1e3, "k") if top >= 1e4 else (1.0, "")
    decimals = max(0, -math.floor(math.log10(step / scale) + 1e-9))
    return ["0" if abs(t) < step / 2 else f"{t / scale:.{decimals}f}{suffix}" for t in ticks]


def line_chart(title: str, unit: str, series: list[Series], *, zero_based: bool = False,
               marks: Sequence[StepMark] = ()) -> str:
    """One SVG line chart with every run overlaid (colours match the legend at the top of the section), and
    `marks` along the bottom of the plot area: one lane per kind, one mark per kind and step (marks of one kind at
    one step are merged, their texts joined in the tooltip)."""
    series = [s.finite() for s in series]
    xs = np.concatenate([a for s in series for a in (s.x, s.marker_x)])
    ys = np.concatenate([a for s in series for a in (s.y, s.marker_y)])
    if not len(xs):
        return f"<h3>{html.escape(title)}</h3><p class=muted>No data was recorded for this chart.</p>"
    x_lo, x_hi = float(xs.min()), float(xs.max())
    x_ticks = nice_ticks(x_lo, x_hi)
    if x_hi > x_lo:  # the steps end where the run ended: no empty stretch after the last step
        x_ticks = [t for t in x_ticks if x_lo <= t <= x_hi]
    else:
        x_lo, x_hi = x_ticks[0], x_ticks[-1]
    y_ticks = nice_ticks(min(float(ys.min()), 0.0) if zero_based else float(ys.min()), float(ys.max()))
    scale = _Scale(x_lo, x_hi, y_ticks[0], y_ticks[-1])
    parts = [_axes(scale, x_ticks, y_ticks, unit)]
    for s in series:
        parts.append(_polyline(scale, s))
    parts.append(_step_marks(scale, marks))
    return (f"<h3>{html.escape(title)}</h3><svg class='chart' viewBox='0 0 {CHART_W} {CHART_H}' role='img' "
            f"aria-label='{html.escape(title)}'>{''.join(parts)}</svg>")


def _finite(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    keep = np.isfinite(x) & np.isfinite(y)
    return x[keep], y[keep]


@dataclass(frozen=True)
class _Scale:
    x0: float
    x1: float
    y0: float
    y1: float

    def x(self, value: float) -> float:
        return MARGIN_L + (value - self.x0) / ((self.x1 - self.x0) or 1) * (CHART_W - MARGIN_L - MARGIN_R)

    def y(self, value: float) -> float:
        return CHART_H - MARGIN_B - (value - self.y0) / ((self.y1 - self.y0) or 1) * (CHART_H - MARGIN_T - MARGIN_B)


def _axes(scale: _Scale, x_ticks: list[float], y_ticks: list[float], unit: str, x_label: str = "step") -> str:
    left, right, bottom = MARGIN_L, CHART_W - MARGIN_R, CHART_H - MARGIN_B
    out = [f"<rect x='{left}' y='{MARGIN_T}' width='{right - left}' height='{bottom - MARGIN_T}' class='plot'/>"]
    for value, text in zip(y_ticks, tick_labels(y_ticks)):
        y = scale.y(value)
        out.append(f"<line x1='{left}' x2='{right}' y1='{y:.1f}' y2='{y:.1f}' class='grid'/>"
                   f"<text x='{left - 6}' y='{y + 4:.1f}' text-anchor='end'>{html.escape(text)}</text>")
    for value, text in zip(x_ticks, tick_labels(x_ticks)):
        x = scale.x(value)
        out.append(f"<line x1='{x:.1f}' x2='{x:.1f}' y1='{bottom}' y2='{bottom + 4}' class='axis'/>"
                   f"<text x='{x:.1f}' y='{bottom + 17}' text-anchor='middle'>{html.escape(text)}</text>")
    out.append(f"<text x='{(left + right) / 2:.0f}' y='{CHART_H - 4}' text-anchor='middle' class='label'>"
               f"{html.escape(x_label)}</text>"
               f"<text x='14' y='{(MARGIN_T + bottom) / 2:.0f}' text-anchor='middle' class='label' "
               f"transform='rotate(-90 14 {(MARGIN_T + bottom) / 2:.0f})'>{html.escape(unit)}</text>")
    return "".join(out)


def _polyline(scale: _Scale, series: Series) -> str:
    out = []
    if len(series.x) > 1:
        coords = " ".join(f"{scale.x(x):.1f},{scale.y(y):.1f}" for x, y in zip(series.x, series.y))
        out.append(f"<polyline points='{coords}' fill='none' stroke='{series.color}' stroke-width='1.3'/>")
    elif len(series.x):
        x, y = series.x[0], series.y[0]
        out.append(f"<circle cx='{scale.x(x):.1f}' cy='{scale.y(y):.1f}' r='2' fill='{series.color}'/>")
    for x, y in zip(series.marker_x, series.marker_y):
        out.append(f"<circle cx='{scale.x(x):.1f}' cy='{scale.y(y):.1f}' r='4' fill='{series.color}' class='marker'/>")
    return "".join(out)


def _step_marks(scale: _Scale, marks: Sequence[StepMark]) -> str:
    """Marks drawn over the lines (they sit at the bottom, where a loss curve rarely is). A step outside the x range
    (a compile before the first recorded step) is drawn at the range's edge; its tooltip names the real step."""
    if not marks:
        return ""
    lanes = list(dict.fromkeys(m.kind for m in marks))
    merged: dict[tuple[str, float], list[StepMark]] = {}
    for mark in marks:
        if math.isfinite(mark.step):
            merged.setdefault((mark.kind, mark.step), []).append(mark)
    bottom = CHART_H - MARGIN_B
    out = []
    for (kind, step), group in merged.items():
        x = scale.x(min(max(step, scale.x0), scale.x1))
        y = bottom - (lanes.index(kind) + 1) * LANE_H + 1
        texts = list(dict.fromkeys(m.text for m in group))
        if len(texts) > MAX_TIP_LINES:
            texts = texts[:MAX_TIP_LINES - 1] + [f"… and {len(texts) - MAX_TIP_LINES + 1} more"]
        tip = html.escape("\n".join(texts))
        where = f"{step:.0f}" if float(step).is_integer() else f"{step:g}"
        out.append(f"<g class='stepmark' data-kind='{html.escape(kind)}' data-step='{where}'><title>{tip}</title>"
                   f"<rect x='{x - MARK_W / 2:.1f}' y='{y}' width='{MARK_W}' height='{LANE_H - 2}' "
                   f"fill='{html.escape(group[0].color)}'/></g>")
    return "".join(out)


@dataclass(frozen=True)
class Dot:
    """A point of a scatter chart; `tip`: its tooltip."""

    x: float
    y: float
    color: str
    tip: str
    big: bool = False


def scatter_chart(title: str, x_label: str, y_label: str, dots: Sequence[Dot], line: Sequence[Dot] = (),
                  line_color: str = "#888") -> str:
    """Dots (the big ones drawn last, on top), and `line` joining some of them in x order (a Pareto front)."""
    dots = [d for d in dots if math.isfinite(d.x) and math.isfinite(d.y)]
    if not dots:
        return f"<h3>{html.escape(title)}</h3><p class=muted>Nothing to draw yet.</p>"
    x_ticks = nice_ticks(min(d.x for d in dots), max(d.x for d in dots))
    y_ticks = nice_ticks(min(d.y for d in dots), max(d.y for d in dots))
    scale = _Scale(x_ticks[0], x_ticks[-1], y_ticks[0], y_ticks[-1])
    parts = [_axes(scale, x_ticks, y_ticks, y_label, x_label)]
    joined = sorted((d for d in line if d in dots), key=lambda d: d.x)
    if len(joined) > 1:
        coords = " ".join(f"{scale.x(d.x):.1f},{scale.y(d.y):.1f}" for d in joined)
        parts.append(f"<polyline points='{coords}' fill='none' stroke='{line_color}' stroke-width='1.3' "
                     f"stroke-dasharray='4 3'/>")
    for d in sorted(dots, key=lambda d: d.big):
        parts.append(f"<circle cx='{scale.x(d.x):.1f}' cy='{scale.y(d.y):.1f}' r='{5 if d.big else 3.5}' "
                     f"fill='{d.color}' class='marker'><title>{html.escape(d.tip)}</title></circle>")
    return (f"<h3>{html.escape(title)}</h3><svg class='chart' viewBox='0 0 {CHART_W} {CHART_H}' role='img' "
            f"aria-label='{html.escape(title)}'>{''.join(parts)}</svg>")


@dataclass(frozen=True)
class Axis:
    """A vertical axis of a parallel-coordinates chart; `position` maps a value to 0..1 (bottom to top)."""

    name: str
    low_text: str
    high_text: str


def parallel_chart(title: str, axes: Sequence[Axis], lines: Sequence[tuple[list[float], str, str]]) -> str:
    """Parallel coordinates: one vertical axis per setting, each line (positions 0..1 per axis, colour, tooltip)
    a trial crossing them."""
    if not lines or len(axes) < 2:
        return f"<h3>{html.escape(title)}</h3><p class=muted>Nothing to draw yet.</p>"
    left, right, top, bottom = MARGIN_L, CHART_W - MARGIN_R, MARGIN_T + 14, CHART_H - MARGIN_B
    xs = [left + i * (right - left) / (len(axes) - 1) for i in range(len(axes))]
    parts = []
    for x, axis in zip(xs, axes):
        anchor = "start" if x == left else "end" if x == right else "middle"
        parts.append(f"<line x1='{x:.1f}' x2='{x:.1f}' y1='{top}' y2='{bottom}' class='axis'/>"
                     f"<text x='{x:.1f}' y='{top - 4}' text-anchor='{anchor}' class='label'>"
                     f"{html.escape(axis.name)}</text>"
                     f"<text x='{x:.1f}' y='{top + 10}' text-anchor='{anchor}'>{html.escape(axis.high_text)}</text>"
                     f"<text x='{x:.1f}' y='{bottom + 14}' text-anchor='{anchor}'>{html.escape(axis.low_text)}</text>")
    for positions, color, tip in lines:
        coords = " ".join(f"{x:.1f},{bottom - p * (bottom - top):.1f}" for x, p in zip(xs, positions))
        parts.append(f"<polyline points='{coords}' fill='none' stroke='{color}' stroke-width='1.6' "
                     f"opacity='0.8'><title>{html.escape(tip)}</title></polyline>")
    return (f"<h3>{html.escape(title)}</h3><svg class='chart' viewBox='0 0 {CHART_W} {CHART_H}' role='img' "
            f"aria-label='{html.escape(title)}'>{''.join(parts)}</svg>")
