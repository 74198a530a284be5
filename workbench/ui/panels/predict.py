"""Predict panel: drop image files (or Open…) to see what the network sees and what it thinks.

Files are decoded off the GUI thread, by one pool job at a time working through the queue (a large image can take
a second to decode), and scored on the GUI thread with the eager model (a 28×28 forward pass). Each file becomes
a gallery entry — its prediction, or the reason it could not be read. A new model re-scores the stored pixels.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtGui import QImage, QPixmap
from PySide6.QtWidgets import (QFileDialog, QHBoxLayout, QLabel, QListWidget, QListWidgetItem, QPushButton,
                               QVBoxLayout, QWidget)

from ...core.errors import WorkbenchError
from ...core.predict import Prediction, load_digit, predict_pixels
from ..background import run_in_background

MAX_FILES = 500  # per drop; more is almost certainly a mistaken folder drop
JOB_BUDGET_S = 0.03  # decoding per pool job, so results show as they come
IMAGE_FILTER = "Images (*.png *.jpg *.jpeg *.bmp *.gif *.webp *.tif *.tiff);;All files (*)"


@dataclass
class GalleryEntry:
    path: str
    prediction: Prediction | None
    error: str | None


def decode_some(paths: list[str]) -> list[np.ndarray | str]:
    """On a pool thread: the 28×28 input of the first few files (at least one), or why each cannot be read."""
    deadline = time.perf_counter() + JOB_BUDGET_S
    decoded: list[np.ndarray | str] = []
    for path in paths:
        try:
            decoded.append(load_digit(path))
        except WorkbenchError as exc:
            decoded.append(str(exc))
        except Exception as exc:  # never let one odd file take the app down
            decoded.append(f"{Path(path).name}: unexpected error ({type(exc).__name__}: {exc})")
        if time.perf_counter() >= deadline:
            break
    return decoded


def pixmap_from_pixels(pixels: np.ndarray, size: int) -> QPixmap:
    image = QImage(np.ascontiguousarray(pixels).data, pixels.shape[1], pixels.shape[0], pixels.shape[1],
                   QImage.Format_Grayscale8).copy()  # copy: the numpy buffer does not outlive this call
    return QPixmap.fromImage(image).scaled(size, size, Qt.KeepAspectRatio, Qt.FastTransformation)


class DropArea(QLabel):
    """Accepts files dragged from a file manager; anything else is politely refused."""

    filesDropped = Signal(list)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("predictDropArea")
        self.setAcceptDrops(True)
        self.setAlignment(Qt.AlignCenter)
        self.setWordWrap(True)
        self.setMinimumHeight(90)
        self.setText("Drop image files here\n(PNG, JPEG, BMP, GIF, WebP)")
        self._idle_style = "QLabel { border: 2px dashed #888; border-radius: 8px; color: #555; padding: 8px; }"
        self.setStyleSheet(self._idle_style)

    def dragEnterEvent(self, event) -> None:
        if event.mimeData().hasUrls():
            self.setStyleSheet(self._idle_style.replace("#888", "#1f77b4"))
            event.acceptProposedAction()
        else:
            event.ignore()

    def dragLeaveEvent(self, event) -> None:
        self.setStyleSheet(self._idle_style)

    def dropEvent(self, event) -> None:
        self.setStyleSheet(self._idle_style)
        paths = [url.toLocalFile() for url in event.mimeData().urls() if url.isLocalFile()]
        if paths:
            event.acceptProposedAction()
            self.filesDropped.emit(paths)
        else:
            event.ignore()


class PredictPanel(QWidget):
    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.model = None
        self.classes: tuple[str, ...] = ()
        self.entries: list[GalleryEntry] = []
        self.queue: list[str] = []
        self.busy = False  # a decoding job of the current drop is out
        self._generation = 0  # bumped by each drop: results of an older one are dropped
        self._skipped = 0

        self.source = QLabel("No model yet: train one, or File → Open checkpoint…")
        self.source.setObjectName("predictModelSource")
        self.source.setWordWrap(True)
        self.drop = DropArea()
        self.drop.filesDropped.connect(self.add_files)
        open_button = QPushButton("Open images…")
        open_button.setObjectName("predictOpenButton")
        open_button.clicked.connect(self._open_files)

        self.input_view = QLabel()
        self.input_view.setObjectName("predictInputView")
        self.input_view.setFixedSize(112, 112)
        self.input_view.setStyleSheet("background: black;")
        self.input_view.setToolTip("The 28×28 input the network sees (after MNIST-style preprocessing)")
        self.prediction_label = QLabel("—")
        self.prediction_label.setObjectName("predictionLabel")
        self.prediction_label.setStyleSheet("font-size: 20px; font-weight: bold;")
        self.prediction_label.setWordWrap(True)
        self.message = QLabel()
        self.message.setObjectName("predictMessage")
        self.message.setWordWrap(True)
        self.message.setStyleSheet("color: #b00020;")

        self.chart = pg.PlotWidget()
        self.chart.setObjectName("probabilityChart")
        self.chart.setBackground("w")
        self.chart.setMouseEnabled(False, False)
        self.chart.setYRange(0, 1)
        self.chart.setLabel("left", "probability")
        self.chart.setMinimumHeight(150)
        self.bars = pg.BarGraphItem(x=np.arange(10), height=np.zeros(10), width=0.7, brush="#1f77b4")
        self.chart.addItem(self.bars)

        self.gallery = QListWidget()
        self.gallery.setObjectName("predictGallery")
        self.gallery.setViewMode(QListWidget.IconMode)
        self.gallery.setIconSize(QSize(48, 48))
        self.gallery.setResizeMode(QListWidget.Adjust)
        self.gallery.setWordWrap(True)
        self.gallery.setGridSize(QSize(96, 84))
        self.gallery.currentRowChanged.connect(self._show_entry)

        top = QHBoxLayout()
        top.addWidget(self.input_view)
        side = QVBoxLayout()
        side.addWidget(self.prediction_label)
        side.addWidget(self.message)
        side.addStretch(1)
        top.addLayout(side, 1)
        layout = QVBoxLayout(self)
        layout.addWidget(self.source)
        layout.addWidget(self.drop)
        layout.addWidget(open_button)
        layout.addLayout(top)
        layout.addWidget(self.chart, 1)
        layout.addWidget(self.gallery, 1)

    # -- model ------------------------------------------------------------------------------------------------
    def set_model(self, model, classes: tuple[str, ...], description: str) -> None:
        """`model` must be an eager (uncompiled) network: it is called on the GUI thread."""
        self.model, self.classes = model, tuple(classes)
        self.source.setText(f"Model: {description}")
        self.chart.getAxis("bottom").setTicks([[(i, c[:8]) for i, c in enumerate(self.classes)]])
        if self.entries:  # predictions on show belong to the old model: re-score what it saw
            row = self.gallery.currentRow()
            entries, self.entries = self.entries, []
            self.gallery.clear()
            for entry in entries:
                self._add_entry(entry if entry.prediction is None else self._score(entry.path,
                                                                                   entry.prediction.pixels))
            self.gallery.setCurrentRow(max(row, 0))
            self._show_entry(max(row, 0))

    # -- files ------------------------------------------------------------------------------------------------
    def _open_files(self) -> None:
        paths, _ = QFileDialog.getOpenFileNames(self, "Open images", "", IMAGE_FILTER)
        if paths:
            self.add_files(paths)

    def add_files(self, paths: list[str]) -> None:
        if self.model is None:
            self.message.setText("No model to predict with yet: click Train (Ctrl+R) or open a checkpoint "
                                 "(File → Open checkpoint…).")
            return
        self.entries.clear()
        self.gallery.clear()
        self.queue = [str(path) for path in paths[:MAX_FILES]]
        self._skipped = max(0, len(paths) - MAX_FILES)
        self.message.setText("")
        self._generation += 1
        self._decode_next()

    def _decode_next(self) -> None:
        """Hand the queue's next files to one pool job; its results come back to `done` on the GUI thread."""
        generation, pending = self._generation, list(self.queue)
        self.busy = True

        def done(result) -> None:
            if generation != self._generation:
                return  # a newer drop replaced this one
            if isinstance(result, Exception):  # decode_some catches per file: this is a bug, but say so
                result = [f"unexpected error ({type(result).__name__}: {result})"] * len(pending)
            del self.queue[:len(result)]
            for path, decoded in zip(pending, result):
                self._add_entry(GalleryEntry(path, None, decoded) if isinstance(decoded, str)
                                else self._score(path, decoded))
            if self.queue:
                self.message.setText(f"Predicting… {len(self.entries)} done, {len(self.queue)} to go")
                self._decode_next()
            else:
                self.busy = False
                self._summarise()

        run_in_background(lambda: decode_some(pending), done)

    def _score(self, path: str, pixels: np.ndarray) -> GalleryEntry:
        """Score the preprocessed pixels with the current model (eager, so safe on the GUI thread)."""
        try:
            probabilities = predict_pixels(self.model, pixels)
        except Exception as exc:  # a user's own network may fail on an input: one entry says so
            return GalleryEntry(path, None, f"{Path(path).name}: the model failed ({type(exc).__name__}: {exc})")
        prediction = Prediction(path, pixels, probabilities, int(np.argmax(probabilities)), self.classes)
        return GalleryEntry(path, prediction, None)

    def _add_entry(self, entry: GalleryEntry) -> None:
        self.entries.append(entry)
        name = Path(entry.path).name
        if entry.prediction is not None:
            p = entry.prediction
            item = QListWidgetItem(f"{p.class_name} · {p.confidence:.0%}\n{name}")
            item.setIcon(pixmap_from_pixels(p.pixels, 48))
        else:
            item = QListWidgetItem(f"✗ {name}")
        item.setToolTip(entry.error or entry.path)
        self.gallery.addItem(item)
        if len(self.entries) == 1:
            self.gallery.setCurrentRow(0)

    def _summarise(self) -> None:
        failed = [e for e in self.entries if e.error]
        parts = []
        if failed and len(self.entries) == 1:
            parts.append(failed[0].error)
        elif failed:
            parts.append(f"{len(failed)} of {len(self.entries)} files could not be read (hover for the reason); "
                         f"first: {failed[0].error}")
        if self._skipped:
            parts.append(f"Only the first {MAX_FILES} files were used; {self._skipped} more were skipped.")
        self.message.setText(" ".join(parts))
        self.gallery.setVisible(len(self.entries) > 1)

    def _show_entry(self, row: int) -> None:
        if not 0 <= row < len(self.entries):
            return
        entry = self.entries[row]
        if entry.prediction is None:
            self.prediction_label.setText("—")
            self.input_view.clear()
            self.bars.setOpts(height=np.zeros(max(1, len(self.classes))))
            if len(self.entries) > 1:
                self.message.setText(entry.error or "")
            return
        p = entry.prediction
        self.prediction_label.setText(f"{p.class_name} · {p.confidence:.1%}")
        self.input_view.setPixmap(pixmap_from_pixels(p.pixels, 112))
        heights = np.asarray(p.probabilities)
        brushes = ["#d62728" if i == p.label else "#1f77b4" for i in range(len(heights))]
        self.bars.setOpts(x=np.arange(len(heights)), height=heights, brushes=brushes)
