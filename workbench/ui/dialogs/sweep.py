"""Run → Sweep…: search the Setup form's settings with Optuna (core/run/sweep.py), each trial a recorded run in a
kernel process of its own, and watch the trials come in: a table, parallel coordinates and the Pareto front.

The sweep runs on a pool thread (the `sweep` slot of Tasks): its callbacks arrive on that thread and cross to the
GUI thread as queued signals; only epoch ends and run starts are forwarded, never the steps. The dialog is
non-modal and lives as long as the window: closing it leaves the sweep running, closing the window stops it. A
stopped sweep resumes under its name, with the settings it was made with (only the trial count may change).
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Callable

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (QCheckBox, QComboBox, QFormLayout, QGridLayout, QHBoxLayout, QLabel,
                               QPushButton, QSpinBox, QTabWidget, QVBoxLayout, QWidget)

from ...core.ground.config import TrainConfig, label_of
from ...core.ground.errors import WorkbenchError, first_line
from ...core.ground.events import Event, RunStarted
from ...core.ground.progress import format_duration
from ...core.history.sweeps import SEARCHABLE, Progress, Trial, best_trial
from ...core.run.remote.ssh import Remote
from ...core.run.sweep import SAMPLERS, SweepSettings, load_trials, run_sweep, sweep_names, sweep_parameters
from ..panels.plots.style import Theme
from ..support.form_errors import form_text
from .sweep_views import ParallelView, ParetoView, TrialsTable, params_text
from .queued import QueuedRunsDialog
from ..support.tasks import Tasks

SLOT = "sweep"
DEFAULT_PARAMETERS = ("lr", "batch_size", "hidden_dim")
FINISHED = ("complete", "pruned")  # the trials a sweep counts towards its total
PARAMETER_COLUMNS = 4


def error_text(exc: BaseException) -> str:
    """A Workbench error as the Setup form says it (its setting by the form's label, its hint); anything else as
    its type and first line (never a traceback)."""
    return form_text(exc) if isinstance(exc, WorkbenchError) else f"{type(exc).__name__}: {first_line(exc)}"


def best_text(trials: list[Trial]) -> str:
    """The best trial so far, held against trial 0 (the base settings) when that one has finished."""
    best = best_trial(trials)
    if best is None:
        return ""
    text = f"Best: trial {best.number}, val accuracy {best.val_accuracy:.2%} ({params_text(best.params)})"
    base = next((t for t in trials if t.number == 0 and t.val_accuracy is not None), None)
    if base is not None and base is not best:
        text += (f"; trial 0, the base settings: {base.val_accuracy:.2%} "
                 f"({100 * (best.val_accuracy - base.val_accuracy):+.1f} points)")
    return text


class SweepDialog(QueuedRunsDialog):
    """The sweep's inputs, Start/Resume and Stop, its progress and its trials. `base_config()` is the Setup form's
    config (raising its ConfigError), `cuda_devices()` the kernel's machine's CUDA devices (None until PyTorch has
    said), `remote()` the host the trials train on (None: this computer; the study stays here either way)."""

    slot = SLOT

    trialEnded = Signal(object)  # the Trial that has just ended (its run is in the history now)
    useSettings = Signal(dict)  # "Use the best settings": the best trial's sampled settings, for the Setup form
    sweepEnded = Signal(object)  # every trial of the sweep (a list), or the exception that stopped it
    _progressed = Signal(object)  # a Progress, emitted on the sweep's thread

    def __init__(self, tasks: Tasks, theme: Theme, base_config: Callable[[], TrainConfig],
                 cuda_devices: Callable[[], int | None], db: Path | None = None, runs_dir: Path | None = None,
                 parent: QWidget | None = None, remote: Callable[[], Remote | None] = lambda: None):
        super().__init__(tasks, parent)
        self.setObjectName("sweepDialog")
        self.setWindowTitle("Sweep")
        self.base_config, self.cuda_devices = base_config, cuda_devices
        self.db, self.runs_dir, self.remote = db, runs_dir, remote
        self.known: set[str] | None = None  # the stored sweeps' names, once read
        self.progress: Progress | None = None  # after the running sweep's latest trial
        self.epoch_text = ""  # where the running trial is
        self.planned_epochs = 0  # the running trial's
        self.sweep_name = ""  # the running (or last) sweep's
        self.trials: list[Trial] = []
        intro = QLabel("Each trial trains the Setup form's settings with the checked ones sampled, as a recorded "
                       "run in a process of its own (the Runs dock lists it). Trial 0 is the form's settings as "
                       "they are; a trial below the median accuracy at an epoch is pruned. Stop, then Resume under "
                       "the same name, goes on where the sweep was.")
        intro.setWordWrap(True)
        self.start_button = QPushButton("Start")
        self.start_button.setObjectName("sweepStart")
        self.start_button.setDefault(True)
        self.start_button.clicked.connect(self.start)
        self.stop_button = QPushButton("Stop")
        self.stop_button.setObjectName("sweepStop")
        self.stop_button.clicked.connect(self.stop)
        self.use_button = QPushButton("Use the best settings")
        self.use_button.setObjectName("sweepUseBest")
        self.use_button.setToolTip("Put the best trial's settings into the Setup form")
        self.use_button.setEnabled(False)
        self.use_button.clicked.connect(self._use_best)
        buttons = QHBoxLayout()
        buttons.addWidget(self.start_button)
        buttons.addWidget(self.stop_button)
        buttons.addWidget(self.use_button)
        buttons.addStretch(1)
        self.status = QLabel("")
        self.status.setObjectName("sweepStatus")
        self.best = QLabel("")
        self.best.setObjectName("sweepBest")
        for label in (self.status, self.best):
            label.setWordWrap(True)
        self.table = TrialsTable()
        self.parallel = ParallelView(theme)
        self.pareto = ParetoView(theme)
        self.tabs = QTabWidget()
        self.tabs.addTab(self.table, "Trials")
        self.tabs.addTab(self.parallel, "Parallel coordinates")
        self.tabs.addTab(self.pareto, "Pareto")
        layout = QVBoxLayout(self)
        layout.addWidget(intro)
        layout.addLayout(self._form())
        layout.addLayout(buttons)
        layout.addWidget(self.status)
        layout.addWidget(self.best)
        layout.addWidget(self.tabs, 1)
        self.resize(940, 680)
        self._progressed.connect(self._on_progress)
        self._update_inputs()
        self._load_names()

    def _form(self) -> QFormLayout:
        self.name = QComboBox()
        self.name.setObjectName("sweepName")
        self.name.setEditable(True)
        self.name.setEditText(time.strftime("sweep-%Y%m%d-%H%M"))
        self.name.setToolTip("A new name starts a sweep; a stored one resumes it")
        self.name.currentTextChanged.connect(self._name_changed)
        self.parameter_boxes: dict[str, QCheckBox] = {}
        grid = QGridLayout()
        for index, name in enumerate(SEARCHABLE):
            box = self.parameter_boxes[name] = QCheckBox(label_of(name))  # the Setup form's words for it
            box.setChecked(name in DEFAULT_PARAMETERS)
            grid.addWidget(box, index // PARAMETER_COLUMNS, index % PARAMETER_COLUMNS)
        self.sampler = QComboBox()
        self.sampler.setObjectName("sweepSampler")
        self.sampler.addItems(SAMPLERS)
        self.trial_count = QSpinBox()
        self.trial_count.setObjectName("sweepTrials")
        self.trial_count.setRange(1, 1000)
        self.trial_count.setValue(12)
        self.trial_count.setToolTip("Trials to finish, pruned ones included (a grid holds at most its points)")
        self.epochs = QSpinBox()
        self.epochs.setObjectName("sweepEpochs")
        self.epochs.setRange(1, 1000)
        self.epochs.setValue(5)
        form = QFormLayout()
        form.addRow("Name", self.name)
        form.addRow("Search", grid)
        form.addRow("Sampler", self.sampler)
        form.addRow("Trials", self.trial_count)
        form.addRow("Epochs per trial", self.epochs)
        return form

    # -- inputs ---------------------------------------------------------------------------------------------------
    def chosen_parameters(self) -> tuple[str, ...]:
        return tuple(name for name, box in self.parameter_boxes.items() if box.isChecked())

    def _update_inputs(self) -> None:
        """Nothing changes while a sweep runs; a stored sweep keeps what it was made with but its trial count.
        Start waits for the stored names: the first read creates the studies' tables, which a sweep started at the
        same time would create too (SQLite then refuses one of them)."""
        running, stored = self.running, self.name.currentText().strip() in (self.known or ())
        for widget in (self.name, self.trial_count):
            widget.setEnabled(not running)
        for widget in (*self.parameter_boxes.values(), self.sampler, self.epochs):
            widget.setEnabled(not running and not stored)
        self.start_button.setEnabled(not running and self.known is not None)
        self.start_button.setText("Resume" if stored else "Start")
        self.stop_button.setEnabled(running and not self.stop_flag.is_set())

    def _load_names(self, show_stored: bool = True) -> None:
        """The stored sweeps' names, read off the GUI thread (the first read creates the studies' file); with
        `show_stored`, the trials of the sweep named in the box when it is one of them."""
        self.tasks.submit("sweep-names", lambda: sweep_names(self.db),
                          lambda names: self._names_loaded(names, show_stored), self._names_unreadable)

    def _names_unreadable(self, error: BaseException) -> None:
        self.known = set()  # Start then says what is wrong with the studies' file
        self.status.setText(f"Cannot read the stored sweeps: {error_text(error)}")
        self._update_inputs()

    def _names_loaded(self, names, show_stored: bool) -> None:
        text = self.name.currentText()
        self.known = set(names)
        self.name.blockSignals(True)
        self.name.clear()
        self.name.addItems(sorted(names))
        self.name.setEditText(text)
        self.name.blockSignals(False)
        if show_stored and not self.running:
            self._name_changed(text)

    def _name_changed(self, name: str) -> None:
        """A stored name shows that sweep's trials and settings (read off the GUI thread); a new one, nothing yet."""
        name = name.strip()
        self._update_inputs()
        if name not in (self.known or ()):
            self.tasks.drop("sweep-load")
            self._show([])
            self.status.setText("")
            return
        self.tasks.submit("sweep-load", lambda: (sweep_parameters(name, self.db), load_trials(name, self.db)),
                          lambda stored: self._stored_loaded(name, stored),
                          lambda error: self.status.setText(error_text(error)))

    def _stored_loaded(self, name: str, stored) -> None:
        parameters, trials = stored
        for key, box in self.parameter_boxes.items():
            box.setChecked(key in parameters)
        self._show(trials)
        done = sum(t.state in FINISHED for t in trials)
        self.status.setText(f"{name} is stored with {done} finished trials: Resume goes on with the settings it "
                            f"was made with (its searched settings, sampler, epochs and base settings); only the "
                            f"trial count applies.")

    # -- the sweep ------------------------------------------------------------------------------------------------
    def start(self) -> bool:
        """Start the sweep the inputs describe, or resume the stored one of that name; False when refused (the
        status line says why)."""
        name, cuda_devices = self.name.currentText().strip(), self.cuda_devices()
        if self.running or self.known is None:  # (see _update_inputs)
            return False
        if not name:
            return self._refuse("Name the sweep (a stored name resumes it).")
        if cuda_devices is None:
            return self._refuse("PyTorch is still starting: start the sweep when it is ready.")
        try:
            base = self.base_config()
        except WorkbenchError as exc:
            return self._refuse(f"Cannot start: {error_text(exc)}")
        settings = SweepSettings(name, self.chosen_parameters(), self.sampler.currentText(), self.trial_count.value())
        epochs, stop, remote = self.epochs.value(), threading.Event(), self.remote()

        def sweep() -> list[Trial]:
            return run_sweep(base, settings, epochs=epochs, cuda_devices=cuda_devices, db=self.db,
                             runs_dir=self.runs_dir, on_progress=self._progressed.emit, on_event=self._forward,
                             stop=stop, remote=remote)

        self.stop_flag, self.progress, self.epoch_text, self.sweep_name = stop, None, "", name
        self.tasks.drop("sweep-load")
        self.tasks.submit(SLOT, sweep, self._ended, self._failed, exclusive=True)
        self.status.setText(f"Starting {name}…")
        self._update_inputs()
        return True




    def _on_heard(self, number: int, event: Event) -> None:
        if isinstance(event, RunStarted):
            self.planned_epochs = event.config.epochs
            self.epoch_text = "starting"
        else:
            self.epoch_text = (f"epoch {event.epoch} of {self.planned_epochs} (val accuracy "
                               f"{event.val_accuracy:.2%})")
        if not self.stop_flag.is_set():
            self.status.setText(self._progress_text())

    def _on_progress(self, progress: Progress) -> None:
        self.progress, self.epoch_text = progress, ""
        self._show(progress.trials)
        if not self.stop_flag.is_set():
            self.status.setText(self._progress_text())
        self.trialEnded.emit(progress.trial)

    def _progress_text(self) -> str:
        """'Trial 3 of 12 · epoch 2 of 5 (val accuracy 91.20%) · ETA 1:05': the ETA from the trials so far."""
        progress = self.progress
        done, total = ((progress.done, progress.total) if progress else
                       (sum(t.state in FINISHED for t in self.trials), self.trial_count.value()))
        eta = progress.eta_seconds if progress else None
        parts = [f"Trial {min(done + 1, total)} of {total}", self.epoch_text,
                 f"ETA {format_duration(eta)}" if eta is not None else "ETA after the first trial"]
        return " · ".join(part for part in parts if part)

    def _ended(self, trials: list[Trial]) -> None:
        self._show(trials)
        done = sum(t.state in FINISHED for t in trials)
        total = self.progress.total if self.progress else self.trial_count.value()
        self.status.setText(f"Stopped: {done} of {total} trials. Resume goes on from there."
                            if self.stop_flag.is_set() else f"Done: {done} of {total} trials.")
        self._names_loaded({*self.known, self.sweep_name}, show_stored=False)  # stored now: its name resumes it
        self._update_inputs()
        self.sweepEnded.emit(trials)

    def _failed(self, error: BaseException) -> None:
        self.status.setText(f"The sweep stopped: {error_text(error)}")
        self._update_inputs()
        self.sweepEnded.emit(error)

    def _show(self, trials: list[Trial]) -> None:
        """The trials in the table and both views; the axes are the settings the trials searched."""
        self.trials = trials
        parameters = [name for name in SEARCHABLE if any(name in t.params for t in trials)]
        parameters = parameters or list(self.chosen_parameters())
        self.table.show_trials(trials, parameters)
        self.parallel.show_trials(trials, parameters)
        self.pareto.show_trials(trials)
        self.best.setText(best_text(trials))
        self.use_button.setEnabled(best_trial(trials) is not None)

    def _use_best(self) -> None:
        best = best_trial(self.trials)
        if best is not None:
            self.useSettings.emit(dict(best.params))
