"""Live plots: loss, accuracy, throughput and memory against the optimizer step (or the epoch, the wall time, the
time since start: the X axis choice), with one linked x axis.

Events only append to numpy buffers (amortised O(1), capacity doubles); frames (plot_frames.py) draw the curves
that changed, one plot an event-loop turn, each plot's ranges set before it paints, at most ~30 frames a second and
about a tenth of the GUI thread. The step axis moves only when the run outgrows it (plot_items.py says why that and
the ranges matter). pyqtgraph clips to the visible range and peak-downsamples, so a 1,000,000-step run draws as
fast as a short one. Pens are one pixel wide and there is no grid: in software rendering, wide pens cost ~2× and
grid lines ~2× more per frame (measured), which training would pay for in GIL time.

Above the plots: the run's headline figures, the smoothing slider (TensorBoard's debiased moving average; each
batch of events is smoothed in one vectorised call, and moving the slider re-smooths whole buffers) and the X axis.
The curves keep their steps; on another axis each is drawn placed by its run's step times (history.x_axis,
plot_series.StepTimes), caught up a batch at a time and placed anew when the axis changes; the System plot stays in
seconds. Legends sit in a row under each plot, never over the data. Comparing runs, each overlaid run gets a colour
of a qualitative palette (Tableau 10) and the current run is dimmed, its legend entries named ('#3 step'); runs that
differ only by their seed come as a group, one mean line with a band (plot_bands.py). A continued run's parent's
loss and accuracy are drawn faded before the continuation's own steps (training.py reads them). Those runs drawn
beside the live one are plot_compared.py's half of the panel.

Axes read as the values themselves (no SI prefix) and the step axis ticks whole steps (plot_items.StepAxis). Each
plot has a text alternative: its accessible description states its latest values, set at most twice a second after
the frame that drew it (not per event), and "Show as table" (the Table button, a plot's context menu) lists its
series (plot_table.py); plot_text.py is that half of the panel.
"""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QSignalBlocker, Qt, QTimer, Signal
from PySide6.QtWidgets import (QGridLayout, QHBoxLayout, QTabWidget,
                               QVBoxLayout, QWidget)

from ....core.ground.alerts import Alert
from ....core.ground.config import uses_cuda_graphs
from ....core.ground.events import (CompileEvent, CompileFinished, EpochEnd, Event, RankTimes, RunFailed, RunStarted,
                                    Step, SystemSample)
from ....core.history.curves import SMOOTHING, Curves
from ....core.history.x_axis import axis_label, has_wall, x_axis
from .alert_markers import AlertMarkers
from ..compile.timeline import TimelineMarkers
from .header import SLIDER_STEPS, controls, empty_state, smoothing_slider, table_button, x_axis_box
from .headline import HeadlineBar
from .hints import EMPTY_HINT, FAILED_HINT, WAITING_HINT
from .ranks import RankTable
from .frames import Frames
from .bands import GroupBand
from .text import TextAlternatives
from .compared import DIMMED, PALETTE, PARENT_OPACITY, STEPS_AT_ONCE, ComparedRuns  # noqa: F401 (tests)
from .items import SpanViewBox, TimedPlot, recorded
from .legend import LineSample
from .series import CurveSeries, Place, SmoothedSeries, StepTimes
from .style import DARK, LIGHT, make_plot, mark, per_epoch, set_x_axis_item, style_plot
from .table import PlotTable

MEMORY_LABELS = {"rss": "process RSS (CPU)", "allocated": "CUDA allocated", "reserved": "CUDA reserved",
                 "peak": "CUDA peak allocated"}
# Under CUDA graphs the graph pool's memory counts as reserved, not allocated (pytorch/pytorch#121932): allocated
# drops once the graphs are recorded, which reads like a leak fixed or a model shrunk unless the legend says why.
CUDA_GRAPH_MEMORY_LABELS = {**MEMORY_LABELS, "allocated": "CUDA allocated (CUDA-graph pool is in reserved)"}
# A live plot's least height: its title, x axis and a legend row leave it about 70 pixels of data. Without it a tall
# bottom dock (or a 1366×768 screen with the Log open) squeezed the four plots to slivers.
MIN_PLOT_HEIGHT = 150
DESCRIBE_MS = 500  # the plots' accessible descriptions follow their latest values at most twice a second


class PlotsPanel(ComparedRuns, TextAlternatives, QWidget):
    xAxisChanged = Signal(str)  # the step plots' x axis, a kind of history.x_axis.X_AXES: chosen, or set
    detailWanted = Signal(object)  # (drawing, [(compared run's place, first step, last step)]): compared.py

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        pg.setConfigOptions(antialias=False)
        self.theme = LIGHT
        self.weight = SMOOTHING
        self.x_axis = "step"  # what the step plots' x is (history.x_axis)
        self.headline = HeadlineBar()
        self.steps = SpanViewBox()  # the loss plot's view: it ranges the step axis every step plot shares
        self.loss_plot = make_plot("lossPlot", "Loss", "cross-entropy", view=self.steps)
        self.accuracy_plot = make_plot("accuracyPlot", "Accuracy", "fraction right")
        self.throughput_plot = make_plot("throughputPlot", "Throughput", "samples/s", "step")
        self.memory_plot = make_plot("memoryPlot", "Memory", "MiB", "step")
        self.plots = (self.loss_plot, self.accuracy_plot, self.throughput_plot, self.memory_plot)
        self.x_labelled = (self.throughput_plot, self.memory_plot)  # the bottom row names the x axis
        for plot in self.plots[1:]:
            plot.setXLink(self.loss_plot)
        for plot in self.plots:
            plot.setMinimumHeight(MIN_PLOT_HEIGHT)
        # The system metrics share the memory plot's cell as a second tab: their axis is time, not steps (a compile
        # or a validation takes seconds without a step), and a fifth plot would squeeze the others.
        self.system_plot = make_plot("systemPlot", "System", "% CPU / GPU", "seconds", SpanViewBox(), steps=False)
        self.all_plots = (*self.plots, self.system_plot)
        # Their names in words; the system plot's title gains its GPUs' readings later.
        self.titles = {plot: plot.getPlotItem().titleLabel.text for plot in self.all_plots}
        self.tables: dict[TimedPlot, PlotTable] = {}  # each plot's "Show as table", once opened
        self.machine_tabs = QTabWidget()
        self.machine_tabs.setObjectName("machineTabs")
        self.machine_tabs.setDocumentMode(True)
        self.machine_tabs.setTabPosition(QTabWidget.West)  # beside the plot: a 1366×768 screen has no height to spare
        self.machine_tabs.addTab(self.memory_plot, "Memory")
        self.machine_tabs.addTab(self.system_plot, "System")
        self.ranks = RankTable()  # a run of several processes only (ranks.py)
        self.machine_tabs.addTab(self.ranks, "Ranks")
        self.machine_tabs.setTabVisible(2, False)
        self.ranks.hangShown.connect(self.show_ranks)
        self.machine_tabs.setTabToolTip(1, "CPU use of the training process and of the machine, GPU utilisation "
                                           "(NVIDIA, through NVML), sampled twice a second")
        grid = QGridLayout()  # two by two: on a 1366×768 screen four stacked plots would be slivers
        for i, plot in enumerate(self.plots):
            grid.addWidget(self.machine_tabs if plot is self.memory_plot else plot, i // 2, i % 2)
        top = QHBoxLayout()  # one row: the figures, and the smoothing that shapes the curves under them
        top.addWidget(self.headline)
        self.smoothing_slider, self.smoothing_value = smoothing_slider(self.weight, self.set_smoothing)
        self.x_axis_box = x_axis_box(self.set_x_axis)
        top.addLayout(controls(self.smoothing_slider, self.smoothing_value, self.x_axis_box), 1)
        top.addWidget(table_button(self.all_plots, self.titles, self.show_table))
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(top)
        layout.addLayout(grid, 1)

        self.step_loss = CurveSeries(self.loss_plot.plot(name="step"))
        self.smooth_loss = CurveSeries(self.loss_plot.plot(name="smoothed"))
        self.val_loss = CurveSeries(per_epoch(self.loss_plot.plot(pen=None, symbol="o", symbolSize=9, name="val")))
        self.step_accuracy = CurveSeries(self.accuracy_plot.plot(name="step"))
        self.smooth_accuracy = CurveSeries(self.accuracy_plot.plot(name="smoothed"))
        self.val_accuracy = CurveSeries(per_epoch(self.accuracy_plot.plot(pen=None, symbol="o", symbolSize=9,
                                                                        name="val")))
        self.throughput = CurveSeries(self.throughput_plot.plot(name="samples/s"))
        self.smoothed = (SmoothedSeries(self.step_loss, self.smooth_loss, self.weight),
                         SmoothedSeries(self.step_accuracy, self.smooth_accuracy, self.weight))
        self.memory: dict[str, CurveSeries] = {}
        self.cpu_process = CurveSeries(self.system_plot.plot(pen=pg.mkPen(PALETTE[0], width=1), name="CPU, this run"))
        self.cpu_machine = CurveSeries(self.system_plot.plot(pen=pg.mkPen(PALETTE[1], width=1), name="CPU, machine"))
        self.gpu_util: dict[str, CurveSeries] = {}
        self.cuda_graphs = False  # the live run replays CUDA graphs: memory legends say where its pool is
        self.compile_marker: pg.InfiniteLine | None = None
        self.timeline = TimelineMarkers(self.loss_plot)  # the compile timeline, on the shared step axis
        self.alerts = AlertMarkers(self.loss_plot)  # the run's alerts, at their steps
        self.times = StepTimes()  # when the current run's steps ended: their x on the epoch and time axes
        self._first_step = 1  # the current run's (a continuation's is after its checkpoint's): its compile marker's
        self._last_step = 0
        self._end_step: int | None = None  # the live run's last step, as far as the step axis may grow
        self.overlays: list[tuple[pg.PlotWidget, pg.PlotDataItem]] = []
        self.overlay_markers: list[pg.InfiniteLine] = []  # each compared run's compile time
        self._overlaid: list[tuple[str, Curves]] = []  # what set_overlays was given: re-smoothed with the slider
        self._run_items: dict[int, list[pg.PlotDataItem]] = {}  # each compared run's items, as _run_series lists them
        self._details: dict[int, tuple[float, float]] = {}  # the steps each compared run was last read finer over
        self._grouped: list[tuple[str, list[Curves]]] = []  # what set_group_overlays was given
        self._drawing = 0  # the latest drawing of the compared runs: an older one still under way stops
        self._spread = "minmax"
        self.group_bands: list[tuple[TimedPlot, GroupBand]] = []  # their bands (their mean lines are in overlays)
        self.shown_at = 0  # counts what the plots have shown (each reset): a late answer for an earlier one is dropped
        self.run_name: str | None = None  # the current run's name in the history ('#3'), when it is known
        self._parent: tuple[str, Curves] | None = None  # a continued run's parent: its name and curves
        self.parent_items: list[tuple[TimedPlot, pg.PlotDataItem]] = []  # its curves, drawn before the run's own
        self.empty_text = empty_state(self.loss_plot)
        self.hint: str | None = EMPTY_HINT  # what the empty loss plot says (_show_hint)
        for plot, series in self._plot_series():  # the live run's entries name only curves that are there
            for each in series:
                plot.getPlotItem().legend.list_while_drawn(each.item)
        self._apply_theme()

        # Step plots yet to follow the step axis the loss plot grew; the loss plot itself when an alert may grow it.
        self._behind: set[TimedPlot] = set()
        self.frames = Frames(self.all_plots, self._due, self._draw, self)
        self._undescribed: set[TimedPlot] = set()  # plots whose accessible description is behind their curves
        self.describe_timer = QTimer(self)
        self.describe_timer.setSingleShot(True)
        self.describe_timer.setInterval(DESCRIBE_MS)
        self.describe_timer.timeout.connect(self._describe)
        self._describe_soon(*self.all_plots)
        self._watch_zoom()

    # -- events -------------------------------------------------------------------------------------------------
    def show_ranks(self) -> None:
        """The Ranks tab, in front: what it says (a hang) is for now."""
        self.machine_tabs.setTabVisible(2, True)
        self.machine_tabs.setCurrentWidget(self.ranks)

    def reset(self, hint: str = EMPTY_HINT) -> None:
        """Empty, as before any run; `hint` in the loss plot says why (a run deleted, a run starting)."""
        for series in self._own_series():
            series.clear()
        self.ranks.clear()
        self.machine_tabs.setTabVisible(2, False)
        for series in self.memory.values():
            self.memory_plot.removeItem(series.item)  # removes its legend entry too; overlays keep theirs
        self.memory.clear()
        for series in self.gpu_util.values():
            self.system_plot.removeItem(series.item)
        self.gpu_util.clear()
        self.system_plot.getPlotItem().setTitle("System")
        for pair in self.smoothed:
            pair.restart(self.weight)
        self.cuda_graphs = False
        if self.compile_marker is not None:
            self.throughput_plot.removeItem(self.compile_marker)
            self.compile_marker = None
        self.timeline.clear()
        self.alerts.clear()
        self.times.clear()
        self._first_step = 1
        self._last_step = 0
        self._end_step = None
        self.shown_at += 1
        self._parent = None
        self._draw_parent()
        self.run_name = None
        self._label_own()
        self.headline.reset()
        # A zoom into the last run would hide the new one. The x axis is the loss plot's (the others follow it):
        # auto-ranging a follower's x too would let, say, the compile marker alone set the shared range and switch
        # the loss plot's auto-range off for the rest of the run.
        self.loss_plot.getPlotItem().enableAutoRange()
        for plot in self.plots[1:]:
            plot.getPlotItem().enableAutoRange(axis="y")
        self._range_steps(fresh=True)  # the linked plots follow at once
        self._behind.clear()
        self._range_seconds(fresh=True)
        self._show_hint(hint)
        self._describe_soon(*self.all_plots)

    def add_events(self, batch: list[Event]) -> None:
        for event in batch:
            if isinstance(event, Step):
                self._add_step(event)
            elif isinstance(event, CompileEvent):
                self.timeline.add([event])
                self._place_markers()  # at its step's x, or hidden until that step has one
            elif isinstance(event, Alert):
                self.alerts.add(event)
                self._place_markers()
                if event.rule == "straggler":
                    self.ranks.named(event)
                self._behind.add(self.loss_plot)  # its step can be past the last Step: the one the run failed at
            elif isinstance(event, SystemSample):
                self._add_system(event)
            elif isinstance(event, RankTimes):
                self.machine_tabs.setTabVisible(2, True)
                self.ranks.add(event)

            elif isinstance(event, EpochEnd):
                self.val_loss.append(self._last_step, event.val_loss)
                self.val_accuracy.append(self._last_step, event.val_accuracy)
            elif isinstance(event, CompileFinished) and event.phase == "train":  # the compile *step* is marked
                self._mark_compile(event.seconds)
            elif isinstance(event, RunFailed) and not self.step_loss.buffer.size:
                self._show_hint(FAILED_HINT)  # not "Waiting for the first step…" for ever
            elif isinstance(event, RunStarted):
                self.reset()
                self.times.start(event)
                self._first_step = event.resumed_step + 1
                self._end_step = event.total_steps
                self.cuda_graphs = uses_cuda_graphs(event.config.to_dict())
                self._show_hint(WAITING_HINT)
                self._label_x()
        for pair in self.smoothed:
            pair.catch_up()
        if self.step_loss.buffer.size:
            self._axis_hint()
        self.headline.add_events(batch)

    def show_curves(self, curves: Curves, compile_seconds: float | None = None, config: dict | None = None) -> None:
        """A recorded run, drawn from its curves at once rather than event by event; `config` is the run's (its
        memory curves are labelled as a live run's are)."""
        self.reset()
        self.cuda_graphs = uses_cuda_graphs(config or {})
        self.times.set(curves)
        self._first_step = int(curves.step[0]) if len(curves.step) else 1
        self.step_loss.set(curves.step, curves.loss)
        self.val_loss.set(curves.val_step, curves.val_loss)
        has_accuracy = np.isfinite(curves.accuracy)
        self.step_accuracy.set(curves.step[has_accuracy], curves.accuracy[has_accuracy])
        self.val_accuracy.set(curves.val_step, curves.val_accuracy)
        for pair in self.smoothed:
            pair.restart(self.weight)
        self.throughput.set(curves.throughput_step, curves.throughput)
        for name, values in curves.memory.items():
            self._memory_series(name).set(curves.step, values)
        if compile_seconds is not None:
            self._mark_compile(compile_seconds)
        self._last_step = int(curves.step[-1]) if len(curves.step) else 0
        self._show_hint(None if len(curves.step) else "This run took no steps")
        self._axis_hint()
        self._label_x()
        self.headline.show_run(curves, compile_seconds)
        self._dim(bool(self.overlays))

    def keep_growing(self, end_step: int | None) -> None:
        """The recorded run on show is still training elsewhere (followed from the history): its step axis grows
        toward `end_step` as a live run's does."""
        self._end_step = end_step

    def _add_step(self, step: Step) -> None:
        self._last_step = step.step
        self.times.add(step)  # first: the step's points are placed by its time
        self.step_loss.append(step.step, step.loss)
        if step.accuracy is not None:
            self.step_accuracy.append(step.step, step.accuracy)
        if step.steady:  # compiling steps are marked, warm-up and profiled ones left out: they'd squash the axis
            self.throughput.append(step.step, step.samples_per_s)
        for name, mib in step.memory.readings().items():
            self._memory_series(name).append(step.step, mib)

    def _add_system(self, sample: SystemSample) -> None:
        """One system sample: CPU of the run and of the machine, each GPU's utilisation; the last GPU reading's
        power and temperature in the plot's title."""
        self.cpu_process.append(sample.seconds, sample.cpu_process)
        self.cpu_machine.append(sample.seconds, sample.cpu_machine)
        for name, reading in sample.gpu.items():
            series = self.gpu_util.get(name)
            if series is None:
                colour = PALETTE[(2 + len(self.gpu_util)) % len(PALETTE)]
                series = self.gpu_util[name] = CurveSeries(self.system_plot.plot(pen=pg.mkPen(colour, width=1),
                                                                             name=f"GPU {name}"))
            series.append(sample.seconds, reading.util)
        if sample.gpu:
            self.system_plot.getPlotItem().setTitle("System · " + " · ".join(
                f"{name} {r.power_w:.0f} W, {r.temp_c:.0f} °C, {r.memory_mib:,.0f} MiB"
                for name, r in sample.gpu.items()))

    def _memory_series(self, name: str) -> CurveSeries:
        series = self.memory.get(name)
        if series is None:
            label = (CUDA_GRAPH_MEMORY_LABELS if self.cuda_graphs else MEMORY_LABELS).get(name, name)
            colour = PALETTE[len(self.memory) % len(PALETTE)]
            series = CurveSeries(self.memory_plot.plot(pen=pg.mkPen(colour, width=1), name=label))
            series.set_place(self._placer())
            self.memory[name] = series
            if self._comparing:  # a new curve of the live run beside compared runs: dimmed and named as its others
                self._dim(True)
                self._label_own()
        return series

    def _mark_compile(self, seconds: float) -> None:
        self.compile_marker = self._compile_line(f"compile step: {seconds:.1f} s", self.theme.marker)
        self._set_marker_opacity(self.compile_marker, DIMMED if self.overlays else 1.0)
        self._place_markers()

    def _compile_line(self, label: str, colour: str, x: float = 1.0) -> pg.InfiniteLine:
        """A dashed line at `x` (the step that compiled, a run's first) on the throughput plot, named by `label` in
        the plot's legend and its tooltip: a label on the plot sat on the curves (the steady throughput fills the
        plot's height), and a few compared runs' labels stacked over them."""
        line = pg.InfiniteLine(pos=x, angle=90, pen=pg.mkPen(colour, style=Qt.DashLine))
        line.setToolTip(label)
        self.throughput_plot.addItem(line)
        self.throughput_plot.getPlotItem().legend.addItem(LineSample(line), label)  # removeItem takes it away
        return line

    def _set_marker_opacity(self, line: pg.InfiniteLine, opacity: float) -> None:
        """A compile line and its legend swatch, dimmed (or not) together."""
        line.setOpacity(opacity)
        self.throughput_plot.getPlotItem().legend.sample(line).setOpacity(opacity)

    def _show_hint(self, text: str | None) -> None:
        """The empty state: what to do (or what is coming) while a plot has nothing to show; None hides it. Compared
        runs fill the plot: it waits under them until they go."""
        self.hint = text
        if text is not None:
            self.empty_text.setText(text, self.theme.hint)
        self.empty_text.setVisible(text is not None and not self._comparing)

    def _place_markers(self) -> None:
        """The current run's compile marker, compile timeline and alerts at their steps' x on the chosen axis; a
        marker whose step has no x there yet (its Step has not come; no wall times) is hidden meanwhile."""
        clock = self.times.clock()
        markers = [(self._first_step, self.compile_marker)] if self.compile_marker is not None else []
        markers += [*self.timeline.lines.items(), *self.alerts.lines.items()]
        if not markers:
            return
        xs = clock.x(self.x_axis, np.array([step for step, _line in markers], dtype=np.float64))
        for x, (_step, line) in zip(xs, markers):
            line.setVisible(bool(np.isfinite(x)))
            if np.isfinite(x) and line.value() != x:
                line.setValue(float(x))

    def redraw(self) -> None:
        """Draw the curves that changed now, rather than at the next frame (a recorded run; tests), and describe
        them."""
        self.frames.draw_all()
        self._describe()

    def _due(self) -> list[TimedPlot]:
        """The plots whose curves changed or whose steps are behind the loss plot's, in drawing order."""
        return [plot for plot, series in self._plot_series() if plot in self._behind or any(s.dirty for s in series)]

    def _draw(self, plot: TimedPlot) -> None:
        """One plot's turn: its curves take their new points, then its ranges are set before Qt paints it (a range
        set while painting re-clips the curves and asks for another paint). The loss plot grows the step axis; the
        others' links are held meanwhile and each follows in its own turn, so a longer axis, which re-clips and
        re-ticks every plot, is drawn a plot a turn too."""
        for series in dict(self._plot_series())[plot]:
            series.redraw()
        view = plot.getViewBox()
        if plot is self.loss_plot:
            self._behind.discard(plot)
            self._place_markers()
            followers = [p.getViewBox() for p in self.plots[1:]]
            span = self.steps.span
            for follower in followers:
                follower.blockLink(True)
            self._range_steps()
            for follower in followers:
                follower.blockLink(False)
            if self.steps.span != span:
                self._behind.update(self.plots[1:])
        elif plot is self.system_plot:
            self._range_seconds()
        elif plot in self._behind:
            self._behind.discard(plot)
            view.linkedXChanged()
        view.prepareForPaint()
        self._describe_soon(plot)

    def _range_steps(self, fresh: bool = False) -> None:
        """The step axis covers the current run's steps and alerts (a run fails at a step it never finishes, after
        its alert) and the compared runs', a live run's with headroom to grow (plot_items.grown_span), and a
        continued run's parent's; `fresh` forgets the last span (a new run, other compared runs, another x axis)."""
        xs = [recorded(item)[0] for plot, item in (*self.overlays, *self.parent_items) if plot is self.loss_plot]
        alerts = self.times.clock().x(self.x_axis, np.array(sorted(self.alerts.lines), dtype=np.float64))
        self.steps.cover([self.step_loss.view()[0], *(x for x in xs if x is not None), alerts[np.isfinite(alerts)]],
                         self._x_end(), fresh)

    def _x_end(self) -> float | None:
        """How far a live run's x axis may grow: its last step's x (on a time axis, not known before that step has
        come: no end); None when no more steps are coming (see plot_items.grown_span)."""
        if self._end_step is None:
            return None
        end = float(self.times.clock().x(self.x_axis, np.array([self._end_step], dtype=np.float64))[0])
        return end if math.isfinite(end) else math.inf

    def _range_seconds(self, fresh: bool = False) -> None:
        """The system plot's time axis covers the run's samples, a live run's with headroom to grow."""
        self.system_plot.getViewBox().cover([self.cpu_process.buffer.view()[0]],
                                            None if self._end_step is None else math.inf, fresh)

    def _plot_series(self) -> tuple[tuple[TimedPlot, tuple[CurveSeries, ...]], ...]:
        """The current run's series (not the overlays) by plot, in drawing order: the loss plot first, whose steps
        the others follow."""
        return ((self.loss_plot, (self.step_loss, self.smooth_loss, self.val_loss)),
                (self.accuracy_plot, (self.step_accuracy, self.smooth_accuracy, self.val_accuracy)),
                (self.throughput_plot, (self.throughput,)),
                (self.memory_plot, tuple(self.memory.values())),
                (self.system_plot, (self.cpu_process, self.cpu_machine, *self.gpu_util.values())))

    def _own_series(self) -> tuple[CurveSeries, ...]:
        """The current run's series (not the overlays)."""
        return tuple(s for _plot, series in self._plot_series() for s in series)

    # -- smoothing ----------------------------------------------------------------------------------------------
    def set_smoothing(self, weight: float) -> None:
        """Smooth the current run's and the overlaid runs' lines with `weight` (0 … 0.999) from their first point."""
        self.weight = weight
        self.smoothing_value.setText(f"{weight:.3f}")
        with QSignalBlocker(self.smoothing_slider):  # called from code: the slider shows it, without a second pass
            self.smoothing_slider.setValue(round(weight * SLIDER_STEPS))
        for pair in self.smoothed:
            pair.restart(weight)
        self._draw_parent()
        if self._comparing:
            self._draw_compared()

    # -- the x axis -------------------------------------------------------------------------------------------------
    def set_x_axis(self, kind: str) -> None:
        """Put `kind` (history.x_axis: "step", "epoch", "wall", "elapsed") along the step plots' x: the current
        run's curves and markers, the compared runs' and a continued run's parent's; the System plot keeps its
        seconds. An unknown kind is refused (a WorkbenchError saying the kinds)."""
        x_axis(kind)
        with QSignalBlocker(self.x_axis_box):  # called from code: the box shows it, without a second pass
            self.x_axis_box.setCurrentIndex(self.x_axis_box.findData(kind))
        if kind == self.x_axis:
            return
        self.x_axis = kind
        for plot in self.plots:
            set_x_axis_item(plot, kind, None, self.theme)
        self._label_x()
        self._place_own()
        self._place_markers()
        self._draw_parent()
        if self._comparing:
            self._draw_compared()
        self._axis_hint()
        self._range_steps(fresh=True)
        self._behind.update(self.plots[1:])
        for table in self.tables.values():
            if table.isVisible():
                table.refresh()
        self._describe_soon(*self.plots)
        self.xAxisChanged.emit(kind)

    def _placer(self) -> Place | None:
        """How the current run's points are placed on the x axis: by its step times; None on the step axis, where
        they are drawn as they are."""
        kind = self.x_axis
        return None if kind == "step" else lambda steps, values: self.times.clock().place(kind, steps, values)

    def _place_own(self) -> None:
        """The current run's step curves placed anew (another axis; a continuation's parent arrived)."""
        place = self._placer()
        for plot, series in self._plot_series():
            if plot is not self.system_plot:
                for s in series:
                    s.set_place(place)

    def _label_x(self) -> None:
        """The bottom row's x label."""
        for plot in self.x_labelled:
            plot.getPlotItem().setLabel("bottom", self._x_label())

    def _x_label(self) -> str:
        """The x axis's label, saying whether a time since start adds up step times (for a run recorded before
        steps kept their wall time, among those shown)."""
        shown = [*([self.times.clock().wall] if self.step_loss.buffer.size else []),
                 *(curves.wall for curves in self._recorded())]
        return axis_label(self.x_axis, self.x_axis == "elapsed" and not all(has_wall(wall) for wall in shown))

    def _axis_hint(self) -> None:
        """A run with points but none on this axis (no wall times: recorded before steps kept them) says so."""
        if self.step_loss.buffer.size:
            known = self.times.clock().knows(self.x_axis)
            self._show_hint(None if known else f"This run has no {x_axis(self.x_axis).name}: it was recorded "
                                               "before Workbench kept it. Choose another X axis.")

    def set_run_name(self, name: str | None) -> None:
        """The current run's name ('#3', as the Runs dock calls it; None: not known). Comparing runs, its legend
        entries carry it, as the compared runs' do."""
        self.run_name = name
        self._label_own()
        self._describe_soon(*self.plots)

    def _own_name(self, plot: TimedPlot, series: CurveSeries) -> str:
        """A current-run series' legend name: 'step' alone; '#3 step' (or 'this run, step', unnamed) beside
        compared runs, whose entries would otherwise read as the only named ones."""
        compared = self._comparing and plot is not self.system_plot  # the system plot shows no compared run
        prefix = f"{self.run_name} " if self.run_name else "this run, "
        return prefix + series.item.name() if compared else series.item.name()

    def _label_own(self) -> None:
        for plot, series in self._plot_series():
            plot.getPlotItem().legend.rename({s.item: self._own_name(plot, s) for s in series})

    # -- appearance ---------------------------------------------------------------------------------------------
    def set_dark(self, dark: bool) -> None:
        """Follow the window's colour scheme: backgrounds, axes, titles, legends and the current run's pens."""
        self.theme = DARK if dark else LIGHT
        self._apply_theme()

    def _apply_theme(self) -> None:
        theme = self.theme
        for plot in self.all_plots:
            style_plot(plot, theme)
        for raw, line, points in ((self.step_loss, self.smooth_loss, self.val_loss),
                                  (self.step_accuracy, self.smooth_accuracy, self.val_accuracy)):
            raw.item.setPen(pg.mkPen(theme.raw, width=1))
            line.item.setPen(pg.mkPen(theme.line, width=1))
            mark(points.item, theme.marker)
        self.throughput.item.setPen(pg.mkPen(theme.line, width=1))
        self.empty_text.setColor(theme.hint)
        self._draw_parent()

    # -- queries used by tests and the status bar ---------------------------------------------------------------
    def point_counts(self) -> dict[str, int]:
        return {"loss": self.step_loss.buffer.size, "throughput": self.throughput.buffer.size,
                "memory": sum(s.buffer.size for s in self.memory.values()),
                "system": self.cpu_process.buffer.size,
                "val_loss": self.val_loss.buffer.size, "accuracy": self.step_accuracy.buffer.size}
