"""The finders of Run → Find learning rate… and Find batch size…: a short measurement in the kernel, drawn as it
comes back, then a suggestion marked on the curve with the rule that chose it, and a button that puts it into the
Setup form.

The measurements run in the kernel (`lr_find`, `batch_find`) with the form's settings; these dialogs only draw.
`FinderDialog` is what both share: the plot, the status line, Start, Stop and Use. Stop (or closing the dialog)
ends the measurement after its current step, so the kernel is free for the next job; what was measured until then
is still drawn, and suggested from when there is enough of it.
"""

from __future__ import annotations

import math

import pyqtgraph as pg
from PySide6.QtCore import Signal
from PySide6.QtWidgets import QDialog, QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from ..panels.plots.style import Theme, legend_below, style_plot


class FinderDialog(QDialog):
    """`startRequested()` asks for a measurement, `stopRequested()` for its early end; `add_point(point)` draws one,
    `show_finding(finding)` or `show_error(text)` ends it; `useRequested(value)` carries the suggestion to the Setup
    form."""

    startRequested = Signal()
    stopRequested = Signal()
    useRequested = Signal(float)
    WHAT = ""  # "learning rate", "batch size"
    EXPLAINED = ""  # what the measurement does, after "A short run (settings)"

    def __init__(self, theme: Theme, x_label: str, y_label: str, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle(f"Find {self.WHAT}")
        self.suggestion: float | None = None
        self.points: list = []  # LrPoint or BatchPoint, as measured
        self.intro = QLabel()
        self.intro.setWordWrap(True)
        self.plot = pg.PlotWidget()
        item = self.plot.getPlotItem()
        item.setTitle(f"{y_label.capitalize()} against {x_label}")
        item.setLabel("left", y_label)
        item.setLabel("bottom", x_label)
        item.setLogMode(x=True, y=False)
        item.getAxis("bottom").enableAutoSIPrefix(False)  # "(x0.001)" would misread a log axis
        legend_below(item)
        self.theme = theme
        self.marker = pg.InfiniteLine(angle=90, pen=pg.mkPen(theme.marker, width=2))
        self.marker.setVisible(False)
        self.plot.addItem(self.marker)
        self.status = QLabel("Press Start.")
        self.status.setWordWrap(True)
        self.start_button = QPushButton("Start")
        self.start_button.setDefault(True)
        self.start_button.clicked.connect(self._start)
        self.stop_button = QPushButton("Stop")
        self.stop_button.setEnabled(False)
        self.stop_button.setToolTip("End the measurement after its current step (closing the dialog does too)")
        self.stop_button.clicked.connect(self._stop)
        self.use_button = QPushButton(f"Use this {self.WHAT}")
        self.use_button.setEnabled(False)
        self.use_button.clicked.connect(self._use)
        buttons = QHBoxLayout()
        buttons.addWidget(self.start_button)
        buttons.addWidget(self.stop_button)
        buttons.addStretch(1)
        buttons.addWidget(self.use_button)
        layout = QVBoxLayout(self)
        layout.addWidget(self.intro)
        layout.addWidget(self.plot, 1)
        layout.addWidget(self.status)
        layout.addLayout(buttons)
        self.resize(720, 480)

    def label_x(self, values, text) -> None:
        """Ticks of the logarithmic x axis at `values` only, each read as `text(value)` (pyqtgraph's own log ticks
        crowd a short range with 2·10¹, 3·10¹…)."""
        self.plot.getPlotItem().getAxis("bottom").setTicks([[(math.log10(v), text(v)) for v in values]])

    def series(self, name: str, width: int, colour: str) -> pg.PlotDataItem:
        return self.plot.plot([], [], pen=pg.mkPen(colour, width=width), name=name)

    def finish_styling(self) -> None:
        style_plot(self.plot, self.theme)

    def describe(self, settings: str) -> None:
        """The Setup form's settings the next measurement runs with."""
        self.intro.setText(f"A short run ({settings}) {self.EXPLAINED} Nothing is saved.")

    def _start(self) -> None:
        self.start_button.setEnabled(False)
        self.stop_button.setEnabled(True)
        self.use_button.setEnabled(False)
        self.marker.setVisible(False)
        self.suggestion = None
        self.points.clear()
        self.redraw()
        self.status.setText("Measuring…")
        self.startRequested.emit()

    def _stop(self) -> None:
        if self.stop_button.isEnabled():  # enabled only while a measurement runs
            self.stop_button.setEnabled(False)
            self.status.setText(f"Stopping after the current step… {self.status.text()}")
            self.stopRequested.emit()

    def done(self, result: int) -> None:
        """Closed (Esc, the title bar's ×, or Use): a measurement still running is no longer wanted."""
        self._stop()
        super().done(result)

    def add_point(self, point) -> None:
        """One measurement, as the kernel read it back."""
        self.points.append(point)
        self.redraw()
        self.status.setText(self.point_text(point))

    def show_finding(self, finding) -> None:
        """The end: the suggestion marked on the curve (the x axis is logarithmic: the line sits at log10)."""
        self._ended()
        self.start_button.setText("Run again")
        self.suggestion = finding.suggestion
        if self.suggestion is None:
            stopped = finding.stopped
            self.status.setText(f"Stopped after {len(finding.points)} measurements, "
                                f"{self.STOPPED_EARLY}" if stopped else
                                f"No suggestion ({finding.ended}). {self.NO_SUGGESTION}")
            return
        self.marker.setValue(math.log10(self.suggestion))
        self.marker.setVisible(True)
        self.use_button.setEnabled(True)
        self.use_button.setText(f"Use {self.WHAT} {self.value_text(self.suggestion)}")
        self.status.setText(self.finding_text(finding))

    def show_error(self, message: str) -> None:
        self._ended()
        self.status.setText(f"The measurement failed: {message}")

    def show_cancelled(self) -> None:
        """Stopped while it still waited for the kernel: nothing was measured."""
        self._ended()
        self.status.setText("Stopped before it began: nothing was measured.")

    def _ended(self) -> None:
        self.start_button.setEnabled(True)
        self.stop_button.setEnabled(False)

    def _use(self) -> None:
        if self.suggestion is not None:
            self.useRequested.emit(float(self.value_text(self.suggestion)))
            self.accept()

    # What each finder says and draws.
    NO_SUGGESTION = ""
    STOPPED_EARLY = ""  # after "Stopped after N measurements, ": why a stopped one has no suggestion

    def redraw(self) -> None:
        raise NotImplementedError

    def point_text(self, point) -> str:
        raise NotImplementedError

    def finding_text(self, finding) -> str:
        raise NotImplementedError

    def value_text(self, value: float) -> str:
        raise NotImplementedError


class LrFinderDialog(FinderDialog):
    """The LR range test: each step's loss (faint) and its smoothed curve against the learning rate."""

    WHAT = "learning rate"
    EXPLAINED = ("with the learning rate growing exponentially. The loss falls, then blows up: the suggestion is "
                 "where it fell fastest.")
    NO_SUGGESTION = "The loss stopped falling too early to tell: try a lower learning rate range."
    STOPPED_EARLY = ("before the loss turned up: no suggestion yet. Run it again and let it go on until the loss "
                     "blows up.")

    def __init__(self, theme: Theme, parent: QWidget | None = None):
        super().__init__(theme, "learning rate", "loss", parent)
        self.setObjectName("lrFinderDialog")
        self.raw = self.series("loss", 1, theme.raw)
        self.line = self.series("smoothed", 2, theme.line)
        self.label_x([10.0 ** k for k in range(-7, 2)], lambda lr: f"{lr:g}")
        self.finish_styling()

    def redraw(self) -> None:
        lrs = [point.lr for point in self.points]
        self.raw.setData(lrs, [point.loss for point in self.points])
        self.line.setData(lrs, [point.smoothed for point in self.points])

    def point_text(self, point) -> str:
        return f"step {point.step}: LR {point.lr:.2e}, loss {point.loss:.4f}"

    def finding_text(self, finding) -> str:
        ran = (f"compiled, {finding.recompiles} recompiles while the LR changed" if finding.compiled
               else "eager")
        return (f"Suggested learning rate {finding.suggestion:.2e} — {finding.rule}. "
                f"{len(finding.points)} steps, {ran}; {finding.ended}.")

    def value_text(self, value: float) -> str:
        return f"{value:.2g}"


class BatchFinderDialog(FinderDialog):
    """Samples/s for each batch size of a doubling ladder, with its peak memory."""

    WHAT = "batch size"
    EXPLAINED = ("for each batch size from 16, doubling: its samples/s and peak memory. A bigger batch also "
                 "changes the training (fewer steps an epoch; the learning rate usually grows with it).")
    NO_SUGGESTION = "Even the smallest batch did not fit: lower the hidden size or use bf16."
    STOPPED_EARLY = "before a batch size was measured: nothing to suggest."

    def __init__(self, theme: Theme, parent: QWidget | None = None):
        super().__init__(theme, "batch size", "samples/s", parent)
        self.setObjectName("batchFinderDialog")
        self.line = self.series("samples/s", 2, theme.line)
        self.line.setSymbol("o")
        self.finish_styling()

    def redraw(self) -> None:
        sizes = [point.batch_size for point in self.points]
        self.line.setData(sizes, [point.samples_per_s for point in self.points])
        self.label_x(sizes, lambda size: f"{size:g}")

    def point_text(self, point) -> str:
        return (f"batch {point.batch_size}: {point.samples_per_s:,.0f} samples/s, peak memory "
                f"{point.peak_memory_mib:,.0f} MiB")

    def finding_text(self, finding) -> str:
        chosen = _point(finding, finding.suggestion)
        total = finding.memory_total_mib
        memory = f"{chosen.peak_memory_mib:,.0f} MiB" + (f" of {total:,.0f} MiB" if total else " (process RSS)")
        return (f"Suggested batch size {finding.suggestion}: {chosen.samples_per_s:,.0f} samples/s, peak "
                f"memory {memory} — {finding.rule}. {finding.ended.capitalize()}.{_passed_over_text(finding)}")

    def value_text(self, value: float) -> str:
        return f"{int(value)}"


def _point(finding, batch_size: int):
    return next(point for point in finding.points if point.batch_size == batch_size)


def _passed_over_text(finding) -> str:
    """What the batch the step floor passed over would have cost (the fastest per sample is the one a newcomer
    reaches for): ' 2048 is 9% faster per sample but gives 1 step per epoch …'; '' when none was passed over."""
    if finding.passed_over is None:
        return ""
    chosen, passed = _point(finding, finding.suggestion), _point(finding, finding.passed_over)
    gain = passed.samples_per_s / chosen.samples_per_s - 1
    speed = f"is {gain:.0%} faster per sample but" if gain > 0 else "is no faster per sample and"
    steps = finding.steps_per_epoch(passed.batch_size)
    return (f" {passed.batch_size} {speed} gives {steps} step{'' if steps == 1 else 's'} per epoch of the "
            f"{finding.train_size:,} training images ({chosen.batch_size} gives "
            f"{finding.steps_per_epoch(chosen.batch_size)}; the rule asks for at least {finding.min_steps_per_epoch}): "
            f"fewer optimizer steps learn less in the same epochs.")
