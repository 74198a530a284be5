"""The diff of two or more runs (core/history/diff.py) as a table: only what differs, under its section (settings,
environment, behaviour), one column per run named as the Runs list names it (`names`), and a note that says why a
behaviour differs or which settings differ with it. Copy (Ctrl+C) puts it on the clipboard as tab-separated text."""

from __future__ import annotations

from typing import Sequence

from PySide6.QtGui import QFont
from PySide6.QtWidgets import (QAbstractItemView, QApplication, QDialog, QHBoxLayout, QHeaderView, QLabel,
                               QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget)

from ....core.history.diff import SECTIONS, RunDiff
from ...support.copy_close import copy_close_buttons

SECTION_TITLES = {"settings": "Settings", "environment": "Environment", "behaviour": "Behaviour"}
NOTE = "Note"


def diff_text(diff: RunDiff, names: Sequence[str]) -> str:
    """The diff as tab-separated lines: a header, then each section's title and rows (a spreadsheet pastes it as
    columns)."""
    lines = ["\t".join(["", *names, NOTE])]
    for section in SECTIONS:
        rows = diff.section(section)
        if rows:
            lines.append(SECTION_TITLES[section])
            lines += ["\t".join([row.field, *row.values, row.note]) for row in rows]
    return "\n".join(lines)


class DiffDialog(QDialog):
    def __init__(self, diff: RunDiff, names: Sequence[str], parent: QWidget | None = None):
        super().__init__(parent)
        self.diff, self.names = diff, list(names)
        self.setObjectName("diffDialog")
        self.setWindowTitle("Diff of " + ", ".join(self.names))
        self.table = QTableWidget(0, len(self.names) + 2)
        self.table.setObjectName("diffTable")
        self.table.setAccessibleName("What differs between " + ", ".join(self.names))
        self.table.setHorizontalHeaderLabels(["", *self.names, NOTE])
        self.table.setEditTriggers(QAbstractItemView.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectRows)
        self.table.setTabKeyNavigation(False)  # Tab leaves the table for the buttons
        self.table.setWordWrap(True)
        self.table.verticalHeader().hide()
        self._fill()
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeToContents)
        header.setStretchLastSection(True)
        self.summary = QLabel(self._summary())
        self.summary.setObjectName("diffSummary")
        self.summary.setWordWrap(True)
        copy, close = copy_close_buttons(self, "diff", "the diff", "Copy the whole diff as tab-separated text",
                                         self.copy)
        row = QHBoxLayout()
        row.addWidget(self.summary, 1)
        row.addWidget(copy)
        row.addWidget(close)
        layout = QVBoxLayout(self)
        layout.addWidget(self.table, 1)
        layout.addLayout(row)
        self.resize(760, 480)

    def _fill(self) -> None:
        bold = QFont()
        bold.setBold(True)
        for section in SECTIONS:
            rows = self.diff.section(section)
            if not rows:
                continue
            title = QTableWidgetItem(SECTION_TITLES[section])
            title.setFont(bold)
            at = self.table.rowCount()
            self.table.insertRow(at)
            self.table.setItem(at, 0, title)
            self.table.setSpan(at, 0, 1, self.table.columnCount())
            for row in rows:
                at = self.table.rowCount()
                self.table.insertRow(at)
                for column, text in enumerate([row.field, *row.values, row.note]):
                    item = QTableWidgetItem(text)
                    item.setToolTip(text)
                    self.table.setItem(at, column, item)

    def _summary(self) -> str:
        counts = {section: len(self.diff.section(section)) for section in SECTIONS}
        if not any(counts.values()):
            return "These runs differ in nothing the diff compares."
        return "Differences: " + ", ".join(f"{n} in {section}" for section, n in counts.items() if n)

    def copy(self) -> None:
        QApplication.clipboard().setText(diff_text(self.diff, self.names))
