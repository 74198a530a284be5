"""Actions as data (napari's qactions): each feature declares its actions — what they say, do, their shortcut, where
they go in the menus and on the toolbar, and when they can be used — and the window builds them, in one place, the
same way. The command palette and the keyboard-shortcuts list read the menus, so a declared action appears there
too. A new feature's actions change no module but its own and the window's list of features."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QMainWindow, QMenu, QStyle, QToolBar

KEYWORDS = "keywords"  # the QAction property the command palette also searches
DOCK_COMMAND = "dockCommand"  # a QAction property: a dock's own command (its shortcut works inside the dock), listed
# in the palette and the shortcut sheet with the menus' actions
MENUS = ("File", "Run", "Kernel", "View", "Help")  # the menu bar, in order


@dataclass(frozen=True)
class ActionSpec:
    key: str  # how the window and its tests find it (`window.named_actions[key]`)
    text: str
    triggered: Callable[[], object]
    menu: str  # one of MENUS
    order: int  # its place in its menu, smaller first; a new hundred starts a group (a separator before it)
    shortcut: QKeySequence.StandardKey | Qt.Key | str | None = None
    icon: QStyle.StandardPixmap | None = None
    toolbar: int | None = None  # its place on the toolbar (a new hundred: a separator before it); None: not there
    enabled: Callable[[], bool] | None = None  # asked whenever what can be done may have changed; None: always
    name: str = ""  # its object name (for tests and scripts)
    button: str = ""  # its toolbar button's object name
    keywords: str = ""  # other words the command palette finds it by ("config load json" for Open settings…)


def build_actions(window: QMainWindow, specs: Sequence[ActionSpec]) -> tuple[dict[str, QAction], dict[str, QMenu]]:
    """The QActions of `specs` by key, each in its menu and on the toolbar where it says, their shortcuts working
    wherever the focus is; and the menus by title, made in MENUS' order (the window adds its View entries)."""
    actions: dict[str, QAction] = {}
    for spec in specs:
        action = QAction(spec.text, window)
        if spec.shortcut is not None:
            action.setShortcut(QKeySequence(spec.shortcut))
            action.setToolTip(f"{spec.text} ({QKeySequence(spec.shortcut).toString(QKeySequence.NativeText)})")
        if spec.icon is not None:
            action.setIcon(window.style().standardIcon(spec.icon))
        if spec.name:
            action.setObjectName(spec.name)
        action.setProperty(KEYWORDS, spec.keywords)
        action.triggered.connect(lambda _checked=False, run=spec.triggered: run())
        window.addAction(action)
        actions[spec.key] = action
    menus = {}
    for title in MENUS:
        menus[title] = window.menuBar().addMenu(f"&{title}")
        _fill(menus[title], [(spec.order, actions[spec.key]) for spec in specs if spec.menu == title])
    toolbar = window.addToolBar("Run")
    toolbar.setObjectName("runToolbar")
    toolbar.setToolButtonStyle(Qt.ToolButtonTextBesideIcon)
    _fill(toolbar, [(spec.toolbar, actions[spec.key]) for spec in specs if spec.toolbar is not None])
    for spec in specs:
        if spec.button:
            toolbar.widgetForAction(actions[spec.key]).setObjectName(spec.button)
    return actions, menus


def _fill(container: QMenu | QToolBar, placed: list[tuple[int, QAction]]) -> None:
    group = None
    for order, action in sorted(placed, key=lambda pair: pair[0]):
        if group is not None and order // 100 != group:
            container.addSeparator()
        group = order // 100
        container.addAction(action)


def refresh_actions(specs: Sequence[ActionSpec], actions: dict[str, QAction]) -> None:
    """Each action enabled as its spec says now."""
    for spec in specs:
        if spec.enabled is not None:
            actions[spec.key].setEnabled(spec.enabled())
