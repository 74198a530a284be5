"""The Model dock's views (the panel, model.py, feeds them): the layer table torchinfo prints, from a run's
ModelSummary; each layer's statistics over the sampled steps, one curve a layer for the figure picked; and
TensorBoard's distribution view of one layer's weights, gradients or outputs over the steps.

The statistics are kept once, by layer, in `LayerHistory`; the views draw from it when the panel redraws (a sampled
step is every 100 steps by default, never every step). A distribution's quantiles are computed once per sample and
kept (`Distributions`): a redraw computes only those of the samples that came since."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QSignalBlocker, Qt
from PySide6.QtWidgets import (QComboBox, QHBoxLayout, QHeaderView, QLabel, QSizePolicy, QTreeWidget,
                               QTreeWidgetItem, QVBoxLayout, QWidget)

from ....core.ground.layer_stats import LayerStat, LayerStats, ModelSummary
from ....core.history.layers_text import count_text, shape_text
from ..plots.compared import PALETTE
from ..plots.style import make_plot

# -- the layer table ----------------------------------------------------------------------------------------------
# The figures before the shape (torchinfo's order is the other): in a narrow dock they are what must not scroll away.
COLUMNS = ("Layer", "Kind", "Parameters", "Mult-adds", "Output shape")
NUMBER_COLUMNS = (2, 3)
NAME_ROLE = Qt.UserRole  # a row's module path ("" for the model itself)


def totals_text(summary: ModelSummary) -> str:
    """'101,770 parameters (0.41 MB as fp32) · 3,252,224 mult-adds a forward of a batch of 32'."""
    frozen = sum(row.params for row in summary.rows if not row.trainable)
    return (f"Total: {summary.params:,} parameters" + (f" ({frozen:,} frozen)" if frozen else "")
            + f", {summary.params * 4 / 1e6:.2f} MB as fp32 · {summary.mult_adds:,} mult-adds a forward of a batch "
            f"of {summary.batch}")


class LayerTable(QTreeWidget):
    """The model's modules as a tree (a module under its parent: indented by its depth), each with its kind,
    parameters of its own, mult-adds and output shape for the run's first batch."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("layerTable")
        self.setAccessibleName("Layers")
        self.setColumnCount(len(COLUMNS))
        self.setHeaderLabels(list(COLUMNS))
        self.setUniformRowHeights(True)
        self.setIndentation(14)
        self.header().setSectionResizeMode(QHeaderView.ResizeToContents)

    def show_summary(self, summary: ModelSummary) -> None:
        self.clear()
        parents: list[QTreeWidgetItem] = []  # the last row at each depth above this one
        for row in summary.rows:
            item = QTreeWidgetItem([row.name.rsplit(".", 1)[-1] or "(model)", row.kind, count_text(row.params),
                                    count_text(row.mult_adds), shape_text(row.output_shape)])
            item.setData(0, NAME_ROLE, row.name)
            item.setToolTip(0, row.name or "the model")
            if row.params and not row.trainable:
                item.setToolTip(2, "frozen: no parameter of it requires grad")
            for column in NUMBER_COLUMNS:
                item.setTextAlignment(column, Qt.AlignRight | Qt.AlignVCenter)
            del parents[row.depth:]
            if parents:
                parents[-1].addChild(item)
            else:
                self.addTopLevelItem(item)
            parents.append(item)
        self.expandAll()

    def rows(self) -> list[QTreeWidgetItem]:
        """Every row, in the model's order (depth first)."""
        found: list[QTreeWidgetItem] = []
        stack = [self.topLevelItem(i) for i in reversed(range(self.topLevelItemCount()))]
        while stack:
            item = stack.pop()
            found.append(item)
            stack += [item.child(i) for i in reversed(range(item.childCount()))]
        return found

    def select_layer(self, name: str) -> None:
        for item in self.rows():
            if item.data(0, NAME_ROLE) == name:
                self.setCurrentItem(item)
                self.scrollToItem(item)
                return


# -- the statistics over the steps --------------------------------------------------------------------------------
class LayerHistory:
    """Every sampled step's statistics of the run shown, by layer (`layers`: name → [(step, LayerStat)], in the
    model's module order)."""

    def __init__(self):
        self.layers: dict[str, list[tuple[int, LayerStat]]] = {}
        self.last_step: int | None = None
        self.samples = 0

    def add(self, stats: LayerStats) -> None:
        for layer in stats.layers:
            self.layers.setdefault(layer.name, []).append((stats.step, layer))
        self.last_step = stats.step
        self.samples += 1

    def clear(self) -> None:
        self.layers.clear()
        self.last_step = None
        self.samples = 0

    def values(self, name: str, figure: str) -> tuple[np.ndarray, np.ndarray]:
        """(steps, the figure's values): a LayerStat field, 'grad_norm'."""
        samples = self.layers.get(name, [])
        return (np.array([step for step, _stat in samples], dtype=np.float64),
                np.array([getattr(stat, figure) for _step, stat in samples], dtype=np.float64))


@dataclass(frozen=True)
class Figure:
    key: str  # the LayerStat field
    title: str
    unit: str  # the y axis
    log: bool  # spans decades: a log y axis
    meaning: str


FIGURES = (
    Figure("grad_norm", "Gradient norm", "L2 norm", True, "each layer's gradient norm in the sampled step: "
           "a layer whose gradient is orders of magnitude below the others' barely learns (vanishing); one that "
           "jumps, explodes"),
    Figure("weight_norm", "Weight norm", "L2 norm", False, "each layer's parameters' norm: steady growth "
           "without end can mean the learning rate is too high or weight decay is missing"),
    Figure("update_ratio", "Update / weight ratio", "update norm / weight norm", True, "how much a step changed the "
           "layer against its size: around 1e-3 is healthy; far below, the layer barely learns; far above, it is "
           "thrown around"),
    Figure("dead_fraction", "Dead inputs (share)", "share of inputs", False, "the share of "
           "the layer's inputs that were 0 for every sample: ReLUs of the layer before that never fire (dead)"))
FIGURE_KEYS = tuple(figure.key for figure in FIGURES)


def picker(name: str, spoken: str, items: list[tuple[str, str]]) -> QComboBox:
    """A combo box of (data, text) items."""
    box = QComboBox()
    box.setObjectName(name)
    box.setAccessibleName(spoken)
    for data, text in items:
        box.addItem(text, data)
    return box


def picked(label: str, box: QComboBox) -> QHBoxLayout:
    """A picker with its label, in a row."""
    row = QHBoxLayout()
    words = QLabel(label)
    words.setBuddy(box)
    row.addWidget(words)
    row.addWidget(box, 1)
    return row


def caption() -> QLabel:
    label = QLabel()
    label.setWordWrap(True)
    label.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Preferred)  # never widens the dock
    return label


class LayerCurves(QWidget):
    """One curve a layer for the figure picked, over the sampled steps, with a legend. On a log axis a value of 0
    (a gradient that never arrived) cannot be drawn: the caption names those layers instead."""

    def __init__(self, history: LayerHistory, parent: QWidget | None = None):
        super().__init__(parent)
        self.history = history
        self.figure_box = picker("layerFigureBox", "Figure", [(f.key, f.title) for f in FIGURES])
        for i, figure in enumerate(FIGURES):
            self.figure_box.setItemData(i, figure.meaning[0].upper() + figure.meaning[1:], Qt.ToolTipRole)
        self.plot = make_plot("layerCurvesPlot", "Layer statistics", "", "step")
        self.plot.getPlotItem().getAxis("left").setStyle(autoExpandTextSpace=True)  # 1e-07 is wider than 44 px
        self.curves: dict[str, pg.PlotDataItem] = {}
        self.highlighted = ""
        self.caption = caption()
        self.caption.setObjectName("layerCurvesCaption")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(picked("Figure", self.figure_box))
        layout.addWidget(self.plot, 1)
        layout.addWidget(self.caption)
        self.figure_box.currentIndexChanged.connect(lambda _index: self.redraw())
        self._show_figure()

    @property
    def figure(self) -> Figure:
        return FIGURES[max(0, self.figure_box.currentIndex())]

    def set_figure(self, key: str) -> None:
        self.figure_box.setCurrentIndex(FIGURE_KEYS.index(key))

    def highlight(self, name: str) -> None:
        """Draw `name`'s curve thicker (an alert's layer)."""
        self.highlighted = name
        for layer, curve in self.curves.items():
            curve.setPen(self._pen(layer))

    def _pen(self, name: str):
        """A layer's colour is its place in the model; an alert's layer is drawn thicker."""
        colour = PALETTE[list(self.history.layers).index(name) % len(PALETTE)]
        return pg.mkPen(colour, width=3 if name == self.highlighted else 1)

    def redraw(self) -> None:
        figure = self._show_figure()
        zeros = []
        for name in self.history.layers:
            curve = self.curves.get(name)
            if curve is None:
                curve = self.curves[name] = self.plot.plot(pen=self._pen(name), name=name)
            steps, values = self.history.values(name, figure.key)
            if figure.log and np.any(values <= 0):
                zeros.append(name)
                values = np.where(values > 0, values, np.nan)
            curve.setData(steps, values, connect="finite")
        self.caption.setText(f"Not drawn where 0 (a log axis has no 0): {', '.join(zeros)}" if zeros else "")
        self.caption.setVisible(bool(zeros))

    def _show_figure(self) -> Figure:
        figure = self.figure
        item = self.plot.getPlotItem()
        item.setTitle(figure.title)
        item.setLabel("left", figure.unit)
        item.setLogMode(y=figure.log)
        return figure

    def clear(self) -> None:
        for curve in self.curves.values():
            self.plot.removeItem(curve)
        self.curves.clear()
        self.highlighted = ""
        self.caption.hide()


# -- TensorBoard's distributions ----------------------------------------------------------------------------------
# TensorBoard's quantiles: the extremes, ±1.5σ, ±1σ and ±0.5σ of a normal distribution (7–93 %, 16–84 %, 31–69 %),
# and the median. Band i spans QUANTILES[i] to QUANTILES[-1 - i].
QUANTILES = (0.0, 0.0668, 0.1587, 0.3085, 0.5, 0.6915, 0.8413, 0.9332, 1.0)
MEDIAN = QUANTILES.index(0.5)
TENSORS = (("weights", "Weights"), ("grads", "Gradients"), ("activations", "Outputs"))
BAND_COLOUR = "#e15759"
BAND_ALPHA = 45  # of 255 a band: overlapping, the inner bands come out darker
EDGE_ALPHA = 90
BANDS_TEXT = ("Shaded: the values' 0–100 %, 7–93 %, 16–84 % and 31–69 % ranges at each sampled step (darker: "
              "nearer the middle); line: the median")


class Distributions(QWidget):
    """One layer's weights, gradients or outputs (the pickers) over the sampled steps: shaded quantile bands and
    the median, from each sample's histogram (Histogram.quantile)."""

    def __init__(self, history: LayerHistory, parent: QWidget | None = None):
        super().__init__(parent)
        self.history = history
        self.layer_box = picker("distributionLayerBox", "Layer", [])
        self.tensor_box = picker("distributionTensorBox", "Tensor", list(TENSORS))
        self.plot = make_plot("distributionPlot", "Distribution", "value", "step")
        self.plot.getPlotItem().getAxis("left").setStyle(autoExpandTextSpace=True)
        self.edges: list[tuple[pg.PlotDataItem, pg.PlotDataItem]] = []
        edge = pg.mkColor(BAND_COLOUR)
        edge.setAlpha(EDGE_ALPHA)
        fill = pg.mkColor(BAND_COLOUR)
        fill.setAlpha(BAND_ALPHA)
        for _band in range(MEDIAN):
            low, high = (pg.PlotDataItem(pen=pg.mkPen(edge, width=1)) for _edge in range(2))
            for item in (low, high):
                self.plot.addItem(item)  # no name: the caption explains the bands
            self.plot.addItem(pg.FillBetweenItem(low, high, brush=fill))
            self.edges.append((low, high))
        self.median = self.plot.plot(pen=pg.mkPen(BAND_COLOUR, width=2))
        self.quantiles: dict[tuple[str, str], list[tuple[float, ...]]] = {}  # (layer, tensor) → a row a sample
        bands = caption()
        bands.setText(BANDS_TEXT)
        pickers = QHBoxLayout()
        pickers.addLayout(picked("Layer", self.layer_box), 3)
        pickers.addLayout(picked("Tensor", self.tensor_box), 2)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(pickers)
        layout.addWidget(self.plot, 1)
        layout.addWidget(bands)
        self.layer_box.currentIndexChanged.connect(lambda _index: self.redraw())
        self.tensor_box.currentIndexChanged.connect(lambda _index: self.redraw())

    def select(self, layer: str, tensor: str | None = None) -> None:
        """Show `layer` (once it has statistics), and `tensor` ("weights", "grads", "activations") if given."""
        if self.layer_box.findData(layer) >= 0:
            self.layer_box.setCurrentIndex(self.layer_box.findData(layer))
        if tensor is not None:
            self.tensor_box.setCurrentIndex(self.tensor_box.findData(tensor))

    def table(self, layer: str, tensor: str) -> np.ndarray:
        """The layer's tensor at QUANTILES, a row a sampled step (the rows computed before are kept)."""
        samples = self.history.layers.get(layer, [])
        rows = self.quantiles.setdefault((layer, tensor), [])
        for _step, stat in samples[len(rows):]:
            histogram = getattr(stat, tensor)
            rows.append(tuple(histogram.quantile(q) for q in QUANTILES))
        return np.array(rows, dtype=np.float64).reshape(len(rows), len(QUANTILES))

    def redraw(self) -> None:
        with QSignalBlocker(self.layer_box):  # the first one would select itself and draw, within this drawing
            for name in list(self.history.layers)[self.layer_box.count():]:  # a run's layers come in model order
                self.layer_box.addItem(name, name)
        layer, tensor = self.layer_box.currentData(), self.tensor_box.currentData()
        if layer is None:
            return
        steps = np.array([step for step, _stat in self.history.layers.get(layer, [])], dtype=np.float64)
        table = self.table(layer, tensor)
        for i, (low, high) in enumerate(self.edges):
            low.setData(steps, table[:, i])
            high.setData(steps, table[:, -1 - i])
        self.median.setData(steps, table[:, MEDIAN])
        self.plot.getPlotItem().setTitle(f"{layer} · {self.tensor_box.currentText().lower()}")

    def clear(self) -> None:
        self.quantiles.clear()
        self.layer_box.clear()
        for item in (*(edge for pair in self.edges for edge in pair), self.median):
            item.setData([], [])
        self.plot.getPlotItem().setTitle("Distribution")
