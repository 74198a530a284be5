"""Compare numerics, shown: the kernel's NumericsReport (core/ground/numerics.py) as a table of every layer and op,
eager against compiled, with the verdict above it and the row where the drift starts marked, selected and in view.

The dialog only shows; asking the kernel (`ServiceClient.compare_numerics`) is the caller's. Its cells are the
words `workbench numerics` prints (`table_cells`), so the window and the terminal say the same. Double-click (or
Enter on) a row with a source line: `sourceRequested(file, line)`.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor, QFont
from PySide6.QtWidgets import (QAbstractItemView, QApplication, QDialog, QHBoxLayout, QHeaderView, QLabel,
                               QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget)

from ...core.ground.numerics import (NumericsReport, first_exceeding_line, format_numerics, headline, rule_lines,
                                    table_cells, table_headers)
from ..support.copy_close import copy_close_buttons
from ..support.elapsed import Elapsed
from ..panels.log import COLOURS

FIRST_MARK = "▶ "  # before the first exceeding row's name


class NumericsDialog(QDialog):
    """`show_running(what)` while the kernel compares, then `show_report(report)` or `show_error(message)`."""

    sourceRequested = Signal(str, int)  # a row's file and line

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.report: NumericsReport | None = None
        self.setObjectName("numericsDialog")
        self.setWindowTitle("Compare numerics")
        self.verdict = QLabel("")
        self.verdict.setObjectName("numericsVerdict")
        self.verdict.setAccessibleName("Verdict")
        self.verdict.setTextFormat(Qt.PlainText)  # model and file names
        self.verdict.setWordWrap(True)
        bold = self.verdict.font()
        bold.setBold(True)
        self.verdict.setFont(bold)
        self.setup = QLabel("")
        self.setup.setObjectName("numericsSetup")
        self.setup.setTextFormat(Qt.PlainText)
        self.setup.setWordWrap(True)
        self.table = QTableWidget(0, 0)
        self.table.setObjectName("numericsTable")
        self.table.setAccessibleName("Eager against compiled, per layer and op")
        self.table.setEditTriggers(QAbstractItemView.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SingleSelection)
        self.table.setTabKeyNavigation(False)  # Tab leaves the table for the buttons
        self.table.verticalHeader().hide()
        self.table.itemActivated.connect(self._activated)
        self.rules = QLabel("")
        self.rules.setObjectName("numericsRules")
        self.rules.setTextFormat(Qt.PlainText)
        self.rules.setWordWrap(True)
        copy, close = copy_close_buttons(self, "numerics", "the numerics table",
                                         "Copy the table as `workbench numerics` prints it", self.copy)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        buttons.addWidget(copy)
        buttons.addWidget(close)
        layout = QVBoxLayout(self)
        layout.addWidget(self.verdict)
        layout.addWidget(self.setup)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.rules)
        layout.addLayout(buttons)
        self.resize(1100, 560)
        self.waiting = Elapsed(self.verdict.setText, self)  # the compile takes seconds: they are counted

    def show_running(self, what: str) -> None:
        """While the kernel compiles and compares ('inductor · bf16 on the built-in network')."""
        self.report = None
        self.table.setRowCount(0)
        self._set_verdict("", None)
        self.waiting.start(f"Comparing eager and compiled numerics: {what} (a compile and one batch)…")
        self.setup.setText("")
        self.rules.setText("")

    def show_error(self, message: str) -> None:
        self.waiting.stop()
        self.report = None
        self.table.setRowCount(0)
        self._set_verdict(f"Not compared: {message}", False)

    def show_report(self, report: NumericsReport) -> None:
        self.waiting.stop()
        """Every row; the first exceeding one marked, bold, selected and scrolled to."""
        self.report = report
        first = report.first_exceeding
        headers = table_headers(report)
        self.table.clear()
        self.table.setColumnCount(len(headers))
        self.table.setHorizontalHeaderLabels(list(headers))
        self.table.setRowCount(len(report.rows))
        bold = QFont(self.table.font())
        bold.setBold(True)
        for r, row in enumerate(report.rows):
            cells = table_cells(report, row)
            tip = "\n".join(part for part in (row.label, f"{row.file}:{row.line}" if row.file else "", row.code)
                            if part)
            for c, text in enumerate(cells):
                item = QTableWidgetItem(FIRST_MARK + text if r == first and c == 0 else text)
                item.setToolTip(tip)
                if r == first:
                    item.setFont(bold)
                if row.exceeded and c == len(cells) - 1:
                    item.setForeground(QColor(COLOURS["error"]))
                self.table.setItem(r, c, item)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeToContents)
        header.setStretchLastSection(True)
        self._set_verdict(report.verdict(), report.passed)
        self.setup.setText(headline(report))
        self.rules.setText("\n".join([line for line in (first_exceeding_line(report),) if line]
                                     + rule_lines(report)))
        if first is not None:
            self.table.selectRow(first)
            self.table.scrollToItem(self.table.item(first, 0), QAbstractItemView.PositionAtCenter)
            self.table.setFocus()

    def copy(self) -> None:
        if self.report is not None:
            QApplication.clipboard().setText(format_numerics(self.report))

    def _set_verdict(self, text: str, passed: bool | None) -> None:
        self.verdict.setText(text)
        colour = COLOURS["error"] if passed is False else ""
        self.verdict.setStyleSheet(f"color: {colour};" if colour else "")

    def _activated(self, item: QTableWidgetItem) -> None:
        if self.report is None:
            return
        row = self.report.rows[item.row()]
        if row.file:
            self.sourceRequested.emit(row.file, row.line)
