"""Evaluate panel: a model scored on a whole split, computed by the kernel (`evaluate_view`), explored here.

The confusion matrix is a heatmap; clicking a cell shows exactly that cell's images in the gallery, each with its
confidence. The per-class table sorts by any score; two more galleries show the most confident mistakes and the
likely label errors. The kernel's answer carries every per-sample value and the split's pixels, so each gallery is
built here without another kernel call; thumbnails are drawn only when the gallery scrolls them into view.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable

import numpy as np
from PySide6.QtCore import QAbstractListModel, QModelIndex, QSize, Qt, Signal
from PySide6.QtGui import QBrush, QColor, QStandardItem, QStandardItemModel
from PySide6.QtWidgets import (QAbstractItemView, QHBoxLayout, QHeaderView, QLabel, QListView, QPushButton,
                               QSizePolicy, QSplitter, QTableView, QTableWidget, QTableWidgetItem, QTabWidget,
                               QVBoxLayout, QWidget)

from ...core.ground import pixels
from ...core.ground.answers import EvaluationView
from .predict import pixmap_from_pixels

EMPTY_TEXT = "Train a run or open a checkpoint, then press Evaluate."
READY_TEXT = "Press Evaluate to score {target} on its dataset's test split (else its validation split)."
THUMB = 48
CACHED_THUMBS = 2000  # drawn thumbnails kept while scrolling a big gallery
INDEX_ROLE = Qt.UserRole + 1  # a gallery entry's sample index
SORT_ROLE = Qt.UserRole + 2  # the per-class table sorts numbers, not their text
SCORE_COLUMNS = ("Class", "Precision", "Recall", "F1", "Support")
DIAGONAL, OFF_DIAGONAL = (31, 119, 180), (214, 39, 40)
STRETCHED_CLASSES = 20  # up to this many classes the heatmap fills its space; beyond, cells fit their counts
FITTED_CLASSES = 10  # up to this many (MNIST, Fashion-MNIST, CIFAR-10) every row and column stays in view
CELL_PADDING = 4  # pixels of a fitted row beyond its text's height
NARROWEST_COLUMN = 24  # pixels: ten columns fit a 1366-px screen's dock


@dataclass(frozen=True)
class Evaluation:
    """The kernel's answer, checked and decoded once: numpy arrays for slicing galleries."""

    dataset: str
    split: str
    classes: tuple[str, ...]
    accuracy: float
    loss: float
    confusion: np.ndarray  # (k, k) int, rows true, columns predicted
    precision: np.ndarray  # (k,) float, per class
    recall: np.ndarray
    f1: np.ndarray
    support: np.ndarray  # (k,) images of each class
    labels: np.ndarray
    predicted: np.ndarray
    confidence: np.ndarray
    self_confidence: np.ndarray
    images: np.ndarray  # (N, 28, 28) uint8
    mistakes: np.ndarray
    label_errors: np.ndarray

    @property
    def size(self) -> int:
        return len(self.labels)

    def cell(self, true: int, predicted: int) -> np.ndarray:
        return np.flatnonzero((self.labels == true) & (self.predicted == predicted))


def decode(view: EvaluationView) -> Evaluation:
    """Check the answer's shapes (a malformed one is a ValueError that says what is wrong) and decode the pixels."""
    k = len(view.classes)
    labels, predicted = np.asarray(view.labels, dtype=np.int64), np.asarray(view.predicted, dtype=np.int64)
    confidence = np.asarray(view.confidence, dtype=np.float64)
    self_confidence = np.asarray(view.self_confidence, dtype=np.float64)
    n = len(labels)
    if any(len(values) != n for values in (predicted, confidence, self_confidence)):
        raise ValueError(f"its per-image values do not all have {n} entries")
    if n and (min(labels.min(), predicted.min()) < 0 or max(labels.max(), predicted.max()) >= k):
        raise ValueError(f"its labels or predictions are not among its {k} classes")
    confusion = np.asarray(view.confusion, dtype=np.int64)
    if confusion.shape != (k, k):
        raise ValueError(f"its confusion matrix is not {k}×{k}")
    precision, recall, f1, support = (np.asarray(values, dtype=np.float64)
                                      for values in (view.precision, view.recall, view.f1, view.support))
    if any(values.shape != (k,) for values in (precision, recall, f1, support)):
        raise ValueError(f"its per-class scores do not all have {k} entries")
    try:
        images = pixels.decode(view.images, n)
    except pixels.PixelError as exc:
        raise ValueError(f"its images: {exc}") from None
    return Evaluation(
        dataset=view.dataset, split=view.split, classes=view.classes, accuracy=view.accuracy, loss=view.loss,
        confusion=confusion, precision=precision, recall=recall, f1=f1, support=support, labels=labels,
        predicted=predicted, confidence=confidence, self_confidence=self_confidence, images=images,
        mistakes=_sample_indices(view.mistakes, n), label_errors=_sample_indices(view.label_errors, n))


def _sample_indices(values, n: int) -> np.ndarray:
    indices = np.asarray(values, dtype=np.int64).reshape(-1)
    if len(indices) and (indices.min() < 0 or indices.max() >= n):
        raise ValueError(f"its galleries name images outside 0…{n - 1}")
    return indices


class GalleryModel(QAbstractListModel):
    """A gallery of sample indices; a thumbnail is drawn the first time the view asks for it (only the visible
    ones are asked for), so a cell of a thousand images opens at once."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.evaluation: Evaluation | None = None
        self.indices = np.zeros(0, dtype=np.int64)
        self.caption: Callable[[int], str] = str
        self._thumbs: OrderedDict[int, object] = OrderedDict()

    def show(self, evaluation: Evaluation | None, indices: np.ndarray, caption: Callable[[int], str]) -> None:
        self.beginResetModel()
        if evaluation is not self.evaluation:
            self._thumbs.clear()
        self.evaluation, self.indices, self.caption = evaluation, np.asarray(indices, dtype=np.int64), caption
        self.endResetModel()

    def rowCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self.indices)

    def data(self, index, role=Qt.DisplayRole):
        if not index.isValid() or self.evaluation is None:
            return None
        sample = int(self.indices[index.row()])
        if role == Qt.DisplayRole:
            return self.caption(sample)
        if role == Qt.DecorationRole:
            return self._thumb(sample)
        if role == Qt.ToolTipRole:
            return self._tooltip(sample)
        if role == INDEX_ROLE:
            return sample
        return None

    def _thumb(self, sample: int):
        if sample not in self._thumbs:
            self._thumbs[sample] = pixmap_from_pixels(self.evaluation.images[sample], THUMB)
            if len(self._thumbs) > CACHED_THUMBS:
                self._thumbs.popitem(last=False)
        return self._thumbs[sample]

    def _tooltip(self, sample: int) -> str:
        ev = self.evaluation
        true, predicted = ev.classes[ev.labels[sample]], ev.classes[ev.predicted[sample]]
        return (f"image #{sample}: labelled {true}, predicted {predicted} ({ev.confidence[sample]:.1%}); "
                f"probability of its label {ev.self_confidence[sample]:.1%}")


SIDE_BY_SIDE_WIDTH = 700  # narrower than this, the gallery goes under the confusion matrix


class EvaluatePanel(QWidget):
    """Press Evaluate (`evaluateRequested`); the main window runs the kernel job and hands the answer to
    `set_result`, or its failure to `set_error`."""

    evaluateRequested = Signal()

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.evaluation: Evaluation | None = None

        self.headline = QLabel()
        self.headline.setObjectName("evaluateHeadline")
        self.headline.setTextFormat(Qt.PlainText)
        self.headline.setStyleSheet("font-size: 16px; font-weight: bold;")
        self.headline.setWordWrap(True)  # a narrow dock wraps it rather than widening the window
        self.source = QLabel()
        self.source.setObjectName("evaluateSource")
        self.source.setTextFormat(Qt.PlainText)  # a run's or checkpoint's description: never rich text
        self.source.setWordWrap(True)
        self.target: str | None = None  # what Evaluate would score now (set_target), said until it has
        self.message = QLabel(EMPTY_TEXT)
        self.message.setObjectName("evaluateMessage")
        self.message.setTextFormat(Qt.PlainText)  # errors quote file names and dataset contents
        self.message.setWordWrap(True)
        self.message.setAlignment(Qt.AlignLeft | Qt.AlignTop)
        self.button = QPushButton("Evaluate")
        self.button.setObjectName("evaluateButton")
        self.button.setToolTip("Score the model on a whole split (in the PyTorch kernel, not in this window)")
        self.button.clicked.connect(self.evaluateRequested)

        self.confusion = self._confusion_table()
        self.scores_model = QStandardItemModel(0, len(SCORE_COLUMNS), self)
        self.scores_model.setHorizontalHeaderLabels(list(SCORE_COLUMNS))
        self.scores_model.setSortRole(SORT_ROLE)
        self.scores = self._scores_table()
        self.mistakes_button = QPushButton("Confident mistakes")
        self.mistakes_button.setObjectName("evaluateMistakes")
        self.mistakes_button.setToolTip("The wrong answers the model gave with the highest confidence")
        self.mistakes_button.clicked.connect(self.show_mistakes)
        self.label_errors_button = QPushButton("Likely label errors")
        self.label_errors_button.setObjectName("evaluateLabelErrors")
        self.label_errors_button.setToolTip("Wrong answers ranked by the probability the model gives to the image's "
                                            "own label, lowest first: the labels most likely to be wrong")
        self.label_errors_button.clicked.connect(self.show_label_errors)

        self.gallery_title = QLabel()
        self.gallery_title.setObjectName("evaluateGalleryTitle")
        self.gallery_title.setTextFormat(Qt.PlainText)  # class names come from the checkpoint or folder names
        self.gallery_title.setWordWrap(True)
        self.gallery_model = GalleryModel(self)
        self.gallery = self._gallery_view()

        self.content = self._content()
        layout = QVBoxLayout(self)
        top = QHBoxLayout()
        top.addWidget(self.headline, 1)
        top.addWidget(self.button)
        layout.addLayout(top)
        layout.addWidget(self.source)
        layout.addWidget(self.message)
        layout.addWidget(self.content, 1)
        self.clear()

    # -- widgets ----------------------------------------------------------------------------------------------
    def _confusion_table(self) -> QTableWidget:
        table = QTableWidget()
        table.setObjectName("evaluateConfusion")
        table.setAccessibleName("Confusion matrix")
        table.setTabKeyNavigation(False)  # Tab leaves the table; arrows move in it
        table.setEditTriggers(QAbstractItemView.NoEditTriggers)
        table.setSelectionMode(QAbstractItemView.SingleSelection)
        table.currentCellChanged.connect(lambda row, column, *_: self.show_cell(row, column))
        table.cellClicked.connect(self.show_cell)  # the current cell again, after another gallery
        row = table.fontMetrics().height() + CELL_PADDING
        table.verticalHeader().setMinimumSectionSize(row)
        table.verticalHeader().setDefaultSectionSize(row)
        table.horizontalHeader().setMinimumSectionSize(NARROWEST_COLUMN)
        return table

    def _scores_table(self) -> QTableView:
        view = QTableView()
        view.setObjectName("evaluateScores")
        view.setAccessibleName("Per-class scores")
        view.setTabKeyNavigation(False)
        view.setModel(self.scores_model)
        view.setSortingEnabled(True)
        view.setEditTriggers(QAbstractItemView.NoEditTriggers)
        view.setSelectionBehavior(QAbstractItemView.SelectRows)
        view.verticalHeader().hide()
        view.horizontalHeader().setSectionResizeMode(QHeaderView.Stretch)
        return view

    def _gallery_view(self) -> QListView:
        view = QListView()
        view.setObjectName("evaluateGallery")
        view.setAccessibleName("Images of the chosen cell")
        view.setModel(self.gallery_model)
        view.setViewMode(QListView.IconMode)
        view.setIconSize(QSize(THUMB, THUMB))
        view.setGridSize(QSize(84, 76))
        view.setResizeMode(QListView.Adjust)
        view.setMovement(QListView.Static)
        view.setUniformItemSizes(True)  # lets the view ask only for the visible thumbnails
        view.setLayoutMode(QListView.Batched)
        return view

    def _content(self) -> QWidget:
        matrix = QWidget()
        column = QVBoxLayout(matrix)
        column.setContentsMargins(0, 0, 0, 0)
        axes = QLabel("Rows: true class · columns: predicted class. Click a cell to see its images.")
        axes.setWordWrap(True)
        column.addWidget(axes)
        column.addWidget(self.confusion, 1)
        buttons = QHBoxLayout()
        buttons.addWidget(self.mistakes_button)
        buttons.addWidget(self.label_errors_button)
        column.addLayout(buttons)
        tabs = QTabWidget()
        tabs.addTab(matrix, "Confusion matrix")
        tabs.addTab(self.scores, "Per class")
        # Beside the gallery (a wide dock) half the width; above it (a narrow one) the height its rows need, the
        # gallery the rest.
        tabs.setSizePolicy(_stretch(tabs, horizontal=1, vertical=0))
        gallery = QWidget()
        gallery.setSizePolicy(_stretch(gallery, horizontal=1, vertical=1))
        side = QVBoxLayout(gallery)
        side.setContentsMargins(0, 0, 0, 0)
        side.addWidget(self.gallery_title)
        side.addWidget(self.gallery, 1)
        self.splitter = QSplitter(Qt.Horizontal)
        self.splitter.addWidget(tabs)
        self.splitter.addWidget(gallery)
        return self.splitter

    def resizeEvent(self, event) -> None:
        """Side by side in a wide dock; the gallery under the matrix in a narrow one (a 1366-px screen's)."""
        super().resizeEvent(event)
        self.splitter.setOrientation(Qt.Horizontal if self.width() >= SIDE_BY_SIDE_WIDTH else Qt.Vertical)

    # -- state ------------------------------------------------------------------------------------------------
    def clear(self) -> None:
        """Nothing evaluated yet: say what to do."""
        self.evaluation = None
        self.headline.setText("Evaluate")
        self.source.setText("")
        self.message.setText(self._ready_text())
        self.button.setEnabled(True)
        self.confusion.clear()
        self.confusion.setRowCount(0)
        self.confusion.setColumnCount(0)
        self.scores_model.removeRows(0, self.scores_model.rowCount())
        self._show_gallery("", np.zeros(0, dtype=np.int64), str)
        self.content.setVisible(False)

    def set_target(self, description: str | None) -> None:
        """What Evaluate would score now (None: nothing), said in the empty state rather than "train a run" while
        a run is loaded."""
        was = self._ready_text()
        self.target = description
        if self.evaluation is None and self.message.text() == was:  # not over a result, a failure or work going on
            self.message.setText(self._ready_text())

    def _ready_text(self) -> str:
        return READY_TEXT.format(target=self.target) if self.target else EMPTY_TEXT

    def set_busy(self, text: str) -> None:
        self.message.setText(text)
        self.button.setEnabled(False)

    def set_error(self, text: str) -> None:
        """A failed evaluation, in words (plain text: it may quote file names); a result on show stays."""
        self.message.setText(text)
        self.button.setEnabled(True)

    def set_result(self, view: EvaluationView, description: str) -> None:
        """Show an evaluation's view; `description` says what was evaluated (a run, a checkpoint file)."""
        try:
            evaluation = decode(view)
        except ValueError as exc:
            self.set_error(f"The evaluation could not be shown: {exc}")
            return
        self.evaluation = evaluation
        self.headline.setText(f"accuracy {evaluation.accuracy:.1%} on {evaluation.size:,} images "
                              f"({evaluation.dataset} {evaluation.split})")
        self.source.setText(f"{description} · loss {evaluation.loss:.4f}")
        self.message.setText("")
        self.button.setEnabled(True)
        self._fill_confusion(evaluation)
        self._fill_scores(evaluation)
        self.mistakes_button.setText(f"Confident mistakes ({len(evaluation.mistakes)})")  # two fit a narrow dock
        self.label_errors_button.setText(f"Likely label errors ({len(evaluation.label_errors)})")
        self.content.setVisible(True)
        self.show_mistakes()

    # -- galleries --------------------------------------------------------------------------------------------
    def show_cell(self, true: int, predicted: int) -> None:
        """Exactly the images of one confusion cell, captioned with the predicted class and its confidence."""
        ev = self.evaluation
        if ev is None or not (0 <= true < len(ev.classes) and 0 <= predicted < len(ev.classes)):
            return
        title = self.cell_text(true, predicted)
        if self.gallery_title.text() == title:  # a click on a new cell also moved the current cell: shown once
            return
        indices = ev.cell(true, predicted)
        self._show_gallery(title,
                           indices, lambda i: f"{ev.classes[predicted]} · {ev.confidence[i]:.0%}")

    def show_mistakes(self) -> None:
        ev = self.evaluation
        if ev is not None:
            self._show_gallery(f"Most confident mistakes: {_images(len(ev.mistakes))}, surest first",
                               ev.mistakes, lambda i: f"{ev.classes[ev.labels[i]]}→{ev.classes[ev.predicted[i]]} "
                                                      f"· {ev.confidence[i]:.0%}")

    def show_label_errors(self) -> None:
        ev = self.evaluation
        if ev is not None:
            self._show_gallery(f"Likely label errors: {_images(len(ev.label_errors))}, lowest probability of "
                               f"the given label first", ev.label_errors,
                               lambda i: f"label {ev.classes[ev.labels[i]]} · {ev.self_confidence[i]:.0%}")

    def cell_text(self, true: int, predicted: int) -> str:
        ev = self.evaluation
        return f"true {ev.classes[true]} → predicted {ev.classes[predicted]}: {_images(ev.confusion[true, predicted])}"

    def gallery_indices(self) -> list[int]:
        """The sample indices the gallery shows, in order."""
        return self.gallery_model.indices.tolist()

    def _show_gallery(self, title: str, indices: np.ndarray, caption: Callable[[int], str]) -> None:
        self.gallery_title.setText(title)
        self.gallery_model.show(self.evaluation, indices, caption)
        self.gallery.scrollToTop()

    # -- tables -----------------------------------------------------------------------------------------------
    def _fill_confusion(self, ev: Evaluation) -> None:
        """Counts as text, colour by the share of the true class's images (row-normalised): blue on the diagonal,
        red off it, so a confusion stands out however large its class is (a square root makes a few percent
        visible)."""
        k = len(ev.classes)
        table = self.confusion
        table.blockSignals(True)  # filling moves the current cell: that is not a click
        table.clear()
        table.setRowCount(k)
        table.setColumnCount(k)
        table.setHorizontalHeaderLabels(list(ev.classes))
        table.setVerticalHeaderLabels(list(ev.classes))
        fit = QHeaderView.Stretch if k <= STRETCHED_CLASSES else QHeaderView.ResizeToContents
        table.horizontalHeader().setSectionResizeMode(fit)
        table.verticalHeader().setSectionResizeMode(fit)
        table.setMinimumHeight(self._fitted_height(min(k, FITTED_CLASSES)))
        rows = ev.confusion.sum(axis=1)
        for true in range(k):
            for predicted in range(k):
                count = int(ev.confusion[true, predicted])
                share = count / rows[true] if rows[true] else 0.0
                table.setItem(true, predicted, self._cell(count, share, true == predicted,
                                                          self.cell_text(true, predicted)))
        table.setCurrentCell(-1, -1)
        table.blockSignals(False)

    def _fitted_height(self, rows: int) -> int:
        """The matrix's height with `rows` rows of the fitted height in view: never squeezed below it (at
        1366×768 the matrix showed 4 of MNIST's 10 rows and scrolled)."""
        table = self.confusion
        return (table.horizontalHeader().sizeHint().height() + rows * table.verticalHeader().minimumSectionSize()
                + 2 * table.frameWidth())

    @staticmethod
    def _cell(count: int, share: float, diagonal: bool, tooltip: str) -> QTableWidgetItem:
        item = QTableWidgetItem(f"{count:,}")
        item.setTextAlignment(Qt.AlignCenter)
        item.setToolTip(tooltip)
        strength = share ** 0.5
        colour = DIAGONAL if diagonal else OFF_DIAGONAL
        item.setBackground(QBrush(QColor(*(round(255 + (c - 255) * strength) for c in colour))))
        item.setForeground(QBrush(QColor("white" if strength > 0.6 else "black")))
        return item

    def _fill_scores(self, ev: Evaluation) -> None:
        model = self.scores_model
        model.removeRows(0, model.rowCount())
        for c, name in enumerate(ev.classes):
            rates = [ev.precision[c], ev.recall[c], ev.f1[c]]
            support = int(ev.support[c])
            model.appendRow([_number_item(name, c), *(_number_item(f"{r:.1%}", float(r)) for r in rates),
                             _number_item(f"{support:,}", support)])


def _stretch(widget: QWidget, *, horizontal: int, vertical: int) -> QSizePolicy:
    policy = widget.sizePolicy()
    policy.setHorizontalStretch(horizontal)
    policy.setVerticalStretch(vertical)
    return policy


def _number_item(text: str, value) -> QStandardItem:
    item = QStandardItem(text)
    item.setEditable(False)
    item.setData(value, SORT_ROLE)
    return item


def _images(count: int) -> str:
    return f"{int(count):,} image" + ("" if count == 1 else "s")
