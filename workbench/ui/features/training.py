"""The run the window trains: Train (or a run continued from a recorded one), Stop, Profile now, its events into
the plots and panels as they come, and its end (the failure said, or the trained model opened for Predict).
A Train pressed before PyTorch is ready waits for it, queued, not refused. The run itself is RunControl's: a
kernel process of its own (run_control.py).

The plots name the run as the Runs dock does ('#7'), and a continued run's plots show its parent's curves before
its own steps, which go on from the parent's (the continuation's events hold only its own)."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import QInputDialog, QStyle

from ...core.ground.config import TrainConfig
from ...core.ground.errors import WorkbenchError
from ...core.ground.events import Event, RunFailed, RunFinished, RunStarted
from ...core.ground.progress import Progress, failure_line
from ...core.ground.results_text import headline
from ...core.history.naming import run_name
from ...core.run.hosts.preflight import Preflight
from ...core.run.remote.ssh import Remote
from ...core.run.run_request import Launch, RunRequest, new_run_dir
from ..actions import ActionSpec
from ..panels.plots.hints import STARTING_HINT
from ..panels.runs.runs import LoadedRun
from ..support.form_errors import form_text
from .checkpoints import Checkpoints
from .parts import WindowParts

PARENT_SLOT = "continued-from"  # a continued run's parent's curves: apart from the Runs dock's, which a click drops


class Training(QObject):
    runFinished = Signal(object)  # for tests and scripts: the terminal event of each run, once it is shown

    def __init__(self, parts: WindowParts, checkpoints: Checkpoints, *, started: Callable[[], None]):
        """`started()`: a run has begun (the window saves its settings)."""
        super().__init__(parts.window)
        panels, runner = parts.panels, parts.runner
        self.runner, self.kernel, self.state, self.feedback = runner, parts.kernel, parts.state, parts.feedback
        self.setup, self.plots = panels.setup, panels.plots
        self.profile, self.compile_panel, self.model = panels.profile, panels.compile, panels.layers
        self.runs, self.checkpoints, self.window = panels.runs, checkpoints, parts.window
        self.runs_dir, self.db, self.config_for = parts.runs_dir, parts.db, parts.config_for
        self.show_speed, self.started, self.changed = parts.show_speed, started, parts.changed
        self.busy = parts.busy
        self._out_dir: str | None = None  # the started run's folder: its name in the history is looked up by it
        self._continuing = None  # the RunRecord (without events) the started run continues, if it does
        runner.events.connect(self.on_events)
        runner.runFinished.connect(self.on_run_finished)
        panels.profile.profileRequested.connect(self.profile_now)
        panels.runs.continueRequested.connect(self.continue_run)

    def actions(self) -> tuple[ActionSpec, ...]:
        return (ActionSpec("train", "Train", lambda: self.train(), "Run", 10, "Ctrl+R", QStyle.SP_MediaPlay,
                           toolbar=10, enabled=lambda: not self.busy() and not self.setup.problem_text(),
                           name="trainAction", button="trainButton"),
                ActionSpec("stop", "Stop", self.stop, "Run", 20, Qt.Key_Escape, QStyle.SP_MediaStop, toolbar=20,
                           enabled=lambda: self.runner.training or self.state.train_waiting, name="stopAction",
                           button="stopButton"))

    def refresh(self) -> None:
        """Profile now is offered while the run can take it."""
        self.profile.set_running(self.runner.profilable)

    @property
    def progress(self) -> Progress:
        """The run's progress: one tracker, the plots' headline's, serves the headline and the status bar."""
        return self.plots.headline.progress

    def status_text(self) -> str:
        return "Stopping after this step…" if self.state.stopping else self.progress.describe()

    def kernel_ready(self) -> None:
        """PyTorch is ready: a Train that waited for it starts now."""
        if self.state.train_waiting:
            self.state.train_waiting = False
            self.train()

    # -- starting and stopping ----------------------------------------------------------------------------------
    def run_request(self, config: TrainConfig | None = None) -> RunRequest:
        """The form as a run (or `config`): built and checked against the kernel's machine once, here (a run on a
        host gets its folder there)."""
        out_dir = "" if self.runner.remote is not None else new_run_dir(self.runs_dir)
        return RunRequest.build(config or self.setup.config(), cuda_devices=self.kernel.capabilities.cuda_devices,
                                out_dir=out_dir, db=self.db,
                                launch=Launch(nproc_per_node=self.setup.processes()))

    def train(self, config: TrainConfig | None = None) -> bool:
        """Start a run with the form's settings (or `config`: a continued run); False when it was refused (the
        banner says why, if it can). Before PyTorch is ready the form's run waits for it (queued, not refused)."""
        if self.runner.training:
            return False
        if not self.kernel.capabilities.known and config is None:
            if self.config_for("start") is None:
                return False
            self.state.train_waiting = True
            self.feedback.busy("Train starts when PyTorch is ready…")
            self.changed()
            return True
        try:
            request = self.run_request(config)
        except WorkbenchError as exc:
            self.feedback.show("error", f"Cannot start: {form_text(exc)}")
            return False
        if not self.runner.start(request):
            return False
        self.started()
        self._begun(request.out_dir, "Starting…")
        return True

    def train_across(self, checked: Preflight, hosts: list[Remote], slots: int) -> bool:
        """Start a run of the form's settings across `hosts` (their green preflight `checked`, `slots` processes
        each: Kernel → Hosts of a run…); each host checks the settings against its devices. False while a run is
        alive, or the form cannot run."""
        if self.runner.training:
            return False
        try:
            config = self.setup.config()
        except WorkbenchError as exc:
            self.feedback.show("error", f"Cannot start: {form_text(exc)}")
            return False
        request = RunRequest(config, out_dir="", db=None if self.db is None else str(self.db))
        if not self.runner.start_across(request, hosts, checked, slots):
            return False
        self.started()
        self._begun(None, f"Training on {len(hosts)} hosts: {', '.join(map(str, hosts))}…")
        return True

    def attach(self, key: str) -> bool:
        """Follow the connected host's run `key` from its first event, as a run of this window (Kernel → Runs on
        this host…); False while a run is alive."""
        if not self.runner.attach(key, self.db):
            return False
        self._begun(None, "Attaching…")
        return True

    def _begun(self, out_dir: str | None, status: str) -> None:
        self._out_dir, self._continuing = out_dir, None
        self.state.stopping = False
        self.feedback.banner.hide()
        # The last run's curves and statistics go now, not at this run's first event: a run that fails before it
        # starts must not leave them under its failure (nor "Waiting for the first step…").
        self.plots.reset(STARTING_HINT)
        self.model.clear()
        # This run's rows and statuses come with its own events (the dock lists the history when it ends): the
        # dock's watch for others' runs waits meanwhile, so no listing lands under the user's hands mid-run.
        self.runs.watch.stop()
        self.feedback.busy(status)
        self.changed()

    def continue_run(self, record, epochs: int | None = None) -> bool:
        """Runs dock's Continue training: the run goes on from its checkpoint until epoch `epochs` (asked for when
        not given: a stopped run's planned epochs, else one more than it trained)."""
        if self.runner.training or not self.kernel.capabilities.known:
            self.feedback.show("warning", "Continue a run when no other is training and PyTorch is ready.")
            return False
        config = TrainConfig.from_dict(record.config)
        if epochs is None:
            planned = config.epochs if record.status == "stopped" else config.epochs + 1
            epochs, chosen = QInputDialog.getInt(
                self.window, "Continue training", f"Continue {run_name(record.id)} from its checkpoint until epoch:",
                planned, 1, 100_000)
            if not chosen:
                return False
        started = self.train(config.replace(resume=record.checkpoint, epochs=epochs, max_steps=None))
        if started:
            self._continuing = record
            self.feedback.note("info", f"continuing {run_name(record.id)} until epoch {epochs}")
        return started

    def stop(self) -> None:
        if self.state.train_waiting:
            self.state.train_waiting = False
            self.feedback.settled()
            self.changed()
        elif self.runner.training:
            self.runner.stop()
            self.state.stopping = True
            self.feedback.settled()

    def profile_now(self, steps: int) -> None:
        """Profile Now: the running run profiles its next `steps` steps; the report arrives as its events do."""
        if self.runner.request_profile(steps):
            self.feedback.note("info", f"asked the run to profile its next {steps} steps")

    # -- the run's events ---------------------------------------------------------------------------------------
    def on_events(self, batch: list[Event]) -> None:
        started = None
        for event in batch:
            if isinstance(event, RunStarted):
                started = event
                self.feedback.announce(f"Training started: {event.total_steps:,} steps on {event.device_name}")
                self.state.split_sizes[(event.config.dataset, event.config.data_root)] = (
                    event.train_size, event.val_size)
                self.profile.clear()
        self.plots.add_events(batch)
        if started is not None:  # after the plots took it: RunStarted resets them
            self._name_run(started)
        self.profile.add_events(batch)  # the headline's Progress, the status bar's too, takes the batch here
        self.compile_panel.add_events(batch)
        self.model.add_events(batch)
        self.feedback.log.add_events(batch)
        self.feedback.settled()
        speed = self.progress.samples_per_s  # 0 from RunStarted until the first steady step
        self.show_speed(f"{speed:,.0f} samples/s" if speed else "")

    def _name_run(self, started: RunStarted) -> None:
        """The plots name the run ('#7': its history row is written before its RunStarted is sent), and a
        continuation's plots get its parent's curves, read off the GUI thread (a run's events can be millions of
        rows) and shown if the plots still show this run then."""
        out_dir = self.runner.host_out_dir or self._out_dir  # a run on a host is recorded with its folder there
        self.plots.set_run_name(self.runs.name_for_out_dir(out_dir) if out_dir else None)
        self.state.shown_run = self.runs.id_for_out_dir(out_dir) if out_dir else None
        self.state.compared = ()
        parent = self._continuing
        if parent is None or not started.resumed_step:
            return

        shown = self.plots.shown_at  # the plots reset for this run: a later reset means they show another

        def show(runs: list[LoadedRun]) -> None:
            if self.plots.shown_at == shown:
                self.plots.show_parent(run_name(parent.id), runs[0].curves)

        self.runs.load_runs([parent.id], show, slot=PARENT_SLOT)

    def on_run_finished(self, result) -> None:
        """The terminal event itself already came, last in its batch, through on_events."""
        self.state.stopping = False
        self.feedback.settled()
        if isinstance(result, RunFailed):
            self.feedback.show("error", failure_line(result, hint_separator="\n"))
        elif isinstance(result, RunFinished):
            path = result.results.checkpoint
            if path:  # this window trained it: the user chose its model file, which is trusted and remembered
                self.state.last_run_dir = Path(path).parent
                name = self.runs.name_for_out_dir(self.state.last_run_dir) or Path(path).parent.name
                if self.state.takes_over(result.stopped, result.results.val_accuracy):
                    self.checkpoints.load(path, f"last run ({name})", own_run=True)
                else:
                    self.feedback.note("info", f"{self.state.model.description} stays the model for Predict and "
                                               f"Evaluate: the stopped run {name} is less accurate (open it from "
                                               f"the Runs dock to use it)")
            if result.stopped:
                self.feedback.show("info", f"Stopped after {result.steps} steps; what was trained is kept."
                                   if result.steps else "Stopped before training began; nothing was trained.")
            else:
                self.feedback.announce(headline(result))
        self.changed()
        self.runs.refresh()
        self.runFinished.emit(result)
