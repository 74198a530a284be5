"""What a screen reader would read for each control of a window, and what it could not: the audit behind
tests/ui/test_accessibility.py (and the closing note's counts)."""

from __future__ import annotations

import time

import numpy as np
from PySide6.QtCore import QEventLoop, QPoint, QRect, Qt
from PySide6.QtGui import QImage
from PySide6.QtWidgets import (QAbstractButton, QAbstractItemView, QAbstractSlider, QAbstractSpinBox, QApplication,
                               QComboBox, QDockWidget, QHeaderView, QLabel, QLineEdit, QPlainTextEdit, QScrollArea,
                               QScrollBar, QTabBar, QTextEdit, QWidget)

INTERACTIVE = (QAbstractButton, QLineEdit, QAbstractSpinBox, QComboBox, QAbstractItemView, QTabBar, QAbstractSlider,
               QTextEdit, QPlainTextEdit)


def spoken_name(widget: QWidget) -> str:
    """The name an assistive technology gets, as Qt's accessibility gives it: the accessible name, else a button's
    own text (or its tooltip, for an icon button), else the text of the label whose buddy it is. A tooltip names
    nothing else: it is read as a description."""
    if widget.accessibleName():
        return widget.accessibleName()
    if isinstance(widget, QTabBar):  # what is read is each tab, by its text
        texts = [widget.tabText(i) for i in range(widget.count())]
        return ", ".join(texts) if texts and all(texts) else ""
    text = getattr(widget, "text", None)
    if isinstance(widget, QAbstractButton) and callable(text) and text().replace("&", "").strip() not in ("", "…"):
        return text().replace("&", "")
    if isinstance(widget, QAbstractButton) and widget.toolTip():
        return widget.toolTip()
    return _buddy(widget)


def _buddy(widget: QWidget) -> str:
    """The text of the label whose buddy the widget is (a form row's label is its field's buddy): only the widget
    itself, not a row's container (a spin box beside a button is not named by the row's label)."""
    for label in widget.window().findChildren(QLabel):
        if label.buddy() is widget and label.text():
            return label.text().replace("&", "")
    return ""


def _interactive(widget: QWidget) -> bool:
    if not isinstance(widget, INTERACTIVE) or isinstance(widget, (QScrollBar, QHeaderView)):
        return False  # scroll bars and a table's headers are read as parts of their view
    if widget.objectName().startswith("qt_"):
        return False  # Qt's own parts (a tab bar's scroll arrows, a toolbar's overflow button), named by Qt
    parent = widget.parentWidget()
    if isinstance(parent, (QAbstractSpinBox, QComboBox, QLineEdit)) or isinstance(parent.parentWidget(), QComboBox):
        return False  # a box's own line edit, a line edit's clear button, a combo box's popup list: parts
    if isinstance(widget.parentWidget(), QTabBar):
        return False  # a tab bar's scroll arrows: Qt names them
    return True


def audit(window: QWidget) -> tuple[list[str], list[str]]:
    """(controls with no name, "dock: name" said by two controls of one dock)."""
    unnamed, duplicates = [], []
    names_by_dock: dict[str, dict[str, int]] = {}
    for widget in window.findChildren(QWidget):
        if not _interactive(widget):
            continue
        name = spoken_name(widget).strip()
        where = _dock_of(widget)
        if not name:
            unnamed.append(f"{where or 'window'}: {type(widget).__name__} {widget.objectName() or '(no objectName)'}")
            continue
        seen = names_by_dock.setdefault(where or "window", {})
        seen[name] = seen.get(name, 0) + 1
    for dock, names in names_by_dock.items():
        duplicates += [f"{dock}: {name!r} ×{count}" for name, count in names.items() if count > 1]
    return unnamed, duplicates


def _dock_of(widget: QWidget) -> str:
    parent = widget.parentWidget()
    while parent is not None:
        if isinstance(parent, QDockWidget):
            return parent.windowTitle()
        parent = parent.parentWidget()
    return ""


# -- the focus a user can see (tests/ui/test_focus_ring.py) ---------------------------------------------------------

FOCUS_MARGIN = 4  # around a widget: where a focus ring drawn at or just outside its edge shows
CLEAR_DISTANCE = 60  # RGB distance (0 … 441) a change must reach to count as seen, not a shade of anti-aliasing
RING_WIDTHS = 1.5  # changed pixels, in perimeters of the widget: a 1-px highlight on its frame makes at most 1


def tab_stops(window: QWidget, limit: int = 500) -> list[QWidget]:
    """The widgets Tab visits in the window as it is laid out now, in order, once each: Qt's own chain
    (focusNextChild: what Tab does outside a widget that keeps Tab for itself), not a guess from focus policies."""
    stops: list[QWidget] = []
    for _ in range(limit):
        window.focusNextChild()
        widget = QApplication.focusWidget()
        if widget is None or widget in stops:
            break
        stops.append(widget)
    return stops


def off_screen_tab_stops(window: QWidget) -> list[str]:
    """Tab stops the user cannot see at all, even scrolled into view as Tab does: Qt moves a tabified dock that is
    not in front off the window, but leaves it visible, so Tab walks through its widgets."""
    return [describe(widget) for widget in tab_stops(window) if not _on_screen(widget)]


def without_visible_focus(window: QWidget) -> list[str]:
    """The Tab stops on screen whose focus a user could miss (fewer clearly changed pixels than a ring RING_WIDTHS
    wide), with each dock in front in turn, so that every dock's widgets are measured where a user sees them."""
    measured: list[QWidget] = []
    missing: list[str] = []
    for _ in _each_dock_in_front(window):
        for widget in tab_stops(window):
            if widget in measured or not _on_screen(widget):
                continue
            measured.append(widget)
            changed, perimeter = focus_change(widget)
            if changed < RING_WIDTHS * perimeter:
                missing.append(f"{describe(widget)}: {changed} px changed, perimeter {perimeter} px")
    return missing


def focus_change(widget: QWidget) -> tuple[int, int]:
    """(pixels that change clearly when the widget takes the focus, the perimeter of its visible part), both in
    logical pixels, grabbed from its window around the widget: a ring may be drawn by the widget itself or just
    outside it, by a focus frame."""
    _scroll_into_view(widget)
    if QApplication.focusWidget() is not None:
        QApplication.focusWidget().clearFocus()  # no focus anywhere: no ring of a neighbour in the picture
    QApplication.processEvents()
    window = widget.window()
    visible = _visible_rect(widget)
    area = visible.adjusted(-FOCUS_MARGIN, -FOCUS_MARGIN, FOCUS_MARGIN, FOCUS_MARGIN).intersected(window.rect())
    before = window.grab(area).toImage()
    widget.setFocus(Qt.TabFocusReason)
    window.setAttribute(Qt.WA_KeyboardFocusChange)  # as a Tab key press does: Fusion shows some focus only then
    QApplication.processEvents()
    after = window.grab(area).toImage()
    return round(_changed(before, after) / before.devicePixelRatio() ** 2), 2 * (visible.width() + visible.height())


def describe(widget: QWidget) -> str:
    name = widget.objectName() or spoken_name(widget) or "(unnamed)"
    return f"{_dock_of(widget) or 'window'}: {type(widget).__name__} {name}"


def _each_dock_in_front(window: QWidget):
    """The window as it is, then with each of its docks raised in turn (a tabified dock's widgets are off screen
    while another dock of its group is in front)."""
    yield None
    for dock in window.findChildren(QDockWidget):
        dock.raise_()
        QApplication.processEvents()
        _settle(window)
        yield dock


def _settle(window: QWidget, timeout_s: float = 60) -> None:
    """Wait for what raising a dock started (the Dataset dock reads a preview, its button disabled meanwhile)."""
    tasks = getattr(window, "tasks", None)
    deadline = time.monotonic() + timeout_s
    while tasks is not None and not tasks.idle() and time.monotonic() < deadline:
        QApplication.processEvents(QEventLoop.AllEvents, 50)


def _on_screen(widget: QWidget) -> bool:
    _scroll_into_view(widget)
    return not _visible_rect(widget).isEmpty()


def _visible_rect(widget: QWidget) -> QRect:
    """The part of the widget that its ancestors and its window do not clip (a field half scrolled out of the Setup
    panel, a dock moved off the window), in the window's coordinates."""
    window = widget.window()
    rect = QRect(widget.mapTo(window, QPoint(0, 0)), widget.size())
    ancestor = widget.parentWidget()
    while ancestor is not None and ancestor is not window:
        rect = rect.intersected(QRect(ancestor.mapTo(window, QPoint(0, 0)), ancestor.size()))
        ancestor = ancestor.parentWidget()
    return rect.intersected(window.rect())


def _scroll_into_view(widget: QWidget) -> None:
    """As Tab does in a scroll area (QScrollArea.focusNextPrevChild): the widget it focuses is scrolled into view."""
    parent = widget.parentWidget()
    while parent is not None:
        if isinstance(parent, QScrollArea) and parent.widget() is not None and parent.widget().isAncestorOf(widget):
            parent.ensureWidgetVisible(widget, 2 * FOCUS_MARGIN, 2 * FOCUS_MARGIN)
        parent = parent.parentWidget()


def _changed(before: QImage, after: QImage) -> int:
    """Pixels whose colour moved at least CLEAR_DISTANCE between the two grabs."""
    def rgb(image: QImage) -> np.ndarray:
        image = image.convertToFormat(QImage.Format_RGB32)
        data = np.frombuffer(image.constBits(), np.uint8, image.sizeInBytes())
        return data.reshape(image.height(), image.bytesPerLine() // 4, 4)[:, :image.width(), :3].astype(np.int32)

    distance = np.sqrt(((rgb(before) - rgb(after)) ** 2).sum(axis=2))
    return int((distance >= CLEAR_DISTANCE).sum())
