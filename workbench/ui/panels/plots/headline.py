"""The run's headline figures in one row above the plots: what a user looks for first, without reading a curve."""

from __future__ import annotations

import math

import numpy as np
from PySide6.QtWidgets import QHBoxLayout, QLabel, QVBoxLayout, QWidget

from ....core.ground import figures
from ....core.ground.events import CompileFinished, EpochEnd, Event, RunStarted, Step
from ....core.ground.progress import Progress, format_duration
from ....core.history.curves import Curves

FIGURES = {"best_val_accuracy": figures.BEST_VAL_ACCURACY, "samples_per_s": figures.SAMPLES_PER_S,
           "compile": figures.COMPILE, "peak_memory": figures.PEAK_MEMORY, "eta": figures.ETA}
NONE = "—"


def _percent(value: float | None) -> str:
    return NONE if value is None or not math.isfinite(value) else f"{value:.2%}"


def _rate(value: float | None) -> str:
    return NONE if not value or not math.isfinite(value) else f"{value:,.0f}"


def _seconds(value: float | None) -> str:
    return NONE if value is None else f"{value:.1f} s"


def _memory(mib: float | None) -> str:
    if mib is None or not math.isfinite(mib) or mib <= 0:
        return NONE
    return f"{mib / 1024:.2f} GiB" if mib >= 1024 else f"{mib:.0f} MiB"


class HeadlineBar(QWidget):
    """Best validation accuracy, samples/s, compile time, peak memory and ETA. Live, it follows the events (the ETA
    is `Progress`'s, the status bar's own); for a recorded run it reads the run's curves."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("headlineBar")
        self.values: dict[str, QLabel] = {}
        layout = QHBoxLayout(self)
        layout.setContentsMargins(6, 2, 6, 2)
        for key, figure in FIGURES.items():
            layout.addLayout(self._figure(key, figure))
        layout.addStretch(1)
        self.progress = Progress()
        self.reset()

    def _figure(self, key: str, figure: figures.Figure) -> QVBoxLayout:
        value = QLabel(NONE)
        value.setObjectName(f"headline_{key}")
        value.setAccessibleName(figure.name)
        value.setToolTip(figure.method)
        font = value.font()
        font.setPointSizeF(font.pointSizeF() * 1.4)
        font.setBold(True)
        value.setFont(font)
        self.values[key] = value
        column = QVBoxLayout()
        column.setSpacing(0)
        column.addWidget(value)
        caption = QLabel(figure.name)
        caption.setToolTip(figure.method)
        column.addWidget(caption)
        return column

    def reset(self) -> None:
        self.progress = Progress()
        self._best: float | None = None
        self._compile: float | None = None
        self._peak: float | None = None
        self._recorded_rate: float | None = None  # a recorded run's own samples/s (show_run)
        self._show()

    def add_events(self, batch: list[Event]) -> None:
        """Fold a batch of events in, then set the texts once (not per event: a batch can hold thousands)."""
        for event in batch:
            if isinstance(event, RunStarted):
                self.reset()
            self.progress.update(event)
            if isinstance(event, EpochEnd):
                self._best = max(self._best or 0.0, event.val_accuracy)
            elif isinstance(event, CompileFinished):
                self._compile = (self._compile or 0.0) + event.seconds
            elif isinstance(event, Step):
                peak = event.memory.peak_mib
                if peak is not None:
                    self._peak = max(self._peak or 0.0, peak)
        self._show()

    def show_run(self, curves: Curves, compile_seconds: float | None = None) -> None:
        """A recorded run's figures: its own samples/s (figures.SAMPLES_PER_S, as the Runs table shows it), no ETA.
        `compile_seconds` stands in when the curves do not say (curves built by hand)."""
        self.reset()
        self.progress.state = "finished"
        self._best = float(np.nanmax(curves.val_accuracy)) if len(curves.val_accuracy) else None
        self._compile = curves.compile_seconds if curves.compile_seconds is not None else compile_seconds
        memory = curves.memory.get("peak", curves.memory.get("rss"))
        self._peak = float(np.nanmax(memory)) if memory is not None and len(memory) else None
        self._recorded_rate = curves.samples_per_s
        self._show()

    def _show(self) -> None:
        eta = self.progress.eta_seconds if self.progress.state == "training" else None
        texts = {"best_val_accuracy": _percent(self._best),
                 "samples_per_s": _rate(self.progress.samples_per_s or self._recorded_rate),
                 "compile": _seconds(self._compile), "peak_memory": _memory(self._peak),
                 "eta": NONE if eta is None else format_duration(eta)}
        for key, text in texts.items():
            self.values[key].setText(text)

    def figures(self) -> dict[str, str]:
        """The texts on show, by figure: what tests and a status line read."""
        return {key: label.text() for key, label in self.values.items()}
