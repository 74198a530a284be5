"""Dataset panel: the data a run will train on, before Train — what is wrong with it, how many images each class has
in each split, and a row of sample images per class.

The kernel reads the dataset and answers with a DatasetPreview (core.ground.answers, through the ServiceClient); this
panel only draws it. Everything shown comes from files the user chose (class folder names, file names, error
messages), so every label is plain text, never rich text.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QGridLayout, QHBoxLayout, QLabel, QPushButton, QScrollArea, QVBoxLayout, QWidget

from ...core.ground import pixels
from ...core.ground.answers import DataProblem, DatasetPreview
from .plots.style import legend_below
from .predict import pixmap_from_pixels

EMPTY = "Choose a dataset in Setup to preview it"
THUMBNAIL = 32
SPLIT_COLOURS = {"train": "#1f77b4", "val": "#ff7f0e", "test": "#2ca02c"}
LEVEL_COLOURS = {"error": "#b00020", "warning": "#a15c00"}


def _plain_label(name: str, wrap: bool = True) -> QLabel:
    label = QLabel()
    label.setObjectName(name)
    label.setTextFormat(Qt.PlainText)  # folder names, file names and messages from the data: never rich text
    label.setWordWrap(wrap)
    return label


class DatasetPanel(QWidget):
    """`set_preview(preview)` draws a DatasetPreview; the Preview button asks for a fresh one."""

    refreshRequested = Signal()

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.title = _plain_label("datasetTitle")
        self.title.setStyleSheet("font-weight: bold;")
        self.refresh_button = QPushButton("Preview")
        self.refresh_button.setObjectName("datasetRefreshButton")
        self.refresh_button.setToolTip("Read the dataset again and show what a run would train on")
        self.refresh_button.clicked.connect(self.refreshRequested)
        self.facts = _plain_label("datasetFacts")
        self.status = _plain_label("datasetStatus")
        self.problems: list[QLabel] = []
        self.bars: dict[str, pg.BarGraphItem] = {}
        self.rows: list[tuple[QLabel, list[QLabel]]] = []  # (class name, its thumbnails), one per class

        self.chart = pg.PlotWidget()
        self.chart.setObjectName("classCountChart")
        self.chart.setBackground("w")
        self.chart.setMouseEnabled(False, False)
        self.chart.setLabel("left", "images")
        self.chart.setFixedHeight(190)
        self.legend = legend_below(self.chart.getPlotItem())

        self._problem_box = QVBoxLayout()
        self._grid_holder = QWidget()
        content = QWidget()
        body = QVBoxLayout(content)
        body.addLayout(self._problem_box)
        body.addWidget(self.chart)
        body.addWidget(self._grid_holder)
        body.addStretch(1)
        scroll = QScrollArea()
        scroll.setObjectName("datasetScroll")
        scroll.setWidgetResizable(True)
        scroll.setWidget(content)

        top = QHBoxLayout()
        top.addWidget(self.title, 1)
        top.addWidget(self.refresh_button)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.facts)
        layout.addWidget(self.status)
        layout.addWidget(scroll, 1)
        self.clear()

    # -- states -----------------------------------------------------------------------------------------------
    def clear(self) -> None:
        """The empty state: nothing chosen (or the choice changed and no answer has come yet)."""
        self.title.setText("Dataset")
        self.facts.setText("")
        self._show_status(EMPTY, "#555")
        self._reset_content()

    def set_waiting(self, text: str) -> None:
        """A choice not previewed by itself (a torchvision set may download first): the last dataset's samples go,
        so they are never shown under another dataset's name, and the status says how to see this one."""
        self.clear()
        self._show_status(text, "#555")

    def set_busy(self, text: str) -> None:
        """While the kernel reads the dataset: what is on show stays, the button waits for the answer."""
        self._show_status(text, "#555")
        self.refresh_button.setEnabled(False)

    def set_error(self, text: str) -> None:
        """The preview job itself failed (a kernel that died, a timeout): the data's own problems come in answers."""
        self.facts.setText("")
        self._show_status(text, LEVEL_COLOURS["error"])
        self._reset_content()

    def set_preview(self, preview: DatasetPreview) -> None:
        self._reset_content()
        self.status.hide()
        self.refresh_button.setEnabled(True)
        self.title.setText(preview.title)
        self.facts.setText(_facts(preview))
        for problem in preview.problems:
            self._add_problem(problem)
        self.chart.setVisible(bool(preview.classes))
        if preview.classes:
            self._draw_counts(preview.classes, preview.counts)
            self._fill_grid(preview.classes, preview.samples, preview.counts)

    # -- drawing ----------------------------------------------------------------------------------------------
    def _show_status(self, text: str, colour: str) -> None:
        self.status.setText(text)
        self.status.setStyleSheet(f"color: {colour};")
        self.status.show()
        self.refresh_button.setEnabled(True)

    def _reset_content(self) -> None:
        for label in self.problems:
            _discard(label)
        self.problems = []
        for item in self.bars.values():
            self.chart.removeItem(item)
        self.bars = {}
        self.legend.clear()
        self.chart.hide()
        self._replace_grid()

    def _add_problem(self, problem: DataProblem) -> None:
        label = _plain_label("datasetProblem")
        label.setText(f"{problem.message}\n→ {problem.hint}" if problem.hint else problem.message)
        label.setStyleSheet(f"color: {LEVEL_COLOURS.get(problem.level, '#555')};")
        label.setProperty("level", problem.level)
        self._problem_box.addWidget(label)
        self.problems.append(label)

    def _draw_counts(self, classes: list[str], counts: dict[str, list[int]]) -> None:
        """One bar per class and split, side by side; the class names are the ticks."""
        width = 0.8 / max(1, len(counts))
        for k, (split, heights) in enumerate(counts.items()):
            x = np.arange(len(classes)) - 0.4 + width * (k + 0.5)
            bars = pg.BarGraphItem(x=x, height=np.asarray(heights, dtype=float), width=width,
                                   brush=SPLIT_COLOURS.get(split, "#7f7f7f"), pen=None)
            self.chart.addItem(bars)
            self.legend.addItem(bars, split)
            self.bars[split] = bars
        self.chart.getAxis("bottom").setTicks([[(i, name[:10]) for i, name in enumerate(classes)]])
        self.chart.setXRange(-0.6, len(classes) - 0.4, padding=0)
        highest = max((max(h, default=0) for h in counts.values()), default=0) or 1
        self.chart.setYRange(0, highest * 1.3, padding=0)  # headroom for the legend

    def _replace_grid(self) -> None:
        """A fresh grid widget for the sample rows (the old one, with its thumbnails, is deleted)."""
        old = self._grid_holder
        self._grid_holder = QWidget()
        self._grid_holder.setObjectName("datasetSamples")
        old.parentWidget().layout().replaceWidget(old, self._grid_holder)
        _discard(old)
        self.rows = []
        grid = QGridLayout(self._grid_holder)
        grid.setSpacing(2)
        grid.setContentsMargins(0, 0, 0, 0)

    def _fill_grid(self, classes: list[str], samples: list[list[str]], counts: dict[str, list[int]]) -> None:
        grid = self._grid_holder.layout()
        for row, (name, shown) in enumerate(zip(classes, samples)):
            label = _plain_label("datasetClassName")
            label.setText(name)
            label.setMaximumWidth(90)
            label.setToolTip(", ".join(f"{split} {per_class[row]:,}" for split, per_class in counts.items()))
            grid.addWidget(label, row, 0)
            thumbs = []
            for column, text in enumerate(shown, start=1):
                thumb = QLabel()
                thumb.setPixmap(pixmap_from_pixels(pixels.decode_one(text), THUMBNAIL))
                grid.addWidget(thumb, row, column)
                thumbs.append(thumb)
            self.rows.append((label, thumbs))
        grid.setColumnStretch(grid.columnCount(), 1)


def _discard(widget: QWidget) -> None:
    """Hidden now, deleted when control returns to the event loop (it may be inside a signal handler now)."""
    widget.hide()
    widget.deleteLater()


def _facts(preview: DatasetPreview) -> str:
    """'28×28 grayscale uint8 · IDX files bundled with Workbench' and 'train 4,000 · val 1,000 · 10 classes'."""
    fmt = preview.format
    shape = " · ".join(part for part in ((fmt.stored, fmt.source) if fmt else ()) if part)
    sizes = [f"{split} {sum(per_class):,}" for split, per_class in preview.counts.items()]
    if preview.classes:
        sizes.append(f"{len(preview.classes)} classes")
    return "\n".join(line for line in (shape, " · ".join(sizes)) if line)
