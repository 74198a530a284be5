"""Repeat with seeds…: one run's settings trained once per seed (core/run/seeds.py), each seed a recorded run in a
kernel process of its own, and what they say together: each seed's result as it ends, and the group's mean ± spread
once two runs of these settings have finished.

Start queues the seeds, as a sweep's trials are (dialogs/queued.py): the window trains them one after another, and
they show in the Queue dock. Which seeds the history already has for the settings, the group's figures and each
seed's samples/s are read from the history off the GUI thread, when a run is chosen and after each seed. The dialog
is non-modal and lives as long as the window: closing it leaves the seeds queued.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (QButtonGroup, QCheckBox, QGridLayout, QHBoxLayout, QHeaderView, QLabel,
                               QLineEdit, QPushButton, QRadioButton, QSpinBox, QTableWidget, QTableWidgetItem,
                               QVBoxLayout, QWidget)

from ...core.ground.config import TrainConfig, setup_label
from ...core.ground.errors import WorkbenchError
from ...core.ground.events import Event, RunStarted
from ...core.ground.progress import format_duration
from ...core.history.naming import run_name
from ...core.history.groups import SEEDS_SHOWN, group_figures
from ...core.history.queue import QueueEntry
from ...core.history.runs import RunRecord
from ...core.run.seeds import (DEFAULT_COUNT, SeedRun, check_repeatable, counted_seeds, history_runs, parse_seeds,
                              queue_seeds, seed_run, seeds_done)
from .queued import QueuedRunsDialog, error_text
from ..support.tasks import Tasks

HISTORY_SLOT = "seeds-history"
MAX_COUNT = 100
COLUMNS = ("Seed", "Run", "Status", "Val accuracy", "Samples/s", "Note")
NUMERIC = (0, 3, 4)  # right-aligned columns


def percent(value: float) -> str:
    return f"{value:.2%}"


def rate(value: float) -> str:
    return f"{value:,.0f}"


def seeds_text(seeds) -> str:
    """'seed 4', 'seeds 0, 1, 2'."""
    seeds = list(seeds)
    return f"seed{'s' if len(seeds) > 1 else ''} {', '.join(map(str, seeds))}"


def counted_text(first: int, count: int) -> str:
    """'seeds 3, 4, 5', or 'seeds 3–102' for many."""
    return seeds_text(range(first, first + count)) if count <= SEEDS_SHOWN else f"seeds {first}–{first + count - 1}"


def spread_text(runs: list[RunRecord]) -> str:
    """The finished runs' figures as mean ± spread ("" with fewer than two): 'Seeds 0, 1, 2 (3 finished runs): val
    accuracy 92.10% ± 0.40% (91.70%–92.60%, 3 runs) · samples/s 16,500 ± 200 (16,300–16,700, 3 runs)'."""
    finished = [r for r in runs if r.status == "finished"]
    if len(finished) < 2:
        return ""
    figures = group_figures(finished)
    parts = [f"val accuracy {figures.best_val_accuracy.text(percent)}" if figures.best_val_accuracy else "",
             f"samples/s {figures.samples_per_s.text(rate)}" if figures.samples_per_s else ""]
    seeds = sorted({r.config["seed"] for r in finished})
    return (f"{seeds_text(seeds).capitalize()} ({len(finished)} finished runs): "
            + " · ".join(part for part in parts if part))


class SeedsDialog(QueuedRunsDialog):
    """Which seeds, Start and Stop, the progress, each seed's result and the group's figures, for the settings of
    the run given to `set_run`. `queue` is the window's Queue feature: the seeds train where the window's runs do
    (this computer, or the connected host; their records stay here either way)."""

    runEnded = Signal(object)  # the SeedRun that has just ended (its run is in the history now)
    seedsEnded = Signal(object)  # every SeedRun this Start queued (a list), once none is left to train

    def __init__(self, tasks: Tasks, queue, db: Path | None = None, parent: QWidget | None = None):
        super().__init__(tasks, queue, parent)
        self.setObjectName("seedsDialog")
        self.setWindowTitle("Repeat with seeds")
        self.db = db
        self.config: TrainConfig | None = None  # the settings repeated (the chosen run's)
        self.run_label = ""  # the chosen run's name ("#12")
        self.seed: int | None = None  # the running run's
        self.epoch_text = ""  # where the running run is
        self.planned_epochs = 0
        self.results: list[SeedRun] = []  # the runs of this queue that have ended, in order

        self.about = QLabel("Choose a run in the Runs dock and Repeat with seeds…")
        self.about.setObjectName("seedsRun")
        self.about.setWordWrap(True)
        self.about.setTextFormat(Qt.PlainText)
        intro = QLabel("Queues these settings once per seed (the Queue dock shows them), trained one run after "
                       "another, each a recorded run in a process of its own (the Runs dock lists it). Runs that "
                       "differ only by seed are one group: "
                       "its mean ± spread shows once two of them have finished.")
        intro.setWordWrap(True)
        self.start_button = QPushButton("Start")
        self.start_button.setObjectName("seedsStart")
        self.start_button.setAccessibleName("Start the seeds")
        self.start_button.setDefault(True)
        self.start_button.clicked.connect(self.start)
        self.stop_button = QPushButton("Stop")
        self.stop_button.setObjectName("seedsStop")
        self.stop_button.setAccessibleName("Stop the seeds")
        self.stop_button.setToolTip("End the running seed after its current step and start no other")
        self.stop_button.clicked.connect(self.stop)
        buttons = QHBoxLayout()
        buttons.addWidget(self.start_button)
        buttons.addWidget(self.stop_button)
        buttons.addStretch(1)
        self.status = self._line("seedsStatus")
        self.history = self._line("seedsHistory")
        self.spread = self._line("seedsSpread")
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setObjectName("seedsTable")
        self.table.setAccessibleName("Each seed's run")
        self.table.setHorizontalHeaderLabels(list(COLUMNS))
        self.table.verticalHeader().hide()
        self.table.setEditTriggers(QTableWidget.NoEditTriggers)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeToContents)
        self.table.horizontalHeader().setStretchLastSection(True)
        layout = QVBoxLayout(self)
        layout.addWidget(self.about)
        layout.addWidget(intro)
        layout.addLayout(self._inputs())
        layout.addLayout(buttons)
        layout.addWidget(self.status)
        layout.addWidget(self.history)
        layout.addWidget(self.spread)
        layout.addWidget(self.table, 1)
        self.resize(640, 480)
        self._update_inputs()

    @staticmethod
    def _line(name: str) -> QLabel:
        label = QLabel("")
        label.setObjectName(name)
        label.setWordWrap(True)
        return label

    def _inputs(self) -> QGridLayout:
        self.by_count = QRadioButton("Number of seeds")
        self.by_count.setObjectName("seedsByCount")
        self.by_count.setChecked(True)
        self.count = QSpinBox()
        self.count.setObjectName("seedsCount")
        self.count.setAccessibleName("How many seeds")
        self.count.setRange(1, MAX_COUNT)
        self.count.setValue(DEFAULT_COUNT)
        self.count.setToolTip("That many seeds, from the run's own seed on")
        self.counted = QLabel("")
        self.counted.setObjectName("seedsCounted")
        self.by_list = QRadioButton("These seeds")
        self.by_list.setObjectName("seedsByList")
        self.listed = QLineEdit()
        self.listed.setObjectName("seedsList")
        self.listed.setAccessibleName("Seeds to run")
        self.listed.setPlaceholderText("0, 1, 2")
        self.skip_done = QCheckBox("Leave out the seeds the history has finished with these settings")
        self.skip_done.setObjectName("seedsSkipDone")
        self.skip_done.setChecked(True)
        self.skip_done.toggled.connect(lambda _on: self._update_inputs())
        self.done_seeds: set[int] = set()  # the seeds the history has finished with these settings
        self.choice = QButtonGroup(self)
        self.choice.addButton(self.by_count)
        self.choice.addButton(self.by_list)
        self.count.valueChanged.connect(self._count_changed)
        self.listed.textEdited.connect(lambda _text: self.by_list.setChecked(True))
        grid = QGridLayout()
        grid.addWidget(self.by_count, 0, 0)
        grid.addWidget(self.count, 0, 1)
        grid.addWidget(self.counted, 0, 2)
        grid.addWidget(self.by_list, 1, 0)
        grid.addWidget(self.listed, 1, 1, 1, 2)
        grid.addWidget(self.skip_done, 2, 0, 1, 3)
        grid.setColumnStretch(2, 1)
        return grid

    # -- inputs ---------------------------------------------------------------------------------------------------
    def chosen_seeds(self) -> tuple[int, ...]:
        """The seeds the inputs name (a SeedsError says what is wrong with them)."""
        if self.by_count.isChecked():
            return counted_seeds(self.config.seed if self.config else 0, self.count.value())
        return parse_seeds(self.listed.text())

    def _count_changed(self) -> None:
        self.by_count.setChecked(True)
        self._update_inputs()

    def _update_inputs(self) -> None:
        """Nothing changes while seeds run; the counted seeds are spelled out beside their number."""
        running = self.running
        for widget in (self.by_count, self.count, self.by_list, self.listed, self.skip_done):
            widget.setEnabled(not running)
        self.start_button.setEnabled(not running and self.config is not None)
        self.stop_button.setEnabled(running and not self.stopping)
        if self.config is not None:
            self.counted.setText(counted_text(self.config.seed, self.count.value()) + self._left_out_text())

    def _left_out_text(self) -> str:
        """What the chosen seeds lose to the history: ' — seed 0 finished already, left out: 2 to train'."""
        try:
            chosen = self.chosen_seeds()
        except WorkbenchError:
            return ""
        left_out = sorted(set(chosen) & self.done_seeds) if self.skip_done.isChecked() else []
        if not left_out:
            return ""
        return (f" — {seeds_text(left_out)} finished already, left out: "
                f"{len(chosen) - len(left_out)} to train")

    def set_run(self, record: RunRecord) -> bool:
        """Repeat `record`'s settings; False (the chosen run kept) while seeds run, or when its settings cannot be
        read (the status line says why)."""
        if self.running:
            self.status.setText("Seeds are running: stop them before choosing another run.")
            return False
        try:
            config = TrainConfig.from_dict(record.config)
            check_repeatable(config)
        except WorkbenchError as exc:
            self.status.setText(f"Cannot repeat {run_name(record.id)}: {error_text(exc)}")
            return False
        self.config, self.run_label, self.results = config, run_name(record.id), []
        self.about.setText(f"{self.run_label}'s settings: {setup_label(config.to_dict())} · lr {config.lr:g}, "
                           f"batch {config.batch_size}, {config.epochs} epochs · seed {config.seed}")
        self.table.setRowCount(0)
        self.status.setText("")
        self._update_inputs()
        self._read_history()
        return True

    # -- the history of these settings ------------------------------------------------------------------------------
    def _read_history(self) -> None:
        """Which seeds the history has finished with these settings, and their figures, read off the GUI thread."""
        config, db = self.config, self.db
        self.tasks.submit(HISTORY_SLOT, lambda: history_runs(config, db), self._history_read,
                          lambda error: self.history.setText(f"Cannot read the run history: {error_text(error)}"))

    def _history_read(self, runs: list[RunRecord]) -> None:
        done = seeds_done(runs)
        self.done_seeds = set(done)
        self._update_inputs()
        seeds = sorted(done)
        self.history.setText(f"The history has finished {seeds_text(seeds)} with these settings: "
                             f"{', '.join(run_name(done[seed]) for seed in seeds)}." if done else
                             "The history has no finished run of these settings yet.")
        self.spread.setText(spread_text(runs))
        rates = {run.id: run.samples_per_s for run in runs}
        for row, seed in enumerate(self.results):  # each ended seed's samples/s, as its run recorded it
            rate_seen = rates.get(seed.run_id)
            if rate_seen is not None:
                self.table.item(row, COLUMNS.index("Samples/s")).setText(rate(rate_seen))

    # -- the seeds --------------------------------------------------------------------------------------------------
    def start(self) -> bool:
        """Queue the chosen seeds; False when refused (the status line says why)."""
        if self.running or self.config is None:
            return False
        try:
            seeds = self.chosen_seeds()
        except WorkbenchError as exc:
            return self._refuse(f"Cannot start: {error_text(exc)}")
        config, skip, of = self.config, self.skip_done.isChecked(), self.run_label
        self.results, self.seed, self.epoch_text = [], None, ""
        self.table.setRowCount(0)
        if not self._line_up(lambda place, python: queue_seeds(config, seeds, of=of, db=self.db, place=place,
                                                               python=python, skip_done=skip)):
            return False
        self.status.setText(self._progress_text())
        return True

    def _on_started(self, entry: QueueEntry) -> None:
        self.seed, self.epoch_text = entry.config.seed, "starting"
        if not self.stopping:
            self.status.setText(self._progress_text())

    def _on_heard(self, entry: QueueEntry, event: Event) -> None:
        self.seed = entry.config.seed
        if isinstance(event, RunStarted):
            self.planned_epochs = event.config.epochs
            self.epoch_text = "starting"
        else:
            self.epoch_text = f"epoch {event.epoch}/{self.planned_epochs}"
        if not self.stopping:
            self.status.setText(self._progress_text())

    def _on_ended(self, entry: QueueEntry) -> None:
        if entry.id == self.hearing:  # (not when the next seed was heard first)
            self.seed, self.epoch_text = None, ""
        if entry.started is None:  # cancelled before it began: no run to show
            return
        run = seed_run(entry)
        self._add_result(run)
        if self.running and not self.stopping:
            self.status.setText(self._progress_text())
        self._read_history()
        self.runEnded.emit(run)

    def _progress_text(self) -> str:
        """'Run 2 of 3 · seed 1 · epoch 3/5 · ETA 0:40': the ETA from the runs so far."""
        eta = self.eta_seconds()
        total = len(self.ids)
        parts = [f"Run {min(self.done + 1, total)} of {total}" if total else "",
                 f"seed {self.seed}" if self.seed is not None else "", self.epoch_text,
                 f"ETA {format_duration(eta)}" if eta is not None else "ETA after the first run"]
        return " · ".join(part for part in parts if part)

    def _add_result(self, run: SeedRun) -> None:
        self.results.append(run)
        row = self.table.rowCount()
        self.table.insertRow(row)
        cells = [str(run.seed), run_name(run.run_id) if run.run_id is not None else "—", run.status,
                 percent(run.best_val_accuracy) if run.best_val_accuracy is not None else "—", "—", run.note]
        for column, text in enumerate(cells):
            item = QTableWidgetItem(text)
            item.setTextAlignment((Qt.AlignRight if column in NUMERIC else Qt.AlignLeft) | Qt.AlignVCenter)
            self.table.setItem(row, column, item)

    def _all_ended(self) -> None:
        finished = sum(run.status == "finished" for run in self.results)
        total = len(self.ids)
        self.status.setText(f"Stopped: {finished} of {total} seeds finished." if self.stopping
                            else f"Done: {finished} of {total} seeds finished.")
        self.seedsEnded.emit(list(self.results))
