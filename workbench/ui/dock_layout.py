"""How the window's docks share it: a first window fitted to the screen (a 1366×768 laptop too), the docks given
their shares once it is shown, the Runs dock grown to its five runs when it comes in front, and the tab bar of a
group of tabbed docks found (Qt keeps no handle on it); a dock's content that scrolls, and the dock a widget is in."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QRect, QSize, Qt, QTimer
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QDockWidget, QMainWindow, QScrollArea, QTabBar, QWidget

DEFAULT_SIZE = (1400, 880)
FRAME_ALLOWANCE = 32  # the window manager's title bar, which availableGeometry() does not leave out
BOTTOM_SHARE = 0.2  # of the window's height for the Log/Runs docks
SIDE_SHARE = 0.25  # of its width for each side's docks


class VerticalScroll(QScrollArea):
    """A dock's content that scrolls vertically rather than forcing the window taller than a small screen, and never
    sideways: it is never narrower than its content's minimum width. (A content wider than the view slid sideways
    whenever a field took the focus, cutting the labels, with no scroll bar to bring them back.)"""

    def __init__(self, widget: QWidget, min_width: int = 0):
        super().__init__()
        self.min_width = min_width
        self.setWidget(widget)
        self.setWidgetResizable(True)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
        widget.installEventFilter(self)  # its layout changing (a problem line, a hidden group) may change its width

    def minimumSizeHint(self) -> QSize:
        hint = super().minimumSizeHint()
        needed = (self.widget().minimumSizeHint().width() + self.verticalScrollBar().sizeHint().width()
                  + 2 * self.frameWidth())
        return QSize(max(self.min_width, needed), hint.height())

    def eventFilter(self, watched, event) -> bool:
        if watched is self.widget() and event.type() == QEvent.LayoutRequest:
            self.updateGeometry()
        return super().eventFilter(watched, event)


def scrolled(widget: QWidget, min_width: int = 0) -> QScrollArea:
    return VerticalScroll(widget, min_width)


def dock_of(widget: QWidget | None) -> QDockWidget | None:
    """The dock `widget` is in, if any."""
    while widget is not None and not isinstance(widget, QDockWidget):
        widget = widget.parentWidget()
    return widget


class DockLayout:
    """The sizes of `window`'s docks (`docks`: by key, filled once the window is built)."""

    def __init__(self, window: QMainWindow, docks: dict[str, QDockWidget]):
        self.window, self.docks = window, docks
        self.to_size = False  # a first window sizes its docks when shown (fit_to_screen)
        # Qt makes the dock groups' tab bars as docks are tabbed, restored or dragged, and sets them up after it
        # made them: whole tab names are asked for a turn after any new child of the window.
        self.whole_soon = QTimer(window, singleShot=True, interval=0)
        self.whole_soon.timeout.connect(self.whole_tab_names)

    def whole_tab_names(self) -> None:
        """Every dock group's tabs say their docks' whole names, with scroll arrows where the group is too narrow
        for all of them: Qt's dock tabs elide, and a restored or narrow right-hand group read "Com… Pro… Pred…"."""
        for bar in self.window.findChildren(QTabBar, options=Qt.FindDirectChildrenOnly):
            if bar.elideMode() != Qt.ElideNone:
                bar.setElideMode(Qt.ElideNone)
                bar.setUsesScrollButtons(True)

    def fit_to_screen(self, screen: QRect | None = None) -> None:
        """The first window: DEFAULT_SIZE where the screen's available area (`screen`, by default the window's
        screen's) has room, else that area (a 1366×768 laptop), centred, with the docks sized to leave the plots
        most of it."""
        window = self.window
        screen = screen or (window.screen() or QGuiApplication.primaryScreen()).availableGeometry()
        width = min(DEFAULT_SIZE[0], screen.width())
        height = min(DEFAULT_SIZE[1], screen.height() - FRAME_ALLOWANCE)
        window.resize(width, height)
        window.move(screen.x() + (screen.width() - width) // 2, screen.y() + (screen.height() - height) // 2)
        self.to_size = True  # once shown: the dock areas only take sizes then

    def size_docks(self) -> None:
        """A first window's docks take their shares of it, once it is shown and they exist."""
        if not (self.to_size and self.docks):
            return
        self.to_size = False
        window, docks = self.window, self.docks
        bottom = int(window.height() * BOTTOM_SHARE)
        if self.in_front(docks["runs"]):
            bottom = max(bottom, self.runs_height())
        window.resizeDocks([docks["log"]], [bottom], Qt.Vertical)
        side = int(window.width() * SIDE_SHARE)
        tabs = self.dock_tabs(docks["compile"])
        right = max(side, sum(tabs.tabSizeHint(i).width() for i in range(tabs.count())))  # not "Comp… Pro…"
        # What the right tabs need beyond their share comes from the Setup form's (down to its minimum).
        window.resizeDocks([docks["setup"], docks["compile"]], [2 * side - right, right], Qt.Horizontal)

    def fit_runs_dock(self, visible: bool) -> None:
        """The Runs dock brought to the front grows to show its five runs (RunsPanel.sizeHint): its share at start
        (the Log's in front) left a 1366×768 window's 2, and that share keeps the plots their height until then.
        Measured once laid out: raised as the window opens, its height is not yet the one it will get."""
        if visible:
            QTimer.singleShot(0, self.window, self._grow_runs_dock)

    def _grow_runs_dock(self) -> None:
        dock = self.docks["runs"]
        if self.in_front(dock) and dock.height() < dock.sizeHint().height():
            self.window.resizeDocks([dock], [self.runs_height()], Qt.Vertical)

    def runs_height(self) -> int:
        """The Runs dock's group's height for its five runs (resizeDocks sizes a tabbed group with its tab bar)."""
        return self.docks["runs"].sizeHint().height() + self.dock_tabs(self.docks["runs"]).sizeHint().height()

    def in_front(self, dock: QDockWidget) -> bool:
        """`dock`'s tab is its group's current one (a tabbed dock behind another is still "visible" to Qt)."""
        tabs = self.dock_tabs(dock)
        return tabs.tabText(tabs.currentIndex()) == dock.windowTitle()

    def dock_tabs(self, dock: QDockWidget) -> QTabBar:
        """The tab bar of `dock`'s tabified group: the dock areas' own tab bar with a tab for each of the group's
        docks (tabifying one dock at a time leaves Qt an unused "Compile, Profile" bar as well)."""
        tabs = len(self.window.tabifiedDockWidgets(dock)) + 1
        return next(bar for bar in self.window.findChildren(QTabBar, options=Qt.FindDirectChildrenOnly)
                    if bar.count() == tabs and dock.windowTitle() in (bar.tabText(i) for i in range(tabs)))
