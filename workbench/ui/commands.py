"""Every action by keyboard: a command palette (Ctrl+K: type a few letters, Enter runs it), Help → Keyboard shortcuts
(the same list, read-only), and a shortcut per dock that shows it, raises it above the docks it is tabbed with and
moves the focus into it (a dock tab cannot take the focus itself).

The palette and the list are built from the window's menus when they open, so a new menu action appears in both
without being registered anywhere."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (QDialog, QDockWidget, QHeaderView, QLabel, QLineEdit, QListWidget, QListWidgetItem,
                               QMainWindow, QMenu, QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget)

from .actions import DOCK_COMMAND, KEYWORDS

PALETTE_SHORTCUT = "Ctrl+K"
SEARCHED = Qt.UserRole + 1  # a palette item's words to match: its text, menu, shortcut and keywords
SHORTCUTS_SHORTCUT = "Ctrl+/"


def menu_actions(window: QMainWindow) -> list[tuple[str, QAction]]:
    """(menu title, action) for every action in the window's menus, in menu order; separators, submenus and the
    menu bar's overflow menu (no title) left out."""
    found = []
    for menu in window.menuBar().findChildren(QMenu, options=Qt.FindDirectChildrenOnly):
        title = menu.title().replace("&", "")
        if title:
            found += [(title, action) for action in menu.actions()
                      if not action.isSeparator() and action.text() and action.menu() is None]
    return found


def command_actions(window: QMainWindow) -> list[tuple[str, QAction]]:
    """Every command once: the menus' actions, then each dock's own (DOCK_COMMAND: the Runs dock's rename, tags,
    diff, …), placed as "<dock> dock"."""
    found = menu_actions(window)
    seen = {id(action) for _, action in found}
    for dock in window.findChildren(QDockWidget):
        for action in dock.findChildren(QAction):
            if action.property(DOCK_COMMAND) and id(action) not in seen:
                seen.add(id(action))
                found.append((f"{dock.windowTitle()} dock", action))
    return found


def shortcut_text(action: QAction) -> str:
    """The action's shortcut, or the key its text names after a tab ("Open\tEnter": the table's own key)."""
    shortcut = action.shortcut().toString(QKeySequence.NativeText)
    return shortcut or action.text().partition("\t")[2]


def plain(text: str) -> str:
    """An action's text as read aloud: without the mnemonic's ampersand and the key named after a tab."""
    return text.partition("\t")[0].replace("&", "")


class CommandPalette(QDialog):
    """Type to filter every menu action by its name or its menu; Enter (or a double click) runs the chosen one and
    closes the palette. Disabled actions are listed, greyed, with why they cannot run now (their tooltip)."""

    def __init__(self, window: QMainWindow):
        super().__init__(window)
        self.setWindowTitle("Command palette")
        self.setObjectName("commandPalette")
        self.query = QLineEdit()
        self.query.setObjectName("commandQuery")
        self.query.setPlaceholderText("Type a command…")
        self.query.setAccessibleName("Command")
        self.list = QListWidget()
        self.list.setObjectName("commandList")
        self.list.setAccessibleName("Commands")
        layout = QVBoxLayout(self)
        layout.addWidget(self.query)
        layout.addWidget(self.list)
        self.none_found = QLabel()
        self.none_found.setObjectName("commandNoMatch")
        self.none_found.hide()
        layout.addWidget(self.none_found)
        self.actions_found = command_actions(window)
        for menu, action in self.actions_found:
            shortcut = shortcut_text(action)
            item = QListWidgetItem(f"{plain(action.text())}    {menu}" + (f"    {shortcut}" if shortcut else ""))
            item.setData(Qt.UserRole, action)
            item.setData(SEARCHED, f"{item.text()} {action.property(KEYWORDS) or ''}".lower())
            if not action.isEnabled():
                item.setFlags(item.flags() & ~Qt.ItemIsEnabled)
                item.setToolTip(action.toolTip())
            self.list.addItem(item)
        self.query.textChanged.connect(self._filter)
        self.query.returnPressed.connect(self.run_current)
        self.list.itemActivated.connect(lambda _item: self.run_current())
        self.resize(520, 420)
        self._filter("")

    def _filter(self, text: str) -> None:
        words = text.lower().split()
        first = None
        for row in range(self.list.count()):
            item = self.list.item(row)
            hidden = not all(word in item.data(SEARCHED) for word in words)
            item.setHidden(hidden)
            if not hidden and first is None and item.flags() & Qt.ItemIsEnabled:
                first = item
        self.list.setCurrentItem(first)
        shown = any(not self.list.item(row).isHidden() for row in range(self.list.count()))
        self.none_found.setText("" if shown else f"No command matches “{text.strip()}”")
        self.none_found.setVisible(not shown)

    def keyPressEvent(self, event) -> None:
        """Up and Down move through the list while the typing stays in the query."""
        if event.key() in (Qt.Key_Up, Qt.Key_Down):
            self.list.setFocus()
            self.list.keyPressEvent(event)
            self.query.setFocus()
            return
        super().keyPressEvent(event)

    def run_current(self) -> None:
        item = self.list.currentItem()
        if item is None or item.isHidden() or not item.flags() & Qt.ItemIsEnabled:
            return
        self.accept()
        item.data(Qt.UserRole).trigger()


class ShortcutsDialog(QDialog):
    """Help → Keyboard shortcuts: every command with its shortcut (each once; a dock's own work inside that dock),
    and the keys that are not actions."""

    EXTRA = (("Next / previous control", "Tab / Shift+Tab"), ("Leave a table", "Ctrl+Tab / Ctrl+Shift+Tab"))

    def __init__(self, window: QMainWindow):
        super().__init__(window)
        self.setWindowTitle("Keyboard shortcuts")
        self.setObjectName("shortcutsDialog")
        rows = [(plain(action.text()), shortcut_text(action), menu) for menu, action in command_actions(window)
                if shortcut_text(action)]
        rows += [(name, keys, "") for name, keys in self.EXTRA]
        self.table = QTableWidget(len(rows), 3)
        self.table.setObjectName("shortcutsTable")
        self.table.setAccessibleName("Keyboard shortcuts")
        self.table.setHorizontalHeaderLabels(["Command", "Shortcut", "Menu"])
        self.table.setEditTriggers(QTableWidget.NoEditTriggers)
        self.table.setTabKeyNavigation(False)
        self.table.verticalHeader().hide()
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeToContents)
        for row, values in enumerate(rows):
            for column, value in enumerate(values):
                self.table.setItem(row, column, QTableWidgetItem(value))
        layout = QVBoxLayout(self)
        layout.addWidget(QLabel(f"Every command is also in the command palette ({PALETTE_SHORTCUT})."))
        layout.addWidget(self.table)
        self.resize(560, 520)


def go_to_dock(dock: QDockWidget) -> None:
    """Show the dock, bring it in front of the docks it is tabbed with, and put the focus in it."""
    dock.show()
    dock.raise_()
    widget = dock.widget()
    target = getattr(widget, "focus_target", None)  # where the dock's work is (the Runs dock's table)
    if target is not None:
        target().setFocus(Qt.ShortcutFocusReason)
        return
    focusable = [child for child in [widget, *widget.findChildren(QWidget)]
                 if child.focusPolicy() & Qt.TabFocus and child.isEnabled() and child.isVisibleTo(dock)]
    (focusable[0] if focusable else widget).setFocus(Qt.ShortcutFocusReason)


def add_dock_navigation(window: QMainWindow, docks: dict[str, QDockWidget], menu: QMenu) -> list[QAction]:
    """View → one 'Go to …' action per dock (Alt+1, Alt+2, …), and ticking a dock in View raises it too."""
    actions = []
    for number, dock in enumerate(docks.values(), start=1):
        # after the dock's own handler of the same signal has shown it (connected first, called first)
        dock.toggleViewAction().triggered.connect(lambda shown, d=dock: shown and d.raise_())
        action = QAction(f"Go to {dock.windowTitle()}", window)
        action.setObjectName(f"goTo{dock.windowTitle().replace(' ', '')}Action")
        if number <= 9:
            action.setShortcut(QKeySequence(f"Alt+{number}"))
        action.triggered.connect(lambda _checked=False, d=dock: go_to_dock(d))
        window.addAction(action)
        menu.addAction(action)
        actions.append(action)
    return actions
