"""The Runs dock's rows: every run of a listing as a row, filtered by the query and the archive toggle and sorted in
Python, over the records themselves.

A QStandardItemModel of 2,000 runs took ~300 ms of the GUI thread to build (an item per cell), and a
QSortFilterProxyModel sorts by calling `data()` back for every comparison; this model keeps the records, works out
a cell's text only when the view paints it, and filters and sorts a list of records (a few ms for 2,000). What is
costly to find out (the listing, which runs continue which, the seed groups, the sweeps' trials, the folders' sizes)
is read off the GUI thread and handed in (`set_listing`, `set_trials`, `set_disk`).

Name and Tags are edited in place: the model does not write them itself, it says what was typed (`edited`) and the
dock writes it, so that a tag the history refuses never shows as if it were kept.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

from PySide6.QtCore import QAbstractTableModel, QModelIndex, Qt, Signal
from PySide6.QtGui import QFont, QPalette
from PySide6.QtWidgets import QApplication

from ....core.ground import figures
from ....core.ground.config import setup_label
from ....core.ground.errors import WorkbenchError
from ....core.ground.progress import format_duration
from ....core.history.naming import model_name, run_name
from ....core.history.groups import SeedGroup, seed_groups
from ....core.history.query import Query
from ....core.history.runs import RunRecord, RunStore
from ....core.history.sweeps import TrialOf
from ....core.history.trash import size_text

COLUMNS = ("Run", "Name", "Tags", "Group", "When (UTC)", "Dataset", "Model", "Backend · mode · AMP", "Epochs",
           "Duration", "Best val", "Samples/s", "Disk", "Status")
EDITABLE = ("Name", "Tags")
# Hidden until the header's menu shows them: with every column the table is ~1,250 px wide, and a 1366-px window
# gives the Runs dock ~1,000 (the Status column went off its edge).
HIDDEN_BY_DEFAULT = ("Dataset", "Epochs")
LIST_SLOT = "runs-list"  # the Tasks slot of the listing: a newer refresh supersedes an older one still reading
SORT_ROLE = Qt.UserRole + 1  # what a column sorts by (column 0: the run's id, which callers read)
UNMEASURED = "…"  # a folder whose size is being measured
MISSING = "—"
HEADER_TIPS = {
    "Samples/s": figures.SAMPLES_PER_S.method, "Best val": figures.BEST_VAL_ACCURACY.method,
    "Name": "The name you gave the run (double-click or F2 to name it); unnamed runs are called by their number",
    "Tags": "Words to find the run by (tag:NAME in the query box); double-click or Ctrl+T to edit, comma-separated",
    "Group": "Runs whose settings differ only by their seed: Compare overlays the group as a mean with a band",
    "Disk": "What the run's folder holds on disk ('—': its files are on another computer, or gone)",
}


def shown_name(record: RunRecord) -> str:
    """What the list calls a run: the user's name for it, else its number ('#12')."""
    return record.name or run_name(record.id)


def distinct_names(records: list[RunRecord]) -> list[str]:
    """Each run as the list names it; a name two of them share gets their numbers ('baseline (#3)')."""
    names = [shown_name(record) for record in records]
    return [f"{name} ({run_name(record.id)})" if names.count(name) > 1 else name
            for name, record in zip(names, records)]


def tags_text(tags) -> str:
    return ", ".join(tags)


def typed_tags(text: str) -> list[str]:
    """Tags as typed in a cell or a field: comma-separated, blanks between commas ignored (a trailing comma is
    not an empty tag); each one is checked by the history (one word, not too long)."""
    return [tag for tag in (part.strip() for part in text.split(",")) if tag]


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


@dataclass(frozen=True)
class Listing:
    """The history as the dock lists it, read on a pool thread: the records (without events), which runs continue
    which, and the seed groups (a digest of every run's settings: too slow for the GUI thread at 2,000 runs)."""

    records: tuple[RunRecord, ...] = ()
    parents: dict[int, int] = field(default_factory=dict)  # run id → the listed run it continues
    groups: tuple[SeedGroup, ...] = ()


def read_listing(db) -> Listing:
    """The listing of the history at `db`, with a connection of its own (for a pool thread)."""
    with RunStore(db, recover=False) as store:
        records = store.list()
    return Listing(tuple(records), continued_from(records), tuple(seed_groups(records)))


def measure_folders(db, out_dirs: dict[int, str]) -> dict[int, int | None]:
    """Run id → what its folder (`out_dirs`) holds, measured and kept in the history at `db` (for a pool thread);
    None for a folder no longer there, or a run deleted meanwhile."""
    sizes: dict[int, int | None] = {}
    with RunStore(db, recover=False) as store:
        for run_id, out_dir in out_dirs.items():
            try:
                sizes[run_id] = store.measure_disk(run_id) if Path(out_dir).is_dir() else None
            except WorkbenchError:  # deleted meanwhile, or the history cannot take the size
                sizes[run_id] = None
    return sizes


def _figure(value: float | None, fmt: str) -> tuple[str, float]:
    """(its text, its sort key): "—" and -1 for a figure the run does not have."""
    return (format(value, fmt), value) if value is not None else (MISSING, -1.0)


# The plain columns: a run's text and sort key from its record alone.
_PLAIN: dict[str, Callable[[RunRecord], tuple[str, object]]] = {
    "When (UTC)": lambda r: (r.created[:19].replace("T", " "), r.created),
    "Dataset": lambda r: (str(r.config.get("dataset", MISSING)), str(r.config.get("dataset", "")).lower()),
    "Model": lambda r: ((name := model_name(str(r.config.get("model", "sandwich")))), name.lower()),
    "Backend · mode · AMP": lambda r: ((label := setup_label(r.config)), label),
    "Epochs": lambda r: (str(r.config.get("epochs", MISSING)), r.config.get("epochs") or -1),
    "Duration": lambda r: ((format_duration(r.duration_s), r.duration_s) if r.duration_s is not None
                           else (MISSING, -1.0)),  # "—": running or unknown
    "Best val": lambda r: _figure(r.best_val_accuracy, ".2%"),
    "Samples/s": lambda r: _figure(r.samples_per_s or None, ",.0f"),  # 0: no steady step was measured
    "Tags": lambda r: ((text := tags_text(r.tags)), text.lower()),
}


_FLAGS = [Qt.ItemIsSelectable | Qt.ItemIsEnabled | Qt.ItemNeverHasChildren
          | (Qt.ItemIsEditable if title in EDITABLE else Qt.NoItemFlags) for title in COLUMNS]


class RunsTableModel(QAbstractTableModel):
    edited = Signal(int, str, str)  # run id, "Name" or "Tags", the text typed

    def __init__(self, parent=None):
        super().__init__(parent)
        self.listing = Listing()
        self.query = Query()
        self.show_archived = False
        self.rows: list[RunRecord] = []  # the records shown, in the table's order
        self.trials: dict[int, TrialOf] = {}
        self.group_of: dict[int, SeedGroup] = {}
        self.measuring: set[int] = set()  # runs whose folder's size is being measured
        self.sort_column, self.sort_order = 0, Qt.DescendingOrder
        self._by_id: dict[int, RunRecord] = {}

    # -- what it shows --------------------------------------------------------------------------------------
    def set_listing(self, listing: Listing) -> None:
        self.listing = listing
        self._by_id = {r.id: r for r in listing.records}
        self.group_of = {run_id: group for group in listing.groups for run_id in group.run_ids}
        self._rebuild()  # (the sweeps' trials stay marked until the listing's own are read: no flicker)

    def set_filter(self, query: Query, show_archived: bool) -> None:
        self.query, self.show_archived = query, show_archived
        self._rebuild()

    def sort(self, column: int, order=Qt.AscendingOrder) -> None:
        """By the column's value (numbers as numbers, sizes as bytes), then by run id: the same order every time."""
        self.sort_column, self.sort_order = column, order
        self._rebuild()

    def _rebuild(self) -> None:
        """Filter and sort every record again (a few ms at 2,000 runs) and reset the view (the table selects its
        runs again: runs_table.py)."""
        self.beginResetModel()
        shown = [r for r in self.listing.records
                 if (self.show_archived or not r.archived) and self.query.matches(r)]
        title = COLUMNS[self.sort_column]
        shown.sort(key=lambda r: (self._key(r, title), r.id), reverse=self.sort_order == Qt.DescendingOrder)
        self.rows = shown
        self.endResetModel()

    def set_trials(self, trials: dict[int, TrialOf]) -> None:
        self.trials = trials
        self._changed(set(trials), "Run")

    def set_disk(self, sizes: dict[int, int | None]) -> None:
        """Folders measured: their sizes (None: no folder here)."""
        self.measuring -= set(sizes)
        self._replace([replace(self._by_id[run_id], disk_bytes=n) for run_id, n in sizes.items()
                       if run_id in self._by_id and self._by_id[run_id].disk_bytes != n])
        self._changed(set(sizes), "Disk")

    def update_record(self, record: RunRecord) -> None:
        """One run changed (named, tagged, noted, archived): shown at once; a run the filter no longer keeps (or
        now keeps) leaves (or joins) the rows."""
        if record.id not in self._by_id:
            return
        was_shown = self.row_of(record.id) is not None
        self._replace([record])
        if was_shown != ((self.show_archived or not record.archived) and self.query.matches(record)):
            self._rebuild()
        else:
            self._changed({record.id}, *COLUMNS)

    def _replace(self, records: list[RunRecord]) -> None:
        """These records in place of those of their runs, in the listing and the rows."""
        if not records:
            return
        self._by_id.update((r.id, r) for r in records)
        by_id = self._by_id
        self.listing = replace(self.listing, records=tuple(by_id[r.id] for r in self.listing.records))
        self.rows = [by_id[r.id] for r in self.rows]

    def _changed(self, run_ids: set[int], *titles: str) -> None:
        """Repaint these runs' cells: one signal from the first changed row to the last (one a row took ~10 ms a
        thousand)."""
        rows = [row for row, record in enumerate(self.rows) if record.id in run_ids]
        if rows:
            columns = [COLUMNS.index(title) for title in titles]
            self.dataChanged.emit(self.index(min(rows), min(columns)), self.index(max(rows), max(columns)))

    def record(self, run_id: int) -> RunRecord | None:
        return self._by_id.get(run_id)

    def row_of(self, run_id: int) -> int | None:
        return next((row for row, r in enumerate(self.rows) if r.id == run_id), None)

    @property
    def total(self) -> int:
        return len(self.listing.records)

    @property
    def archived_hidden(self) -> int:
        return 0 if self.show_archived else sum(r.archived for r in self.listing.records)

    # -- cells ----------------------------------------------------------------------------------------------
    def rowCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(self, section: int, orientation, role=Qt.DisplayRole):
        if orientation != Qt.Horizontal:
            return None
        if role == Qt.DisplayRole:
            return COLUMNS[section]
        if role == Qt.ToolTipRole:
            return HEADER_TIPS.get(COLUMNS[section])
        return None

    def flags(self, index: QModelIndex):
        """(Asked for every cell the view paints or selects: a lookup, not a call to the base class.)"""
        return _FLAGS[index.column()] if index.isValid() else Qt.NoItemFlags

    def data(self, index: QModelIndex, role=Qt.DisplayRole):
        if not index.isValid():
            return None
        record, title = self.rows[index.row()], COLUMNS[index.column()]
        if role == Qt.DisplayRole:
            return self._text(record, title)
        if role == Qt.EditRole:
            return record.name if title == "Name" else tags_text(record.tags) if title == "Tags" else None
        if role == SORT_ROLE:
            return self._key(record, title)
        if role == Qt.ToolTipRole:
            return self._tooltip(record, title)
        if role == Qt.FontRole and record.archived:
            font = QFont()
            font.setItalic(True)
            return font
        if role == Qt.ForegroundRole and (record.archived or title == "Name" and not record.name):
            return QApplication.palette().brush(QPalette.PlaceholderText)  # archived, or a number for a name
        return None

    def setData(self, index: QModelIndex, value, role=Qt.EditRole) -> bool:
        """An edit in place is handed to the dock (`edited`), which keeps it (update_record) once the history may."""
        if role != Qt.EditRole or COLUMNS[index.column()] not in EDITABLE:
            return False
        record, title = self.rows[index.row()], COLUMNS[index.column()]
        if str(value) != self.data(index, Qt.EditRole):
            self.edited.emit(record.id, title, str(value))
        return False

    def _run_text(self, record: RunRecord) -> str:
        """'#12', '#2 ↳ #1' (it continues #1), '#12 · trial 3 of sweep NAME'."""
        text = run_name(record.id)
        if record.id in self.listing.parents:
            text += f" ↳ {run_name(self.listing.parents[record.id])}"
        if record.id in self.trials:
            text += f" · {self.trials[record.id]}"
        return text

    def _text(self, record: RunRecord, title: str) -> str:
        if title == "Run":
            return self._run_text(record)
        if title == "Name":
            return shown_name(record)
        if title == "Group":
            group = self.group_of.get(record.id)
            return f"{run_name(group.run_ids[0])} ×{len(group.run_ids)}" if group else ""
        if title == "Disk":
            if record.disk_bytes is not None:
                return size_text(record.disk_bytes)
            return UNMEASURED if record.id in self.measuring else MISSING
        if title == "Status":
            return f"{record.status} on {record.elsewhere}" if record.elsewhere else record.status
        return _PLAIN[title](record)[0]

    def _key(self, record: RunRecord, title: str):
        if title == "Run":
            return record.id
        if title == "Name":
            return shown_name(record).lower()
        if title == "Group":
            group = self.group_of.get(record.id)
            return group.run_ids[0] if group else -1
        if title == "Disk":
            return record.disk_bytes if record.disk_bytes is not None else -1
        if title == "Status":
            return self._text(record, title)
        return _PLAIN[title](record)[1]

    def _tooltip(self, record: RunRecord, title: str) -> str | None:
        group = self.group_of.get(record.id)
        if title == "Run":
            lines = []
            if record.id in self.listing.parents:
                lines.append(f"{run_name(record.id)} continues {run_name(self.listing.parents[record.id])} from its "
                             "checkpoint")
            if record.id in self.trials:
                lines.append(f"{run_name(record.id)} was {self.trials[record.id]}: Run → Sweep… shows its trials")
            if group is not None:
                lines.append(f"Seed group: {group.label}")
            return "\n".join(lines) or None
        if title == "Group" and group is not None:
            return f"{group.label} — Compare overlays the whole group"
        if title == "Name":
            return record.name or None
        if title == "Tags":
            return tags_text(record.tags) or None
        if title == "Status" and record.elsewhere:
            return f"Trained on {record.elsewhere}: its files are there, in {record.out_dir}"
        return None
