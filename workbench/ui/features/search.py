"""Searching the settings from the window: the LR range test and the batch-size finder (Run → Find …), each a
cancellable kernel job drawn live in its dialog, and sweeps (Run → Sweep…), whose trials are runs of their own."""

from __future__ import annotations

from concurrent.futures import Future
from typing import Callable, NamedTuple

from PySide6.QtCore import QObject, Signal

from ...core.ground.config import TrainConfig, label_of, setup_label
from ...core.ground.errors import WorkbenchError, with_hint
from ...core.run.service import ServiceClient
from ...core.history.runs import RunRecord
from ..actions import ActionSpec
from ..dialogs.finders import BatchFinderDialog, FinderDialog, LrFinderDialog
from ..support.form_errors import form_text
from .parts import WindowParts


class Finder(NamedTuple):
    start: Callable[[ServiceClient, TrainConfig, Callable], Future]  # its measurement in the kernel
    dialog: type[FinderDialog]
    setting: str  # what its suggestion sets in the form
    action: str  # "find a learning rate": what failed, in words
    slot: str  # its task slot: one measurement of each kind at a time


FINDERS = {"lr": Finder(ServiceClient.find_lr, LrFinderDialog, "lr", "find a learning rate", "finding an LR"),
           "batch": Finder(ServiceClient.find_batch_size, BatchFinderDialog, "batch_size", "find a batch size",
                           "finding a batch size")}


class Search(QObject):
    finderDone = Signal(str, object)  # a finder's kind and its finding, or the error (None: stopped while queued)

    def __init__(self, parts: WindowParts, queue):
        """`queue`: the window's Queue feature, which a sweep's trials and the seeds are lined up in."""
        super().__init__(parts.window)
        self.queue = queue
        panels = parts.panels
        self.kernel, self.tasks, self.feedback, self.setup = parts.kernel, parts.tasks, parts.feedback, panels.setup
        self.theme = lambda: panels.plots.theme  # the plots' colours now (light or dark)
        self.window, self.config_for = parts.window, parts.config_for
        self.db = parts.db
        self.trial_ended = panels.runs.refresh  # a sweep's trial is a new run in the history
        self.finder_dialogs: dict[str, FinderDialog] = {}  # Run → Find …'s, each made on first use
        self.sweep_dialog = None  # Run → Sweep…'s SweepDialog, made on first use (a sweep outlives its closing)
        self.seeds_dialog = None  # Repeat with seeds…'s SeedsDialog, made on first use (as the sweep's)
        panels.runs.repeatRequested.connect(self.open_seeds)
        self.setup.finderRequested.connect(self.open_finder)

    def actions(self) -> tuple[ActionSpec, ...]:
        return (ActionSpec("lr_finder", "Find learning rate…", lambda: self.open_finder("lr"), "Run", 60, "Ctrl+L",
                           name="lrFinderAction"),
                ActionSpec("batch_finder", "Find batch size…", lambda: self.open_finder("batch"), "Run", 70, "Ctrl+B",
                           name="batchFinderAction"),
                ActionSpec("sweep", "Sweep…", self.open_sweep, "Run", 80, "Ctrl+Shift+W", name="sweepAction"))

    # -- the finders ------------------------------------------------------------------------------------------------
    def open_finder(self, kind: str) -> FinderDialog | None:
        """Run → Find learning rate… / Find batch size… (`kind`: a key of FINDERS): one dialog of each per window
        (a measurement still running answers into it), for the form's settings; *Use* puts the suggestion into the
        form."""
        finder = FINDERS[kind]
        config = self.config_for(finder.action)
        if config is None:
            return None
        dialog = self.finder_dialogs.get(kind)
        if dialog is None:
            dialog = self.finder_dialogs[kind] = finder.dialog(self.theme(), self.window)
            dialog.startRequested.connect(lambda: self.run_finder(kind))
            dialog.stopRequested.connect(lambda: self.kernel.cancel(finder.slot))
            dialog.useRequested.connect(lambda value: self._use_suggestion(kind, value))
        dialog.describe(f"{config.optimizer}, batch {config.batch_size}, lr {config.lr:g}, "
                        f"{setup_label(config.to_dict())}")
        dialog.show()
        dialog.raise_()
        return dialog

    def run_finder(self, kind: str) -> None:
        """The finder's measurement in the kernel with the form's settings; each point is drawn as it comes back."""
        finder, dialog = FINDERS[kind], self.finder_dialogs[kind]
        config = self.config_for(finder.action)
        if config is None:  # the form was changed behind the dialog
            dialog.show_error("a setting in the Setup form needs fixing first (the banner says which)")
            return

        def found(finding) -> None:
            dialog.show_finding(finding)
            self.finderDone.emit(kind, finding)

        def failed(error: BaseException) -> None:
            dialog.show_error(with_hint(error))
            self.feedback.note("error", f"{finder.action} failed: {with_hint(error)}")
            self.finderDone.emit(kind, error)

        def cancelled() -> None:  # stopped while still queued: nothing was measured
            dialog.show_cancelled()
            self.finderDone.emit(kind, None)

        future = finder.start(self.kernel.service, config, self.kernel.on_gui_thread(dialog.add_point))
        self.kernel.ask(finder.slot, future, found, failed, cancelled)

    def _use_suggestion(self, kind: str, value: float) -> None:
        setting = FINDERS[kind].setting
        self.setup.set_value(setting, int(value) if setting == "batch_size" else value)
        self.feedback.note("info", f"{label_of(setting)} set to {value:g} (the finder's suggestion)")

    # -- sweeps -------------------------------------------------------------------------------------------------------
    def open_sweep(self):
        """Run → Sweep…: one dialog per window, its trials the form's settings with some sampled; each trial that
        ends is a run in the Runs dock."""
        from ..dialogs.sweep import SweepDialog  # Optuna is imported on first use, not with the window

        if self.sweep_dialog is None:
            self.sweep_dialog = SweepDialog(self.tasks, self.queue, self.theme(), self.setup.config, self.db,
                                            self.window)
            self.sweep_dialog.trialEnded.connect(lambda _trial: self.trial_ended())
            self.sweep_dialog.useSettings.connect(self._use_settings)
        self.sweep_dialog.show()
        self.sweep_dialog.raise_()
        return self.sweep_dialog

    def _use_settings(self, params: dict) -> None:
        """The best trial's settings into the form (those the form does not show, dropout or weight decay, too)."""
        try:
            config = self.setup.config().replace(**params)
        except WorkbenchError as exc:
            self.feedback.show("error", f"The best trial's settings do not fit the form: {form_text(exc)}")
            return
        self.setup.set_config(config)
        changed = ", ".join(f"{label_of(name)} {value:g}" if isinstance(value, float) else f"{label_of(name)} {value}"
                            for name, value in params.items())
        self.feedback.note("info", f"the best trial's settings are in the form: {changed}")

    # -- seeds --------------------------------------------------------------------------------------------------------
    def open_seeds(self, record: RunRecord):
        """Runs dock → Repeat with seeds…: one dialog per window, for `record`'s settings; each seed's run that ends is
        a run in the Runs dock."""
        from ..dialogs.seeds import SeedsDialog

        if self.seeds_dialog is None:
            self.seeds_dialog = SeedsDialog(self.tasks, self.queue, self.db, self.window)
            self.seeds_dialog.runEnded.connect(lambda _run: self.trial_ended())
        self.seeds_dialog.set_run(record)  # refused while seeds run: the dialog says so
        self.seeds_dialog.show()
        self.seeds_dialog.raise_()
        return self.seeds_dialog
