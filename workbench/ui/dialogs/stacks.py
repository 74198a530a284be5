"""Kernel → Collect stacks (or the Ranks tab's button when a run stops stepping): every rank's Python stack side
by side, a column a rank, the outermost frame on top, so that ranks doing the same thing line up row for row; the
first rank that differs is named above, its column marked and the row where it leaves the others highlighted.
Below, each rank's last collectives as PyTorch's Flight Recorder kept them. Copy puts it all on the clipboard as
the CLI prints it, for an issue or a colleague."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor, QGuiApplication
from PySide6.QtWidgets import (QAbstractItemView, QDialog, QDialogButtonBox, QLabel, QSplitter, QTableWidget,
                               QTableWidgetItem, QVBoxLayout, QWidget)

from ...core.ground.stacks import StacksView, side_by_side

DIFFERS = QColor("#ffe0b2")


class StacksDialog(QDialog):
    def __init__(self, view: StacksView, parent: QWidget | None = None):
        super().__init__(parent)
        self.view = view
        self.setWindowTitle("Stacks of the run's ranks")
        self.setObjectName("stacksDialog")
        self.setAttribute(Qt.WA_DeleteOnClose)
        self.summary = QLabel(view.summary())
        self.summary.setObjectName("stacksSummary")
        self.summary.setTextFormat(Qt.PlainText)
        self.summary.setWordWrap(True)
        self.summary.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.stacks = _table(view.columns(), "Each rank's stack, outermost frame first", differing=view.first_differing,
                             row=view.divergence if view.first_differing is not None else None)
        self.stacks.setObjectName("stacksTable")
        self.collectives = _table(view.collective_columns(), "Each rank's last collectives, oldest first")
        self.collectives.setObjectName("collectivesTable")
        split = QSplitter(Qt.Vertical)
        split.addWidget(self.stacks)
        split.addWidget(self.collectives)
        split.setStretchFactor(0, 3)
        self.collectives.setVisible(any(cells for _name, cells in view.collective_columns()))
        if view.first_differing is not None and self.stacks.rowCount() > view.divergence:
            column = [stack.rank for stack in view.stacks].index(view.first_differing)
            self.stacks.scrollToItem(self.stacks.item(view.divergence, column), QAbstractItemView.PositionAtCenter)
        self.collectives.scrollToBottom()  # the newest: where the ranks part
        buttons = QDialogButtonBox(QDialogButtonBox.Close)
        copy = buttons.addButton("&Copy", QDialogButtonBox.ActionRole)
        copy.setObjectName("copyStacksButton")
        copy.clicked.connect(self.copy)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.summary)
        layout.addWidget(split, 1)
        layout.addWidget(buttons)
        self.resize(1100, 640)

    def text(self) -> str:
        return "\n".join([self.view.summary(), *side_by_side(self.view, width=60)])

    def copy(self) -> None:
        QGuiApplication.clipboard().setText(self.text())


def _table(columns: list[tuple[str, list[str]]], name: str, *, differing: int | None = None,
           row: int | None = None) -> QTableWidget:
    """A column a rank; `differing`'s header marked and `row` (where it leaves the others) highlighted."""
    rows = max((sum(1 for cell in cells if cell) for _name, cells in columns), default=0)
    table = QTableWidget(rows, len(columns))
    table.setAccessibleName(name)
    table.setEditTriggers(QAbstractItemView.NoEditTriggers)
    table.setWordWrap(False)
    headers = []
    for column, (header, cells) in enumerate(columns):
        odd = differing is not None and header.startswith(f"rank {differing}@")
        headers.append(f"⚠ {header}" if odd else header)
        for index, text in enumerate(cells[:rows]):
            item = QTableWidgetItem(text)
            item.setToolTip(text)
            if row is not None and index == row:
                item.setBackground(QBrush(DIFFERS))
            table.setItem(index, column, item)
    table.setHorizontalHeaderLabels(headers)
    table.resizeColumnsToContents()
    return table
