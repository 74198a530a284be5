"""File → Export model…: choose a format and a folder, and read the parity gate's verdict before using the file.

The export itself runs in the kernel (`export_model`); this dialog only asks and shows. Its table is the gate's:
each way of running the model against eager on the validation split, with the differences, the top-1 agreement,
the latency and a verdict; a failed row says the exported file must not be trusted as it is.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, QUrl, Signal
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import (QComboBox, QDialog, QFileDialog, QFormLayout, QHBoxLayout, QHeaderView, QLabel,
                               QLineEdit, QPushButton, QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget)

from ...core.ground.export_formats import EXPORT_FORMATS
from ...core.ground.answers import ParityTable, row_verdict

BACKEND_CHOICES = ("inductor", "aot_eager", "eager")
COLUMNS = ("Run as", "max |Δ|", "max rel", "top-1 same", "ms / batch", "Verdict")


class ExportDialog(QDialog):
    """Asks for the format and the folder (`exportRequested(format, folder, compile_backend)`), then shows the
    parity table (`show_result`) or what went wrong (`show_error`)."""

    exportRequested = Signal(str, str, str)

    def __init__(self, folder: Path, parent: QWidget | None = None, model: str = ""):
        """`model`: which model this exports, in words ("last run (#7) · final val accuracy 93.50%")."""
        super().__init__(parent)
        self.setObjectName("exportDialog")
        self.setWindowTitle(f"Export model — {model}" if model else "Export model")
        self.model = QLabel(model)
        self.model.setObjectName("exportModel")
        self.model.setTextFormat(Qt.PlainText)  # a run's or a file's name
        self.model.setWordWrap(True)
        self.format = QComboBox()
        self.format.setObjectName("exportFormat")
        for value, export_format in EXPORT_FORMATS.items():
            self.format.addItem(export_format.label, value)
        self.backend = QComboBox()
        self.backend.setObjectName("exportBackend")
        self.backend.addItems(BACKEND_CHOICES)
        self.backend.setToolTip("The torch.compile backend of the parity table's compiled row")
        self.folder = QLineEdit(str(folder))
        self.folder.setObjectName("exportFolder")
        browse = QPushButton("Browse…")
        browse.clicked.connect(self._browse)
        where = QHBoxLayout()
        where.addWidget(self.folder, 1)
        where.addWidget(browse)
        form = QFormLayout()
        form.addRow("Model", self.model)
        form.addRow("Format", self.format)
        form.addRow("Folder", where)
        form.addRow("Compiled row", self.backend)
        self.export_button = QPushButton("Export and check")
        self.export_button.setObjectName("exportButton")
        self.export_button.setDefault(True)
        self.export_button.clicked.connect(self._request)
        self.status = QLabel("The model is exported, then run on the validation split beside the eager model: it is "
                             "only as good as this table says.")
        self.status.setObjectName("exportStatus")
        self.status.setWordWrap(True)
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setObjectName("parityTable")
        self.table.setAccessibleName("Parity with the trained model")
        self.table.setTabKeyNavigation(False)
        self.table.setHorizontalHeaderLabels(list(COLUMNS))
        self.table.verticalHeader().hide()
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeToContents)
        self.table.setEditTriggers(QTableWidget.NoEditTriggers)
        self.open_folder = QPushButton("Open folder")
        self.open_folder.setObjectName("openExportFolder")
        self.open_folder.setEnabled(False)
        self.open_folder.clicked.connect(lambda: QDesktopServices.openUrl(QUrl.fromLocalFile(self.folder.text())))
        buttons = QHBoxLayout()
        buttons.addWidget(self.export_button)
        buttons.addStretch(1)
        buttons.addWidget(self.open_folder)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addLayout(buttons)
        layout.addWidget(self.status)
        layout.addWidget(self.table, 1)
        self.resize(720, 360)

    def _browse(self) -> None:
        chosen = QFileDialog.getExistingDirectory(self, "Export into", self.folder.text())
        if chosen:
            self.folder.setText(chosen)

    def _request(self) -> None:
        self.export_button.setEnabled(False)
        self.open_folder.setEnabled(False)
        self.table.setRowCount(0)
        self.status.setText("Exporting and checking parity… (a compile and a pass over the validation split)")
        self.exportRequested.emit(self.format.currentData(), self.folder.text(), self.backend.currentText())

    def show_result(self, table: ParityTable) -> None:
        """The gate's table: every row, and the verdict in words."""
        self.export_button.setEnabled(True)
        self.open_folder.setEnabled(True)
        self.table.setRowCount(len(table.rows))
        for r, row in enumerate(table.rows):
            cells = (row.name, f"{row.max_abs:.2e}", f"{row.max_rel:.2e}", f"{row.top1_agreement:.2%}",
                     f"{row.ms_per_batch:.2f}", row_verdict(row, table.tolerance))
            for c, text in enumerate(cells):
                item = QTableWidgetItem(text)
                item.setTextAlignment((Qt.AlignLeft if c in (0, 5) else Qt.AlignRight) | Qt.AlignVCenter)
                item.setToolTip(row.drift)
                self.table.setItem(r, c, item)
        drifts = [f"{row.name}: {row.drift}." for row in table.rows if row.drift]
        verdict = ("passed: every way of running it agrees with eager" if table.passed else
                   "FAILED: the export disagrees with eager beyond the tolerance; do not ship it as it is")
        self.status.setText(f"{Path(table.file).name} ({table.bytes:,} bytes) {verdict}. "
                            f"{table.images} validation images; tolerance atol {table.tolerance.atol}, "
                            f"rtol {table.tolerance.rtol}, every top-1 the same. contract.json says what it "
                            f"expects; parity.json keeps this table." + "".join(f"\n{d}" for d in drifts))

    def show_error(self, message: str) -> None:
        self.export_button.setEnabled(True)
        self.status.setText(f"Not exported: {message}")
