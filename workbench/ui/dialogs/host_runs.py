"""Kernel → Runs on this host…: the runs the connected host has trained for remote windows (running or ended),
any of which the window can follow (Attach: its curves from the first step, then live). Shown by itself after
connecting to a host that has runs: a run left training there when a window closed is found again."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (QAbstractItemView, QDialog, QDialogButtonBox, QHeaderView, QLabel, QTableWidget,
                               QTableWidgetItem, QVBoxLayout, QWidget)

from ...core.run.remote.wire import RunInfo

COLUMNS = ("Run", "Status", "Events", "Dataset", "Epochs")


def _row(info: RunInfo) -> tuple[str, ...]:
    return info.key, info.status, f"{info.events:,}", info.dataset, str(info.epochs)


class HostRunsDialog(QDialog):
    """The host's runs, newest first; Attach (Enter, or a double click) asks to follow the selected one."""

    attachRequested = Signal(object)  # the RunInfo to follow

    def __init__(self, host: str, runs: list[RunInfo], parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle(f"Runs on {host}")
        self.setObjectName("hostRunsDialog")
        self.setAttribute(Qt.WA_DeleteOnClose)
        self.runs = list(reversed(runs))  # the host lists them oldest first: the one just left is wanted first
        self.table = QTableWidget(len(self.runs), len(COLUMNS))
        self.table.setObjectName("hostRunsTable")
        self.table.setAccessibleName(f"Runs on {host}")
        self.table.setHorizontalHeaderLabels(list(COLUMNS))
        self.table.setEditTriggers(QAbstractItemView.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SingleSelection)
        self.table.setTabKeyNavigation(False)
        self.table.verticalHeader().hide()
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeToContents)
        for row, info in enumerate(self.runs):
            for column, value in enumerate(_row(info)):
                item = QTableWidgetItem(value)
                if column in (2, 4):
                    item.setTextAlignment(Qt.AlignRight | Qt.AlignVCenter)
                self.table.setItem(row, column, item)
        self.table.itemActivated.connect(lambda _item: self.attach())
        buttons = QDialogButtonBox(QDialogButtonBox.Close)
        self.attach_button = buttons.addButton("&Attach", QDialogButtonBox.AcceptRole)  # the default: Enter
        self.attach_button.setObjectName("attachButton")
        self.attach_button.setEnabled(bool(self.runs))
        buttons.accepted.connect(self.attach)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        intro = QLabel(f"{host} has no runs started from another computer." if not self.runs else
                       f"The runs {host} has trained for remote windows. Attach follows one in this window: what it "
                       "has done so far, then live (a finished one, whole).")
        intro.setObjectName("hostRunsIntro")
        intro.setTextFormat(Qt.PlainText)
        intro.setWordWrap(True)
        layout.addWidget(intro)
        layout.addWidget(self.table)
        layout.addWidget(buttons)
        if self.runs:
            self.table.selectRow(0)
        self.table.setFocus()
        self.resize(560, 320)

    def selected(self) -> RunInfo | None:
        rows = self.table.selectionModel().selectedRows()
        return self.runs[rows[0].row()] if rows else None

    def attach(self) -> None:
        info = self.selected()
        if info is None or not self.isVisible():  # Enter in the table activates it as well as the default button
            return
        self.accept()
        self.attachRequested.emit(info)
