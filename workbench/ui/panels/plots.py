"""Live plots: loss, throughput and memory against the optimizer step, with one linked x axis.

Events only append to numpy buffers (amortised O(1), capacity doubles); a timer redraws the curves that changed,
at most ~30 times a second and never spending more than about a tenth of the GUI thread on it (the interval
stretches when a frame is slow to paint). pyqtgraph clips to the visible range and peak-downsamples, so a
1,000,000-step run draws as fast as a short one. Pens are one pixel wide and there is no grid: in software
rendering, wide pens cost ~2× and grid lines ~2× more per frame (measured), which training would pay for in GIL
time.
"""

from __future__ import annotations

import time

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QVBoxLayout, QWidget

from ...core.history.curves import Curves, ema, smooth
from ...core.ground.config import uses_cuda_graphs
from ...core.ground.events import CompileFinished, EpochEnd, Event, RunStarted, Step

REDRAW_MS = 33  # fastest redraw interval (~30 Hz)
FRAME_BUDGET = 0.1  # share of wall time the redraw may take; slower frames stretch the interval
MAX_REDRAW_MS = 500
MEMORY_LABELS = {"rss": "process RSS (CPU)", "allocated": "CUDA allocated", "reserved": "CUDA reserved",
                 "peak": "CUDA peak allocated"}
# Under CUDA graphs the graph pool's memory counts as reserved, not allocated (pytorch/pytorch#121932): allocated
# drops once the graphs are recorded, which reads like a leak fixed or a model shrunk unless the legend says why.
CUDA_GRAPH_MEMORY_LABELS = {**MEMORY_LABELS, "allocated": "CUDA allocated (CUDA-graph pool is in reserved)"}
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f")


class SeriesBuffer:
    """x/y float arrays that grow by doubling; `view()` returns the filled part without copying."""

    def __init__(self, capacity: int = 1024):
        self.x = np.empty(capacity, dtype=np.float64)
        self.y = np.empty(capacity, dtype=np.float64)
        self.size = 0

    def append(self, x: float, y: float) -> None:
        if self.size == len(self.x):
            self.x = np.resize(self.x, 2 * len(self.x))
            self.y = np.resize(self.y, 2 * len(self.y))
        self.x[self.size] = x
        self.y[self.size] = y
        self.size += 1

    def set(self, x: np.ndarray, y: np.ndarray) -> None:
        """Replace the contents with whole arrays (a recorded run), keeping room to grow."""
        capacity = max(1024, len(x))
        self.x, self.y = np.resize(np.asarray(x, np.float64), capacity), np.resize(np.asarray(y, np.float64), capacity)
        self.size = len(x)

    def view(self) -> tuple[np.ndarray, np.ndarray]:
        return self.x[: self.size], self.y[: self.size]

    def clear(self) -> None:
        self.size = 0


class _Series:
    """A buffer bound to a plot item; redrawn only when it has new points."""

    def __init__(self, item: pg.PlotDataItem):
        self.item = item
        self.buffer = SeriesBuffer()
        self.dirty = False

    def append(self, x: float, y: float) -> None:
        self.buffer.append(x, y)
        self.dirty = True

    def set(self, x: np.ndarray, y: np.ndarray) -> None:
        self.buffer.set(x, y)
        self.dirty = True

    def redraw(self) -> None:
        if self.dirty:
            self.item.setData(*self.buffer.view())
            self.dirty = False

    def clear(self) -> None:
        self.buffer.clear()
        self.item.setData([], [])
        self.dirty = False


def _make_plot(name: str, title: str, y_label: str) -> pg.PlotWidget:
    plot = pg.PlotWidget(title=title)
    plot.setObjectName(name)
    plot.setBackground("w")
    plot.setLabel("left", y_label)
    plot.setLabel("bottom", "step")
    plot.addLegend(offset=(-10, 10))
    item = plot.getPlotItem()
    item.setClipToView(True)
    item.setDownsampling(auto=True, mode="peak")
    return plot


class PlotsPanel(QWidget):
    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        pg.setConfigOptions(antialias=False, foreground="k")
        self.loss_plot = _make_plot("lossPlot", "Loss", "cross-entropy")
        self.throughput_plot = _make_plot("throughputPlot", "Throughput", "samples/s")
        self.memory_plot = _make_plot("memoryPlot", "Memory", "MiB")
        for plot in (self.throughput_plot, self.memory_plot):
            plot.setXLink(self.loss_plot)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        for plot in (self.loss_plot, self.throughput_plot, self.memory_plot):
            layout.addWidget(plot)

        self.step_loss = _Series(self.loss_plot.plot(pen=pg.mkPen("#9ecae1", width=1), name="step loss"))
        self.smooth_loss = _Series(self.loss_plot.plot(pen=pg.mkPen("#08306b", width=1), name="smoothed"))
        self.val_loss = _Series(self.loss_plot.plot(pen=None, symbol="o", symbolSize=9, symbolBrush="#d62728",
                                                    name="validation (per epoch)"))
        self.throughput = _Series(self.throughput_plot.plot(pen=pg.mkPen("#2ca02c", width=1), name="samples/s"))
        self.memory: dict[str, _Series] = {}
        self.cuda_graphs = False  # the live run replays CUDA graphs: memory legends say where its pool is
        self.compile_marker: pg.InfiniteLine | None = None
        self._ema: float | None = None
        self._last_step = 0
        self.overlays: list[tuple[pg.PlotWidget, pg.PlotDataItem]] = []

        self.timer = QTimer(self)
        self.timer.setInterval(REDRAW_MS)
        self.timer.timeout.connect(self.redraw)
        self.timer.start()

    # -- events -------------------------------------------------------------------------------------------------
    def reset(self) -> None:
        for series in (self.step_loss, self.smooth_loss, self.val_loss, self.throughput, *self.memory.values()):
            series.clear()
        for series in self.memory.values():
            self.memory_plot.removeItem(series.item)  # removes its legend entry too; overlays keep theirs
        self.memory.clear()
        self.cuda_graphs = False
        if self.compile_marker is not None:
            self.throughput_plot.removeItem(self.compile_marker)
            self.compile_marker = None
        self._ema = None
        self._last_step = 0

    def add_events(self, batch: list[Event]) -> None:
        for event in batch:
            if isinstance(event, Step):
                self._add_step(event)
            elif isinstance(event, EpochEnd):
                self.val_loss.append(self._last_step, event.val_loss)
            elif isinstance(event, CompileFinished) and event.phase == "train":  # the compile *step* is marked
                self._mark_compile(event.seconds)
            elif isinstance(event, RunStarted):
                self.reset()
                self.cuda_graphs = uses_cuda_graphs(event.config)

    def show_curves(self, curves: Curves, compile_seconds: float | None = None, config: dict | None = None) -> None:
        """A recorded run, drawn from its curves at once rather than event by event; `config` is the run's (its
        memory curves are labelled as a live run's are)."""
        self.reset()
        self.cuda_graphs = uses_cuda_graphs(config or {})
        self.step_loss.set(curves.step, curves.loss)
        self.smooth_loss.set(curves.step, smooth(curves.loss))
        self.val_loss.set(curves.val_step, curves.val_loss)
        self.throughput.set(curves.throughput_step, curves.throughput)
        for name, values in curves.memory.items():
            self._memory_series(name).set(curves.step, values)
        if compile_seconds is not None:
            self._mark_compile(compile_seconds)
        self._last_step = int(curves.step[-1]) if len(curves.step) else 0
        self._ema = float(self.smooth_loss.buffer.view()[1][-1]) if len(curves.step) else None

    def _add_step(self, step: Step) -> None:
        self._last_step = step.step
        self.step_loss.append(step.step, step.loss)
        self._ema = ema(self._ema, step.loss)
        self.smooth_loss.append(step.step, self._ema)
        if not (step.compiling or step.warmup):  # marked (compiling) or left out (warm-up): they'd squash the axis
            self.throughput.append(step.step, step.samples_per_s)
        for name, mib in step.memory.items():
            self._memory_series(name).append(step.step, mib)

    def _memory_series(self, name: str) -> _Series:
        series = self.memory.get(name)
        if series is None:
            label = (CUDA_GRAPH_MEMORY_LABELS if self.cuda_graphs else MEMORY_LABELS).get(name, name)
            colour = PALETTE[len(self.memory) % len(PALETTE)]
            series = _Series(self.memory_plot.plot(pen=pg.mkPen(colour, width=1), name=label))
            self.memory[name] = series
        return series

    def _mark_compile(self, seconds: float) -> None:
        self.compile_marker = pg.InfiniteLine(pos=1, angle=90, pen=pg.mkPen("#d62728", style=Qt.DashLine),
                                              label=f"compile step: {seconds:.1f} s",
                                              labelOpts={"position": 0.9, "color": "#d62728"})
        self.throughput_plot.addItem(self.compile_marker)

    def redraw(self) -> None:
        series = (self.step_loss, self.smooth_loss, self.val_loss, self.throughput, *self.memory.values())
        if not any(s.dirty for s in series):
            return
        started = time.perf_counter()
        for s in series:
            s.redraw()
        self.repaint()  # paint now, inside the measurement, rather than at some later event
        seconds = time.perf_counter() - started
        self.timer.setInterval(int(min(MAX_REDRAW_MS, max(REDRAW_MS, 1000 * seconds / FRAME_BUDGET))))

    # -- comparing finished runs ------------------------------------------------------------------------------
    def set_overlays(self, runs: list[tuple[str, Curves]]) -> None:
        """Overlay finished runs (label, curves), each in its own colour; an empty list removes the overlay."""
        for plot, item in self.overlays:
            plot.removeItem(item)
        self.overlays.clear()
        for i, (label, curves) in enumerate(runs):
            pen = pg.mkPen(PALETTE[i % len(PALETTE)], width=2)
            self._overlay(self.loss_plot, curves.step, smooth(curves.loss), pen, label)
            self._overlay(self.throughput_plot, curves.throughput_step, curves.throughput, pen, label)
            if curves.memory:
                name = "peak" if "peak" in curves.memory else sorted(curves.memory)[0]
                self._overlay(self.memory_plot, curves.step, curves.memory[name], pen, f"{label} ({name})")

    def _overlay(self, plot: pg.PlotWidget, x: np.ndarray, y: np.ndarray, pen, label: str) -> None:
        item = plot.plot(x, y, pen=pen, name=label)
        self.overlays.append((plot, item))

    # -- queries used by tests and the status bar ---------------------------------------------------------------
    def point_counts(self) -> dict[str, int]:
        return {"loss": self.step_loss.buffer.size, "throughput": self.throughput.buffer.size,
                "memory": sum(s.buffer.size for s in self.memory.values()),
                "val_loss": self.val_loss.buffer.size}
