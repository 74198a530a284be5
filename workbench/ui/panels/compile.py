"""Compile panel: did it compile, what it cost, and *why* the graph broke — each break with its source line.

Graph breaks run silently in eager mode; this panel is where they stop being silent. Double-click a break to see
its whole user stack and Dynamo's full explanation.

While a run compiles, the panel says so and counts the seconds: the run traces its model before compiling (an
explain pass whose report arrives first), and that trace must not read as "compiled" or as the user's Explain.
"""

from __future__ import annotations

import time
from pathlib import Path

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (QAbstractItemView, QDialog, QDialogButtonBox, QFormLayout, QHeaderView, QLabel,
                               QListWidget, QPlainTextEdit, QPushButton, QTableWidget, QTableWidgetItem, QVBoxLayout,
                               QWidget)

from ...core.ground.events import (CompileFinished, CompileReport, CompileStarted, Event, GraphBreak, Notice,
                                   RunStarted, is_terminal)


class CompilePanel(QWidget):
    explainRequested = Signal()

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("compilePanel")
        self.fields = {key: QLabel("—") for key in (
            "compiled", "backend", "graphs", "breaks", "ops", "seconds", "recompiles")}
        for key, label in self.fields.items():
            label.setObjectName(f"compile_{key}")
            label.setTextFormat(Qt.PlainText)  # backend and mode come from run records: never rich text
            label.setTextInteractionFlags(Qt.TextSelectableByMouse)
            label.setWordWrap(True)  # a long compile-time breakdown wraps instead of widening the window
        form = QFormLayout()
        for key, title in (("compiled", "Compiled"), ("backend", "Backend · mode"), ("graphs", "Graphs"),
                           ("breaks", "Graph breaks"), ("ops", "Ops traced"), ("seconds", "Compile time"),
                           ("recompiles", "Recompiles")):
            form.addRow(title, self.fields[key])

        self.table = QTableWidget(0, 3)
        self.table.setObjectName("breakTable")
        self.table.setHorizontalHeaderLabels(["Reason", "Where", "Source line"])
        self.table.horizontalHeader().setSectionResizeMode(0, QHeaderView.Stretch)
        self.table.horizontalHeader().setSectionResizeMode(1, QHeaderView.ResizeToContents)
        self.table.horizontalHeader().setSectionResizeMode(2, QHeaderView.Stretch)
        self.table.setEditTriggers(QAbstractItemView.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectRows)
        self.table.verticalHeader().hide()
        self.table.setToolTip("Double-click a break to see its full stack and explanation")
        self.table.cellDoubleClicked.connect(self.show_break)

        self.notes = QListWidget()
        self.notes.setObjectName("compileWarnings")
        self.notes.setMaximumHeight(110)
        self.notes.setWordWrap(True)

        self.explain_button = QPushButton("Explain current settings")
        self.explain_button.setObjectName("explainButton")
        self.explain_button.setToolTip("Trace the network with torch._dynamo.explain on the worker thread "
                                       "(no training) and list every graph break")
        self.explain_button.clicked.connect(self.explainRequested)

        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(QLabel("Graph breaks"))
        layout.addWidget(self.table, 1)
        layout.addWidget(QLabel("Recompiles, fallbacks and warnings"))
        layout.addWidget(self.notes)
        layout.addWidget(self.explain_button)
        self.breaks: tuple[GraphBreak, ...] = ()
        self.compile_phases: dict[str, float] = {}  # seconds by CompileFinished.phase, of the run shown
        self.run_live = False  # a run is going: its pre-compile trace is not a result
        self.clock = time.monotonic  # tests turn it by hand
        self.compiling_since: float | None = None
        self.ticker = QTimer(self)
        self.ticker.setInterval(1000)
        self.ticker.timeout.connect(self._show_compiling)

    # -- events -------------------------------------------------------------------------------------------------
    def add_events(self, batch: list[Event]) -> None:
        for event in batch:
            if isinstance(event, RunStarted):
                cfg = event.config
                self.clear()
                self.run_live = True
                self.fields["backend"].setText(_backend_text(cfg["backend"], cfg["mode"]))
                self.fields["compiled"].setText("no (eager)" if cfg["backend"] == "eager" else "not yet")
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
                self.run_live = False
                if self.compiling_since is not None:  # failed or stopped before the first step compiled
                    self._stop_compiling()
                    self.fields["compiled"].setText("no (the run ended while compiling)")
                    self.fields["seconds"].setText("—")

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
        self.table.setRowCount(0)
        self.notes.clear()
        self.breaks = ()
        self.compile_phases = {}
        self.run_live = False
        self._stop_compiling()

    def show_report(self, report: CompileReport) -> None:
        """A run's own report, Explain's (which only runs between runs, after clear()), or — during a run — the
        run's trace before it compiles: that one shows the graphs and breaks, while the compile is still counting."""
        pre_compile = self.run_live and report.source == "explain"
        if not pre_compile:
            self.fields["compiled"].setText(("yes" if report.compiled else "no") + (
                " (traced by Explain, not trained)" if report.source == "explain" else ""))
            self.fields["backend"].setText(_backend_text(report.backend, report.mode))
        self.fields["graphs"].setText(str(report.graph_count))
        self.fields["breaks"].setText(str(report.graph_break_count))
        self.fields["breaks"].setStyleSheet("color: #b00020; font-weight: bold;" if report.graph_break_count else "")
        self.fields["ops"].setText(str(report.op_count))
        if not pre_compile:  # during the compile its seconds so far stay
            self.fields["seconds"].setText(self._seconds_text(report))
        self.fields["recompiles"].setText(str(len(report.recompiles)))
        self.breaks = report.breaks
        self.table.setRowCount(len(report.breaks))
        for row, brk in enumerate(report.breaks):
            source = brk.frames[-1].source if brk.frames else ""
            where = f"{Path(brk.frames[-1].file).name}:{brk.frames[-1].line}" if brk.frames else brk.where
            cells = ((brk.reason.splitlines()[0] if brk.reason else "?", brk.reason),
                     (where, brk.where), (source, source))
            for col, (text, tip) in enumerate(cells):
                item = QTableWidgetItem(text)
                item.setToolTip(tip)
                self.table.setItem(row, col, item)
        self.notes.clear()
        for recompile in report.recompiles:
            self._note(f"↻ recompile — {recompile}")
        for warning in report.warnings:
            self._note(f"⚠ {warning}")

    def _seconds_text(self, report: CompileReport) -> str:
        if report.source == "explain":
            return f"traced in {report.compile_seconds:.2f} s (explain)"
        if self.compile_phases:  # the run's own CompileFinished events: the breakdown (their sum is the report's)
            return _compile_time(self.compile_phases)
        return _compile_time({"train": report.compile_seconds}) if report.compile_seconds else "—"

    def _note(self, text: str) -> None:
        self.notes.addItem(text)

    def show_break(self, row: int, _column: int = 0) -> None:
        if 0 <= row < len(self.breaks):
            dialog = BreakDialog(self.breaks[row], self)
            dialog.setAttribute(Qt.WA_DeleteOnClose)  # one per double-click: freed when closed
            dialog.open()


def _backend_text(backend: str, mode: str) -> str:
    """'inductor · max-autotune'; other backends have no modes."""
    return backend + (f" · {mode}" if backend == "inductor" else "")


PHASE_WORDS = {"eval": "eval graph", "cudagraph recording": "CUDA-graph recording"}


def _compile_time(phases: dict[str, float]) -> str:
    """'1.20 s (first step, forward + backward)'; with more phases their sum first, the first step last."""
    first = f"{phases.get('train', 0.0):.2f} s (first step, forward + backward)"
    others = [f"{PHASE_WORDS.get(phase, phase)} {seconds:.2f} s" for phase, seconds in phases.items()
              if phase != "train"]
    if not others:
        return first
    return f"{sum(phases.values()):.2f} s in all: " + ", ".join(others) + f", {first}"


class BreakDialog(QDialog):
    """The user stack of one graph break (innermost last) and Dynamo's full explanation and hints."""

    def __init__(self, brk: GraphBreak, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("breakDialog")
        self.setWindowTitle(f"Graph break at {brk.where}")
        text = QPlainTextEdit()
        text.setReadOnly(True)
        lines = ["User stack (innermost last):"]
        for frame in brk.frames:
            lines.append(f'  File "{frame.file}", line {frame.line}, in {frame.function}')
            if frame.source:
                lines.append(f"    {frame.source}")
        lines += ["", "Why:", brk.reason]
        text.setPlainText("\n".join(lines))
        self.text = text
        buttons = QDialogButtonBox(QDialogButtonBox.Close)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(text)
        layout.addWidget(buttons)
        self.resize(760, 420)
