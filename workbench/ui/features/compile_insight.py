"""What the compiler will do with the form's model, asked before a run: Explain (every graph and graph break),
a fix-it card's Check with fullgraph, Compare numerics (eager against compiled on one batch), and the What-if
forecast of the recompiles a run will hit. The first three are kernel jobs (they reset Dynamo, so never in a training
process); the forecast is computed here, from the split sizes the window has seen (a preview or an earlier run).
And after a compiled run, what it compiled to: the code Inductor wrote, read from the run's trace off the GUI thread
(a long run's trace is megabytes), with the kernel times of the run's profile when it has one."""

from __future__ import annotations

from typing import Callable

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QApplication

from ...core.ground.answers import FullgraphCheck
from ...core.ground.errors import with_hint
from ...core.ground.events import CompileReport, RunFailed
from ...core.ground.inductor_code import read_inductor_code
from ...core.ground.numerics import NumericsReport
from ..actions import ActionSpec
from ..dialogs.numerics import NumericsDialog
from ..panels.compile.code import CompiledCodeDialog
from ..window_state import DataChoice
from .parts import WindowParts

EXPLAINING = "explaining"  # the task slot of Explain, Check with fullgraph and Compare numerics: the form waits
READING_CODE = "reading compiled code"
NO_TRACE = ("This run did not record its compile trace, where the code comes from: turn on \u201crecord compile "
            "trace (tlparse)\u201d under Compile in Setup, and train again.")


class CompileInsight(QObject):
    # For tests and scripts, each job's outcome once shown
    explainFinished = Signal(object)  # a CompileReport, or a RunFailed saying why there is none
    fullgraphChecked = Signal(object)  # a FullgraphCheck, or the error that stopped it
    numericsCompared = Signal(object)  # a NumericsReport, or the error that stopped it
    codeShown = Signal(object)  # the CompiledCodeDialog, once it shows the run's code (or why there is none)

    def __init__(self, parts: WindowParts, *, preview: Callable[[DataChoice], None]):
        """`preview(choice)`: ask for a dataset preview (the forecast's split sizes)."""
        panels = parts.panels
        super().__init__(panels.compile)
        self.kernel, self.state, self.feedback, self.setup, self.panel = parts.kernel, parts.state, parts.feedback, \
            panels.setup, panels.compile
        self.config_for, self.show, self.preview = parts.config_for, lambda: parts.show_dock("compile"), preview
        self.training = lambda: parts.runner.training
        self.changed, self.profile, self.window = parts.changed, lambda: panels.profile.report, parts.window
        self.form_ready, self.show_dock = parts.form_ready, parts.show_dock
        self.numerics_dialog: NumericsDialog | None = None
        self.code_dialog: CompiledCodeDialog | None = None
        panel = panels.compile
        panel.explainRequested.connect(self.explain)
        panel.fullgraphRequested.connect(self.check_fullgraph)
        panel.numericsRequested.connect(self.compare_numerics)
        panel.codeRequested.connect(self.show_code)
        panel.settingRequested.connect(panels.setup.set_value)
        panel.tabs.currentChanged.connect(lambda _index: self.update_forecast())
        panels.setup.changed.connect(self.update_forecast)
        panels.plots.timeline.stepsClicked.connect(self.show_steps)

    def actions(self) -> tuple[ActionSpec, ...]:
        return (ActionSpec("explain", "Explain compile", self.explain, "Run", 30, "Ctrl+E", toolbar=30,
                           enabled=self.form_ready, name="explainAction"),
                ActionSpec("numerics", "Compare numerics", self.compare_numerics, "Run", 40, "Ctrl+Shift+D",
                           enabled=self.form_ready, name="numericsAction"))

    def refresh(self) -> None:
        """The Compile dock's own buttons for the same jobs, enabled as the actions are."""
        ready = self.form_ready()
        self.panel.explain_button.setEnabled(ready)
        self.panel.numerics_button.setEnabled(ready)

    @property
    def busy(self) -> bool:
        return self.kernel.tasks.busy(EXPLAINING)

    # -- Explain --------------------------------------------------------------------------------------------------
    def explain(self) -> None:
        config = self.config_for("explain")
        if config is None:
            return
        self.kernel.ask(EXPLAINING, self.kernel.service.explain(config), self._explained, self._explain_failed)
        self.feedback.busy("Explaining…")
        self.panel.clear()
        self.show()
        self.changed()

    def _explained(self, report: CompileReport) -> None:
        self.panel.show_report(report)
        self.feedback.note("warning" if report.graph_break_count else "info",
                           f"explain: {report.graph_count} graph(s), {report.graph_break_count} graph break(s)")
        self._explain_ended(report)

    def _explain_failed(self, error: BaseException) -> None:
        self.feedback.show("error", f"Explain failed: {error}")
        self.feedback.note("error", f"explain failed: {error}")
        self._explain_ended(RunFailed(kind=getattr(error, "kind", "internal"), message=str(error)))

    def _explain_ended(self, outcome: CompileReport | RunFailed) -> None:
        self.feedback.settled()
        self.changed()
        self.explainFinished.emit(outcome)

    # -- Check with fullgraph -------------------------------------------------------------------------------------
    def check_fullgraph(self) -> None:
        """A fix-it card's *Check with fullgraph*: compile the form's model with fullgraph=True in the kernel."""
        config = self.config_for("check with fullgraph")
        if config is None:
            return
        self.kernel.ask(EXPLAINING, self.kernel.service.check_fullgraph(config), self._fullgraph_checked,
                        self._fullgraph_failed)
        self.feedback.busy("Checking with fullgraph…")

    def _fullgraph_checked(self, check: FullgraphCheck) -> None:
        self.panel.show_fullgraph(check)
        self.feedback.settled()
        self.fullgraphChecked.emit(check)

    def _fullgraph_failed(self, error: BaseException) -> None:
        self.panel.show_fullgraph_error(error)
        self.feedback.settled()
        self.fullgraphChecked.emit(error)

    # -- Compare numerics ------------------------------------------------------------------------------------------
    def compare_numerics(self) -> None:
        """The form's model, one batch, eager against compiled in the kernel: the table, in a dialog of its own."""
        config = self.config_for("compare numerics")
        if config is None:
            return
        if not config.compiled:
            self.feedback.show("warning", "Compare numerics holds compiled against eager: choose a compiled backend "
                                          "(inductor, aot_eager) under Compile in Setup first.")
            return
        dialog = self._numerics_dialog()
        precision = "fp32" if config.amp == "off" else f"{config.amp} autocast (and against fp32)"
        dialog.show_running(f"{config.backend} · {precision}")
        dialog.show()
        dialog.raise_()
        self.kernel.ask(EXPLAINING, self.kernel.service.compare_numerics(config), self._numerics_compared,
                        self._numerics_failed)
        self.feedback.busy("Comparing numerics…")
        self.changed()

    def _numerics_dialog(self) -> NumericsDialog:
        if self.numerics_dialog is None:
            self.numerics_dialog = NumericsDialog(self.window)
            self.numerics_dialog.sourceRequested.connect(self._copy_source)
        return self.numerics_dialog

    def _numerics_compared(self, report: NumericsReport) -> None:
        self._numerics_dialog().show_report(report)
        self.feedback.note("info" if report.passed else "warning", f"numerics: {report.verdict()}")
        self._numerics_ended(report)

    def _numerics_failed(self, error: BaseException) -> None:
        self._numerics_dialog().show_error(with_hint(error))
        self.feedback.note("error", f"compare numerics failed: {error}")
        self._numerics_ended(error)

    def _numerics_ended(self, outcome: object) -> None:
        self.feedback.settled()
        self.changed()
        self.numericsCompared.emit(outcome)

    def _copy_source(self, file: str, line: int) -> None:
        """A row's source line, as editors take it ("model.py:29"): copied, never opened (a .py may run)."""
        QApplication.clipboard().setText(f"{file}:{line}")
        self.feedback.note("info", f"copied {file}:{line}")

    # -- The code Inductor wrote ------------------------------------------------------------------------------------
    def show_code(self, trace: str) -> None:
        """The Compile panel's Code…: the code dialog (one, kept) reads the run's trace (`trace`; "" when it
        recorded none); a second click while it reads supersedes the first (one task slot)."""
        if self.code_dialog is None:
            self.code_dialog = CompiledCodeDialog(self.window)
        dialog = self.code_dialog
        dialog.show()
        dialog.raise_()
        if not trace:
            dialog.view.show_problem(NO_TRACE, ("Turn on the compile trace in Setup", lambda: self._trace_on(dialog)))
            self.codeShown.emit(dialog)
            return
        dialog.view.show_problem(f"Reading the compile trace {trace}…")
        profile = self.profile()

        def shown(code) -> None:
            dialog.view.show_code(code, profile)
            self.codeShown.emit(dialog)

        def failed(error: BaseException) -> None:
            dialog.view.show_problem(with_hint(error))
            self.codeShown.emit(dialog)

        self.kernel.tasks.submit(READING_CODE, lambda: read_inductor_code(trace), shown, failed)

    def _trace_on(self, dialog: CompiledCodeDialog) -> None:
        """The fix the empty Code… window offers: the setting ticked in the form, the form in front (Train next)."""
        dialog.close()
        self.setup.set_value("compile_trace", True)
        self.show_dock("setup")
        self.setup.show_setting("compile_trace")
        self.feedback.note("info", "compile trace on: the next run records the code torch.compile writes")

    # -- What-if ----------------------------------------------------------------------------------------------------
    def update_forecast(self) -> None:
        """The What-if tab, while it is on show: the recompiles the form's settings will hit on the chosen data.
        The split sizes come from a preview (asked for here once per local dataset choice) or an earlier run."""
        if self.panel.tabs.currentWidget() is not self.panel.forecast or self.training():
            return
        config = self.setup.valid_config()
        if config is None:
            return
        choice = (config.dataset, config.data_root)
        sizes = self.state.split_sizes.get(choice)
        if sizes is not None:
            self.panel.show_forecast(config, *sizes, world_size=self.setup.processes())
        elif self.state.sizes_to_ask(choice, self.kernel.capabilities.known):
            self.preview(choice)

    def show_steps(self, steps: tuple[int, ...]) -> None:
        """A timeline marker on the loss plot was clicked: its events in the Compile panel."""
        self.show()
        self.panel.select_steps(steps)
