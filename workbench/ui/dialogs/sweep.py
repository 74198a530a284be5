"""Run → Sweep…: search the Setup form's settings with Optuna (core/run/sweep.py), each trial a recorded run in a
kernel process of its own, and watch the trials come in: a table, parallel coordinates and the Pareto front.

Start lines the sweep's trials up in the queue (dialogs/queued.py): the window trains them one after another, their
curves drawn live as any run's, and each asks the study for its settings as it starts. They are queue entries like
any other: the Queue dock shows them, closing the window asks whether they go on in the background, and Stop
cancels them. A stopped sweep resumes under its name, with the settings it was made with (only the trial count may
change).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (QCheckBox, QComboBox, QFormLayout, QGridLayout, QHBoxLayout, QLabel,
                               QPushButton, QSpinBox, QTabWidget, QVBoxLayout, QWidget)

from ...core.ground.config import TrainConfig, label_of
from ...core.ground.errors import WorkbenchError
from ...core.ground.events import Event, RunStarted
from ...core.ground.progress import format_duration
from ...core.history.queue import QueueEntry
from ...core.history.sweeps import SEARCHABLE, Trial, best_trial
from ...core.run.sweep import SAMPLERS, SweepSettings, load_trials, queue_sweep, sweep_names, sweep_parameters
from ..panels.plots.style import Theme
from .sweep_views import ParallelView, ParetoView, TrialsTable, params_text
from .queued import QueuedRunsDialog, error_text
from ..support.tasks import Tasks

DEFAULT_PARAMETERS = ("lr", "batch_size", "hidden_dim")
FINISHED = ("complete", "pruned")  # the trials a sweep counts towards its total
PARAMETER_COLUMNS = 4


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
    """The sweep's inputs, Start/Resume and Stop, its progress and its trials. `queue` is the window's Queue feature
    (the trials train where the window's runs do: this computer, or the connected host; the study stays here either
    way), `base_config()` the Setup form's config (raising its ConfigError)."""

    trialEnded = Signal(object)  # the Trial that has just ended (its run is in the history now)
    useSettings = Signal(dict)  # "Use the best settings": the best trial's sampled settings, for the Setup form
    sweepEnded = Signal(object)  # every trial of the sweep (a list), once none of its entries is left to train

    def __init__(self, tasks: Tasks, queue, theme: Theme, base_config: Callable[[], TrainConfig],
                 db: Path | None = None, parent: QWidget | None = None):
        super().__init__(tasks, queue, parent)
        self.setObjectName("sweepDialog")
        self.setWindowTitle("Sweep")
        self.base_config, self.db = base_config, db
        self.known: set[str] | None = None  # the stored sweeps' names, once read
        self.epoch_text = ""  # where the running trial is
        self.reading = 0  # reads of the study still to come, one after each entry that ended
        self.planned_epochs = 0  # the running trial's
        self.sweep_name = ""  # the running (or last) sweep's
        self.trials: list[Trial] = []
        intro = QLabel("Each trial trains the Setup form's settings with the checked ones sampled, as a recorded "
                       "run in a process of its own (the Runs dock lists it). Start queues the trials (the Queue "
                       "dock shows them) and the window trains them one after another. Trial 0 is the form's "
                       "settings as they are; a trial below the median accuracy at an epoch is pruned. Stop, then "
                       "Resume under the same name, goes on where the sweep was.")
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
        self.stop_button.setEnabled(running and not self.stopping)

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
        """Queue the trials of the sweep the inputs describe, or of the stored one of that name (resumed); False
        when refused (the status line says why)."""
        name = self.name.currentText().strip()
        if self.running or self.known is None:  # (see _update_inputs)
            return False
        if not name:
            return self._refuse("Name the sweep (a stored name resumes it).")
        try:
            base = self.base_config()
        except WorkbenchError as exc:
            return self._refuse(f"Cannot start: {error_text(exc)}")
        settings = SweepSettings(name, self.chosen_parameters(), self.sampler.currentText(), self.trial_count.value())
        epochs = self.epochs.value()
        self.tasks.drop("sweep-load")
        if not self._line_up(lambda place, python: queue_sweep(base, settings, epochs=epochs, db=self.db,
                                                               place=place, python=python)):
            return False
        self.sweep_name, self.epoch_text = name, ""
        self._names_loaded({*self.known, name}, show_stored=False)  # stored now: its name resumes it
        self.status.setText(self._progress_text())
        return True

    def _on_started(self, entry: QueueEntry) -> None:
        self.epoch_text = "starting"
        if not self.stopping:
            self.status.setText(self._progress_text())

    def _on_heard(self, entry: QueueEntry, event: Event) -> None:
        if isinstance(event, RunStarted):
            self.planned_epochs = event.config.epochs
            self.epoch_text = "starting"
        else:
            self.epoch_text = (f"epoch {event.epoch} of {self.planned_epochs} (val accuracy "
                               f"{event.val_accuracy:.2%})")
        if not self.stopping:
            self.status.setText(self._progress_text())

    def _on_ended(self, entry: QueueEntry) -> None:
        """A trial ended: the study's trials, read again off the GUI thread, show how (the sweep has ended once the
        read after its last entry is in)."""
        if entry.id == self.hearing:  # (not when the next trial was heard first)
            self.epoch_text = ""
        name = self.sweep_name
        self.reading += 1
        self.tasks.submit(f"sweep-trial-{entry.id}", lambda: load_trials(name, self.db),
                          lambda trials: self._trial_read(trials, entry), self._unreadable)

    def _trial_read(self, trials: list[Trial], entry: QueueEntry) -> None:
        self.reading -= 1
        self._show(trials)
        if self.running and not self.stopping:
            self.status.setText(self._progress_text())
        trial = next((t for t in trials if t.run_id is not None and t.run_id == entry.run_id), None)
        if trial is not None:
            self.trialEnded.emit(trial)
        if not self.running and not self.reading:
            self._ended(trials)

    def _unreadable(self, error: BaseException) -> None:
        self.reading -= 1
        self.status.setText(f"Cannot read the sweep: {error_text(error)}")

    def _all_ended(self) -> None:
        """The read after the last entry that ended says so (_trial_read); with none coming (the last entries were
        removed from the queue), a read of its own."""
        if not self.reading:
            self.reading += 1
            name = self.sweep_name
            self.tasks.submit("sweep-ended", lambda: load_trials(name, self.db), self._last_read, self._unreadable)

    def _last_read(self, trials: list[Trial]) -> None:
        self.reading -= 1
        self._ended(trials)

    def _progress_text(self) -> str:
        """'Trial 3 of 12 · epoch 2 of 5 (val accuracy 91.20%) · ETA 1:05': the ETA from the trials so far."""
        eta = self.eta_seconds()
        parts = [f"Trial {min(self.done + 1, len(self.ids))} of {len(self.ids)} queued", self.epoch_text,
                 f"ETA {format_duration(eta)}" if eta is not None else "ETA after the first trial"]
        return " · ".join(part for part in parts if part)

    def _ended(self, trials: list[Trial]) -> None:
        self._show(trials)
        done = sum(t.state in FINISHED for t in trials)
        self.status.setText(f"Stopped with {done} trial(s) finished. Resume goes on from there." if self.stopping
                            else f"Done: {done} trial(s) finished.")
        self._update_inputs()
        self.sweepEnded.emit(trials)

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
