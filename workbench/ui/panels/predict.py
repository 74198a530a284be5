"""Predict panel: drop image files (or Open…) to see what the network sees and what it thinks.

Files are decoded here (Pillow and numpy, no torch) and scored by the kernel, by one pool job at a time working
through the queue (a large image can take a second to decode): the job decodes a few files, then sends their
28×28 pixels to the kernel in one `predict` call. Each file becomes a gallery entry — its prediction, or the reason
it could not be read. A new model re-scores the stored pixels; no file is read again.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtGui import QGuiApplication, QImage, QPixmap
from PySide6.QtWidgets import (QHBoxLayout, QLabel, QListWidget, QListWidgetItem, QPushButton,
                               QVBoxLayout, QWidget)

from ...core.ground.errors import WorkbenchError
from ...core.ground.images import READABLE, Prediction, load_digit
from ..support import file_dialogs
from ..support.tasks import Tasks

SLOT = "predict"
MAX_FILES = 500  # per drop; more is almost certainly a mistaken folder drop
JOB_BUDGET_S = 0.03  # decoding per pool job, so results show as they come
EMPTY_DROP_TEXT = ("Drop image files here: one digit (or one item) per image, any size, dark on light or light "
                   "on dark — each is cropped, centred and scaled to 28×28 as MNIST was\n"
                   f"({READABLE}; up to 500 at once)")
IMAGE_FILTER = "Images (*.png *.jpg *.jpeg *.bmp *.gif *.webp *.tif *.tiff);;All files (*)"


Scorer = Callable[[list[np.ndarray]], list[tuple[float, ...]]]  # pixels → probabilities; may block (a kernel call)


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
    """A size-px (logical) picture of the image's own pixels, made for the sharpest screen: at 2× it holds twice
    the pixels, where a 1× pixmap would be stretched and blurred by the painter."""
    image = QImage(np.ascontiguousarray(pixels).data, pixels.shape[1], pixels.shape[0], pixels.shape[1],
                   QImage.Format_Grayscale8).copy()  # copy: the numpy buffer does not outlive this call
    ratio = QGuiApplication.instance().devicePixelRatio()  # the highest of its screens
    device = round(size * ratio)
    pixmap = QPixmap.fromImage(image).scaled(device, device, Qt.KeepAspectRatio, Qt.FastTransformation)
    pixmap.setDevicePixelRatio(ratio)
    return pixmap


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
        self.setText(EMPTY_DROP_TEXT)
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


def score_all(score: Scorer, pixels: list[np.ndarray]) -> list[tuple[float, ...]] | str:
    """On a pool thread: the probabilities of each image, or why the model could not give them."""
    if not pixels:
        return []
    try:
        return score(pixels)
    except Exception as exc:  # a user's own network may fail on an input: the entries say so
        return failure_text(exc)


def failure_text(error: BaseException) -> str:
    """Why the model gave no probabilities, for the gallery's entries."""
    if isinstance(error, WorkbenchError):
        return f"the model failed: {error}"
    return f"the model failed ({type(error).__name__}: {error})"


class PredictPanel(QWidget):
    def __init__(self, tasks: Tasks, parent: QWidget | None = None):
        super().__init__(parent)
        self.tasks = tasks
        self.model: Scorer | None = None
        self.classes: tuple[str, ...] = ()
        self.entries: list[GalleryEntry] = []
        self.queue: list[str] = []
        self._skipped = 0

        self.source = QLabel("No model yet: train one, or File → Open checkpoint…")
        self.source.setObjectName("predictModelSource")
        self.source.setTextFormat(Qt.PlainText)  # a checkpoint's description: never rendered as rich text
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
        self.prediction_label.setTextFormat(Qt.PlainText)  # class names come from the checkpoint file
        self.prediction_label.setStyleSheet("font-size: 20px; font-weight: bold;")
        self.prediction_label.setWordWrap(True)
        self.message = QLabel()
        self.message.setObjectName("predictMessage")
        self.message.setTextFormat(Qt.PlainText)  # image and checkpoint errors quote file names and contents
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
        self.gallery.setAccessibleName("Images predicted")
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
    @property
    def busy(self) -> bool:
        return self.tasks.busy(SLOT)

    def set_model(self, score: Scorer | None, classes: tuple[str, ...], description: str) -> None:
        """`score` turns a list of 28×28 uint8 images into their class probabilities; None: no model."""
        self.model, self.classes = score, tuple(classes)
        self.source.setText(f"Model: {description}" if score else "No model yet: train one, or File → Open "
                                                                  "checkpoint…")
        self.chart.getAxis("bottom").setTicks([[(i, c[:8]) for i, c in enumerate(self.classes)]])
        scored = [e for e in self.entries if e.prediction is not None]
        if score is None or not scored or self.queue:
            return
        # The predictions on show belong to the old model: re-score the pixels it saw, on a pool thread.
        pixels = [e.prediction.pixels for e in scored]
        self.tasks.submit(SLOT, lambda: score_all(score, pixels), lambda scores: self._rescored(scored, scores),
                          lambda error: self._rescored(scored, failure_text(error)))

    def _rescored(self, scored: list[GalleryEntry], scores: list[tuple[float, ...]] | str) -> None:
        row = max(self.gallery.currentRow(), 0)
        rescored = iter(self._entries_for([e.path for e in scored], [e.prediction.pixels for e in scored], scores))
        entries, self.entries = self.entries, []
        self.gallery.clear()
        for entry in entries:
            self._add_entry(next(rescored) if entry.prediction is not None else entry)
        self.gallery.setCurrentRow(row)
        self._show_entry(row)

    # -- files ------------------------------------------------------------------------------------------------
    def _open_files(self) -> None:
        paths = file_dialogs.open_files(self, "images", "Open images", IMAGE_FILTER)
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
        self._decode_next()

    def _decode_next(self) -> None:
        """Hand the queue's next files to one pool job (a newer drop supersedes it: its result is dropped)."""
        pending, score = list(self.queue), self.model

        def job():
            decoded = decode_some(pending)
            return decoded, score_all(score, [d for d in decoded if not isinstance(d, str)])

        def done(result) -> None:
            decoded, scores = result
            del self.queue[:len(decoded)]
            paths = pending[:len(decoded)]
            images = [(p, d) for p, d in zip(paths, decoded) if not isinstance(d, str)]
            scored = iter(self._entries_for([p for p, _ in images], [d for _, d in images], scores))
            for path, item in zip(paths, decoded):
                self._add_entry(GalleryEntry(path, None, item) if isinstance(item, str) else next(scored))
            if self.queue:
                self.message.setText(f"Predicting… {len(self.entries)} done, {len(self.queue)} to go")
                self._decode_next()
            else:
                self._summarise()

        def failed(error: BaseException) -> None:  # decode_some catches per file: this is a bug, but say so
            done(([f"unexpected error ({type(error).__name__}: {error})"] * len(pending), []))

        self.tasks.submit(SLOT, job, done, failed)

    def _entries_for(self, paths: list[str], pixels: list[np.ndarray],
                     scores: list[tuple[float, ...]] | str) -> list[GalleryEntry]:
        """Gallery entries of scored images; `scores` is the probabilities of each, or why there are none."""
        if isinstance(scores, str):
            return [GalleryEntry(path, None, f"{Path(path).name}: {scores}") for path in paths]
        return [GalleryEntry(path, Prediction(path, image, tuple(probabilities), int(np.argmax(probabilities)),
                                              self.classes), None)
                for path, image, probabilities in zip(paths, pixels, scores)]

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
