"""The plots' text alternatives: each plot's values as a table ("Show as table", plot_table.PlotTable) and, at
most every DESCRIBE_MS, its latest values in words as its accessible description (plot_table.describe), which a
screen reader reads with the plot's name.

A mixin of PlotsPanel (plots.py), which owns the plots, their series, the compared runs' items and the x axis these
read.
"""

from __future__ import annotations

from .items import TimedPlot, recorded
from .table import PlotTable, Series, XScale, describe

SYSTEM_X = XScale("seconds", unit="seconds")  # the system plot's x: seconds since the run started, sampled


class TextAlternatives:
    """PlotsPanel's methods for the plots' tables and descriptions (see the module's docstring)."""

    def table_series(self, plot: TimedPlot) -> list[Series]:
        """The plot's series as its legend names them, on its x axis: the current run's, a continued run's
        parent's, the compared runs' and seed groups' (with their bands' edges). Views of the buffers, not copies:
        read them at once (the next run reuses the buffers)."""
        own = [(self._own_name(plot, s), *s.view()) for s in dict(self._plot_series())[plot]]
        others = [(item.name(), *recorded(item)) for shown, item in (*self.parent_items, *self.overlays)
                  if shown is plot]
        edges = [(name, *recorded(item)) for shown, drawn in self.group_bands if shown is plot
                 for name, item in drawn.edges]
        return [(name, x, y) for name, x, y in own + others + edges if x is not None and len(x)]

    def show_table(self, plot: TimedPlot) -> PlotTable:
        """The plot's values as a table (its text alternative): opened, or brought up to date and raised."""
        table = self.tables.get(plot)
        if table is None:
            table = self.tables[plot] = PlotTable(self.titles[plot], lambda: self._x_scale(plot),
                                                  lambda: self.table_series(plot), self)
        else:
            table.refresh()
        table.show()
        table.raise_()
        table.activateWindow()
        return table

    def description(self, plot: TimedPlot) -> str:
        """What the plot shows now, in words: its latest values (plot_table.describe)."""
        return describe(self.titles[plot], self._x_scale(plot), plot.getPlotItem().getAxis("left").labelText,
                        self.table_series(plot))

    def _x_scale(self, plot: TimedPlot) -> XScale:
        """What the plot's x values are: seconds on the System plot, the chosen x axis on the others (named as
        their label names it)."""
        if plot is self.system_plot:
            return SYSTEM_X
        return XScale(self._x_label(), unit="seconds since start" if self.x_axis == "elapsed" else "",
                      dates=self.x_axis == "wall")

    def _describe_soon(self, *plots: TimedPlot) -> None:
        """Describe these plots at the describe timer's next turn: a frame draws a plot up to 30 times a second,
        its description follows at most DESCRIBE_MS later, whatever the rate of the events."""
        self._undescribed.update(plots)
        if not self.describe_timer.isActive():
            self.describe_timer.start()

    def _describe(self) -> None:
        """Each plot drawn since the last time states its latest values as its accessible description, which a
        screen reader reads with the plot's name ('Loss plot')."""
        self.describe_timer.stop()
        for plot in self._undescribed:
            plot.setAccessibleDescription(self.description(plot))
        self._undescribed.clear()
