"""The profile panel's Ops tab, and the pieces its other tabs build on.

The tab: every op of the profiled steps in a table sortable by number, filtered by name and by compiled region, over
a line giving each region's share of the self time. The pieces (tables of typed rows, plots with fixed ticks, how
numbers read) live here, the one module every tab imports, because profile.py imports the tabs and so cannot be
imported by them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import pyqtgraph as pg
from PySide6.QtCore import QAbstractTableModel, QModelIndex, QSignalBlocker, QSortFilterProxyModel, Qt
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import (QAbstractItemView, QComboBox, QHBoxLayout, QHeaderView, QLabel, QLineEdit, QTableView,
                               QVBoxLayout, QWidget)

from ....core.ground.profile_trace import OpRow, ProfileTables, RegionRow
from ..plots.style import legend_below

SORT_ROLE = Qt.UserRole + 1  # what a column sorts by: numbers as numbers
WARNING = "#b00020"


# -- numbers ------------------------------------------------------------------------------------------------------
def format_ms(us: float) -> str:
    """Microseconds as milliseconds: '12.345'."""
    return f"{us / 1000:,.3f}"


# -- tables -------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Column:
    """A column of a table of typed rows: its title, what it means, a row's text in it, what it sorts by."""

    title: str
    tip: str  # the header's tooltip: what the word means
    text: Callable[[Any], str]
    key: Callable[[Any], Any]  # what the column sorts by
    cell_tip: Callable[[Any], str] | None = None
    numeric: bool = False  # right-aligned


def text_column(title: str, tip: str, read: Callable[[Any], str], cell_tip: Callable[[Any], str] | None = None
                ) -> Column:
    return Column(title, tip, read, lambda r: read(r).lower(), cell_tip)


def count_column(title: str, tip: str, read: Callable[[Any], int]) -> Column:
    return Column(title, tip, lambda r: f"{read(r):,}", read, numeric=True)


def _ms_column(title: str, tip: str, read: Callable[[Any], float]) -> Column:
    return Column(title, tip, lambda r: format_ms(read(r)), read, numeric=True)


class RowsModel(QAbstractTableModel):
    """Typed rows (records) shown through `columns`; filled whole (`set_rows`) or appended in batches."""

    def __init__(self, columns: tuple[Column, ...], parent=None):
        super().__init__(parent)
        self.columns = columns
        self.rows: list[Any] = []

    def rowCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self.columns)

    def data(self, index, role=Qt.DisplayRole):
        if not index.isValid():
            return None
        row, column = self.rows[index.row()], self.columns[index.column()]
        if role == Qt.DisplayRole:
            return column.text(row)
        if role == SORT_ROLE:
            return column.key(row)
        if role == Qt.ToolTipRole and column.cell_tip is not None:
            return column.cell_tip(row)
        if role == Qt.TextAlignmentRole and column.numeric:
            return int(Qt.AlignRight | Qt.AlignVCenter)
        return None

    def headerData(self, section, orientation, role=Qt.DisplayRole):
        if orientation != Qt.Horizontal or not 0 <= section < len(self.columns):
            return None
        if role == Qt.DisplayRole:
            return self.columns[section].title
        if role == Qt.ToolTipRole:
            return self.columns[section].tip
        return None

    def set_rows(self, rows: Sequence[Any]) -> None:
        self.beginResetModel()
        self.rows = list(rows)
        self.endResetModel()

    def append_rows(self, rows: Sequence[Any]) -> None:
        if rows:
            self.beginInsertRows(QModelIndex(), len(self.rows), len(self.rows) + len(rows) - 1)
            self.rows.extend(rows)
            self.endInsertRows()


def table_view(model: QAbstractTableModel, name: str, proxy: QSortFilterProxyModel | None = None, *,
               spoken: str) -> QTableView:
    """A read-only table sortable by its SORT_ROLE (numbers numerically), in the model's order until a header is
    clicked; whole rows selected."""
    if proxy is None:
        proxy = QSortFilterProxyModel(model)
        proxy.setSortRole(SORT_ROLE)
    proxy.setSourceModel(model)
    view = QTableView()
    view.setObjectName(name)
    view.setAccessibleName(spoken)
    view.setTabKeyNavigation(False)  # Tab leaves the table; arrows move in it
    view.setModel(proxy)
    view.horizontalHeader().setSortIndicator(-1, Qt.AscendingOrder)  # the rows as they came (heaviest first)
    view.setSortingEnabled(True)
    view.setSelectionBehavior(QAbstractItemView.SelectRows)
    view.setEditTriggers(QAbstractItemView.NoEditTriggers)
    view.setWordWrap(False)
    view.verticalHeader().hide()
    view.verticalHeader().setDefaultSectionSize(view.fontMetrics().height() + 8)  # compact rows: a dock is small
    header = view.horizontalHeader()
    header.setSectionResizeMode(QHeaderView.Interactive)
    header.setStretchLastSection(True)
    return view


NAME_WIDTH = 240  # the first column (an op's name) at most: a compiled graph's long name must not hide the numbers


def fit_columns(view: QTableView, model: RowsModel, rows: int = 100) -> None:
    """Each column as wide as its title and its first `rows` cells (Qt's resizeColumnsToContents asks every
    cell of every row for its data: a quarter of a second for an op table of 800 rows)."""
    metrics = QFontMetrics(view.font())
    bold = QFontMetrics(view.horizontalHeader().font())
    for i, column in enumerate(model.columns[:-1]):  # the last one stretches
        texts = [column.text(row) for row in model.rows[:rows]]
        widest = max([bold.horizontalAdvance(column.title) + 24, *(metrics.horizontalAdvance(t) + 12 for t in texts)])
        view.setColumnWidth(i, min(widest, NAME_WIDTH if i == 0 else 400))


# -- plots --------------------------------------------------------------------------------------------------------
def make_plot(name: str, left: str, bottom: str) -> pg.PlotWidget:
    """A plot of the Profile panel: no title row (the tab names it), labelled axes without SI prefixes."""
    plot = pg.PlotWidget()
    plot.setObjectName(name)
    item = plot.getPlotItem()
    item.setLabel("left", left)
    item.setLabel("bottom", bottom)
    item.getAxis("bottom").enableAutoSIPrefix(False)
    item.getAxis("left").enableAutoSIPrefix(False)
    legend_below(item)
    return plot


def set_ticks(axis: pg.AxisItem, ticks: list | None) -> None:
    """Fixed ticks, the axis as wide as its longest label (pyqtgraph widens it only after a paint that clips)."""
    axis.setTicks(ticks)
    labels = [label for level in ticks or () for _, label in level]
    widest = max((QFontMetrics(axis.font()).horizontalAdvance(label) for label in labels), default=0)
    axis.setWidth(widest + 16 + (18 if axis.label.isVisible() else 0) if widest else None)


# -- the op table -------------------------------------------------------------------------------------------------
def region_word(region: str) -> str:
    """The name a region is shown by: '' (no compiled region around the op) is 'eager'."""
    return region or "eager"


def region_tip(region: str) -> str:
    if not region:
        return "eager: ran op by op in PyTorch, outside any compiled graph"
    if region.startswith("compiled backward"):
        return f"{region}: the backward graph torch.compile built (AOTAutograd)"
    if region.startswith("compiled"):
        return f"{region}: a graph torch.compile built (Dynamo's frame/compile id)"
    if region == "optimizer":
        return "optimizer: inside optimizer.step() (the update of the weights)"
    return region


def region_shares(summary: ProfileTables, device: bool) -> list[tuple[str, float]]:
    """(region, share of the whole) of the self time on the device (`device`) or the CPU, largest first: from the
    summary's region table, or added up from its ops when it has none."""
    totals: dict[str, float] = {}
    rows: Sequence[OpRow | RegionRow] = summary.regions or summary.ops
    for row in rows:
        totals[row.region] = totals.get(row.region, 0.0) + (row.self_device_us if device else row.self_cpu_us)
    whole = sum(totals.values())
    if whole <= 0:
        return []
    return sorted(((region, value / whole) for region, value in totals.items()), key=lambda pair: -pair[1])


def shares_text(shares: list[tuple[str, float]]) -> str:
    """'compiled 0/0 41 % · eager 30 % · optimizer 29 %'."""
    return " · ".join(f"{region_word(region)} {100 * share:.0f} %" for region, share in shares)


class OpsProxy(QSortFilterProxyModel):
    """The op table's rows whose name holds `name` (any case) and, when `region` is not None, that ran in it."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setSortRole(SORT_ROLE)
        self.name = ""
        self.region: str | None = None

    def set_filter(self, name: str, region: str | None) -> None:
        changing = getattr(self, "beginFilterChange", None)  # Qt ≥ 6.9; invalidateFilter before it
        if changing is not None:
            changing()
        self.name, self.region = name.strip().lower(), region
        if changing is not None:
            self.endFilterChange(QSortFilterProxyModel.Direction.Rows)
        else:
            self.invalidateFilter()

    def filterAcceptsRow(self, source_row: int, source_parent) -> bool:
        row: OpRow = self.sourceModel().rows[source_row]
        if self.region is not None and row.region != self.region:
            return False
        return self.name in row.name.lower()


def _op_tip(row: OpRow) -> str:
    per_call = row.self_cpu_us / row.calls if row.calls else 0.0
    return f"{row.name}\n{region_tip(row.region)}\n{row.calls:,} calls · {format_ms(per_call)} ms self CPU per call"


OPS_COLUMNS = (
    text_column("Op", "The PyTorch operator (aten::…) or compiled-graph call that ran", lambda r: r.name, _op_tip),
    Column("Region", "Where it ran: inside a graph torch.compile built ('compiled 0/0': frame 0, compile 0), "
           "eagerly (outside any compiled graph), or in the optimizer step",
           lambda r: region_word(r.region), lambda r: region_word(r.region), lambda r: region_tip(r.region)),
    count_column("Calls", "How many times it ran, over all the profiled steps", lambda r: r.calls),
    _ms_column("Self CPU (ms)", "Self CPU: time in this op itself, not in the ops it called (summed over the "
               "profiled steps)", lambda r: r.self_cpu_us),
    _ms_column("CPU total (ms)", "CPU total: time in this op including the ops it called", lambda r: r.cpu_us),
    _ms_column("Self device (ms)", "Self device: GPU time of the kernels this op itself launched",
               lambda r: r.self_device_us),
    _ms_column("Device total (ms)", "Device total: GPU time of the kernels of this op and of the ops it called",
               lambda r: r.device_us),
    text_column("Input shapes", "The shapes of the op's inputs: an op called with different shapes has a row per set",
                lambda r: r.shapes, lambda r: r.shapes),
)
DEVICE_COLUMNS = (5, 6)


class OpsTab(QWidget):
    """The op table with its name and region filters above it and the region totals below."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.model = RowsModel(OPS_COLUMNS, self)
        self.proxy = OpsProxy(self)
        self.view = table_view(self.model, "opsTable", self.proxy, spoken="Operators")
        self.op_filter = QLineEdit()
        self.op_filter.setObjectName("opFilter")
        self.op_filter.setAccessibleName("Filter operators by name")
        self.op_filter.setPlaceholderText("Filter ops by name (e.g. addmm)")
        self.op_filter.setClearButtonEnabled(True)
        self.op_filter.setToolTip("Show only the ops whose name holds this text (any case)")
        self.region_filter = QComboBox()
        self.region_filter.setObjectName("regionFilter")
        self.region_filter.setAccessibleName("Region")
        self.region_filter.setToolTip("Show the ops of one region: a graph torch.compile built ('compiled 0/0'), "
                                      "the ops that ran eagerly, or the optimizer step")
        self.region_filter.setSizeAdjustPolicy(QComboBox.AdjustToContents)
        self.op_filter.textChanged.connect(self._filter)
        self.region_filter.currentIndexChanged.connect(self._filter)
        self.region_totals = QLabel()
        self.region_totals.setObjectName("regionTotals")
        self.region_totals.setWordWrap(True)
        row = QHBoxLayout()
        row.addWidget(self.op_filter, 1)
        row.addWidget(self.region_filter)
        layout = QVBoxLayout(self)
        layout.addLayout(row)
        layout.addWidget(self.view, 1)
        layout.addWidget(self.region_totals)

    def clear(self) -> None:
        self.op_filter.clear()
        self.show_summary(ProfileTables())

    def show_summary(self, summary: ProfileTables) -> None:
        """The ops of a profile's tables."""
        ops = summary.ops
        self.model.set_rows(ops)
        cuda = summary.device != "cpu"
        for column in DEVICE_COLUMNS:
            self.view.setColumnHidden(column, not cuda)
        shares = region_shares(summary, cuda)
        with QSignalBlocker(self.region_filter):  # refilled without a filter pass per item
            self.region_filter.clear()
            self.region_filter.addItem("All regions", None)
            regions = [region for region, _ in shares]
            regions += sorted({op.region for op in ops} - set(regions))
            for region in regions:
                self.region_filter.addItem(region_word(region), region)
                self.region_filter.setItemData(self.region_filter.count() - 1, region_tip(region), Qt.ToolTipRole)
        self._filter()
        self.view.sortByColumn(-1, Qt.AscendingOrder)  # the summary's order: self device + self CPU, heaviest first
        if ops:
            fit_columns(self.view, self.model)
        if shares:
            word = "Self device time" if cuda else "Self CPU time"
            self.region_totals.setText(f"{word} by region: {shares_text(shares)}")
            cpu = shares_text(region_shares(summary, device=False))
            self.region_totals.setToolTip("Each region's share of the self time of all its ops (self: time in an "
                                          "op itself, not in the ops it called)" + (f"\nSelf CPU time: {cpu}"
                                                                                   if cuda else ""))
        else:
            self.region_totals.setText("")
            self.region_totals.setToolTip("")

    def _filter(self, *_args) -> None:
        index = self.region_filter.currentIndex()
        region = self.region_filter.itemData(index) if index > 0 else None
        self.proxy.set_filter(self.op_filter.text(), region)
