"""How the window's plots look: the light and dark themes every chart shares, legends in a row under a plot, and
the live plots' own shape (a step axis, no SI prefixes, one left-axis width, peak-downsampled and clipped curves).
"""

from __future__ import annotations

from dataclasses import dataclass

import pyqtgraph as pg

from .items import StepAxis, TimedPlot
from .legend import FittingLegend

LEGEND_COLUMNS = 4


@dataclass(frozen=True)
class Theme:
    background: str
    foreground: str
    raw: str  # per-step values under their smoothed line
    line: str  # smoothed lines and throughput
    marker: str  # validation points and the compile marker
    hint: str  # the empty-state text


LIGHT = Theme(background="#ffffff", foreground="#202020", raw="#c6dbef", line="#08306b", marker="#d62728",
              hint="#808080")
DARK = Theme(background="#1e1e1e", foreground="#d8d8d8", raw="#3b5670", line="#9ecae1", marker="#ff6b6b",
             hint="#9a9a9a")


def legend_below(item: pg.PlotItem) -> pg.LegendItem:
    """A legend in a row of the plot's own layout under the x axis, not addLegend()'s, which floats over the
    data; plot(name=…) and removeItem() keep its entries as they would addLegend()'s. Its columns and names fit
    the plot's widget and fold to keep the plot's data in sight (legend.FittingLegend)."""
    legend = FittingLegend(LEGEND_COLUMNS, item)
    item.layout.addItem(legend, 4, 1)
    item.legend = legend
    return legend


def style_plot(plot: pg.PlotWidget, theme: Theme) -> None:
    """A plot's background, axes, title and legend in the theme's colours (every chart of the window uses it), its
    axes showing the values themselves: pyqtgraph's SI prefixes ("(x0.001)" in a label) are a scale readers miss."""
    plot.setBackground(theme.background)
    item = plot.getPlotItem()
    for side in ("left", "bottom"):
        item.getAxis(side).setPen(theme.foreground)
        item.getAxis(side).setTextPen(theme.foreground)
        item.getAxis(side).enableAutoSIPrefix(False)
    item.setTitle(item.titleLabel.text, color=theme.foreground)
    if item.legend is not None:
        item.legend.setLabelTextColor(theme.foreground)  # for entries to come; those there are re-rendered:
        for _sample, label in item.legend.items:
            label.setText(label.text, color=theme.foreground)


TICK_TEXT_WIDTH = 44  # pixels for a left axis's tick labels: "100000" (samples/s), "0.0001" (a loss)


def make_plot(name: str, title: str, y_label: str, x_label: str | None = None, view: pg.ViewBox | None = None,
               steps: bool = True) -> TimedPlot:
    """A plot whose legend is a row of the plot's own layout under the x axis: it never covers a curve. The x axis
    is the step in every plot but the system one (they are linked): only the bottom row names it, so small screens
    keep the height. Axes show the values themselves: pyqtgraph's SI prefixes made accuracy "fraction right
    (x0.001)" with ticks 100 … 700, a scale a reader misses."""
    plot = TimedPlot(viewBox=view, axisItems={"bottom": x_axis_item("step")} if steps else None)
    plot.setObjectName(name)
    plot.setAccessibleName(f"{title} plot")
    item = plot.getPlotItem()
    item.setTitle(title)
    item.setLabel("left", y_label)
    if x_label:
        item.setLabel("bottom", x_label)
    for side in ("left", "bottom"):
        item.getAxis(side).enableAutoSIPrefix(False)
    # One width for every left axis: linked x axes line up on screen, so a plot whose tick labels were wider
    # ("15000" beside "2") started its steps further right, and the compile marker at step 1 fell off its edge.
    item.getAxis("left").setStyle(autoExpandTextSpace=False, tickTextWidth=TICK_TEXT_WIDTH)
    legend_below(item)
    item.setClipToView(True)
    item.setDownsampling(auto=True, mode="peak")
    return plot


def x_axis_item(kind: str) -> pg.AxisItem:
    """A step plot's bottom axis for the x axis `kind` (history.x_axis): whole steps, the date and time of day for
    the wall time, plain numbers for the epoch and the seconds since start."""
    if kind == "step":
        return StepAxis("bottom")
    return pg.DateAxisItem("bottom") if kind == "wall" else pg.AxisItem("bottom")


def set_x_axis_item(plot: pg.PlotWidget, kind: str, label: str | None, theme: Theme) -> None:
    """Give a step plot the bottom axis of `kind`, labelled `label` (None: unlabelled, as the top row is), in the
    theme's colours."""
    item = plot.getPlotItem()
    item.setAxisItems({"bottom": x_axis_item(kind)})
    if label:
        item.setLabel("bottom", label)
    style_plot(plot, theme)


def per_epoch(item: pg.PlotDataItem) -> pg.PlotDataItem:
    """Validation points, one an epoch: too few to clip or downsample. Clipped, every change of either range
    rebuilt their scatter (pyqtgraph's slowest setData), in frames that already re-ranged every curve."""
    item.setClipToView(False)
    item.setDownsampling(auto=False)
    item.setDynamicRangeLimit(None)
    return item


def mark(item: pg.PlotDataItem, colour: str) -> None:
    """Validation points filled and outlined in `colour`, and their legend swatch with them: the swatch draws the
    item's scatter, which takes the item's symbol colours only along with points, so before the first validation
    (and after a theme change with none) it showed pyqtgraph's default purple beside red dots."""
    item.setSymbolBrush(colour)
    item.setSymbolPen(colour)
    item.scatter.setBrush(colour)
    item.scatter.setPen(colour)
