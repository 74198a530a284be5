"""The Queue dock: the runs lined up (Run → Add to queue, `workbench queue add`), in order, with where each trains, what
it changes from the form, its state, its run and best accuracy; Cancel, Retry, Resume (from its run's checkpoint),
Remove, Move up and down (Ctrl+Up, Ctrl+Down, or drag a row), and Pause. It shows what the history's queue holds
(history/queue.py) and asks the feature (features/queue.py) to change it."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (QAbstractItemView, QHBoxLayout, QHeaderView, QLabel, QPushButton, QTableWidget,
                               QTableWidgetItem, QVBoxLayout, QWidget)

from ...core.ground.config import TrainConfig
from ...core.history.naming import differing_settings, setting_text
from ...core.history.queue import ENDED, QUEUED, RUNNING, QueueEntry

EMPTY = "Nothing queued: Run → Add to queue (Ctrl+Shift+Q) lines the form's run up."
COLUMNS = ("#", "State", "Where", "Changes from the form", "Run", "Best acc", "Ends in")


def changes_from(entry: QueueEntry, form: TrainConfig | None) -> str:
    """What the entry trains that the form would not: its settings that differ ("as the form" when none)."""
    if form is None:
        return entry.title
    theirs, ours = entry.config.to_dict(), form.to_dict()
    changed = differing_settings([ours, theirs])
    text = " · ".join(setting_text(key, theirs[key]) for key in changed) or "as the form"
    return f"{entry.label}: {text}" if entry.label else text


def drop_index(entries: list[QueueEntry], moved: int, row: int) -> int | None:
    """Where the queued entry at row `moved`, dropped before row `row` (len(entries): after the last), goes among
    the other queued entries (RunQueue.move's index); None when it is not a queued entry."""
    if not 0 <= moved < len(entries) or entries[moved].state != QUEUED:
        return None
    return sum(1 for index, entry in enumerate(entries[:row]) if entry.state == QUEUED and index != moved)


class QueueTable(QTableWidget):
    """The entries' table: a queued entry's row dragged onto another row goes there (before it when dropped on its
    upper half, after it on its lower half, last below every row). The drop itself moves nothing: the queue is
    changed (`rowDropped`) and read again."""

    rowDropped = Signal(int, int)  # the row dragged, the row it goes before

    def __init__(self, columns: int):
        super().__init__(0, columns)
        self.setDragEnabled(True)
        self.setAcceptDrops(True)
        self.viewport().setAcceptDrops(True)
        self.setDragDropMode(QAbstractItemView.InternalMove)
        self.setDropIndicatorShown(True)

    def dropEvent(self, event) -> None:
        rows = self.selectionModel().selectedRows()
        if not self.dragged_here(event) or not rows:
            event.ignore()
            return
        point = event.position().toPoint()
        target = self.indexAt(point).row()
        if target < 0:
            target = self.rowCount()
        elif point.y() > self.visualRect(self.model().index(target, 0)).center().y():
            target += 1
        event.setDropAction(Qt.IgnoreAction)  # the table's rows are the queue's: it moves them
        event.accept()
        self.rowDropped.emit(rows[0].row(), target)

    def dragged_here(self, event) -> bool:
        """A drag of this table's own rows (not of another table's, or files)."""
        return event.source() is self


class QueuePanel(QWidget):
    cancelRequested = Signal(int)
    retryRequested = Signal(int)
    resumeRequested = Signal(int)  # queued again, from its run's checkpoint
    editRequested = Signal(int)  # its settings into the form
    removeRequested = Signal(int)
    moveRequested = Signal(int, int)  # entry, its new index among the queued
    pauseToggled = Signal(bool)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("queuePanel")
        self.entries: list[QueueEntry] = []
        self.summary = QLabel("")
        self.summary.setObjectName("queueSummary")
        self.table = QueueTable(len(COLUMNS))
        self.table.setObjectName("queueTable")
        self.table.rowDropped.connect(self._dropped)
        self.table.setAccessibleName("Queued runs")
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.verticalHeader().hide()
        self.table.setEditTriggers(QAbstractItemView.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SingleSelection)
        self.table.horizontalHeader().setSectionResizeMode(3, QHeaderView.Stretch)
        self.table.itemSelectionChanged.connect(self._update_buttons)
        self.buttons = {}
        row = QHBoxLayout()
        for key, text, tip in (("up", "Move up", "Ctrl+Up"), ("down", "Move down", "Ctrl+Down"),
                               ("edit", "Edit", "its settings into the form; Add to queue then saves them"),
                               ("cancel", "Cancel", "a queued entry at once; a running one after its step"),
                               ("retry", "Retry", "a failed, cancelled or interrupted entry, queued again"),
                               ("resume", "Resume", "an interrupted or cancelled entry, queued again to go on from "
                                                    "its run's checkpoint"),
                               ("remove", "Remove", "take an entry that is not running out of the queue")):
            button = QPushButton(text)
            button.setObjectName(f"queue{key.title()}Button")
            button.setToolTip(tip)
            button.clicked.connect(lambda _=False, key=key: self._act(key))
            row.addWidget(button)
            self.buttons[key] = button
        row.addStretch(1)
        self.pause = QPushButton("Pause")
        self.pause.setObjectName("queuePauseButton")
        self.pause.setCheckable(True)
        self.pause.setToolTip("No entry starts while paused; a running one goes on")
        self.pause.toggled.connect(self.pauseToggled)
        row.addWidget(self.pause)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.summary)
        layout.addWidget(self.table, 1)
        layout.addLayout(row)
        for keys, key in (("Ctrl+Up", "up"), ("Ctrl+Down", "down")):
            QShortcut(QKeySequence(keys), self.table, lambda key=key: self._act(key), context=Qt.WidgetShortcut)
        self.show_entries([], paused=False, form=None)

    def show_entries(self, entries: list[QueueEntry], *, paused: bool, form: TrainConfig | None,
                     ends: dict[int, str] | None = None, editing: int | None = None) -> None:
        """The queue as it is now (`ends`: ends_in's texts; `editing`: the entry the form edits); the selected entry
        stays selected."""
        selected, ends = self.selected(), ends or {}
        self.entries = entries
        self.table.setRowCount(len(entries))
        for index, entry in enumerate(entries):
            best = f"{entry.best_val_accuracy:.2%}" if entry.best_val_accuracy is not None else "—"
            state = entry.state + (" (cancelling)" if entry.state == RUNNING and entry.cancel else "") + (
                " (by the host)" if entry.state == RUNNING and entry.handed else "") + (
                " (editing)" if entry.id == editing else "")
            cells = (str(entry.id), state, entry.where, changes_from(entry, form),
                     f"#{entry.run_id}" if entry.run_id is not None else "—", best, ends.get(entry.id, ""))
            for column, text in enumerate(cells):
                item = QTableWidgetItem(text)
                item.setToolTip(entry.error if entry.error and column == 1 else text)
                self.table.setItem(index, column, item)
        self.table.resizeColumnsToContents()
        if selected is not None and selected.id in [entry.id for entry in entries]:
            self.table.selectRow([entry.id for entry in entries].index(selected.id))
        queued = sum(1 for entry in entries if entry.state == QUEUED)
        running = sum(1 for entry in entries if entry.state == RUNNING)
        self.summary.setText(f"{queued} queued · {running} running" + (" · paused: nothing starts" if paused else "")
                             if entries else EMPTY)
        self.pause.blockSignals(True)
        self.pause.setChecked(paused)
        self.pause.setText("Resume" if paused else "Pause")
        self.pause.blockSignals(False)
        self._update_buttons()

    def unavailable(self, why: str) -> None:
        """No queue to show (the history cannot hold one): say why, offer nothing."""
        self.summary.setText(why)
        self.setEnabled(False)

    def selected(self) -> QueueEntry | None:
        rows = self.table.selectionModel().selectedRows()
        return self.entries[rows[0].row()] if rows and rows[0].row() < len(self.entries) else None

    def _update_buttons(self) -> None:
        entry = self.selected()
        state = entry.state if entry is not None else None
        self.buttons["up"].setEnabled(state == QUEUED)
        self.buttons["down"].setEnabled(state == QUEUED)
        self.buttons["edit"].setEnabled(state == QUEUED)
        self.buttons["cancel"].setEnabled(state in (QUEUED, RUNNING))
        self.buttons["retry"].setEnabled(state in ENDED and state != "finished")
        self.buttons["resume"].setEnabled(state in ("cancelled", "interrupted") and entry.run_id is not None
                                          and not entry.sweep)
        self.buttons["remove"].setEnabled(state is not None and state != RUNNING)

    def _dropped(self, moved: int, row: int) -> None:
        index = drop_index(self.entries, moved, row)
        if index is not None:
            self.moveRequested.emit(self.entries[moved].id, index)

    def _act(self, key: str) -> None:
        entry = self.selected()
        if entry is None:
            return
        if key in ("up", "down"):
            queued = [e.id for e in self.entries if e.state == QUEUED]
            if entry.id in queued:
                self.moveRequested.emit(entry.id, max(0, queued.index(entry.id) + (-1 if key == "up" else 1)))
            return
        {"cancel": self.cancelRequested, "retry": self.retryRequested, "resume": self.resumeRequested,
         "remove": self.removeRequested, "edit": self.editRequested}[key].emit(entry.id)
