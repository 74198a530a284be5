"""Wherever Tab lands, the user sees it: a 2-px ring in the palette's highlight around the focused widget, on a
light and on a dark desktop (issue 28: about ten Tab stops showed no focus, the others a faint 1-px border)."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QRect, Qt
from PySide6.QtGui import QColor, QImage, QPainter, QPalette
from PySide6.QtWidgets import (QApplication, QDialog, QLineEdit, QMenu, QStyle, QStyleOptionFocusRect, QVBoxLayout,
                               QWidget)

from workbench.ui.support.focus_style import RING, FocusRingStyle, contrast, install, ring_colour, ring_target

from ..support.accessibility import RING_WIDTHS, focus_change, off_screen_tab_stops, without_visible_focus

# KDE's Breeze Dark, the palette a dark Linux desktop hands a Qt application
DARK = {QPalette.Window: "#31363b", QPalette.WindowText: "#eff0f1", QPalette.Base: "#232629",
        QPalette.AlternateBase: "#31363b", QPalette.Text: "#eff0f1", QPalette.Button: "#31363b",
        QPalette.ButtonText: "#eff0f1", QPalette.Highlight: "#3daee9", QPalette.HighlightedText: "#eff0f1",
        QPalette.ToolTipBase: "#31363b", QPalette.ToolTipText: "#eff0f1", QPalette.PlaceholderText: "#7f8c8d"}


def dark_palette() -> QPalette:
    palette = QPalette()
    for role, colour in DARK.items():
        palette.setColor(role, QColor(colour))
    return palette


@pytest.fixture
def focus_style(qapp):
    """The application's style as create_app leaves it; plain Fusion again afterwards for the rest of the session."""
    previous = qapp.style().name()
    yield install(qapp)
    qapp.setStyle(previous)


@pytest.fixture(params=["light", "dark"])
def scheme(request, qapp, focus_style):
    """A light desktop (Fusion's own palette) or a dark one (its palette, and the window told, as Qt tells it)."""
    if request.param == "light":
        yield "light"
        return
    previous = QPalette(qapp.palette())
    qapp.setPalette(dark_palette())
    yield "dark"
    qapp.setPalette(previous)


@pytest.fixture
def active_window(scheme, window, qtbot):
    """The window built under the scheme's style and palette (listed first, so they come first), in front."""
    if scheme == "dark":
        window.apply_colour_scheme(Qt.ColorScheme.Dark)
    window.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is window)
    return window


@pytest.mark.slow  # two grabs for each of some 45 Tab stops
def test_every_tab_stop_of_the_window_shows_a_clear_focus_ring(active_window):
    """Every widget Tab reaches, with each dock in front in turn: the plots, the scroll areas, the tables, the
    card list and the tab bars had no visible focus at all; buttons, boxes and fields a 1-px highlight."""
    assert without_visible_focus(active_window) == []


def test_tab_never_lands_on_a_widget_off_the_window(window, qtbot):
    window.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is window)
    assert off_screen_tab_stops(window) == []


def test_create_app_installs_the_focus_style_once(qapp):
    from workbench.ui.app import create_app

    names = qapp.applicationName(), qapp.organizationName(), qapp.style().name()
    try:
        style = create_app().style()
        assert isinstance(style, FocusRingStyle)
        assert style.baseStyle().name() == names[2]  # the desktop's style, only wrapped
        assert create_app().style() is style
    finally:
        qapp.setApplicationName(names[0])
        qapp.setOrganizationName(names[1])
        qapp.setStyle(names[2])


def test_the_ring_follows_the_focus_into_a_dialog_and_back_after_the_dialog_is_gone(focus_style, qtbot):
    window = _shown(_with_field(QWidget()), qtbot)
    dialog = _shown(_with_field(QDialog(window)), qtbot)
    _assert_ring(dialog.findChild(QLineEdit))
    with qtbot.waitSignal(dialog.destroyed):
        dialog.deleteLater()  # and the ring with it, its child while it had the focus
    window.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is window)
    _assert_ring(window.findChild(QLineEdit))


def test_a_menu_keeps_its_own_mark_and_no_ring(focus_style, qtbot):
    menu = QMenu()
    qtbot.addWidget(menu)
    assert ring_target(menu) is None
    field = QLineEdit()
    qtbot.addWidget(field)
    assert ring_target(field) is field


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_ring_is_the_highlight_where_it_contrasts_3_to_1(qapp, scheme):
    palette = qapp.palette() if scheme == "light" else dark_palette()
    window = palette.color(QPalette.Window)
    assert ring_colour(palette, window) == palette.color(QPalette.Highlight)
    assert contrast(ring_colour(palette, window), window) >= 3


def test_on_a_highlighted_row_or_a_pale_highlight_the_ring_takes_the_text_colour(qapp):
    palette = QPalette(qapp.palette())
    selected = palette.color(QPalette.Highlight)
    assert contrast(ring_colour(palette, selected), selected) >= 3
    palette.setColor(QPalette.Highlight, QColor("#dde4ea"))  # a desktop's pale accent on a light window
    assert ring_colour(palette, palette.color(QPalette.Window)) == palette.color(QPalette.WindowText)


def test_the_current_cell_and_a_focused_tab_get_the_same_2px_ring(qapp, focus_style):
    """Qt draws a focus rectangle inside a widget for the current cell of a table (on its selection colour when
    selected), a focused tab, a check box's label; Fusion's is a faint 1-px line."""
    option = QStyleOptionFocusRect()
    option.rect = QRect(0, 0, 40, 20)
    option.palette = qapp.palette()
    option.backgroundColor = option.palette.color(QPalette.Highlight)
    option.state = QStyle.State_KeyboardFocusChange | QStyle.State_Selected
    image = QImage(40, 20, QImage.Format_RGB32)
    image.fill(option.backgroundColor)
    painter = QPainter(image)
    focus_style.drawPrimitive(QStyle.PE_FrameFocusRect, option, painter)
    painter.end()
    expected = ring_colour(option.palette, option.backgroundColor)
    for x, y in ((20, 0), (20, RING - 1), (0, 10), (RING - 1, 10), (39, 10), (20, 19)):  # both rows of each side
        assert QColor(image.pixel(x, y)) == expected, (x, y)
    assert QColor(image.pixel(20, RING + 1)) == option.backgroundColor  # a ring, not a fill


def _with_field(widget: QWidget) -> QWidget:
    QVBoxLayout(widget).addWidget(QLineEdit())
    return widget


def _shown(window: QWidget, qtbot) -> QWidget:
    if window.parent() is None:
        qtbot.addWidget(window)
    window.show()
    window.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is window)
    return window


def _assert_ring(widget: QWidget) -> None:
    changed, perimeter = focus_change(widget)
    assert changed >= RING_WIDTHS * perimeter, (changed, perimeter)
