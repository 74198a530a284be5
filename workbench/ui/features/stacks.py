"""A run of several processes that stops stepping: the Ranks tab says so after HANG_AFTER_S without a step
(core/ground/hang.py) and offers *Collect stacks*, as Kernel → Collect stacks does at any time while such a run
trains: every rank on every host is asked for its stack and last collectives (core/run/stacks.py, over SSH for a
host's ranks) off the GUI thread, and the answers are shown side by side (dialogs/stacks.py)."""

from __future__ import annotations

from PySide6.QtCore import QObject, QTimer

from ...core.ground.errors import with_hint
from ...core.ground.events import Event, RunFailed, RunFinished
from ...core.ground.hang import HANG_AFTER_S, StepWatch
from ...core.ground.stacks import RankStack, StacksView
from ..actions import ActionSpec
from ..dialogs.stacks import StacksDialog
from .parts import WindowParts
from .training import Training

SLOT = "collecting the ranks' stacks"
CHECK_MS = 1000


class Stacks(QObject):
    def __init__(self, parts: WindowParts, training: Training, *, hang_after_s: float = HANG_AFTER_S):
        super().__init__(parts.window)
        self.window, self.runner, self.tasks, self.feedback = parts.window, parts.runner, parts.tasks, parts.feedback
        self.ranks = parts.panels.plots.ranks
        self.watch = StepWatch(hang_after_s)
        self.timer = QTimer(self)
        self.timer.setInterval(CHECK_MS)
        self.timer.timeout.connect(self.check)
        self.dialog: StacksDialog | None = None  # the latest, for tests and scripts
        self.ranks.collectRequested.connect(self.collect)
        parts.runner.events.connect(self.saw)
        training.runFinished.connect(self.ended)

    def actions(self) -> tuple[ActionSpec, ...]:
        return (ActionSpec("collect_stacks", "Collect stacks", lambda: self.collect(), "Kernel", 50, "Ctrl+Shift+T",
                           enabled=lambda: self.runner.stackable, name="collectStacksAction"),)

    def saw(self, batch: list[Event]) -> None:
        for event in batch:
            self.watch.saw(event)
        if self.watch.last is not None and not self.watch.said:
            self.ranks.stepping()
            if self.runner.stackable and not self.timer.isActive():
                self.timer.start()

    def check(self) -> None:
        silent = self.watch.hung()
        if silent is not None:
            self.ranks.hung(silent)
            self.feedback.note("warning", f"no step for {silent:.0f} s: a rank may be stuck (Ranks tab → Collect "
                                          "stacks)")

    def ended(self, _result: RunFinished | RunFailed) -> None:
        self.timer.stop()
        self.watch = StepWatch(self.watch.after_s)
        self.ranks.stepping()

    def collect(self) -> bool:
        """Ask every rank for its stack; False when no run of several processes is training."""
        if not self.runner.stackable:
            self.feedback.show("warning", "Collect stacks asks the ranks of a run of several processes: none is "
                                          "training.")
            return False
        self.feedback.busy("Collecting every rank's stack…")
        return self.tasks.submit(SLOT, self.runner.collect_stacks, self.show, self._failed, exclusive=True)

    def show(self, stacks: list[RankStack]) -> StacksDialog:
        self.feedback.settled()
        view = StacksView.of(stacks)
        self.feedback.note("info", f"stacks: {view.summary()}")
        self.dialog = StacksDialog(view, self.window)
        self.dialog.open()
        return self.dialog

    def _failed(self, error: BaseException) -> None:
        self.feedback.settled()
        self.feedback.show("error", f"Could not collect the stacks: {with_hint(error)}")
