"""Runs dock: the run history as a table to filter, sort and act on. Select two or more runs to overlay their curves
(Compare brings a seed group whole); double-click (or Open) a run to bring back its curves, compile report and model;
name, tag, note, archive, delete (Undo while the window is open), diff, clone and repeat runs; export runs as CSV or
for TensorBoard. A run that continues another reads "#2 ↳ #1"; one a sweep trained, "#12 · trial 3 of sweep NAME".

The parts live beside this module: the rows (runs_model.py) and their view (runs_table.py), the query box
(runs_query.py), the selected run's details (runs_details.py), the actions and their shortcuts (runs_actions.py),
the edits (runs_edits.py), the deletion's question and Undo bar (runs_removal.py), the writes to the history
(runs_writer.py) and the recorded runs read back (runs_loading.py). Nothing here reads or writes the history on the
GUI thread but opening it and looking one run up by its folder (a single indexed row): the listing, the sizes of the
folders, the runs' events and every change are jobs of other threads.
"""

from __future__ import annotations

from typing import Callable

from PySide6.QtCore import QItemSelectionModel, QSize, Qt, QTimer, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QMenu, QPushButton, QSplitter, QVBoxLayout, QWidget

from ....core.ground.errors import WorkbenchError, with_hint
from ....core.history.naming import run_name
from ....core.history.diff import diff_runs
from ....core.history.groups import seed_groups
from ....core.history.runs import RunRecord, RunStore, RunStoreError
from ....core.history.runs_export import export_csv, export_tensorboard
from ....core.history.sweeps import TrialOf, trials_of_runs
from ...support import file_dialogs
from .diff import DiffDialog
from ...support.tasks import Tasks
from .actions import RunActions
from .details import DetailsPane
from .edits import RunEdits
from .loading import CACHED_RUNS, LoadedRun, RunLoader, load_run
from .rows import (COLUMNS, LIST_SLOT, SORT_ROLE, Listing, RunsTableModel, distinct_names, measure_folders,
                         read_listing)
from .query import QueryBar
from .removal import RunDeletion, UndoBar
from .table import RunsTable
from .writer import RunsWriter

# What the rest of the window (and its tests) read from here: the model's names too.
__all__ = ["CACHED_RUNS", "COLUMNS", "SORT_ROLE", "VISIBLE_ROWS", "LoadedRun", "RunsPanel", "load_run"]

SLOT = "runs"
HINT = "Select two or more runs to compare their curves; double-click one to re-open it."
OPEN_SLOT = "runs-open"
EXPORT_SLOT = "runs-export"  # apart from SLOT: a click on a run must not drop an export under way
TRIALS_SLOT = "runs-trials"  # which runs sweeps trained: read after each listing
DISK_SLOT = "runs-disk"  # the sizes of folders not measured yet
DIFF_SLOT = "runs-diff"
VISIBLE_ROWS = 2  # the table is never squeezed below this many runs
WATCH_MS = 1000  # how often the history's change counter is asked (a PRAGMA: no rows read)
SHOWN_ROWS = 5  # the panel asks for this many (sizeHint): the window sizes the dock for it
DETAILS_WIDTH = 320  # the details pane's width when first shown


def _button(text: str, name: str, tip: str, slot) -> QPushButton:
    button = QPushButton(text)
    button.setObjectName(name)
    button.setToolTip(tip)
    button.clicked.connect(slot)
    return button


class RunsPanel(QWidget):
    compareRequested = Signal(list)  # LoadedRuns: 0 or 1 clears the overlay
    openRequested = Signal(object)  # a LoadedRun
    continueRequested = Signal(object)  # a RunRecord (without events) to continue training
    cloneRequested = Signal(object)  # a RunRecord (without events) whose settings a new run starts from
    warmRequested = Signal(object)  # … and whose compile cache it loads before compiling
    repeatRequested = Signal(object)  # a RunRecord (without events) to train again with other seeds
    refreshed = Signal()  # a new listing of the history is shown
    _upgrading = Signal(str)  # how far an upgrade has got, from the pool thread opening the history
    runsDeleted = Signal(list)  # the RunRecords (without events) of the runs just deleted

    def __init__(self, tasks: Tasks, db=None, parent: QWidget | None = None):
        super().__init__(parent)
        self.tasks = tasks
        self.db = db
        self.store: RunStore | None = None  # opened on the GUI thread; looks runs up by their folder
        self.writer = RunsWriter(tasks, db)
        self.loader = RunLoader(tasks, db, lambda error: self.message.setText(f"Could not read the runs: {error}"))
        self._measured: set[int] = set()  # runs whose folder was measured in this session
        self._compared: tuple[int, ...] = ()  # the selection last acted on (a listing selects it again)
        self.diff_dialog: DiffDialog | None = None
        # Runs recorded by others (the CLI, another window) appear while this one is open: the history's change
        # counter is asked every WATCH_MS (no rows are read unless it moved).
        self._seen_changes: int | None = None
        self._seen_state: int | None = None
        self.watch = QTimer(self)
        self.watch.setInterval(WATCH_MS)
        self.watch.timeout.connect(self._check_changes)
        # The splitter is the dock's first child, so Alt+N (go to the dock) focuses the table; the query box is the
        # second, so Tab goes from it to the table (the table joins the focus chain as it joins the splitter).
        self.splitter = QSplitter(Qt.Horizontal, self)
        self.query_bar = QueryBar(self)
        self.query_bar.queryChanged.connect(lambda _query: self._filter())
        self.query_bar.archivedToggled.connect(lambda _shown: self._filter())
        self.model = RunsTableModel(self)
        self.table = RunsTable(self.model)
        self.table.setMinimumHeight(self.table.height_for(VISIBLE_ROWS))
        self.table.selectionModel().selectionChanged.connect(self._selection_changed)
        self.table.settled.connect(self._selection_changed)
        # a double click, or Enter on the current run (Qt activates an item for both): the keyboard opens runs too
        self.table.activated.connect(self._open_index)
        self.details = DetailsPane()
        self.details.nameEdited.connect(lambda run_id, text: self._edited(run_id, "Name", text))
        self.details.tagsEdited.connect(lambda run_id, text: self._edited(run_id, "Tags", text))
        self.details.notesEdited.connect(lambda run_id, text: self.edits.noted(run_id, text))
        self.splitter.addWidget(self.table)
        self.splitter.addWidget(self.details)
        self.splitter.setStretchFactor(0, 1)
        self.splitter.setChildrenCollapsible(False)
        self.details.hide()
        self.undo_bar = UndoBar()
        self.run_actions = RunActions(self.table, {
            "open": self.open_selected, "compare": self.compare_selected, "continue": self.continue_selected,
            "diff": self.diff_selected, "rename": lambda: self.edit_selected("Name"),
            "tags": lambda: self.edit_selected("Tags"), "archive": self.archive_selected,
            "delete": self.delete_selected, "clone": lambda: self._emit_single(self.cloneRequested),
            "warm": lambda: self._emit_single(self.warmRequested),
            "repeat": lambda: self._emit_single(self.repeatRequested)})
        self.model.edited.connect(self._edited)
        self.message = QLabel(HINT)
        self._upgrading.connect(self.message.setText)
        self._when_open: list[Callable[[], None]] = []
        self.message.setObjectName("runsMessage")
        self.message.setWordWrap(True)
        self.edits = RunEdits(self.model, self.writer, tasks, say=self.message.setText, shown=self._shown_changed,
                              relist=self.refresh)
        self.deletion = RunDeletion(self, tasks, self.writer, db, self.undo_bar, say=self.message.setText,
                                    deleted=self._deleted, relist=self.refresh)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.query_bar)
        layout.addWidget(self.splitter, 1)
        layout.addWidget(self.undo_bar)
        # Under the table, not beside it: the table keeps the dock's width (~1000 px in a 1366-px window).
        layout.addLayout(self._build_buttons())
        self._selection_changed()

    def _build_buttons(self) -> QHBoxLayout:
        self.details_button = QPushButton("Details")
        self.details_button.setObjectName("runsDetailsButton")
        self.details_button.setToolTip("Show or hide the selected run's name, tags and note beside the table")
        self.details_button.setCheckable(True)
        self.details_button.toggled.connect(self._details_toggled)
        export_button = QPushButton("Export runs…")
        export_button.setObjectName("exportRunsButton")
        export_button.setToolTip("The selected runs (all when none is selected): config, metrics and per-step "
                                 "curves as one CSV, or TensorBoard event files")
        export_menu = QMenu(export_button)
        export_menu.addAction("As CSV…", self.choose_export_csv).setObjectName("exportCsvAction")
        export_menu.addAction("For TensorBoard…", self.choose_export_tensorboard).setObjectName("exportTbAction")
        export_button.setMenu(export_menu)
        buttons = QHBoxLayout()
        for button in (
                _button("Open run", "openRunButton", "Bring the selected run back (Enter)", self.open_selected),
                _button("Continue training…", "continueButton", "Train the selected run further from its "
                        "checkpoint: the same steps, losses and weights as if it had never stopped",
                        self.continue_selected),
                _button("Compare", "compareButton", "Overlay the selected runs' curves; a run of a seed group "
                        "brings its whole group (Ctrl+Shift+C)", self.compare_selected),
                _button("Diff…", "diffButton", "What differs between the selected runs (Ctrl+D)", self.diff_selected),
                _button("Delete…", "deleteRunsButton", "Delete the selected runs and move their folders to the "
                        "trash (Delete; asks first, Undo brings them back)", self.delete_selected),
                export_button, self.details_button):
            buttons.addWidget(button)
        buttons.addWidget(self.message, 1)  # beside the buttons: the table keeps the dock's height
        return buttons

    def sizeHint(self) -> QSize:
        """SHOWN_ROWS runs in view: what the window sizes the Runs dock by (a user scrolls a longer history)."""
        hint = super().sizeHint()
        return QSize(hint.width(), hint.height() - self.splitter.sizeHint().height()
                     + self.table.height_for(SHOWN_ROWS))

    # -- the listing ----------------------------------------------------------------------------------------------
    def _open_store(self) -> RunStore | None:
        """The dock's own connection to the history; None until it is open. It is opened on a pool thread: opening
        an older history upgrades it in place, tens of seconds for thousands of runs, said in the dock as it goes
        while the window stays usable; the listing follows (`opened`)."""
        if self.store is None and not self.tasks.busy(OPEN_SLOT):
            self.message.setText("Opening the run history…")
            self.tasks.submit(OPEN_SLOT, lambda: RunStore(self.db, progress=self._upgrading.emit), self._opened,
                              lambda exc: self.message.setText(f"Run history unavailable: {with_hint(exc)}"))
        return self.store

    def _opened(self, store: RunStore) -> None:
        self.store = store
        self.message.setText(HINT)
        self.refresh()
        waiting, self._when_open = self._when_open, []
        for then in waiting:
            then()

    def when_open(self, then: Callable[[], None]) -> None:
        """`then()` once the history is open: now, or when it has been opened (an older one upgraded first)."""
        if self._open_store() is not None:
            then()
        else:
            self._when_open.append(then)

    def _deleted(self, run_ids) -> None:
        """Runs are gone from the history: the dock forgets what it kept of them, and says which (views that show
        one of them clear it)."""
        records = [record for run_id in run_ids if (record := self.model.record(run_id)) is not None]
        self.loader.forget(run_ids)
        self.runsDeleted.emit(records)

    def focus_target(self) -> QWidget:
        """Where going to this dock (Alt+8) puts the focus: the table, whose keys act on the selected runs."""
        return self.table

    def _check_changes(self) -> None:
        """Another process committed to the history since the last look: list it again if what the list shows
        changed (a run added, ended, renamed, tagged, archived, deleted), not for a run's progress."""
        if self.store is None:
            return
        changes = self._read_or_none(self.store.change_count)
        if changes == self._seen_changes:
            return
        self._seen_changes = changes
        if self._read_or_none(self.store.listing_state) != self._seen_state:
            self.refresh()

    @staticmethod
    def _read_or_none(read):
        try:
            return read()
        except RunStoreError:
            return None  # said by the listing, which reads the same file

    def refresh(self) -> None:
        """List the history again, read on a pool thread (`refreshed` once it is shown)."""
        if self._open_store() is None:
            return
        # before the read: a commit after it is seen at the next look
        self._seen_changes = self._read_or_none(self.store.change_count)
        self._seen_state = self._read_or_none(self.store.listing_state)
        self.watch.start()
        self.tasks.submit(LIST_SLOT, lambda: read_listing(self.db), self._show_listing,
                          lambda error: self.message.setText(f"Run history unavailable: {with_hint(error)}"))

    def _show_listing(self, listing: Listing) -> None:
        self.model.set_listing(listing)
        self.query_bar.set_records(listing.records)
        self._count()
        self.table.fit_columns()
        self._measure_disks(listing.records)
        self._read_trials({r.id: r.out_dir for r in listing.records})
        self.refreshed.emit()

    def _filter(self) -> None:
        self.model.set_filter(self.query_bar.query, self.query_bar.archived.isChecked())
        self._count()

    def _count(self) -> None:
        self.query_bar.set_count(self.model.rowCount(), self.model.total, self.model.archived_hidden)

    @property
    def query_text(self) -> str:
        """The query in the box (the window keeps it across launches)."""
        return self.query_bar.query_text

    def set_query_text(self, text: str) -> None:
        self.query_bar.set_query_text(text)

    @property
    def proxy(self) -> RunsTableModel:
        """The rows as the table shows them, filtered and sorted (it was a sort proxy before the table's model
        sorted and filtered itself; callers read rows through it)."""
        return self.model

    def _read_trials(self, out_dirs: dict[int, str | None]) -> None:
        """Mark the runs sweeps trained, once read on a pool thread: the studies are another file, which a sweep
        may be writing (its lock would hold the GUI thread). Only the latest listing's answer is shown."""
        self.tasks.submit(TRIALS_SLOT, lambda: trials_of_runs(self.db, out_dirs), self._show_trials,
                          lambda error: self.message.setText(f"Could not read which runs sweeps trained: {error}"))

    def _show_trials(self, trials: dict[int, TrialOf]) -> None:
        self.model.set_trials(trials)
        self.table.fit_columns()

    def _measure_disks(self, records) -> None:
        """The Disk column of runs recorded before sizes were (or whose size could not be taken as they ended):
        their folders measured on a pool thread, and the sizes kept in the history."""
        wanted = {r.id: r.out_dir for r in records
                  if r.disk_bytes is None and r.out_dir and not r.elsewhere and r.id not in self._measured}
        if not wanted:
            return

        def measured(sizes: dict[int, int | None]) -> None:
            self._measured.update(sizes)
            self.model.set_disk(sizes)

        self.model.measuring |= set(wanted)
        self.tasks.submit(DISK_SLOT, lambda: measure_folders(self.db, wanted), measured,
                          lambda error: self.message.setText(f"Could not measure the runs' folders: {error}"))

    # -- what other parts of the window ask -----------------------------------------------------------------------
    def parent_of(self, run_id: int) -> int | None:
        """The listed run that `run_id` continues (None when it continues none of them)."""
        return self.model.listing.parents.get(run_id)

    def id_for_out_dir(self, out_dir) -> int | None:
        """The newest run that wrote into `out_dir`; None when the history has no such run or cannot be read."""
        try:
            if self._open_store() is not None:
                return self.store.id_for_out_dir(out_dir)
            with RunStore(self.db, reading=True) as store:  # still being opened (upgraded): read as it is
                return store.id_for_out_dir(out_dir)
        except WorkbenchError:
            return None

    def name_for_out_dir(self, out_dir) -> str | None:
        """The name ('#7') of that run, so a run is called the same everywhere."""
        run_id = self.id_for_out_dir(out_dir)
        return run_name(run_id) if run_id is not None else None

    def selected_ids(self) -> list[int]:
        return self.table.selected_ids()

    def selected_records(self) -> list[RunRecord]:
        return [self.model.record(run_id) for run_id in self.selected_ids()]

    def select_ids(self, ids: list[int]) -> None:
        self.table.select_ids(ids)

    def hidden_columns(self) -> list[str]:
        """The columns the user has hidden (the header's menu), to keep across launches."""
        return self.table.hidden_columns()

    def set_hidden_columns(self, titles: list[str]) -> None:
        self.table.set_hidden_columns(titles)

    def load_runs(self, ids: list[int], deliver: Callable[[list[LoadedRun]], None], slot: str = SLOT,
                  panels: bool = True) -> None:
        """Hand `deliver` the runs' curves, read off the GUI thread (loading.py), with what the panels show unless
        only `panels`=False (a comparison: seed groups' members whole, other runs as views); a caller whose request
        a click must not drop, as a live continuation's parent curves, asks in a task slot of its own."""
        records = [] if panels else [self.model.record(run_id) for run_id in ids]
        grouped = frozenset(run_id for group in seed_groups([r for r in records if r is not None])
                            for run_id in group.run_ids)
        self.loader.load(ids, deliver, slot, panels, grouped)

    def load_detail(self, wanted, deliver) -> None:
        """Compared runs read finer over a zoomed range (loading.RunLoader.load_detail)."""
        self.loader.load_detail(wanted, deliver)

    # -- the selection ------------------------------------------------------------------------------------------
    def _selection_changed(self, *_args) -> None:
        if self.table.restoring:
            return
        records = self.selected_records()
        self.run_actions.update(len(records), all(r.archived for r in records))
        self._show_details()
        ids = tuple(r.id for r in records)
        if ids == self._compared:
            return
        self._compared = ids
        if len(ids) >= 2:
            self.load_runs(list(ids), self.compareRequested.emit, panels=False)
        else:
            self.tasks.drop(SLOT)  # a comparison still loading is no longer wanted
            self.compareRequested.emit([])

    def _show_details(self) -> None:
        records = self.selected_records()
        self.details.show_record(records[0] if len(records) == 1 else None, len(records))

    def _details_toggled(self, shown: bool) -> None:
        """The details pane beside the table, or not (the Details button)."""
        self.details.setVisible(shown)
        if shown and self.splitter.sizes()[1] == 0:
            self.splitter.setSizes([max(self.splitter.width() - DETAILS_WIDTH, 1), DETAILS_WIDTH])

    # -- actions ------------------------------------------------------------------------------------------------
    def _open_index(self, index) -> None:
        """The run whose row was activated (Enter on the current row needs no selection first)."""
        self.select_ids([self.model.rows[index.row()].id])
        self.open_selected()

    def open_selected(self) -> None:
        ids = self.selected_ids()
        if len(ids) == 1:
            self.load_runs(ids, lambda records: self.openRequested.emit(records[0]))

    def compare_selected(self) -> None:
        """Overlay the selected runs, each with the rest of its seed group."""
        ids = set(self.selected_ids())
        ids.update(*(self.model.group_of[run_id].run_ids for run_id in list(ids) if run_id in self.model.group_of))
        if len(ids) < 2:
            self.message.setText("Select two or more runs (or a run of a seed group) to compare them.")
            return
        self.load_runs(sorted(ids), self.compareRequested.emit, panels=False)

    def _single(self, what: str) -> RunRecord | None:
        records = self.selected_records()
        if len(records) != 1:
            self.message.setText(f"Select one run to {what}.")
            return None
        return records[0]

    def continue_selected(self) -> None:
        record = self._single("continue training it")
        if record is None:
            return
        if not record.checkpoint:
            self.message.setText(f"Run {run_name(record.id)} has no checkpoint to continue from.")
            return
        self.continueRequested.emit(record)

    def _emit_single(self, signal) -> None:
        """A request about one run (New run from this…, Repeat with seeds…), with its record."""
        record = self._single("start a run from its settings")
        if record is not None:
            signal.emit(record)

    def edit_selected(self, title: str) -> None:
        """Edit the selected run's name or tags in place (F2 edits the tags when they are the current cell)."""
        ids = self.selected_ids()
        if len(ids) != 1:
            return
        row, current = self.model.row_of(ids[0]), self.table.currentIndex()
        if title == "Name" and current.row() == row and COLUMNS[current.column()] == "Tags":
            title = "Tags"
        column = COLUMNS.index(title)
        self.table.setColumnHidden(column, False)
        cell = self.model.index(row, column)
        # (the view's setCurrentIndex would read the Ctrl of Ctrl+T as a Ctrl+click, and deselect the run)
        self.table.selectionModel().setCurrentIndex(cell, QItemSelectionModel.NoUpdate)
        self.table.edit(cell)

    # -- changes to runs ----------------------------------------------------------------------------------------
    def _edited(self, run_id: int, title: str, text: str) -> None:
        if not self.edits.edited(run_id, title, text):
            self.details.revert_tags()

    def _shown_changed(self) -> None:
        self._count()
        self._show_details()

    def flush_edits(self) -> None:
        """Write what is being typed in the details (the window is closing) and wait for every write asked."""
        self.details.flush()
        self.writer.drain()

    def archive_selected(self) -> None:
        """Archive the selected runs, or bring them back when every one of them is archived."""
        records = self.selected_records()
        if records:
            self.edits.archive(records)

    def delete_selected(self) -> None:
        """Ask, then delete the selected runs (Undo in the bar that follows)."""
        ids = self.selected_ids()
        if ids and self._open_store() is not None:
            self.deletion.delete(ids)

    def diff_selected(self) -> None:
        """Open the diff of the selected runs, read with their events on a pool thread."""
        records = self.selected_records()
        if len(records) < 2:
            self.message.setText("Select two or more runs to see what differs between them.")
            return
        ids, names = [r.id for r in records], distinct_names(records)

        def read():
            with RunStore(self.db, recover=False) as store:
                return diff_runs([store.get(run_id, with_events=True, steps=False) for run_id in ids])

        def show(diff) -> None:
            if self.diff_dialog is not None:
                self.diff_dialog.close()
            self.diff_dialog = DiffDialog(diff, names, self)
            self.diff_dialog.show()

        self.tasks.submit(DIFF_SLOT, read, show,
                          lambda error: self.message.setText(f"Could not diff the runs: {with_hint(error)}"))

    # -- export -------------------------------------------------------------------------------------------------
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
        """Finish the writes asked, and close the history."""
        self.watch.stop()
        self.writer.close()
        if self.store is not None:
            self.store.close()
            self.store = None
