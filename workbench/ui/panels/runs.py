"""Runs dock: the run history as a sortable table. Select two or more runs to overlay their curves; double-click
(or Open) a run to bring back its curves, compile report and model."""

from __future__ import annotations

from typing import Callable

from PySide6.QtCore import QItemSelectionModel, QSortFilterProxyModel, Qt, Signal
from PySide6.QtGui import QStandardItem, QStandardItemModel
from PySide6.QtWidgets import (QAbstractItemView, QHBoxLayout, QHeaderView, QLabel, QMessageBox, QPushButton,
                               QTableView, QVBoxLayout, QWidget)

from ...core.config import setup_label
from ...core.errors import WorkbenchError
from ...core.runs import RunRecord, RunStore
from ..background import run_in_background

COLUMNS = ("ID", "When (UTC)", "Dataset", "Backend · mode · AMP", "Epochs", "Best val", "Samples/s", "Status")
SORT_ROLE = Qt.UserRole + 1


def _item(text: str, sort_value=None) -> QStandardItem:
    item = QStandardItem(text)
    item.setEditable(False)
    item.setData(sort_value if sort_value is not None else text, SORT_ROLE)
    return item


class RunsPanel(QWidget):
    compareRequested = Signal(list)  # RunRecords with events: 0 or 1 clears the overlay
    openRequested = Signal(object)  # a RunRecord with events

    def __init__(self, db=None, parent: QWidget | None = None):
        super().__init__(parent)
        self.db = db
        self.store: RunStore | None = None  # the run list (cheap queries, GUI thread)
        self._loaded: dict[int, RunRecord] = {}  # ended runs with their events, read once
        self._generation = 0
        self.model = QStandardItemModel(0, len(COLUMNS), self)
        self.model.setHorizontalHeaderLabels(list(COLUMNS))
        self.proxy = QSortFilterProxyModel(self)
        self.proxy.setSourceModel(self.model)
        self.proxy.setSortRole(SORT_ROLE)
        self.table = QTableView()
        self.table.setObjectName("runsTable")
        self.table.setModel(self.proxy)
        self.table.setSortingEnabled(True)
        self.table.sortByColumn(0, Qt.DescendingOrder)
        self.table.setSelectionBehavior(QAbstractItemView.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.ExtendedSelection)
        self.table.verticalHeader().hide()
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeToContents)
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.selectionModel().selectionChanged.connect(self._selection_changed)
        self.table.doubleClicked.connect(lambda _index: self.open_selected())
        self.message = QLabel("Select two or more runs to compare their curves; double-click one to re-open it.")
        self.message.setObjectName("runsMessage")
        self.message.setWordWrap(True)
        open_button = QPushButton("Open run")
        open_button.clicked.connect(self.open_selected)
        remove_button = QPushButton("Remove…")
        remove_button.setToolTip("Remove the selected runs from the history (their files stay on disk)")
        remove_button.clicked.connect(self.remove_selected)
        buttons = QHBoxLayout()
        buttons.addWidget(open_button)
        buttons.addWidget(remove_button)
        buttons.addStretch(1)
        layout = QVBoxLayout(self)
        layout.addWidget(self.table, 1)
        layout.addLayout(buttons)
        layout.addWidget(self.message)

    # -- data -------------------------------------------------------------------------------------------------
    def _open_store(self) -> RunStore | None:
        if self.store is None:
            try:
                self.store = RunStore(self.db)
            except WorkbenchError as exc:
                self.message.setText(f"Run history unavailable: {exc}")
        return self.store

    def refresh(self) -> None:
        store = self._open_store()
        if store is None:
            return
        try:
            records = store.list()
        except WorkbenchError as exc:
            self.message.setText(f"Run history unavailable: {exc}")
            return
        self.model.removeRows(0, self.model.rowCount())
        for r in records:
            c = r.config
            self.model.appendRow([
                _item(str(r.id), r.id),
                _item(r.created[:19].replace("T", " ")),
                _item(c["dataset"]),
                _item(setup_label(c)),
                _item(str(c["epochs"]), c["epochs"]),
                _item(f"{r.best_val_accuracy:.2%}" if r.best_val_accuracy is not None else "—",
                      r.best_val_accuracy or -1.0),
                _item(f"{r.samples_per_s:,.0f}" if r.samples_per_s else "—", r.samples_per_s or -1.0),
                _item(r.status),
            ])

    def selected_ids(self) -> list[int]:
        rows = {index.row() for index in self.table.selectionModel().selectedRows()}
        return sorted(int(self.proxy.index(row, 0).data(SORT_ROLE)) for row in rows)

    def select_ids(self, ids: list[int]) -> None:
        self.table.clearSelection()
        for row in range(self.proxy.rowCount()):
            if int(self.proxy.index(row, 0).data(SORT_ROLE)) in ids:
                self.table.selectionModel().select(
                    self.proxy.index(row, 0), QItemSelectionModel.Select | QItemSelectionModel.Rows)

    def _with_records(self, ids: list[int], deliver: Callable[[list[RunRecord]], None]) -> None:
        """Hand `deliver` the runs with their events. A run's events can be millions of rows, so they are read
        on a pool thread (with its own connection) and ended runs are kept; only the latest request is
        delivered, so quick clicks never show an older selection."""
        self._generation += 1
        generation = self._generation
        missing = [run_id for run_id in ids if run_id not in self._loaded]

        def read() -> list[RunRecord]:
            with RunStore(self.db, recover=False) as store:
                return [store.get(run_id, with_events=True) for run_id in missing]

        def done(result) -> None:
            if isinstance(result, Exception):
                self.message.setText(f"Could not read the runs: {result}")
                return
            fresh = {record.id: record for record in result}
            self._loaded.update({i: r for i, r in fresh.items() if r.status != "running"})  # ended: final
            if generation == self._generation:
                deliver([self._loaded.get(run_id) or fresh[run_id] for run_id in ids])

        if missing:
            run_in_background(read, done)
        else:
            done([])

    # -- actions ----------------------------------------------------------------------------------------------
    def _selection_changed(self, *_args) -> None:
        ids = self.selected_ids()
        if len(ids) >= 2:
            self._with_records(ids, self.compareRequested.emit)
        else:
            self._generation += 1  # a comparison still loading is no longer wanted
            self.compareRequested.emit([])

    def open_selected(self) -> None:
        ids = self.selected_ids()
        if len(ids) == 1:
            self._with_records(ids, lambda records: self.openRequested.emit(records[0]))

    def remove_selected(self) -> None:
        ids = self.selected_ids()
        store = self._open_store()
        if not ids or store is None:
            return
        answer = QMessageBox.question(self, "Remove runs", f"Remove {len(ids)} run(s) from the history? Their "
                                      "files (checkpoints, events.jsonl) stay on disk.")
        if answer != QMessageBox.Yes:
            return
        try:
            for run_id in ids:
                store.delete(run_id)
                self._loaded.pop(run_id, None)
        except WorkbenchError as exc:
            self.message.setText(str(exc))
        self.refresh()

    def close_store(self) -> None:
        if self.store is not None:
            self.store.close()
            self.store = None
