"""What can be done to the selected runs, as actions: in the rows' context menu, with their keyboard shortcuts while
the table has the focus, enabled for the selections they take; and the header's menu that shows or hides columns.

The shortcuts are the table's own (Qt.WidgetShortcut): Delete in the query box deletes a letter, not runs, and none
of them takes a key from the window's shortcuts (Ctrl+R trains, Esc stops, Ctrl+S exports a checkpoint).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QMenu, QTableView

from ...actions import DOCK_COMMAND
from .rows import COLUMNS


@dataclass(frozen=True)
class RunAction:
    key: str
    text: str
    shortcut: str | QKeySequence.StandardKey | None
    tip: str
    least: int = 1  # runs it takes at least
    most: int | None = None  # … and at most (None: any number)


ACTIONS = (
    RunAction("open", "Open\tEnter", None, "Bring the run back: its curves, compile report and model", 1, 1),
    RunAction("compare", "Compare", "Ctrl+Shift+C",
              "Overlay the selected runs' curves; a run of a seed group brings its whole group (a mean with a band)"),
    RunAction("continue", "Continue training…", None, "Train the run further from its checkpoint", 1, 1),
    RunAction("diff", "Diff…", "Ctrl+D", "A table of only what differs between the selected runs", 2),
    None,
    RunAction("rename", "Rename", "F2", "Name the run in place (Enter keeps the name, Esc leaves it)", 1, 1),
    RunAction("tags", "Edit tags", "Ctrl+T", "Edit the run's tags in place, comma-separated", 1, 1),
    RunAction("archive", "Archive", "Ctrl+Shift+A", "Hide the runs from the list (Show archived lists them)"),
    RunAction("delete", "Delete…", QKeySequence.Delete,
              "Delete the runs from the history and move their folders to the trash (asks first; Undo brings them "
              "back)"),
    None,
    RunAction("clone", "New run from this…", "Ctrl+Shift+N", "Put the run's settings into the form, to edit and "
              "train", 1, 1),
    RunAction("warm", "Warm start from this…", None, "Put the run's settings into the form with its compile cache "
              "loaded before the first compile (warm_from): the new run skips most of the compile", 1, 1),
    RunAction("repeat", "Repeat with seeds…", "Ctrl+Shift+R", "Train the run's settings again with other seeds, as "
              "one group", 1, 1),
)


class RunActions:
    """The actions of ACTIONS on `table`, each calling `slots[key]`."""

    def __init__(self, table: QTableView, slots: dict[str, Callable[[], None]]):
        self.table = table
        self.actions: dict[str, QAction] = {}
        for spec in filter(None, ACTIONS):
            action = QAction(spec.text, table)
            action.setObjectName(f"runs{spec.key.capitalize()}Action")
            action.setProperty(DOCK_COMMAND, True)
            action.setToolTip(spec.tip)
            action.setStatusTip(spec.tip)
            if spec.shortcut is not None:
                action.setShortcut(QKeySequence(spec.shortcut))
                action.setShortcutContext(Qt.WidgetShortcut)
            action.triggered.connect(lambda _checked=False, slot=slots[spec.key]: slot())
            table.addAction(action)
            self.actions[spec.key] = action
        table.setContextMenuPolicy(Qt.CustomContextMenu)
        table.customContextMenuRequested.connect(self._show_menu)
        header = table.horizontalHeader()
        header.setContextMenuPolicy(Qt.CustomContextMenu)
        header.customContextMenuRequested.connect(self._show_columns_menu)

    def __getitem__(self, key: str) -> QAction:
        return self.actions[key]

    def update(self, selected: int, all_archived: bool) -> None:
        """Enabled for the selections they take; Archive reads Unarchive when every selected run is archived."""
        for spec in filter(None, ACTIONS):
            self.actions[spec.key].setEnabled(selected >= spec.least and (spec.most is None or selected <= spec.most))
        self.actions["archive"].setText("Unarchive" if selected and all_archived else "Archive")

    def menu(self) -> QMenu:
        menu = QMenu(self.table)
        menu.setObjectName("runsContextMenu")
        for spec in ACTIONS:
            if spec is None:
                menu.addSeparator()
            else:
                menu.addAction(self.actions[spec.key])
        return menu

    def _show_menu(self, position) -> None:
        self.menu().popup(self.table.viewport().mapToGlobal(position))

    def columns_menu(self) -> QMenu:
        """A check per column (but the Run column, which names the rows): shown or hidden."""
        menu = QMenu(self.table)
        menu.setObjectName("runsColumnsMenu")
        for column, title in enumerate(COLUMNS[1:], start=1):
            action = menu.addAction(title.replace("&", "&&"))
            action.setCheckable(True)
            action.setChecked(not self.table.isColumnHidden(column))
            action.toggled.connect(lambda shown, column=column: self.table.setColumnHidden(column, not shown))
        return menu

    def _show_columns_menu(self, position) -> None:
        header = self.table.horizontalHeader()
        self.columns_menu().popup(header.mapToGlobal(position))
