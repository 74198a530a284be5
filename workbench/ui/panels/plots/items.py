"""The pyqtgraph pieces that keep the live plots to one paint a frame, and inside their area.

`SpanViewBox`: a view whose x auto-range is the span of its data's x values (the loss plot's steps, which the
other plots' x axes follow; the system plot's seconds), not the bounds of what it draws. pyqtgraph peak-downsamples
a curve for the range it is drawn in, a bin's first x standing for the bin, so ranging on the drawn curve made each
range depend on the last: at some lengths the downsampling factor flipped between two values on every paint (a
range 2.0000 × 5 points a pixel wide, then 1.9993), each paint set a new range, the linked plots re-clipped their
curves and asked for the next paint, and the window repainted at 100% CPU after the run had ended. A live span grows
with headroom (`grown_span`), so the step axis moves a few dozen times a run instead of every frame: each move
re-clips every curve and re-ticks every x axis.

The view keeps room past the span's ends for a marker (`MARKER_ROOM`): pyqtgraph's own padding is a share of the range
(2% on a wide plot), which a validation dot drawn at the last step could overflow, cut at the plot's edge.

`StepAxis`: the optimizer step is a whole number, so its axis ticks integers only.

`TimedPlot`: a plot widget that adds up how long it paints, so a frame's cost counts its paints (plot_frames.py).
"""

from __future__ import annotations

import math
from typing import Callable
import time

import numpy as np
import pyqtgraph as pg

HEADROOM = 0.25  # a live span grows by a quarter of its length whenever the data outgrows it
# A recorded curve is drawn as at most this many points, each pair a stretch of steps' highest and lowest value (a
# spike stays); its table keeps every value. 20 compared runs of 20,000 steps drawn point by point, and their seed
# bands' fills built from every point, held the GUI thread for a second.
DRAWN_POINTS = 800
MARKER_ROOM = 8  # pixels a span keeps past its ends: a validation dot (9 px across) at the last step stays whole


def grown_span(span: tuple[float, float] | None, first: float, last: float, end: float | None) -> tuple[float, float]:
    """An x span from `first` to past `last`: `span` while it still holds them, else grown by HEADROOM of their
    distance, up to `end` (a live run's last step, or infinity; None when no more data is coming, as for a recorded
    run: the span is then exactly the data's)."""
    if span is not None and span[0] == first and last <= span[1]:
        return span
    if end is None or end <= last:
        return first, last
    return first, min(end, last + HEADROOM * (last - first + 1))


class SpanViewBox(pg.ViewBox):
    """A view whose x auto-range is `span` once it has one; its y auto-range is pyqtgraph's."""

    def __init__(self):
        super().__init__()
        self.span: tuple[float, float] | None = None

    def cover(self, xs: list[np.ndarray], end: float | None, fresh: bool = False) -> None:
        """Span the values of `xs` (each sorted), growing toward `end` (see grown_span); `fresh` forgets the last
        span (another run, other compared runs)."""
        xs = [x for x in xs if len(x)]
        if not xs:
            self.set_span(None)
            return
        first, last = min(float(x[0]) for x in xs), max(float(x[-1]) for x in xs)
        self.set_span(grown_span(None if fresh else self.span, first, last, end))

    def set_span(self, span: tuple[float, float] | None) -> None:
        if span != self.span:
            self.span = span
            self.updateAutoRange()  # a no-op while the user's zoom holds the x axis

    def childrenBounds(self, frac=None, orthoRange=(None, None), items=None):
        bounds = super().childrenBounds(frac=frac, orthoRange=orthoRange, items=items)
        if self.span is not None:
            bounds[0] = list(self.span)
        return bounds

    def suggestPadding(self, axis):
        """pyqtgraph's padding (a share of the range), at least MARKER_ROOM pixels on x: the span replaced the
        bounds pyqtgraph widens by its markers' size. It depends on the view's width only, never on the range, so
        it cannot feed back into the range."""
        padding = super().suggestPadding(axis)
        width = self.width()
        if axis == 0 and width > 4 * MARKER_ROOM:  # range = span·(1 + 2p): p·w/(1 + 2p) pixels past each end
            padding = max(padding, MARKER_ROOM / (width - 2 * MARKER_ROOM))
        return padding


class StepAxis(pg.AxisItem):
    """The optimizer-step axis: ticks at whole steps only (pyqtgraph's put 0.2, 0.4 … on an empty plot and 1.5,
    2.5 on a short run), written out in full ('1,000,000', not '1e+06')."""

    def tickSpacing(self, minVal, maxVal, size):
        return [level for level in super().tickSpacing(minVal, maxVal, size) if level[0] >= 1] or [(1.0, 0.0)]

    def tickStrings(self, values, scale, spacing):
        return [f"{value * scale:,.0f}" for value in values]


def thin_plot(plot: pg.PlotWidget, x: np.ndarray, y: np.ndarray,
              prepare: Callable[[pg.PlotDataItem], object] | None = None, **opts) -> pg.PlotDataItem:
    """A recorded curve on `plot`, drawn as at most about DRAWN_POINTS points: each stretch of steps as its highest
    and lowest value (a spike stays). pyqtgraph's own downsampling did it again over every point of every curve at
    each change of the x range (20 compared runs of 20,000 steps: ~1 s of the GUI thread while they were added).
    The item is added empty, `prepare(item)` sets its own options, and its points come last: the plot's options
    (log mode, alpha, clipping, downsampling…) and each of the item's went over all its points again, and rebuilt a
    scatter's symbols, when they were set on an item that had them (0.4 s for 20 runs). It keeps every value for
    its table (`recorded`)."""
    item = pg.PlotDataItem(**opts)
    plot.addItem(item)
    if prepare is not None:
        prepare(item)
    set_thinned(item, x, y)
    return item


def set_thinned(item: pg.PlotDataItem, x: np.ndarray, y: np.ndarray) -> None:
    """A recorded curve's points, drawn thinned to about DRAWN_POINTS, every one kept for its table (`recorded`):
    a new curve's, or a compared run's read finer over a zoomed range."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    step = math.ceil(2 * len(x) / DRAWN_POINTS)
    item.setData(*(peaks(x, y, step) if step > 1 else (x, y)))
    item.recorded = (x, y)


def recorded(item: pg.PlotDataItem) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Every value of a curve (a thinned one draws fewer)."""
    return getattr(item, "recorded", None) or item.getOriginalDataset()


def peaks(x: np.ndarray, y: np.ndarray, step: int) -> tuple[np.ndarray, np.ndarray]:
    """Each stretch of `step` points as two, its highest and its lowest value, at the stretch's middle x (the last,
    shorter stretch too): what pyqtgraph's "peak" downsampling draws. A NaN in a stretch (a gap) stays a gap."""
    blocks = -(-len(x) // step)
    padded = np.full(blocks * step, np.nan)
    padded[:len(y)] = y
    stretches = padded.reshape(blocks, step)
    high, low = stretches.max(axis=1), stretches.min(axis=1)
    last = len(y) - (blocks - 1) * step  # points in the last stretch: the padding is not data
    high[-1], low[-1] = np.max(y[-last:]), np.min(y[-last:])
    middle = x[np.minimum(np.arange(blocks) * step + step // 2, len(x) - 1)]
    return np.repeat(middle, 2), np.column_stack([high, low]).ravel()


class TimedPlot(pg.PlotWidget):
    """A plot widget that adds up the seconds its paints take (`paint_seconds`)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.paint_seconds = 0.0

    def paintEvent(self, event):
        started = time.perf_counter()
        super().paintEvent(event)
        self.paint_seconds += time.perf_counter() - started
