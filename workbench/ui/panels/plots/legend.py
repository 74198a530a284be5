"""A plot's legend, a row of the plot's own layout under its x axis, that never takes the plot from its data.

Entries a row: as many as the plot's width holds. Four columns of compared runs' names are wider than a plot: the
legend's minimum width widened the plot past its view (cut titles, axes and legends), and it stayed wider after the
comparison ended, until the window was resized. A name too long for even one column is cut in its middle (whole
in its tooltip).

Rows: at most what LEGEND_SHARE of the plot's height holds. Two compared runs and the live one listed nine entries,
one a row on a narrow plot, and left the loss curve about 40 pixels; now the entries that do not fit fold into a
last one, "+4 more", whose tooltip names them (the plot's table lists every series too). A larger plot unfolds them.

Entries of the live run's curves are listed while they draw something (`list_while_drawn`): before a run, or while
recorded runs are compared without one, "this run, step" named a line that was not there.
"""

from __future__ import annotations

import weakref

import pyqtgraph as pg
from PySide6.QtCore import Qt, QTimer

LEGEND_MARGIN = 16  # pixels of a plot's width the legend leaves to the layout's margins
ENTRY_SPACING = 12  # pixels between a legend's columns, and after its last
ELIDED_CHARACTERS = 12  # a name cut to fit a narrow plot keeps at least this many of its characters
LEGEND_SHARE = 0.35  # of a plot's height, the most its legend takes: the data keeps the rest


class FittingLegend(pg.LegendItem):
    """A legend in `plot`'s layout, of up to `columns` entries a row, its rows folded to fit (see the module's
    docstring). It fits again when the widget is resized or the y axis widens for longer labels, and after each
    change the plot is fitted back into its widget, as a resize of the window did."""

    def __init__(self, columns: int, plot: pg.PlotItem):
        super().__init__(colCount=columns)
        self.most_columns = columns
        self.plot = plot
        self.names: weakref.WeakKeyDictionary[pg.LabelItem, str] = weakref.WeakKeyDictionary()  # whole names
        # (name, room) each label was last fitted to: a fit elides only the entries that are new or renamed, or all
        # of them when the room changed (setText lays a label out again: 80 entries of it held the GUI thread).
        self.fitted: weakref.WeakKeyDictionary[pg.LabelItem, tuple[str, float]] = weakref.WeakKeyDictionary()
        self.while_drawn: weakref.WeakKeyDictionary[pg.PlotDataItem, bool] = weakref.WeakKeyDictionary()
        self.more = pg.LabelItem("", color=self.opts["labelTextColor"], justify="left",
                                 size=self.opts["labelTextSize"])  # the folded entries, "+4 more"
        self.more.setParentItem(self)
        self.more.hide()
        self.folded: list[str] = []  # the names in "more", whole
        self.arranged: tuple | None = None  # what the layout holds now: laid out again only when it changes
        plot.getViewWidget().sigScaleChanged.connect(lambda _widget: self.fit())
        # The plot's geometry changes inside a layout pass (a wider axis can widen it): fit after it, not within it.
        plot.geometryChanged.connect(lambda: QTimer.singleShot(0, self.fit))
        # Entries added or removed fit once, at the next turn of the event loop: fitting after each of the 80
        # entries of 20 compared runs (each fit elides every entry) held the GUI thread for a noticeable time.
        self.fit_soon = QTimer(self, singleShot=True, interval=0)
        self.fit_soon.timeout.connect(self.fit)

    def addItem(self, item, name):
        super().addItem(item, name)
        self.names[self.items[-1][1]] = name
        self.fit_soon.start()

    def _addItemToLayout(self, sample, label):
        """Entries are laid out by `fit` (which knows what is listed and what folds), not one by one as added."""
        sample.hide()
        label.hide()

    def _removeItemFromLayout(self, *items):
        """pyqtgraph's, for entries that may not be laid out (unlisted, folded): Qt warns of removing those."""
        for index in range(self.layout.count() - 1, -1, -1):
            if self.layout.itemAt(index) in items:
                self.layout.removeAt(index)
        for item in items:
            item.close()
            if item.scene() is not None:  # PySide leaves a closed item in its scene (pyqtgraph's note): a leak
                item.scene().removeItem(item)
        self.arranged = None

    def removeItem(self, item):
        super().removeItem(item)
        self.fit_soon.start()

    def list_while_drawn(self, item: pg.PlotDataItem) -> None:
        """List `item`'s entry only while it draws some point."""
        self.while_drawn[item] = _drawn(item)
        item.sigPlotChanged.connect(self._drawing_changed)
        self.fit_soon.start()

    def _drawing_changed(self, item: pg.PlotDataItem) -> None:
        drawn = _drawn(item)
        if self.while_drawn.get(item) != drawn:  # a check a frame; a fit only when the entry comes or goes
            self.while_drawn[item] = drawn
            self.fit_soon.start()

    def listed(self) -> list[tuple[pg.ItemSample, pg.LabelItem]]:
        """The entries to show, folded or not: not those of curves listed only while drawn that draw nothing."""
        return [(sample, label) for sample, label in self.items if self.while_drawn.get(sample.item, True)]

    def sample(self, item) -> pg.ItemSample:
        """The swatch of `item`'s entry."""
        return next(sample for sample, _label in self.items if sample.item is item)

    def rename(self, names: dict) -> None:
        """Give the entries of these items (item → name) new names, then fit once."""
        for sample, label in self.items:
            if sample.item in names:
                self.names[label] = names[sample.item]
        self.fit()

    def clear(self):
        super().clear()
        self.fit()

    def setLabelTextColor(self, *args, **kargs):
        super().setLabelTextColor(*args, **kargs)
        self.more.setText(self.more.text, color=self.opts["labelTextColor"])

    def fit(self) -> None:
        view = self.plot.getViewWidget()
        if view is None:  # a queued fit after the plot's widget has gone
            return
        entries = self.listed()
        columns, folded = 1, []
        if entries:
            room = view.width() - self.plot.getAxis("left").width() - LEGEND_MARGIN
            for sample, label in entries:
                wanted = (self.names[label], room - sample.width() - ENTRY_SPACING)
                if self.fitted.get(label) != wanted:
                    _elide(label, *wanted)
                    self.fitted[label] = wanted
            entry = max(sample.width() + label.minimumWidth() for sample, label in entries) + ENTRY_SPACING
            columns = max(1, min(self.most_columns, int(room // entry)))
            row = max(max(sample.minimumHeight(), label.minimumHeight()) for sample, label in entries)
            row += self.layout.verticalSpacing()
            _left, top, _right, bottom = self.layout.getContentsMargins()  # the style's: 9 px each, or none
            most = columns * max(1, int((LEGEND_SHARE * view.height() - top - bottom) // row))
            if len(entries) > most:
                entries, folded = entries[:most - 1], entries[most - 1:]
        self._fold([self.names[label] for _sample, label in folded])
        self._arrange(entries, columns)
        QTimer.singleShot(0, self._fill_widget)

    def _fold(self, names: list[str]) -> None:
        """`names` go into the last entry, "+N more", which names them in its tooltip; none: no such entry."""
        if names != self.folded:
            self.folded = names
            if names:
                self.more.setText(f"+{len(names)} more", color=self.opts["labelTextColor"])
            self.more.setToolTip("\n".join(names))

    def _arrange(self, entries: list[tuple[pg.ItemSample, pg.LabelItem]], columns: int) -> None:
        """Lay out these entries, `columns` a row, then "more" if anything folded; the others hidden."""
        arrangement = (tuple(id(label) for _sample, label in entries), columns, bool(self.folded))
        if arrangement == self.arranged:
            return
        self.arranged = arrangement
        self.columnCount = columns
        for index in range(self.layout.count() - 1, -1, -1):
            self.layout.removeAt(index)
        shown = {id(label) for _sample, label in entries}
        for sample, label in self.items:
            sample.setVisible(id(label) in shown)
            label.setVisible(id(label) in shown)
        for index, (sample, label) in enumerate(entries):
            row, column = divmod(index, columns)
            self.layout.addItem(sample, row, 2 * column, alignment=Qt.AlignmentFlag.AlignVCenter)
            self.layout.addItem(label, row, 2 * column + 1)
        if self.folded:
            row, column = divmod(len(entries), columns)
            self.layout.addItem(self.more, row, 2 * column + 1)
        self.more.setVisible(bool(self.folded))
        self.rowCount = -(-(len(entries) + bool(self.folded)) // columns)
        self.updateSize()

    def _fill_widget(self) -> None:
        """The plot back to its widget's size, once the layout has taken in the legend's: a plot's geometry stops at
        its minimum, which a wider legend or axis raised, and does not shrink by itself when that falls again."""
        view = self.plot.getViewWidget()
        if view is not None:
            self.plot.setGeometry(view.range)


class LineSample(pg.ItemSample):
    """The legend swatch of a vertical marker line (a compile step): a short stretch of its pen, dashed as it is.
    pyqtgraph's ItemSample draws a PlotDataItem's options, which a line has not."""

    def paint(self, painter, *args):
        painter.setPen(self.item.pen)
        painter.drawLine(2, 18, 18, 2)


def _drawn(item: pg.PlotDataItem) -> bool:
    x = item.xData
    return x is not None and len(x) > 0


def _elide(label: pg.LabelItem, name: str, room: float) -> None:
    """Show `name` whole if it fits `room` pixels, else its start and end around an ellipsis."""
    keep = len(name)
    text = name
    while True:
        if label.text != text:
            label.setText(text)
        if label.minimumWidth() <= room or keep <= ELIDED_CHARACTERS:
            break
        keep = max(ELIDED_CHARACTERS, min(keep - 1, int(keep * room / label.minimumWidth())))
        text = name[:(keep + 1) // 2] + "…" + name[len(name) - keep // 2:]
    label.setToolTip(name if text != name else "")
