"""What a screen reader would read for each control of a window, and what it could not: the audit behind
tests/ui/test_accessibility.py (and the closing note's counts)."""

from __future__ import annotations

from PySide6.QtWidgets import (QAbstractButton, QAbstractItemView, QAbstractSlider, QAbstractSpinBox, QComboBox,
                               QDockWidget, QHeaderView, QLabel, QLineEdit, QPlainTextEdit, QScrollBar,
                               QTabBar, QTextEdit, QWidget)

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
