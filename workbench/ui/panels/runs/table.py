"""The Runs dock's table view: rows a line high, columns fitted to their text, Name and Tags edited in place, and
the selected runs selected again when the model lists other rows (a new listing, a filter, a sort).

The model resets on each of those (runs_model.py), which clears a view's selection without a word; the table
remembers which runs were selected, says the selection was cleared, selects them again where they are now, and
then says once that the selection settled (`settled`): the dock acts on a selection, not on each step of its
restoring.
"""

from __future__ import annotations

from PySide6.QtCore import QItemSelection, QItemSelectionModel, Qt, Signal
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableView

from .rows import COLUMNS, HIDDEN_BY_DEFAULT, SORT_ROLE, RunsTableModel

RUN_COLUMN_CHARACTERS = 18  # the Run column's widest: "#12 · trial 3 of s…" (the whole name in its tooltip)
CAPPED_COLUMNS = ("Run", "Name", "Tags")  # the user's words and a trial's name could push Status off the screen
FIT_ROWS = 0  # size the columns by the rows in view only (Qt's default, 1,000 rows, took ~1 s at 2,000 runs)
ROW_PADDING = 6  # pixels of a row beyond its text: the style's default rows were 30 px, 2 runs in a 1366×768 dock


class RunsTable(QTableView):
    settled = Signal()  # the selection was restored after the model listed other rows

    def __init__(self, model: RunsTableModel):
        super().__init__()
        self.setObjectName("runsTable")
        self.setAccessibleName("Runs")
        self.setTabKeyNavigation(False)  # Tab leaves the table (arrows move in it): focus is never trapped
        self.setModel(model)
        # Name and Tags are edited in place: a double click, F2 or Ctrl+T (the dock's actions); Enter keeps, Esc leaves
        # (Qt's item delegate takes Esc before the window's Stop sees it)
        self.setEditTriggers(QAbstractItemView.DoubleClicked)
        self.setSortingEnabled(True)
        self.sortByColumn(0, Qt.DescendingOrder)
        self.setSelectionBehavior(QAbstractItemView.SelectRows)
        self.setSelectionMode(QAbstractItemView.ExtendedSelection)
        self.setWordWrap(False)
        rows = self.verticalHeader()
        rows.hide()
        rows.setMinimumSectionSize(1)
        rows.setDefaultSectionSize(self.fontMetrics().height() + ROW_PADDING)
        header = self.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.Interactive)  # fitted to the text after each listing (fit_columns)
        header.setResizeContentsPrecision(FIT_ROWS)
        header.setStretchLastSection(True)
        for title in HIDDEN_BY_DEFAULT:
            self.setColumnHidden(COLUMNS.index(title), True)
        self.restoring = False  # selecting the remembered runs again: not a selection to act on
        self._remembered: tuple[list[int], int | None] = ([], None)
        model.modelAboutToBeReset.connect(self._remember)
        model.modelReset.connect(self._select_again)

    @property
    def runs(self) -> RunsTableModel:
        return self.model()

    def height_for(self, rows: int) -> int:
        """The table's height with `rows` runs in view, its header, and its horizontal scroll bar (the columns
        fill a 1366-px window's dock, and a sweep's trials' names widen them)."""
        return (self.horizontalHeader().sizeHint().height() + rows * self.verticalHeader().defaultSectionSize()
                + self.horizontalScrollBar().sizeHint().height() + 2 * self.frameWidth())

    def fit_columns(self) -> None:
        """Each shown column as wide as its text in and around the rows in view (FIT_ROWS); the user's words and a
        sweep trial's "#12 · trial 3 of sweep NAME" no wider than RUN_COLUMN_CHARACTERS: a cut text is whole in
        its tooltip."""
        widest = self.fontMetrics().averageCharWidth() * RUN_COLUMN_CHARACTERS
        for column, title in enumerate(COLUMNS):
            if not self.isColumnHidden(column):
                self.resizeColumnToContents(column)
                if title in CAPPED_COLUMNS:
                    self.setColumnWidth(column, min(self.columnWidth(column), widest))

    def hidden_columns(self) -> list[str]:
        return [title for column, title in enumerate(COLUMNS) if self.isColumnHidden(column)]

    def set_hidden_columns(self, titles: list[str]) -> None:
        """Hide these columns and show the others (the Run column, which names the rows, is always shown)."""
        for column, title in enumerate(COLUMNS):
            self.setColumnHidden(column, column > 0 and title in titles)

    # -- the selection ------------------------------------------------------------------------------------------
    def selected_ids(self) -> list[int]:
        """The selected runs, read from the selection's ranges: selectedRows() asks the model for the flags of
        every selected cell (~1 s for 2,000 runs)."""
        rows = {row for span in self.selectionModel().selection() for row in range(span.top(), span.bottom() + 1)}
        return sorted(self.runs.rows[row].id for row in rows)

    def select_ids(self, ids: list[int]) -> None:
        """Select these runs' rows (those listed), at once: one range per block of adjacent rows (2,000 runs
        selected one by one took seconds)."""
        wanted = set(ids)
        rows = [row for row, record in enumerate(self.runs.rows) if record.id in wanted]
        selection = QItemSelection()
        last = self.runs.columnCount() - 1
        start = 0
        for i in range(1, len(rows) + 1):
            if i == len(rows) or rows[i] != rows[i - 1] + 1:
                selection.select(self.runs.index(rows[start], 0), self.runs.index(rows[i - 1], last))
                start = i
        self.selectionModel().select(selection, QItemSelectionModel.ClearAndSelect)

    def _remember(self) -> None:
        """The model is about to list other rows: remember which runs were selected and current, and say that
        the selection is cleared (a reset clears it silently, and the window's actions would not know)."""
        current = self.currentIndex()
        self._remembered = (self.selected_ids(),
                            int(current.siblingAtColumn(0).data(SORT_ROLE)) if current.isValid() else None)
        self.restoring = True
        self.clearSelection()

    def _select_again(self) -> None:
        ids, current = self._remembered
        self.select_ids(ids)
        row = self.runs.row_of(current) if current is not None else None
        if row is not None:
            self.selectionModel().setCurrentIndex(self.runs.index(row, 0), QItemSelectionModel.NoUpdate)
        self.restoring = False
        self.settled.emit()
