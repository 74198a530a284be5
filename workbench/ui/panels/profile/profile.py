"""Profile panel: where the time and the memory go, over the steady steps torch.profiler watched.

A header (which steps, on what, how big the trace is) with a button to its folder above four tabs:
*Ops* (the op table, sortable by number, filtered by name and by compiled region, with each region's share of the
self time), *Timeline* (the profiled steps as bars, one row per CPU thread and GPU stream, nested by depth),
*Memory* (the categories stacked over time, the peak, and the largest allocations with their stacks) and *AMP*
(what autocast ran in low precision, the fp16 loss scale over the steps and the steps whose gradients overflowed).
Each tab is its own module (profile_ops, profile_timeline, profile_memory, profile_amp); this one routes the events
to them and keeps the header.

A ProfileReport arrives once per run and is drawn whole. Steps and AmpSkipped arrive during training, at up to
hundreds a second: they only append to buffers, and a ~4 Hz timer draws what changed.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Callable

from PySide6.QtCore import Qt, QTimer, QUrl, Signal
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import (QHBoxLayout, QLabel, QPushButton, QSizePolicy, QSpinBox, QTabWidget, QVBoxLayout,
                               QWidget)

from ....core.ground.events import AmpReport, AmpSkipped, Event, ProfileReport, Step
from ..plots.style import DARK, LIGHT, style_plot
from .amp import AmpTab
from .memory import MemoryTab
from .ops import WARNING, OpsTab
from .timeline import TimelineTab

REDRAW_MS = 250  # Steps and skipped steps are drawn at most ~4 times a second
EMPTY_TEXT = ("No profile yet: set <b>Profile steps</b> in the Setup panel (or run <code>workbench profile</code>), "
              "then train.")
REQUEST_STEPS = 20  # Profile now's default window
PROBLEM_CHARS = 80  # the header stays short: a longer problem is cut, whole in the tooltip


def format_bytes(n: float) -> str:
    """A file's size in the decimal units file managers use: '812 B', '81.2 kB', '1.4 MB', '2.1 GB'."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(n) >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n:.0f} B"


def header_text(report: ProfileReport) -> str:
    """The header's words (plain text): 'Steps 12–31 profiled (cpu) · trace 1.4 MB · trimmed: memory events'."""
    steps = (f"Steps {report.first_step}–{report.last_step}" if report.last_step != report.first_step
             else f"Step {report.first_step}")
    parts = [f"{steps} profiled ({report.device})",
             f"trace {format_bytes(report.trace_bytes)}" if report.trace else "no trace written"]
    if report.trimmed:
        parts.append(f"trimmed: {report.trimmed}")
    return " · ".join(parts)


def _parts(tab: str, *names: str) -> tuple[property, ...]:
    """Panel attributes that read parts of one of its tabs (the main window and the tests reach them there)."""
    return tuple(property(lambda panel, name=name: getattr(getattr(panel, tab), name)) for name in names)


class ProfilePanel(QWidget):
    """Where the time and the memory go: `add_event(s)` takes ProfileReport, AmpReport, AmpSkipped and Step (the
    others are ignored); `clear()` before a new run. *Profile now* asks the running run for a profile of its next
    steps (`profileRequested`); `set_running` says whether there is one to ask."""

    profileRequested = Signal(int)

    ops_view, ops_model, ops_proxy, op_filter, region_filter, region_totals = _parts(
        "ops_tab", "view", "model", "proxy", "op_filter", "region_filter", "region_totals")
    timeline_plot, timeline_info, timeline_hint, timeline_bars, step_labels, lanes, span_under = _parts(
        "timeline_tab", "plot", "info", "hint", "bars", "step_labels", "lanes", "span_under")
    memory_plot, memory_curves, memory_fills, peak_line, stack, memory_caption = _parts(
        "memory_tab", "plot", "curves", "fills", "peak_line", "stack", "caption")
    largest_table, largest_model, open_snapshot = _parts("memory_tab", "largest_table", "largest_model",
                                                         "open_snapshot")
    amp, amp_recommendation, amp_body, scale_plot, scale_curve, skip_points, scale_note = _parts(
        "amp_tab", "report", "recommendation", "body", "scale_plot", "scale_curve", "skip_points", "scale_note")
    skipped_table, skipped_model, skipped_count, census_table, census_model, census_groups = _parts(
        "amp_tab", "skipped_table", "skipped_model", "skipped_count", "census_table", "census_model", "census_groups")
    scale, skips, last_step = _parts("amp_tab", "scale", "skips", "last_step")

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("profilePanel")
        self.theme = LIGHT
        self.report: ProfileReport | None = None
        # locate(path, then): `then` gets the file's path on this computer (the window copies a host's file back)
        self.locate: Callable[[str, Callable[[str], None]], None] = lambda path, then: then(path)

        self.header = QLabel()
        self.header.setObjectName("profileHeader")
        self.header.setTextFormat(Qt.RichText)
        # A row of its own, wrapped: beside the buttons a 1366-px screen's dock left it ~60 px ("No profi").
        self.header.setWordWrap(True)
        self.header.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Preferred)  # never widens the dock
        self.open_trace = QPushButton("Open trace folder")
        self.open_trace.setObjectName("openTraceButton")
        self.open_trace.clicked.connect(lambda: self._open_folder(self.report.trace if self.report else ""))
        self.request_steps = QSpinBox()
        self.request_steps.setObjectName("profileStepsRequest")
        self.request_steps.setAccessibleName("Steps to profile now")
        self.request_steps.setRange(1, 1000)
        self.request_steps.setValue(REQUEST_STEPS)
        self.request_steps.setSuffix(" steps")
        self.profile_now = QPushButton("Profile now")
        self.profile_now.setObjectName("profileNowButton")
        self.profile_now.clicked.connect(lambda: self.profileRequested.emit(self.request_steps.value()))
        self.set_running(False)
        top = QHBoxLayout()
        top.addWidget(self.request_steps)
        top.addWidget(self.profile_now)
        top.addWidget(self.open_trace)
        top.addStretch(1)

        self.ops_tab = OpsTab()
        self.timeline_tab = TimelineTab()
        self.memory_tab = MemoryTab(self._open_folder)
        self.amp_tab = AmpTab()
        self.tabs = QTabWidget()
        self.tabs.setObjectName("profileTabs")
        for widget, title, tip in (
                (self.ops_tab, "Ops", "Every op of the profiled steps, heaviest first: sort, filter by name, group "
                                      "by compiled region"),
                (self.timeline_tab, "Timeline", "The profiled steps on a time axis: one row per CPU thread and GPU "
                                                "stream, compiled regions, ops and kernels as bars"),
                (self.memory_tab, "Memory", "Memory by category over the profiled steps, the peak, and the largest "
                                            "allocations with the code that made them"),
                (self.amp_tab, "AMP", "Mixed precision: which ops autocast ran in bf16/fp16, the fp16 loss scale "
                                      "and the steps it skipped")):
            self.tabs.setTabToolTip(self.tabs.addTab(widget, title), tip)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.header)
        layout.addLayout(top)
        layout.addWidget(self.tabs, 1)

        self.timer = QTimer(self)
        self.timer.setSingleShot(True)
        self.timer.setInterval(REDRAW_MS)
        self.timer.timeout.connect(self.redraw)
        self.clear()
        self.set_dark(False)

    # -- events -------------------------------------------------------------------------------------------------
    def add_events(self, batch: list[Event]) -> None:
        for event in batch:
            self.add_event(event)

    def add_event(self, event: Event) -> None:
        if isinstance(event, (Step, AmpSkipped)):  # first: hundreds a second; only buffered here, drawn by the timer
            if self.amp_tab.append(event) and not self.timer.isActive():
                self.timer.start()
        elif isinstance(event, ProfileReport):
            self.show_report(event)
        elif isinstance(event, AmpReport):
            self.show_amp(event)

    def redraw(self) -> None:
        """Draw what Steps and AmpSkipped added since the last time (the timer calls it; tests may too)."""
        self.timer.stop()
        self.amp_tab.redraw()

    def set_running(self, running: bool) -> None:
        """Profile now is for a run that is training (in one process: several plan their steps together)."""
        self.profile_now.setEnabled(running)
        self.request_steps.setEnabled(running)
        if not running:
            self.profile_now.setToolTip("Start a run (Train) to profile its next steps on request; or set Profile "
                                        "steps in the Setup panel before training")
        else:
            self.profile_now.setToolTip("Profile the running run's next steps (after its compile and warm-up): the "
                                        "op table, timeline and memory appear here when they are done")

    def clear(self) -> None:
        """Empty, as before any run (a new run starts)."""
        self.timer.stop()
        self.report = None
        self.header.setText(EMPTY_TEXT)
        self.header.setToolTip("torch.profiler watches a few steady steps of the run: the op table, a timeline, "
                               "memory by category and a trace for Perfetto")
        self.open_trace.setEnabled(False)
        self.open_trace.setToolTip("Open the folder of trace.json.gz: open it in ui.perfetto.dev or "
                                   "chrome://tracing (after a profiled run)")
        self.ops_tab.clear()
        self.timeline_tab.clear()
        self.memory_tab.clear()  # and the largest allocations
        self.amp_tab.clear()

    # -- the profile ----------------------------------------------------------------------------------------------
    def show_report(self, report: ProfileReport) -> None:
        self.report = report
        words = header_text(report)
        text = html.escape(words)
        if report.problem:
            cut = report.problem if len(report.problem) <= PROBLEM_CHARS else report.problem[:PROBLEM_CHARS] + "…"
            text += f' · <span style="color:{WARNING}">⚠ {html.escape(cut)}</span>'
        self.header.setText(text)
        cost = report.summary.cost
        profiled, steady = cost.profiled_step_ms, cost.steady_step_ms
        slower = (f"\nA profiled step took {profiled:.2f} ms (median), a steady one {steady:.2f} ms: the profiler's "
                  f"own cost" if profiled is not None and steady is not None else "")
        self.header.setToolTip(words + slower + (f"\n⚠ {report.problem}" if report.problem else ""))
        self.open_trace.setEnabled(bool(report.trace))
        self.open_trace.setToolTip(
            f"Open the folder of {Path(report.trace).name}: open the file in ui.perfetto.dev or chrome://tracing\n"
            f"{report.trace}" if report.trace else
            "No trace was written for this profile" + (f": {report.problem}" if report.problem else ""))
        self.ops_tab.show_summary(report.summary)
        self.timeline_tab.show_summary(report.summary, report.first_step)
        self.memory_tab.show_memory(report.memory, report.first_step, report.snapshot)

    def show_amp(self, report: AmpReport) -> None:
        self.amp_tab.show_report(report)

    # -- the rest -------------------------------------------------------------------------------------------------
    def show_tab(self, name: str) -> None:
        """Bring a tab forward by its title ("Ops", "Timeline", "Memory", "AMP"; any case)."""
        for i in range(self.tabs.count()):
            if self.tabs.tabText(i).lower() == name.lower():
                self.tabs.setCurrentIndex(i)
                return
        raise ValueError(f"no tab {name!r}")

    def set_dark(self, dark: bool) -> None:
        """Follow the window's colour scheme: the plots' backgrounds, axes and legends, the step labels."""
        self.theme = DARK if dark else LIGHT
        for plot in (self.timeline_plot, self.memory_plot, self.scale_plot):
            style_plot(plot, self.theme)
        self.timeline_tab.set_theme(self.theme)

    def _open_folder(self, path: str) -> None:
        """Show the folder of the trace or snapshot `path`, once `locate` has found it on this computer (a run on
        another host wrote it there: it is copied here first)."""
        if path:
            self.locate(path, lambda here: QDesktopServices.openUrl(QUrl.fromLocalFile(str(Path(here).parent))))
