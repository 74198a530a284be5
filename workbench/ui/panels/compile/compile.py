"""Compile panel: did it compile, what it cost, whether it paid off, and what to change — with the user's lines.

Graph breaks run silently in eager mode; this panel is where they stop being silent. Its tabs: *Fix-it* (a card per
kind of break: Dynamo's explanation and hints, our recipe, the user's source lines, Check with fullgraph), *Timeline*
(every graph compiled, recompile, break, cache hit or miss and CUDA-graph skip, at its step: the loss plot carries
the same markers), *What-if* (the recompiles a run of these settings will hit, with the fix, and after a run whether
they did) and *Notes* (recompiles, fallbacks and warnings as the run reported them).

While a run compiles, the panel says so and counts the seconds: the run traces its model before compiling (an
explain pass whose report arrives first), and that trace must not read as "compiled" or as the user's Explain.
"""

from __future__ import annotations

import time

from PySide6.QtCore import Qt, QTimer, QUrl, Signal
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import (QFormLayout, QFrame, QGridLayout, QLabel, QListWidget, QPushButton,
                               QScrollArea, QTabWidget, QVBoxLayout, QWidget)

from ....core.ground.config import TrainConfig
from ....core.ground.events import (CompileEvent, CompileFinished, CompileReport, CompileStarted, Event, GraphBreak,
                                   Notice, RunFinished, RunStarted, is_terminal)
from ....core.ground.forecast import ForecastCheck, forecast_recompiles
from ....core.ground.answers import FullgraphCheck
from .cards import BreakDialog, CardList, text_label
from .stages import CompileStagesView
from .timeline import TimelineView


class CompilePanel(QWidget):
    explainRequested = Signal()
    numericsRequested = Signal()
    fullgraphRequested = Signal()
    codeRequested = Signal(str)  # the run's compile trace, which the code view reads; "": the run recorded none
    settingRequested = Signal(str, object)  # a What-if fix that is a setting: (name, value) for the Setup form

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("compilePanel")
        self.fields = {key: QLabel("—") for key in (
            "compiled", "backend", "graphs", "breaks", "ops", "seconds", "recompiles", "payback")}
        for key, label in self.fields.items():
            label.setObjectName(f"compile_{key}")
            label.setTextFormat(Qt.PlainText)  # backend and mode come from run records: never rich text
            label.setTextInteractionFlags(Qt.TextSelectableByMouse)
            label.setWordWrap(True)  # a long compile-time breakdown wraps instead of widening the window
        form = QFormLayout()
        for key, title in (("compiled", "Compiled"), ("backend", "Backend · mode")):
            form.addRow(title, self.fields[key])
        # Four small numbers in two rows of two: the tabs below need the height, the dock its narrow width.
        counts = QGridLayout()
        counts.setHorizontalSpacing(4)
        self.count_words = {key: QLabel(key) for key in COUNT_WORDS}
        for i, key in enumerate(COUNT_WORDS):
            self.fields[key].setWordWrap(False)
            counts.addWidget(self.fields[key], i // 2, 3 * (i % 2), Qt.AlignRight)
            counts.addWidget(self.count_words[key], i // 2, 3 * (i % 2) + 1)
        counts.setColumnMinimumWidth(2, 12)
        counts.setColumnStretch(5, 1)
        form.addRow("Traced", counts)
        for key, title in (("seconds", "Compile time"), ("payback", "Paid off?")):
            form.addRow(title, self.fields[key])
        self.fields["payback"].setToolTip("Compiled against eager step time, measured side by side after the run, "
                                          "with the run's compile seconds: the step at which compiling paid off")

        self.cards = CardList()
        self.cards.fullgraphRequested.connect(self.fullgraphRequested)
        self.cards.stackRequested.connect(self.show_break)
        self.timeline = TimelineView()
        self.stages = CompileStagesView()
        self.forecast = ForecastView()
        self.forecast.settingRequested.connect(self.settingRequested)
        self.notes = QListWidget()
        self.notes.setObjectName("compileWarnings")
        self.notes.setAccessibleName("Compile warnings")
        self.notes.setWordWrap(True)
        self.tabs = QTabWidget()
        self.tabs.setObjectName("compileTabs")
        for widget, title, tip in (
                (self.cards, "Fix-it", "A card per kind of graph break: why, where, and how to remove it"),
                (self.timeline, "Timeline", "What the compiler did, step by step (the loss plot's markers)"),
                (self.stages, "Stages", "Each graph's compile time by stage: Dynamo tracing, AOT, lowering, code "
                 "generation, C++ / kernel compile, autotuning"),
                (self.forecast, "What-if", "The recompiles these settings will cause, and the fix"),
                (self.notes, "Notes", "Recompiles, fallbacks and warnings, as the run reported them")):
            self.tabs.setTabToolTip(self.tabs.addTab(widget, title), tip)

        self.explain_button = QPushButton("Explain current settings")
        self.explain_button.setObjectName("explainButton")
        self.explain_button.setToolTip("Trace the network with torch._dynamo.explain on the worker thread "
                                       "(no training) and list every graph break")
        self.explain_button.clicked.connect(self.explainRequested)
        self.numerics_button = QPushButton("Compare numerics")
        self.numerics_button.setObjectName("numericsButton")
        self.numerics_button.setToolTip("Run one batch forward and backward eager and compiled in the kernel (same "
                                        "weights, same inputs) and show each layer's and op's largest difference "
                                        "against its tolerance, and where the first exceeds it")
        self.numerics_button.clicked.connect(self.numericsRequested)
        self.code_button = QPushButton("Code…")
        self.code_button.setObjectName("codeButton")
        self.code_button.setToolTip("The graphs Dynamo captured, the AOT forward and backward graphs and the code "
                                    "Inductor wrote, with the model line each kernel came from")
        self.code_button.clicked.connect(lambda: self.codeRequested.emit(self.trace or ""))
        self.code_button.hide()
        self.trace_button = QPushButton("Open compile trace")
        self.trace_button.setObjectName("traceButton")
        self.trace_button.clicked.connect(self.open_trace)
        self.trace_button.hide()
        buttons = QGridLayout()  # two by two: the dock is narrow
        for i, button in enumerate((self.explain_button, self.numerics_button, self.code_button, self.trace_button)):
            buttons.addWidget(button, i // 2, i % 2)

        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.tabs, 1)
        layout.addLayout(buttons)
        self.breaks: tuple[GraphBreak, ...] = ()
        self.compile_phases: dict[str, float] = {}  # seconds by CompileFinished.phase, of the run shown
        self.run_live = False  # a run is going: its pre-compile trace is not a result
        self.trace: str | None = None  # the run's rendered compile trace (or its folder)
        self.clock = time.monotonic  # tests turn it by hand
        self.compiling_since: float | None = None
        self.ticker = QTimer(self)
        self.ticker.setInterval(1000)
        self.ticker.timeout.connect(self._show_compiling)

    # -- events -------------------------------------------------------------------------------------------------
    def add_events(self, batch: list[Event]) -> None:
        for event in batch:
            if isinstance(event, CompileEvent):
                self.timeline.add([event])
            elif isinstance(event, RunStarted):
                self._run_started(event)
            elif isinstance(event, CompileStarted):
                self.compiling_since = self.clock()
                self.ticker.start()
                self._show_compiling()
            elif isinstance(event, CompileFinished):  # one per phase: the first step, the eval graph, recording
                if event.phase == "train":
                    self._stop_compiling()
                self.fields["compiled"].setText("yes")
                self.compile_phases[event.phase] = event.seconds
                self.fields["seconds"].setText(_compile_time(self.compile_phases))
            elif isinstance(event, CompileReport):
                self.show_report(event)
            elif isinstance(event, Notice) and event.level != "info" and "compile" in event.message:
                self._note(f"⚠ {event.message}")
            elif is_terminal(event):
                self._run_ended(event)

    def _run_started(self, event: RunStarted) -> None:
        config = event.config
        self.clear()
        self.run_live = True
        self.fields["backend"].setText(_backend_text(config.backend, config.mode))
        self.fields["compiled"].setText("no (eager)" if config.backend == "eager" else "not yet")
        self.cards.started = event
        self.forecast.show(forecast_recompiles(config, event.train_size, event.val_size, event.world_size),
                           config, "predicted for this run")

    def _run_ended(self, event: Event) -> None:
        self.run_live = False
        if self.compiling_since is not None:  # failed or stopped before the first step compiled
            self._stop_compiling()
            self.fields["compiled"].setText("no (the run ended while compiling)")
            self.fields["seconds"].setText("—")
        if not isinstance(event, RunFinished):
            return
        results = event.results
        payback = results.payback
        if payback is not None:
            cold, warm = payback.launch_lines()  # the verdict is this launch's: the other kind's line goes below
            self.fields["payback"].setText(f"{payback.verdict()}\n{warm if payback.warm_from is None else cold}")
            self.fields["payback"].setToolTip(
                f"eager {payback.eager_step_s * 1e3:.2f} ms/step, compiled {payback.compiled_step_s * 1e3:.2f} "
                f"ms/step, compile {payback.compile_s:.1f} s in all phases\nmethod: {payback.method}")
        elif results.payback_problem:
            self.fields["payback"].setText(results.payback_problem)
        if results.recompile_forecast is not None:
            self.forecast.show_checked(results.recompile_forecast)
        if results.compile_trace is not None and results.compile_trace.path:
            self.trace = results.compile_trace.path
            problem = results.compile_trace.problem
            self.trace_button.setToolTip(self.trace + (f"\n{problem}" if problem else ""))
            self.trace_button.show()
        self.code_button.setVisible(results.backend_used != "eager")

    def _show_compiling(self) -> None:
        """'compiling… 12 s so far' while the first step compiles (Inductor can take minutes on a small CPU)."""
        if self.compiling_since is not None:
            text = f"compiling… {self.clock() - self.compiling_since:.0f} s so far"
            self.fields["compiled"].setText(text)
            self.fields["seconds"].setText(text)

    def _stop_compiling(self) -> None:
        self.ticker.stop()
        self.compiling_since = None

    def clear(self) -> None:
        for label in self.fields.values():
            label.setText("—")
        self.cards.show_breaks(())
        self.cards.clear_fullgraph()
        self.timeline.clear()
        self.stages.clear()
        self.forecast.show((), None, "")
        self.notes.clear()
        self.breaks = ()
        self.compile_phases = {}
        self.run_live = False
        self.trace = None
        self.trace_button.hide()
        self.code_button.hide()
        self._stop_compiling()

    def show_report(self, report: CompileReport) -> None:
        """A run's own report, Explain's (which only runs between runs, after clear()), or — during a run — the
        run's trace before it compiles: that one shows the graphs and breaks, while the compile is still counting."""
        pre_compile = self.run_live and report.source == "explain"
        if not pre_compile:
            self.fields["compiled"].setText(("yes" if report.compiled else "no") + (
                " (traced by Explain, not trained)" if report.source == "explain" else ""))
            self.fields["backend"].setText(_backend_text(report.backend, report.mode))
        for key, count in (("graphs", report.graph_count), ("breaks", report.graph_break_count),
                           ("ops", report.op_count), ("recompiles", len(report.recompiles))):
            self.fields[key].setText(str(count))
            self.count_words[key].setText(COUNT_WORDS[key][count != 1])
        self.fields["breaks"].setStyleSheet("color: #b00020; font-weight: bold;" if report.graph_break_count else "")
        if not pre_compile:  # during the compile its seconds so far stay
            self.fields["seconds"].setText(self._seconds_text(report) + _warm_text(report))
            self.stages.show_times(report.graph_times)
        self.breaks = report.breaks
        self.cards.show_breaks(report.breaks, known=True)
        self.tabs.setTabText(0, f"Fix-it ({len(self.cards.cards)})" if self.cards.cards else "Fix-it")
        self.notes.clear()
        for recompile in report.recompiles:
            self._note(f"↻ recompile — {recompile}")
        for warning in report.warnings:
            self._note(f"⚠ {warning}")

    def show_forecast(self, config: TrainConfig, train_size: int, val_size: int, world_size: int = 1) -> None:
        """Before a run: the recompiles these settings will hit on this data (not while a run is shown live)."""
        if not self.run_live:
            self.forecast.show(forecast_recompiles(config, train_size, val_size, world_size), config,
                               "if you train with these settings")

    def show_fullgraph(self, check: FullgraphCheck) -> None:
        self.cards.show_fullgraph(check)
        self.tabs.setCurrentWidget(self.cards)

    def show_fullgraph_error(self, error: BaseException) -> None:
        self.cards.show_fullgraph_error(error)
        self.tabs.setCurrentWidget(self.cards)

    def select_steps(self, steps: tuple[int, ...]) -> None:
        """A timeline marker was clicked: its events, in the Timeline tab."""
        self.tabs.setCurrentWidget(self.timeline)
        self.timeline.select_steps(steps)

    def open_trace(self) -> None:
        if self.trace:
            QDesktopServices.openUrl(QUrl.fromLocalFile(self.trace))

    def _seconds_text(self, report: CompileReport) -> str:
        if report.source == "explain":
            return f"traced in {report.compile_seconds:.2f} s (explain)"
        if self.compile_phases:  # the run's own CompileFinished events: the breakdown (their sum is the report's)
            return _compile_time(self.compile_phases)
        return _compile_time({"train": report.compile_seconds}) if report.compile_seconds else "—"

    def _note(self, text: str) -> None:
        self.notes.addItem(text)

    def show_break(self, index: int) -> None:
        """The full user stack and Dynamo's whole text of break `index` (a card's *Full stack…*)."""
        if 0 <= index < len(self.breaks):
            dialog = BreakDialog(self.breaks[index], self)
            dialog.setAttribute(Qt.WA_DeleteOnClose)  # one per click: freed when closed
            dialog.open()


COUNT_WORDS = {"graphs": ("graph", "graphs"), "breaks": ("break", "breaks"), "ops": ("op", "ops"),
               "recompiles": ("recompile", "recompiles")}
VERDICT_MARKS = {"confirmed": "✓ happened as predicted", "did not happen": "✗ did not happen",
                 "not predicted": "! not predicted"}


class ForecastView(QScrollArea):
    """The What-if tab: each recompile a run will (or did) hit, when, why, and its fix; a fix that is a setting
    (dynamic shapes) has a button that sets it in the Setup form."""

    settingRequested = Signal(str, object)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("forecastView")
        self.setWidgetResizable(True)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)  # entries wrap to the dock's width
        self.heading = QLabel()
        self.heading.setObjectName("forecastHeading")
        self.heading.setWordWrap(True)
        self._body = QWidget()
        self._layout = QVBoxLayout(self._body)
        self._layout.addWidget(self.heading)
        self._layout.addStretch(1)
        self.setWidget(self._body)
        self.entries: list[ForecastEntry] = []
        self.show((), None, "")

    def show(self, forecasts, config: TrainConfig | None, context: str) -> None:
        if config is None:
            self._fill([], "Choose a compiled backend: the recompiles it will hit are forecast here.")
        elif not config.compiled:
            self._fill([], "Eager: nothing is compiled, nothing recompiles.")
        else:
            predictions = [ForecastCheck(forecast=f, observed=(), verdict="") for f in forecasts]  # not yet run
            self._fill(predictions, f"{len(predictions)} recompile(s) {context}:", config)

    def show_checked(self, checks: tuple[ForecastCheck, ...]) -> None:
        """After a run: each forecast with what really happened, and recompiles nobody predicted."""
        ok = all(c.verdict == "confirmed" for c in checks)
        self._fill(checks, "The forecast against the run's real recompiles: "
                   + ("every one as predicted." if ok else "see below."))

    def _fill(self, checks: list[ForecastCheck], heading: str, config: TrainConfig | None = None) -> None:
        for entry in self.entries:
            self._layout.removeWidget(entry)
            entry.deleteLater()
        self.entries = []
        self.heading.setText(heading)
        for check in checks:
            entry = self._entry(check, config)
            self._layout.insertWidget(self._layout.count() - 1, entry)
            self.entries.append(entry)

    def _entry(self, check: ForecastCheck, config: TrainConfig | None) -> ForecastEntry:
        forecast = check.forecast  # None: a recompile nobody predicted
        verdict = VERDICT_MARKS.get(check.verdict, "")
        title = forecast.when if forecast else "a recompile"
        box = ForecastEntry(f"{verdict} — {title}" if verdict else title)
        lines = [forecast.text if forecast else "", *(f"Dynamo: {reason}" for reason in check.observed)]
        if forecast and forecast.fix:
            lines.append(("By design: " if forecast.expected else "Fix: ") + forecast.fix)
        for line in filter(None, lines):
            box.layout().addWidget(text_label(line))
        if config is not None and forecast and not forecast.expected and "dynamic=True" in forecast.fix \
                and config.dynamic is not True:
            button = QPushButton("Use dynamic shapes: on")
            button.setObjectName("forecastApply")
            button.setToolTip("Sets Dynamic shapes to on in the Setup form")
            button.clicked.connect(lambda: self.settingRequested.emit("dynamic", True))
            box.layout().addWidget(button)
        return box


class ForecastEntry(QFrame):
    """One recompile of the What-if tab: a frame with a wrapped bold title rather than a group box, whose title
    never wraps (a long one widened the tab past the dock, cut with no scroll bar); its lines wrap anywhere
    (Dynamo's guard texts are long identifiers)."""

    def __init__(self, title: str, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("forecastEntry")
        self.setFrameShape(QFrame.StyledPanel)
        self.heading = text_label(title, "forecastTitle")
        self.heading.setStyleSheet("font-weight: bold;")
        QVBoxLayout(self).addWidget(self.heading)

    def title(self) -> str:
        return self.heading.text()


def _backend_text(backend: str, mode: str) -> str:
    """'inductor · max-autotune'; other backends have no modes."""
    return backend + (f" · {mode}" if backend == "inductor" else "")


PHASE_WORDS = {"eval": "eval graph", "cudagraph recording": "CUDA-graph recording"}


def _warm_text(report: CompileReport) -> str:
    """A warm start beside the compile time: ' · warm start from #7's compile cache (cold launch 16.3 s, #5)'."""
    if report.warm_from is None:
        return ""
    cold = "" if report.cold_compile_seconds is None else f" (cold launch {report.cold_compile_seconds:.1f} s" + (
        f", #{report.cold_run})" if report.cold_run is not None else ")")
    return f" · warm start from #{report.warm_from}'s compile cache{cold}"


def _compile_time(phases: dict[str, float]) -> str:
    """'1.20 s (first step, forward + backward)'; with more phases their sum first, the first step last."""
    first = f"{phases.get('train', 0.0):.2f} s (first step, forward + backward)"
    others = [f"{PHASE_WORDS.get(phase, phase)} {seconds:.2f} s" for phase, seconds in phases.items()
              if phase != "train"]
    if not others:
        return first
    return f"{sum(phases.values()):.2f} s in all: " + ", ".join(others) + f", {first}"
