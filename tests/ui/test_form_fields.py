"""Every form field, as a class: the Setup form never slides sideways (Tab through every field at 1366×768 and
1440×900: nothing scrolled, every label whole), and no combo or spin box anywhere in the window changes under a
wheel that passes over it without its focus."""

import pytest
from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QWheelEvent
from PySide6.QtWidgets import QAbstractSpinBox, QApplication, QComboBox, QLabel


@pytest.mark.parametrize("size", [(1366, 768), (1440, 900)])
def test_tab_through_the_setup_form_never_slides_it_sideways(waiting_window, qtbot, size):
    window = waiting_window
    window.resize(*size)
    window.show()
    qtbot.waitExposed(window)
    window.layout_docks.size_docks()
    area = window.docks["setup"].widget()
    qtbot.waitUntil(lambda: area.viewport().width() > 0)
    assert area.widget().width() <= area.viewport().width()  # nothing to slide to
    fields = [field for field in window.setup.findChildren(QAbstractSpinBox) + window.setup.findChildren(QComboBox)
              if field.isVisibleTo(window.setup) and field.isEnabled()]
    first = min(fields, key=lambda field: field.mapTo(window.setup, QPoint(0, 0)).y())
    first.setFocus(Qt.TabFocusReason)
    seen = set()
    for _ in range(3 * len(fields)):  # Tab, as a user does (the scroll area's own Tab: it scrolls to the focus)
        focus = window.focusWidget()
        seen.add(focus)
        assert area.horizontalScrollBar().value() == 0, f"slid at {focus.objectName()}"
        area.focusNextPrevChild(True)
        if all(any(field is f or field.isAncestorOf(f) for f in seen) for field in fields):
            break
    assert all(any(field is f or field.isAncestorOf(f) for f in seen) for field in fields)
    for label in window.setup.findChildren(QLabel):  # every label whole inside the view
        if label.isVisibleTo(window.setup) and label.text() and not label.wordWrap():
            right = label.mapTo(area.viewport(), QPoint(label.width(), 0)).x()
            assert right <= area.viewport().width() + 1, label.text()


def _wheel(widget) -> None:
    centre = QPointF(widget.width() / 2, widget.height() / 2)
    event = QWheelEvent(centre, widget.mapToGlobal(centre), QPoint(0, 0), QPoint(0, -120), Qt.NoButton,
                        Qt.NoModifier, Qt.NoScrollPhase, False)
    QApplication.sendEvent(widget, event)


def _value(box):
    return box.currentIndex() if isinstance(box, QComboBox) else box.value()


def test_no_box_in_the_window_changes_under_a_passing_wheel(waiting_window):
    window = waiting_window
    boxes = [box for box in window.findChildren(QComboBox) + window.findChildren(QAbstractSpinBox)
             if box.isEnabled() and (not isinstance(box, QComboBox) or box.count() > 1)]
    assert window.plots.x_axis_box in boxes and len(boxes) >= 10
    window.setFocus()
    for box in boxes:
        before = _value(box)
        _wheel(box)
        assert _value(box) == before, box.objectName() or type(box).__name__


def test_a_box_with_the_focus_keeps_its_wheel(qtbot):
    """The guard stands aside for the box the user is in: the wheel is that box's own."""
    from workbench.ui.support.wheel_guard import WheelNeedsFocus

    class Focused(QComboBox):
        def hasFocus(self):
            return True

    box = Focused()
    qtbot.addWidget(box)
    event = QWheelEvent(QPointF(5, 5), QPointF(5, 5), QPoint(0, 0), QPoint(0, -120), Qt.NoButton, Qt.NoModifier,
                        Qt.NoScrollPhase, False)
    guard = WheelNeedsFocus()
    assert guard.eventFilter(box, event) is False  # delivered to the box
    assert guard.eventFilter(QComboBox(), event) is True  # an unfocused one: passed on to the scroll area
