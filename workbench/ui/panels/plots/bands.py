"""A seed group on a plot: its members' mean line, and a translucent band around it from its lowest member to its
highest ("minmax") or one standard deviation either side of the mean ("std"), with the band's edges drawn faintly.

The numbers are history.groups.band's; this only draws them. The band is a FillBetweenItem between the edges, under
every curve. The mean line alone has a legend entry ("label (mean, min–max)"): the edges are listed by
name in the plot's table (`GroupBand.edges`), which is how a screen reader reaches the band's values.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg

from ....core.ground.errors import WorkbenchError
from ....core.history.groups import Band
from .items import thin_plot

# By spread: what the legend says of the band, and its edges' names (after the group's label) in a table.
SPREADS = {"minmax": "mean, min–max", "std": "mean ± 1σ"}
EDGE_NAMES = {"minmax": ("lowest", "highest"), "std": ("mean − 1σ", "mean + 1σ")}
BAND_ALPHA = 80  # of 255: the fill, seen at a glance and translucent enough for the curves under it to read
EDGE_OPACITY = 0.5
BAND_Z = -10  # under every curve and marker


def check_spread(spread: str) -> None:
    if spread not in SPREADS:
        raise WorkbenchError(f"no band called {spread!r}", "one of " + ", ".join(SPREADS))


def group_legend(label: str, spread: str) -> str:
    """'inductor · seeds 0, 1: #4, #5 (mean, min–max)': the group's label names its seeds and runs already, and a
    long entry is cut in its middle on a narrow plot."""
    return f"{label} ({SPREADS[spread]})"


@dataclass(frozen=True)
class GroupBand:
    """What one group drew on one plot."""

    mean: pg.PlotDataItem
    edges: tuple[tuple[str, pg.PlotDataItem], ...]  # (name, item): low, then high
    fill: pg.FillBetweenItem

    @property
    def band_items(self) -> tuple[pg.GraphicsObject, ...]:
        """The band's items: the edges and the fill (not the mean line, which is drawn as a compared run's)."""
        return (*(edge for _name, edge in self.edges), self.fill)


def draw_band(plot: pg.PlotWidget, x: np.ndarray, band: Band, spread: str, colour: str, label: str) -> GroupBand:
    """The group's mean line and band at `x` (one per band step) on `plot`."""
    low, high = (band.low, band.high) if spread == "minmax" else (band.mean - band.std, band.mean + band.std)
    edges = []
    for name, y in zip(EDGE_NAMES[spread], (low, high)):
        edge = thin_plot(plot, x, y, pen=pg.mkPen(colour, width=1))  # no name: no legend entry
        edge.setOpacity(EDGE_OPACITY)
        edges.append((f"{label} {name}", edge))
    fill_colour = pg.mkColor(colour)
    fill_colour.setAlpha(BAND_ALPHA)
    fill = pg.FillBetweenItem(edges[0][1], edges[1][1], brush=fill_colour)
    fill.setZValue(BAND_Z)
    plot.addItem(fill)
    mean = thin_plot(plot, x, band.mean, pen=pg.mkPen(colour, width=2), name=group_legend(label, spread))
    return GroupBand(mean, tuple(edges), fill)
