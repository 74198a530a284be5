"""What the compiler will do with the form's model, asked before a run: Explain (every graph and graph break),
a fix-it card's Check with fullgraph, and the What-if forecast of the recompiles a run will hit. The first two are
kernel jobs (they reset Dynamo, so never in a training process); the forecast is computed here, from the split sizes
the window has seen (a preview or an earlier run)."""

from __future__ import annotations

from typing import Callable

from PySide6.QtCore import QObject, Signal

from ..core.ground.answers import FullgraphCheck
from ..core.ground.config import TrainConfig
from ..core.ground.events import CompileReport, RunFailed
from .feedback import Feedback
from .kernel import Kernel
from .panels.compile import CompilePanel
from .panels.setup import SetupPanel
from .window_state import DataChoice, WindowState

EXPLAINING = "explaining"  # the task slot of Explain and Check with fullgraph: the form waits while one is out


class CompileInsight(QObject):
    # For tests and scripts, each job's outcome once shown
    explainFinished = Signal(object)  # a CompileReport, or a RunFailed saying why there is none
    fullgraphChecked = Signal(object)  # a FullgraphCheck, or the error that stopped it

    def __init__(self, kernel: Kernel, state: WindowState, feedback: Feedback, setup: SetupPanel,
                 panel: CompilePanel, *, config_for: Callable[[str], TrainConfig | None],
                 show: Callable[[], None], preview: Callable[[DataChoice], None], training: Callable[[], bool],
                 changed: Callable[[], None]):
        """`config_for(action)`: the form's config, or None with the reason shown; `show()`: raise the Compile dock;
        `preview(choice)`: ask for a dataset preview (the forecast's split sizes); `training()`: a run is alive."""
        super().__init__(panel)
        self.kernel, self.state, self.feedback, self.setup, self.panel = kernel, state, feedback, setup, panel
        self.config_for, self.show, self.preview, self.training = config_for, show, preview, training
        self.changed = changed

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

    def show_step(self, step: int) -> None:
        """A timeline marker on the loss plot was clicked: its events in the Compile panel."""
        self.show()
        self.panel.select_step(step)
