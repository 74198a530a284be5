"""A wheel turned over a combo or spin box changes it only when that box has the focus: otherwise the wheel goes on
to what is around it (the form's scroll area, the dock). Scrolling past a setting once switched it unnoticed (the
setup form; the plots' x-axis box). `guard_wheels` covers every such box under a widget, so a new field has it too."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtWidgets import QAbstractSpinBox, QComboBox, QWidget

GUARDED = (QComboBox, QAbstractSpinBox)


class WheelNeedsFocus(QObject):
    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Wheel and not watched.hasFocus():
            event.ignore()  # ignored: Qt offers it to the parent (the scroll area) next
            return True
        return False


def guard_wheels(root: QWidget) -> WheelNeedsFocus:
    """Every combo and spin box under `root`: the wheel needs their focus, and a passing wheel does not give it."""
    guard = WheelNeedsFocus(root)
    for box in root.findChildren(QWidget):
        if isinstance(box, GUARDED):
            box.setFocusPolicy(Qt.StrongFocus)  # not WheelFocus
            box.installEventFilter(guard)
    return guard
