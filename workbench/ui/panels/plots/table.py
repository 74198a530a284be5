"""A plot's text alternatives: its latest values in words (`describe`, the plot's accessible description), and its
series as a table (x, then a value per series), newest first, to read or copy.

The table is what the plot held when it was opened (or refreshed): a live run goes on appending to the plot's
buffers, and a table that followed every step would cost the GUI thread what the plots' frames save. Only the rows
on show are built: the latest ones by default, each series' tail being enough for them (a series' x values
increase, as steps and seconds do), so a 1,000,000-step run opens as fast as a short one; "all" merges every point.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Callable

import numpy as np
from PySide6.QtCore import QAbstractTableModel, QModelIndex, Qt
from PySide6.QtWidgets import (QAbstractItemView, QApplication, QComboBox, QDialog, QHBoxLayout, QLabel, QPushButton,
                               QTableView, QVBoxLayout, QWidget)

Series = tuple[str, np.ndarray, np.ndarray]  # name, x (increasing), y
ROW_LIMITS = (("latest 100 rows", 100), ("latest 1,000 rows", 1000), ("latest 10,000 rows", 10_000),
              ("all rows", None))
DEFAULT_LIMIT = 1  # the latest 1,000
# The legends' short words for the current run's series, in full: 'step' (its value at each step) beside an x
# column also called step read as the step itself.
FULL_NAMES = ((re.compile(r"\bval$"), "validation"), (re.compile(r"(^|\s)step$"), r"\1per step"))


def spoken(value: float) -> str:
    """A number as a description says it: '0.213', '87.5', '3,623'."""
    value = float(value)
    if not math.isfinite(value):
        return "no value"
    return f"{value:,.0f}" if abs(value) >= 1000 or value.is_integer() else f"{value:.3g}"


def full_name(name: str) -> str:
    """'val' → 'validation', '#3 step' → '#3 per step'; other names as they are."""
    for short, full in FULL_NAMES:
        name = short.sub(full, name)
    return name


@dataclass(frozen=True)
class XScale:
    """What a plot's x values are: their name (the table's first column), the unit a description says after a
    value ('12.5 seconds'; none: the name before it, 'step 600'), and whether they are Unix times (shown as the
    date and time)."""

    name: str
    unit: str = ""
    dates: bool = False

    def where(self, x: float) -> str:
        """'step 600', 'epoch 1.5', '12.5 seconds', '2025-03-01 14:03:22'."""
        if self.dates:
            return datetime.fromtimestamp(float(x)).strftime("%Y-%m-%d %H:%M:%S")
        return f"{spoken(x)} {self.unit}" if self.unit else f"{self.name} {spoken(x)}"

    def cell(self, x: float) -> str:
        """An x as the table shows and copies it: a date and time to the millisecond, else `plain`."""
        if self.dates and math.isfinite(x):
            return datetime.fromtimestamp(float(x)).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
        return plain(x)


def describe(title: str, x: XScale, unit: str, series: list[Series]) -> str:
    """'Loss at step 600: per step 0.213; smoothed 0.23; validation 0.339 at step 500 (cross-entropy)': each
    series' last value, and where it was when that is not the latest x of the plot."""
    if not series:
        return f"{title}: no points yet"
    latest = max(float(xs[-1]) for _name, xs, _y in series)
    parts = [f"{full_name(name)} {spoken(y[-1])}"
             + ("" if float(xs[-1]) == latest else f" at {x.where(xs[-1])}") for name, xs, y in series]
    return f"{title} at {x.where(latest)}: " + "; ".join(parts) + f" ({unit})"


def plain(value: float) -> str:
    """A number as the table shows and copies it: whole numbers in full ('600', '1000000'), others to 6 digits;
    blank where a series has no point."""
    if not math.isfinite(value):
        return ""
    return str(int(value)) if value.is_integer() and abs(value) < 1e15 else f"{value:.6g}"


def latest_rows(series: list[Series], limit: int | None) -> np.ndarray:
    """The x values of any series, newest first, the latest `limit` of them (None: all)."""
    tails = [x if limit is None else x[-limit:] for _name, x, _y in series]
    xs = np.unique(np.concatenate(tails)) if tails else np.empty(0)
    return xs[::-1][:limit]


def values_at(x: np.ndarray, y: np.ndarray, at: np.ndarray) -> np.ndarray:
    """y where x is one of `at`, NaN where the series has no point there."""
    if not len(x):
        return np.full(len(at), np.nan)
    index = np.minimum(np.searchsorted(x, at), len(x) - 1)
    return np.where(x[index] == at, y[index], np.nan)


class SeriesModel(QAbstractTableModel):
    """Rows of x and each series' value at it; built whole once per `set_series`, read cell by cell by the view."""

    def __init__(self, x: XScale, parent=None):
        super().__init__(parent)
        self.x_scale = x
        self.names: list[str] = []
        self.x = np.empty(0)
        self.values = np.empty((0, 0))

    def set_series(self, series: list[Series], limit: int | None, x: XScale) -> None:
        """The rows of these series, whose x values are `x`."""
        self.beginResetModel()
        self.x_scale = x
        self.names = [full_name(name) for name, _x, _y in series]
        self.x = latest_rows(series, limit)
        self.values = np.column_stack([values_at(x, y, self.x) for _name, x, y in series]) if series else \
            np.empty((0, 0))
        self.endResetModel()

    def rowCount(self, parent=QModelIndex()):
        return 0 if parent.isValid() else len(self.x)

    def columnCount(self, parent=QModelIndex()):
        return 0 if parent.isValid() else 1 + len(self.names)

    def data(self, index, role=Qt.DisplayRole):
        if role == Qt.DisplayRole:
            return self.cell(index.row(), index.column())
        if role == Qt.TextAlignmentRole:
            return int(Qt.AlignRight | Qt.AlignVCenter)
        return None

    def headerData(self, section, orientation, role=Qt.DisplayRole):
        if role == Qt.DisplayRole and orientation == Qt.Horizontal:
            return self.header()[section]
        return None

    def header(self) -> list[str]:
        return [self.x_scale.name, *self.names]

    def cell(self, row: int, column: int) -> str:
        return self.x_scale.cell(float(self.x[row])) if column == 0 else plain(float(self.values[row, column - 1]))

    def text(self, rows: list[int]) -> str:
        """These rows, tab-separated under the header: what Copy puts on the clipboard (a spreadsheet pastes it
        as columns)."""
        lines = ["\t".join(self.header())]
        lines += ["\t".join(self.cell(row, column) for column in range(self.columnCount())) for row in rows]
        return "\n".join(lines)


class PlotTable(QDialog):
    """The table of one plot: `read()` gives its series now and `x()` what their x values are (at opening and on
    Refresh: the plot's x axis can change meanwhile)."""

    def __init__(self, title: str, x: Callable[[], XScale], read: Callable[[], list[Series]],
                 parent: QWidget | None = None):
        super().__init__(parent)
        self.title, self.x, self.read = title, x, read
        self.setWindowTitle(f"{title} as a table")
        self.setObjectName(f"{title.lower()}Table")
        self.model = SeriesModel(x(), self)
        self.limit = QComboBox()
        self.limit.setAccessibleName(f"Rows of the {title} table")  # names apart from another plot's table's
        for text, limit in ROW_LIMITS:
            self.limit.addItem(text, limit)
        self.limit.setCurrentIndex(DEFAULT_LIMIT)
        self.limit.currentIndexChanged.connect(lambda _index: self.refresh())
        self.table = QTableView()
        self.table.setModel(self.model)
        self.table.setSelectionBehavior(QAbstractItemView.SelectRows)
        self.table.setTabKeyNavigation(False)  # Tab leaves the table for the buttons
        self.table.verticalHeader().hide()
        self.table.verticalHeader().setDefaultSectionSize(self.table.fontMetrics().height() + 6)  # a line a row
        self.note = QLabel()
        copy = QPushButton("Copy")
        copy.setToolTip("Copy the selected rows (all the rows shown when none is selected) as tab-separated text")
        copy.clicked.connect(self.copy)
        refresh = QPushButton("Refresh")
        refresh.setToolTip("Read the plot again: a run that is training has added points since")
        refresh.clicked.connect(self.refresh)
        close = QPushButton("Close")
        close.clicked.connect(self.close)
        row = QHBoxLayout()
        row.addWidget(self.limit)
        row.addWidget(self.note, 1)
        for button in (copy, refresh, close):
            button.setAccessibleName(f"{button.text()} the {title} table")
            row.addWidget(button)
        layout = QVBoxLayout(self)
        layout.addWidget(self.table, 1)
        layout.addLayout(row)
        self.resize(560, 420)
        self.refresh()

    def refresh(self) -> None:
        x = self.x()
        self.model.set_series(self.read(), self.limit.currentData(), x)
        self.table.setAccessibleName(f"{self.title}: {x.name} and the value of each series, newest first")
        self.table.resizeColumnsToContents()
        rows = self.model.rowCount()
        self.note.setText("no points yet" if not rows else f"{rows:,} rows, newest first")

    def copy(self) -> None:
        rows = sorted(index.row() for index in self.table.selectionModel().selectedRows())
        QApplication.clipboard().setText(self.model.text(rows or list(range(self.model.rowCount()))))
