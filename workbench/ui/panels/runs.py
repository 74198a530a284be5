"""Runs dock: the run history as a sortable table. Select two or more runs to overlay their curves; double-click
(or Open) a run to bring back its curves, compile report and model; export runs as CSV or for TensorBoard. A run
that continues another reads "#2 ↳ #1"; one a sweep trained, "#12 · trial 3 of sweep NAME"."""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

from PySide6.QtCore import QItemSelectionModel, QSize, QSortFilterProxyModel, Qt, Signal
from PySide6.QtGui import QStandardItem, QStandardItemModel
from PySide6.QtWidgets import (QAbstractItemView, QHBoxLayout, QHeaderView, QLabel, QMenu, QMessageBox, QPushButton,
                               QTableView, QVBoxLayout, QWidget)

from ...core.ground import figures
from ...core.ground.config import setup_label
from ...core.history.curves import Curves, curves_from_events, model_name, run_name, scale_changes
from ...core.ground.errors import WorkbenchError, with_hint
from ...core.ground.progress import format_duration
from ...core.ground.events import (AmpReport, AmpSkipped, CompileEvent, CompileFinished, CompileReport, Event,
                                   Notice, ProfileReport, RunFinished, RunStarted, SystemSample)
from ...core.history.runs import RunRecord, RunStore
from ...core.history.runs_export import export_csv, export_tensorboard
from ...core.history.sweeps import TrialOf, trials_of_runs
from .. import file_dialogs
from ..tasks import Tasks

COLUMNS = ("Run", "When (UTC)", "Dataset", "Model", "Backend · mode · AMP", "Epochs", "Duration", "Best val",
           "Samples/s", "Status")
SORT_ROLE = Qt.UserRole + 1
SLOT = "runs"
EXPORT_SLOT = "runs-export"  # apart from SLOT: a click on a run must not drop an export under way
TRIALS_SLOT = "runs-trials"  # which runs sweeps trained: read after each listing
VISIBLE_ROWS = 2  # the table is never squeezed below this many runs
SHOWN_ROWS = 5  # the panel asks for this many (sizeHint): the window sizes the dock for it
RUN_COLUMN_CHARACTERS = 18  # the Run column's widest: "#12 · trial 3 of s…" (the whole name in its tooltip)
ROW_PADDING = 6  # pixels of a row beyond its text: the style's default rows were 30 px, 2 runs in a 1366×768 dock
CACHED_RUNS = 8  # ended runs kept ready to compare or re-open
# What the panels show of a recorded run besides its curves: the Compile panel and the plots' compile timeline,
# RunFinished for its payback, the system samples for the System plot, the profile and AMP for the Profile panel.
PANEL_EVENTS = (RunStarted, CompileFinished, CompileReport, CompileEvent, SystemSample, ProfileReport, AmpReport,
                AmpSkipped, Notice, RunFinished)


@dataclass(frozen=True)
class LoadedRun:
    """A recorded run as the plots and the Compile panel show it: its curves, built once off the GUI thread, not
    its (possibly millions of) events."""

    record: RunRecord  # without its events
    curves: Curves
    panel_events: tuple[Event, ...]

    @property
    def compile_seconds(self) -> float | None:
        return next((e.seconds for e in self.panel_events if isinstance(e, CompileFinished)), None)


def load_run(store: RunStore, run_id: int) -> LoadedRun:
    record = store.get(run_id, with_events=True)
    return LoadedRun(replace(record, events=[]), curves_from_events(record.events),
                     tuple(e for e in record.events if isinstance(e, PANEL_EVENTS)) + scale_changes(record.events))



def continued_from(records: list[RunRecord]) -> dict[int, int]:
    """Run id → the id of the run it continues (its config resumes from that run's checkpoint), for the runs in
    `records` whose parent is among them too."""
    by_checkpoint = {str(Path(r.checkpoint).resolve()): r.id for r in records if r.checkpoint}
    found = {}
    for r in records:
        resume = r.config.get("resume")
        parent = by_checkpoint.get(str(Path(resume).resolve())) if resume else None
        if parent is not None and parent != r.id:
            found[r.id] = parent
    return found


def _item(text: str, sort_value=None) -> QStandardItem:
    item = QStandardItem(text)
    item.setEditable(False)
    item.setData(sort_value if sort_value is not None else text, SORT_ROLE)
    return item


def _status_item(record) -> QStandardItem:
    """How the run stands, and where it trained when that was another host (its files are there)."""
    where = record.elsewhere
    item = _item(f"{record.status} on {where}" if where else record.status)
    if where:
        item.setToolTip(f"Trained on {where}: its files are there, in {record.out_dir}")
    return item


class RunsPanel(QWidget):
    compareRequested = Signal(list)  # LoadedRuns: 0 or 1 clears the overlay
    openRequested = Signal(object)  # a LoadedRun
    continueRequested = Signal(object)  # a RunRecord (without events) to continue training

    def __init__(self, tasks: Tasks, db=None, parent: QWidget | None = None):
        super().__init__(parent)
        self.tasks = tasks
        self.db = db
        self.store: RunStore | None = None  # the run list (cheap queries, GUI thread)
        self._loaded: OrderedDict[int, LoadedRun] = OrderedDict()  # the last CACHED_RUNS ended runs used
        self.parents: dict[int, int] = {}  # run id → the listed run it continues (continued_from)
        self.model = QStandardItemModel(0, len(COLUMNS), self)
        self.model.setHorizontalHeaderLabels(list(COLUMNS))
        for column, figure in (("Samples/s", figures.SAMPLES_PER_S), ("Best val", figures.BEST_VAL_ACCURACY)):
            self.model.setHeaderData(COLUMNS.index(column), Qt.Horizontal, figure.method, Qt.ToolTipRole)
        self.proxy = QSortFilterProxyModel(self)
        self.proxy.setSourceModel(self.model)
        self.proxy.setSortRole(SORT_ROLE)
        self.table = QTableView()
        self.table.setObjectName("runsTable")
        self.table.setAccessibleName("Runs")
        self.table.setTabKeyNavigation(False)  # Tab leaves the table (arrows move in it): focus is never trapped
        self.table.setModel(self.proxy)
        self.table.setSortingEnabled(True)
        self.table.sortByColumn(0, Qt.DescendingOrder)
        self.table.setSelectionBehavior(QAbstractItemView.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.ExtendedSelection)
        self.table.verticalHeader().hide()
        rows = self.table.verticalHeader()
        rows.setMinimumSectionSize(1)
        rows.setDefaultSectionSize(self.table.fontMetrics().height() + ROW_PADDING)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeToContents)
        self.table.horizontalHeader().setSectionResizeMode(0, QHeaderView.Interactive)  # sized by _fit_run_column
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.setMinimumHeight(self._table_height(VISIBLE_ROWS))
        self.table.selectionModel().selectionChanged.connect(self._selection_changed)
        # a double click, or Enter on the current run (Qt activates an item for both): the keyboard opens runs too
        self.table.activated.connect(self._open_index)
        self.message = QLabel("Select two or more runs to compare their curves; double-click one to re-open it.")
        self.message.setObjectName("runsMessage")
        self.message.setWordWrap(True)
        open_button = QPushButton("Open run")
        open_button.clicked.connect(self.open_selected)
        continue_button = QPushButton("Continue training…")
        continue_button.setObjectName("continueButton")
        continue_button.setToolTip("Train the selected run further from its checkpoint: the same steps, losses and "
                                   "weights as if it had never stopped")
        continue_button.clicked.connect(self.continue_selected)
        remove_button = QPushButton("Remove…")
        remove_button.setToolTip("Remove the selected runs from the history (their files stay on disk)")
        remove_button.clicked.connect(self.remove_selected)
        export_button = QPushButton("Export runs…")
        export_button.setObjectName("exportRunsButton")
        export_button.setToolTip("The selected runs (all when none is selected): config, metrics and per-step "
                                 "curves as one CSV, or TensorBoard event files")
        export_menu = QMenu(export_button)
        export_menu.addAction("As CSV…", self.choose_export_csv).setObjectName("exportCsvAction")
        export_menu.addAction("For TensorBoard…", self.choose_export_tensorboard).setObjectName("exportTbAction")
        export_button.setMenu(export_menu)
        buttons = QHBoxLayout()
        buttons.addWidget(open_button)
        buttons.addWidget(continue_button)
        buttons.addWidget(remove_button)
        buttons.addWidget(export_button)
        buttons.addWidget(self.message, 1)  # beside the buttons: the table keeps the dock's height
        # Under the table, not beside it: the table keeps the dock's width (~1000 px in a 1366-px window; its
        # columns take ~950).
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.table, 1)
        layout.addLayout(buttons)

    def _table_height(self, rows: int) -> int:
        """The table's height with `rows` runs in view, its header, and its horizontal scroll bar (the columns
        fill a 1366-px window's dock, and a sweep's trials' names widen them)."""
        table = self.table
        return (table.horizontalHeader().sizeHint().height() + rows * table.verticalHeader().defaultSectionSize()
                + table.horizontalScrollBar().sizeHint().height() + 2 * table.frameWidth())

    def sizeHint(self) -> QSize:
        """SHOWN_ROWS runs in view: what the window sizes the Runs dock by (a user scrolls a longer history)."""
        hint = super().sizeHint()
        return QSize(hint.width(), hint.height() - self.table.sizeHint().height() + self._table_height(SHOWN_ROWS))

    # -- data -------------------------------------------------------------------------------------------------
    def _open_store(self) -> RunStore | None:
        if self.store is None:
            try:
                self.store = RunStore(self.db)
            except WorkbenchError as exc:
                self.message.setText(f"Run history unavailable: {exc}")
        return self.store

    def refresh(self) -> None:
        store = self._open_store()
        if store is None:
            return
        try:
            records = store.list()
        except WorkbenchError as exc:
            self.message.setText(f"Run history unavailable: {exc}")
            return
        self.model.removeRows(0, self.model.rowCount())
        parents = self.parents = continued_from(records)
        for r in records:
            c = r.config
            name = _item(run_name(r.id) + (f" ↳ {run_name(parents[r.id])}" if r.id in parents else ""), r.id)
            if r.id in parents:
                name.setToolTip(f"{run_name(r.id)} continues {run_name(parents[r.id])} from its checkpoint")
            self.model.appendRow([
                name,
                _item(r.created[:19].replace("T", " ")),
                _item(c["dataset"]),
                _item(model_name(c.get("model", "sandwich"))),
                _item(setup_label(c)),
                _item(str(c["epochs"]), c["epochs"]),
                _item(format_duration(r.duration_s) if r.duration_s is not None else "—",  # "—": running or unknown
                      r.duration_s if r.duration_s is not None else -1.0),
                _item(f"{r.best_val_accuracy:.2%}" if r.best_val_accuracy is not None else "—",
                      r.best_val_accuracy or -1.0),
                _item(f"{r.samples_per_s:,.0f}" if r.samples_per_s else "—", r.samples_per_s or -1.0),
                _status_item(r),
            ])
        self._fit_run_column()
        self._read_trials({r.id: r.out_dir for r in records})

    def _fit_run_column(self) -> None:
        """The Run column as wide as its names, up to RUN_COLUMN_CHARACTERS: a sweep trial's "#12 · trial 3 of sweep
        NAME" pushed the Status column off a 1366-pixel screen. A cut name is whole in its tooltip."""
        self.table.resizeColumnToContents(0)
        widest = self.table.fontMetrics().averageCharWidth() * RUN_COLUMN_CHARACTERS
        self.table.setColumnWidth(0, min(self.table.columnWidth(0), widest))

    def _read_trials(self, out_dirs: dict[int, str | None]) -> None:
        """Mark the runs sweeps trained, once read on a pool thread: the studies are another file, which a sweep
        may be writing (its lock would hold the GUI thread). Only the latest listing's answer is shown."""
        self.tasks.submit(TRIALS_SLOT, lambda: trials_of_runs(self.db, out_dirs), self._show_trials,
                          lambda error: self.message.setText(f"Could not read which runs sweeps trained: {error}"))

    def _show_trials(self, trials: dict[int, TrialOf]) -> None:
        for row in range(self.model.rowCount()):
            item = self.model.item(row, 0)
            trial = trials.get(item.data(SORT_ROLE))
            if trial is not None:
                item.setText(f"{item.text()} · {trial}")
                item.setToolTip(f"{run_name(item.data(SORT_ROLE))} was {trial}: Run → Sweep… shows its trials")
        self._fit_run_column()

    def parent_of(self, run_id: int) -> int | None:
        """The listed run that `run_id` continues (None when it continues none of them)."""
        return self.parents.get(run_id)

    def id_for_out_dir(self, out_dir) -> int | None:
        """The newest run that wrote into `out_dir`; None when the history has no such run or cannot be read."""
        store = self._open_store()
        try:
            return store.id_for_out_dir(out_dir) if store is not None else None
        except WorkbenchError:
            return None

    def name_for_out_dir(self, out_dir) -> str | None:
        """The name ('#7') of that run, so a run is called the same everywhere."""
        run_id = self.id_for_out_dir(out_dir)
        return run_name(run_id) if run_id is not None else None

    def selected_ids(self) -> list[int]:
        rows = {index.row() for index in self.table.selectionModel().selectedRows()}
        return sorted(int(self.proxy.index(row, 0).data(SORT_ROLE)) for row in rows)

    def select_ids(self, ids: list[int]) -> None:
        self.table.clearSelection()
        for row in range(self.proxy.rowCount()):
            if int(self.proxy.index(row, 0).data(SORT_ROLE)) in ids:
                self.table.selectionModel().select(
                    self.proxy.index(row, 0), QItemSelectionModel.Select | QItemSelectionModel.Rows)

    def load_runs(self, ids: list[int], deliver: Callable[[list[LoadedRun]], None], slot: str = SLOT) -> None:
        """Hand `deliver` the runs' curves. A run's events can be millions of rows, so they are read and turned
        into curves on a pool thread (with its own connection); the last few ended runs are kept; only the latest
        request of a task slot is delivered, so quick clicks never show an older selection (a caller whose request
        a click must not drop, as a live continuation's parent curves, asks in a slot of its own)."""
        cached = {run_id: self._loaded[run_id] for run_id in ids if run_id in self._loaded}
        missing = [run_id for run_id in ids if run_id not in cached]

        def read() -> list[LoadedRun]:
            with RunStore(self.db, recover=False) as store:
                return [load_run(store, run_id) for run_id in missing]

        def done(result) -> None:
            fresh = {run.record.id: run for run in result}
            runs = [fresh.get(run_id) or cached[run_id] for run_id in ids]
            for run in runs:
                if run.record.status != "running":  # ended: final, worth keeping
                    self._loaded[run.record.id] = run
                    self._loaded.move_to_end(run.record.id)
            while len(self._loaded) > CACHED_RUNS:
                self._loaded.popitem(last=False)
            deliver(runs)

        if missing:
            self.tasks.submit(slot, read, done, lambda error: self.message.setText(f"Could not read the runs: {error}"))
        else:
            self.tasks.drop(slot)  # an older request still reading is no longer wanted
            done([])

    # -- actions ----------------------------------------------------------------------------------------------
    def _selection_changed(self, *_args) -> None:
        ids = self.selected_ids()
        if len(ids) >= 2:
            self.load_runs(ids, self.compareRequested.emit)
        else:
            self.tasks.drop(SLOT)  # a comparison still loading is no longer wanted
            self.compareRequested.emit([])

    def _open_index(self, index) -> None:
        """The run whose row was activated (Enter on the current row needs no selection first)."""
        self.select_ids([int(self.proxy.index(index.row(), 0).data(SORT_ROLE))])
        self.open_selected()

    def open_selected(self) -> None:
        ids = self.selected_ids()
        if len(ids) == 1:
            self.load_runs(ids, lambda records: self.openRequested.emit(records[0]))

    def continue_selected(self) -> None:
        ids = self.selected_ids()
        store = self._open_store()
        if len(ids) != 1 or store is None:
            self.message.setText("Select one run to continue training it.")
            return
        try:
            record = store.get(ids[0])
        except WorkbenchError as exc:
            self.message.setText(f"Could not read run {run_name(ids[0])}: {exc}")
            return
        if not record.checkpoint:
            self.message.setText(f"Run {run_name(record.id)} has no checkpoint to continue from.")
            return
        self.continueRequested.emit(record)

    def remove_selected(self) -> None:
        ids = self.selected_ids()
        store = self._open_store()
        if not ids or store is None:
            return
        answer = QMessageBox.question(self, "Remove runs", f"Remove {len(ids)} run(s) from the history? Their "
                                      "files (checkpoints, events.jsonl) stay on disk.")
        if answer != QMessageBox.Yes:
            return
        try:
            for run_id in ids:
                store.delete(run_id)
                self._loaded.pop(run_id, None)
        except WorkbenchError as exc:
            self.message.setText(str(exc))
        self.refresh()

    def choose_export_csv(self) -> None:
        path = file_dialogs.save_file(self, "export", "Export runs as CSV", "runs.csv", "CSV files (*.csv)")
        if path:
            self.export_runs(export_csv, path)

    def choose_export_tensorboard(self) -> None:
        folder = file_dialogs.choose_folder(self, "export", "Export runs for TensorBoard (a folder per run)")
        if folder:
            self.export_runs(export_tensorboard, folder)

    def export_runs(self, export, path: str) -> None:
        """`export` (runs_export's export_csv or export_tensorboard) of the selected runs, or of every run, on a
        pool thread with its own connection: it reads every event of every run."""
        ids = self.selected_ids() or None

        def write():
            with RunStore(self.db, recover=False) as store:
                export(store, ids, path)

        def done(_nothing) -> None:
            names = ("runs " if len(ids) > 1 else "run ") + ", ".join(map(run_name, ids)) if ids else "every run"
            self.message.setText(f"Exported {names} to {path}")

        self.message.setText("Exporting runs…")
        self.tasks.submit(EXPORT_SLOT, write, done,
                          lambda error: self.message.setText(f"Could not export the runs: {with_hint(error)}"))

    def close_store(self) -> None:
        if self.store is not None:
            self.store.close()
            self.store = None
