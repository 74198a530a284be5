"""The profile panel's AMP tab: what autocast ran in low precision, the fp16 loss scale, the steps it skipped.

Its top line is the device's recommendation (or why the tab is empty). Below: the loss scale over the steps as a step
function (the scale holds between changes, and a re-opened run keeps only the steps where it changed) with the
skipped steps marked, the skipped steps' table, and the dtype census of one forward and loss.

The scale curve keeps only the steps where the scale changed, and the last step, live as re-opened: the same line,
with a point a change (GradScaler doubles it every 2,000 clean steps, halves it on an overflow) instead of a point a
step. So few points need neither clipping nor downsampling, and the plot auto-ranges on its data. It once
auto-ranged on a peak-downsampled curve of every step, whose bins' first steps moved the range's end, which changed
the downsampling factor, which moved the range back: at some run lengths it repainted for ever (as the live plots
once did; plot_items.py).

Steps and skipped steps arrive during training at up to hundreds a second: `append` only buffers them, and the
panel's timer calls `redraw` to draw what changed.
"""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QSplitter, QTableView, QVBoxLayout, QWidget

from ....core.ground.amp_census import AmpCensus
from ....core.ground.events import AmpReport, AmpSkipped, Step
from ..plots.series import SeriesBuffer
from .ops import Column, RowsModel, count_column, fit_columns, make_plot, set_ticks, table_view, text_column

AMP_OFF = ("AMP is off for this run: choose bf16 or fp16 under Precision to see which ops run in lower precision")
NO_SCALING = "no loss scaling: the run is bf16/fp32"


def format_scale(scale: float) -> str:
    """A loss scale: '65,536'; a huge one (2^100 after many clean steps) as '1.27e+30'."""
    return f"{scale:,.0f}" if abs(scale) < 1e9 else f"{scale:.3g}"


MAX_SCALE_TICKS = 4  # the scale plot is short: more labels on its log axis would overlap


def scale_ticks(scales: np.ndarray) -> list | None:
    """The loss-scale axis's ticks at powers of two (GradScaler's scales are), in the log axis's units (log10);
    None (pyqtgraph's own) without positive readings."""
    scales = scales[np.isfinite(scales) & (scales > 0)]
    if not len(scales):
        return None
    low, high = math.floor(math.log2(scales.min())), math.ceil(math.log2(scales.max()))
    every = max(1, math.ceil((high - low + 1) / MAX_SCALE_TICKS))
    return [[(k * math.log10(2), format_scale(2.0**k) if k <= 20 else f"2^{k}")
             for k in range(low - low % every, high + 1, every)], []]


def held(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The corners of a step function through the points (x, y): each y holds until the next x, where the line
    goes straight up or down to the next y. [1, 2, 50], [1024, 512, 512] → [1, 2, 2, 50, 50], [1024, 1024, 512,
    512, 512]."""
    return np.repeat(x, 2)[1:], np.repeat(y, 2)[:-1]


def skipped_text(skipped: int, steps: int) -> str:
    """'3 optimizer steps skipped of 40 (7.5 %): gradients overflowed in fp16'."""
    if not skipped:
        return "no optimizer step skipped" + (f" in {steps:,} steps" if steps else "")
    noun = "step" if skipped == 1 else "steps"
    share = f" ({100 * skipped / steps:.1f} %)" if steps else ""
    return f"{skipped:,} optimizer {noun} skipped of {steps:,}{share}: gradients overflowed in fp16"


def groups_text(census: AmpCensus, dtype: str) -> str:
    """'12 ops ran in bf16 (340 calls), 5 stayed in fp32 (40 calls)', + ', 2 other (…)' when some were neither:
    the ops counted from the census's rows, the calls from its groups (which count calls)."""
    rows = census.ops
    parts = []
    for group, template in (("low", "{ops} ran in " + dtype + " ({calls})"), ("fp32", "{ops} stayed in fp32 ({calls})"),
                            ("other", "{ops} other ({calls}: integer, boolean or no-tensor ops)")):
        ops = len({r.op for r in rows if r.group == group})
        calls = getattr(census.groups, group) or sum(r.calls for r in rows if r.group == group)
        if group == "other" and not (ops or calls):
            continue
        counted = f"{calls:,} {'call' if calls == 1 else 'calls'}"
        parts.append(template.format(ops=f"{ops} {'op' if ops == 1 else 'ops'}", calls=counted) if rows else
                     template.format(ops=counted, calls="").replace(" ()", "").replace(" (: ", " (", 1))
    return ", ".join(parts)


SKIPPED_COLUMNS = (  # rows: AmpSkipped events
    count_column("Step", "The optimizer step whose update was skipped", lambda r: r.step),
    Column("Scale", "The loss scale the step ran with (the one that overflowed); GradScaler halves it after",
           lambda r: format_scale(r.scale), lambda r: r.scale, numeric=True),
    Column("First non-finite gradient", "The first parameter, in the model's order, whose gradient was inf or NaN",
           lambda r: r.param or "(none seen)", lambda r: r.param.lower()),
)
GROUP_TIPS = {"low": "ran in the lower precision (bf16 or fp16): autocast's list of ops safe and fast there",
              "fp32": "kept in fp32: autocast's list of ops that need the range or precision (reductions, losses…)",
              "other": "neither: integer, boolean or copy ops, whose dtype autocast leaves alone"}
CENSUS_COLUMNS = (  # rows: the census's CensusRows
    text_column("Op", "The operator autocast saw in one forward and loss of the model", lambda r: r.op),
    count_column("Calls", "How many times it ran in that forward and loss", lambda r: r.calls),
    text_column("Dtype", "The dtype its output had", lambda r: r.dtype),
    Column("Group", "low: ran in bf16/fp16 · fp32: autocast kept it in fp32 · other: neither",
           lambda r: r.group, lambda r: r.group, lambda r: GROUP_TIPS.get(r.group, "")),
)


class AmpTab(QWidget):
    """The recommendation over a splitter of the loss-scale plot, the skipped steps and the dtype census."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.report: AmpReport | None = None
        self.scale = SeriesBuffer(256)  # (step, loss scale) where the scale changed
        self.scale_until = 0  # the last step that carried a scale: the curve holds its last scale until there
        self.skips = SeriesBuffer(64)  # (step, scale) of the skipped steps
        self._pending_skips: list[AmpSkipped] = []
        self._scale_dirty = False
        self.last_step = 0
        self.recommendation = QLabel()
        self.recommendation.setObjectName("ampRecommendation")
        self.recommendation.setTextFormat(Qt.PlainText)
        self.recommendation.setWordWrap(True)
        self.recommendation.setAlignment(Qt.AlignLeft | Qt.AlignTop)  # alone in the tab when AMP is off
        self.recommendation.setToolTip("The precision this device should train in, and why (from a forward and "
                                       "loss of the run's model under autocast)")
        self.scale_plot = make_plot("lossScalePlot", "loss scale", "step")
        self.scale_plot.getPlotItem().setLogMode(y=True)
        self.scale_plot.setToolTip("fp16's GradScaler multiplies the loss by this scale so small gradients do not "
                                   "underflow; it halves on an overflow (red: a skipped step) and doubles after a "
                                   "run of clean steps")
        self.scale_curve = self.scale_plot.plot(pen=pg.mkPen("#4e79a7", width=1), name="loss scale")
        # A PlotDataItem, not a ScatterPlotItem: only those follow the plot's log mode.
        self.skip_points = self.scale_plot.plot(pen=None, symbol="x", symbolSize=9, symbolPen=pg.mkPen("#d62728"),
                                                symbolBrush="#d62728", name="skipped step")
        self.scale_note = QLabel(NO_SCALING)
        self.scale_note.setObjectName("scaleNote")
        self.scale_note.setWordWrap(True)  # long words must wrap, never widen the dock past the screen
        self.skipped_count = QLabel()
        self.skipped_count.setObjectName("skippedCount")
        self.skipped_count.setWordWrap(True)  # long words must wrap, never widen the dock past the screen
        self.skipped_count.setToolTip("A step whose gradients held inf or NaN: GradScaler skips optimizer.step() "
                                      "and halves the scale. A few early on are normal; many mean fp16 overflows")
        self.skipped_model = RowsModel(SKIPPED_COLUMNS, self)
        self.skipped_table = table_view(self.skipped_model, "skippedTable", spoken="Skipped steps")
        self.skipped_table.sortByColumn(0, Qt.AscendingOrder)
        self.census_groups = QLabel()
        self.census_groups.setObjectName("censusGroups")
        self.census_groups.setWordWrap(True)  # long words must wrap, never widen the dock past the screen
        self.census_model = RowsModel(CENSUS_COLUMNS, self)
        # as the census sorts it: low, fp32, other
        self.census_table = table_view(self.census_model, "censusTable", spoken="Op census by precision")
        scale_box, skipped_box, census_box = QWidget(), QWidget(), QWidget()
        for box, widgets in ((scale_box, (self.scale_plot, self.scale_note)),
                             (skipped_box, (self.skipped_count, self.skipped_table)),
                             (census_box, (self.census_groups, self.census_table))):
            box_layout = QVBoxLayout(box)
            box_layout.setContentsMargins(0, 0, 0, 0)
            for widget in widgets:
                box_layout.addWidget(widget, 1 if isinstance(widget, (QTableView, pg.PlotWidget)) else 0)
        self.body = QSplitter(Qt.Vertical)
        for box in (scale_box, skipped_box, census_box):
            self.body.addWidget(box)
        self.body.setSizes([260, 140, 200])  # proportions: the splitter scales them to its height
        layout = QVBoxLayout(self)
        layout.addWidget(self.recommendation)
        layout.addWidget(self.body, 1)

    def append(self, event: Step | AmpSkipped) -> bool:
        """Buffer a Step or a skipped step, drawn by `redraw`; whether there is something new to draw."""
        if isinstance(event, AmpSkipped):
            self._pending_skips.append(event)
            self.skips.append(event.step, event.scale)
        else:
            self.last_step = max(self.last_step, event.step)
            if event.loss_scale is None:
                return False
            if not self.scale.size or self.scale.y[self.scale.size - 1] != event.loss_scale:
                self.scale.append(event.step, event.loss_scale)
            self.scale_until = event.step
        self._scale_dirty = True
        return True

    def redraw(self) -> None:
        """Draw what `append` buffered since the last time."""
        if self._pending_skips:
            self.skipped_model.append_rows(self._pending_skips)
            self._pending_skips = []
        if self._scale_dirty:
            self.scale_curve.setData(*held(*self._scale_points()))
            self.skip_points.setData(*self.skips.view())
            set_ticks(self.scale_plot.getPlotItem().getAxis("left"),
                      scale_ticks(np.concatenate([self.scale.view()[1], self.skips.view()[1]])))
            self._scale_dirty = False
        self._show_state()

    def _scale_points(self) -> tuple[np.ndarray, np.ndarray]:
        """The changes of scale, and the last scale again at the last step (where the line ends)."""
        x, y = self.scale.view()
        if not len(x) or x[-1] == self.scale_until:
            return x, y
        return np.append(x, self.scale_until), np.append(y, y[-1])

    def clear(self) -> None:
        self.report = None
        self.scale.clear()
        self.scale_until = 0
        self.skips.clear()
        self._pending_skips = []
        self._scale_dirty = False
        self.scale_curve.setData([], [])
        self.skip_points.setData([], [])
        set_ticks(self.scale_plot.getPlotItem().getAxis("left"), None)
        self.skipped_model.set_rows([])
        self.census_model.set_rows([])
        self.last_step = 0
        self._show_state()

    def show_report(self, report: AmpReport) -> None:
        self.report = report
        self.census_model.set_rows(report.census.ops)
        fit_columns(self.census_table, self.census_model)
        self.census_groups.setText(groups_text(report.census, report.dtype))
        self._show_state()

    def _show_state(self) -> None:
        """The tab's words and which of its parts show, from what has arrived."""
        report = self.report
        readings = self.scale.size > 0
        font = self.recommendation.font()
        font.setBold(report is not None)
        self.recommendation.setFont(font)
        scaled = readings or bool(self.skipped_model.rows)  # fp16 steps (whose AmpReport this panel missed)
        self.recommendation.setText(report.recommendation if report else
                                    "fp16 with loss scaling" if scaled else AMP_OFF)
        self.body.setVisible(report is not None or scaled)
        self.scale_plot.setVisible(readings)
        self.scale_note.setVisible(not readings)
        fp16 = report is not None and report.dtype == "fp16"
        self.scale_note.setText("no loss-scale reading yet: the first fp16 step brings one" if fp16 else NO_SCALING)
        skipped = len(self.skipped_model.rows)
        steps = max(self.last_step, int(max(self.skips.view()[0], default=0)))
        self.skipped_count.setText(skipped_text(skipped, steps) if (fp16 or readings or skipped) else
                                   "no skipped steps: only fp16 skips a step, when its gradients overflow")
        census = bool(self.census_model.rows) or report is not None
        self.census_groups.setVisible(census)
        self.census_table.setVisible(census)
