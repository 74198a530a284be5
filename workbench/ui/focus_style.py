"""A keyboard focus everyone can see: a 2-px ring around the focused widget, in light and dark palettes.

Fusion marks focus with a 1-px highlight on some frames and nothing at all on plots, scroll areas, the log or the
card lists, so a Tab could land on a widget without the user seeing where. A style (not a stylesheet: that would
switch every widget to the stylesheet renderer and change its look) adds one ring for all of them: a QFocusFrame,
Qt's own widget for a focus frame drawn outside a widget's paintable area, follows the application's focus; the
style draws it, and thickens the focus rectangle Qt draws inside widgets (the current cell of a table, the focused
tab, a check box's label) to the same ring. Everything else is the base style's.
"""

from __future__ import annotations

import shiboken6
from PySide6.QtCore import QEvent, QRectF, Qt
from PySide6.QtGui import QColor, QPainter, QPalette, QPen, QRegion
from PySide6.QtWidgets import QApplication, QFocusFrame, QProxyStyle, QStyle, QStyleOptionFocusRect, QWidget

RING = 2  # logical pixels: twice that many device pixels at 2× scale
MARGIN = 1  # the ring straddles the widget's edge: visible where a neighbour or the window's edge clips it
RADIUS = 3
MIN_CONTRAST = 3.0  # WCAG 2.1 (1.4.11): a focus indicator needs 3:1 against what surrounds it


def luminance(colour: QColor) -> float:
    """Relative luminance (WCAG 2.1), the measure the contrast ratio is defined on."""
    def linear(channel: float) -> float:
        return channel / 12.92 if channel <= 0.04045 else ((channel + 0.055) / 1.055) ** 2.4

    return 0.2126 * linear(colour.redF()) + 0.7152 * linear(colour.greenF()) + 0.0722 * linear(colour.blueF())


def contrast(a: QColor, b: QColor) -> float:
    lighter, darker = sorted((luminance(a), luminance(b)), reverse=True)
    return (lighter + 0.05) / (darker + 0.05)


def ring_colour(palette: QPalette, background: QColor) -> QColor:
    """The palette's highlight, the colour users know as "this one", unless it is too close to what the ring is
    drawn on (a highlight on a light desktop theme, the selected row around a table's current cell): then the text
    colour that stands out most."""
    highlight = palette.color(QPalette.Highlight)
    if contrast(highlight, background) >= MIN_CONTRAST:
        return highlight
    texts = (palette.color(QPalette.WindowText), palette.color(QPalette.HighlightedText))
    return max(texts, key=lambda colour: contrast(colour, background))


def draw_ring(painter: QPainter, rect, colour: QColor) -> None:
    """A RING-wide rounded outline just inside rect (a pen is centred on its path, so the path is inset by half)."""
    painter.save()
    painter.setRenderHint(QPainter.Antialiasing)
    painter.setPen(QPen(colour, RING))
    painter.setBrush(Qt.NoBrush)
    inset = RING / 2
    painter.drawRoundedRect(QRectF(rect).adjusted(inset, inset, -inset, -inset), RADIUS, RADIUS)
    painter.restore()


class FocusRing(QFocusFrame):
    """The focus frame, masked to its ring: the widget under it keeps its drops, and its repaints (a plot's, many
    a second while training) do not repaint the frame."""

    def __init__(self):
        super().__init__()
        self.setObjectName("focusRing")

    def event(self, event) -> bool:
        handled = super().event(event)
        if event.type() == QEvent.Resize:  # QFocusFrame follows its widget's geometry by resizing itself
            self.setMask(QRegion(self.rect()) - QRegion(self.rect().adjusted(RING, RING, -RING, -RING)))
        return handled


class FocusRingStyle(QProxyStyle):
    """The application's style with a visible focus ring; one QFocusFrame moves to whichever widget has focus."""

    def __init__(self, base: str = ""):
        super().__init__(base)  # by name: a fresh base, not the application's current style, which setStyle deletes
        self._frame: FocusRing | None = None
        QApplication.instance().focusChanged.connect(self._follow_focus)

    def pixelMetric(self, metric, option=None, widget=None) -> int:
        if metric in (QStyle.PM_FocusFrameHMargin, QStyle.PM_FocusFrameVMargin):
            return MARGIN
        return super().pixelMetric(metric, option, widget)

    def styleHint(self, hint, option=None, widget=None, returnData=None) -> int:
        if hint == QStyle.SH_FocusFrame_AboveWidget:
            return 1  # above: the inner half of the ring is drawn over the widget's own border
        if hint == QStyle.SH_FocusFrame_Mask:
            return 0  # FocusRing masks itself: Qt's own mask is MARGIN wide, and PySide hands a Python style the
            # hint's answer as a bare QStyleHintReturn, whose region it cannot set
        return super().styleHint(hint, option, widget, returnData)

    def drawControl(self, element, option, painter, widget=None) -> None:
        if element == QStyle.CE_FocusFrame:
            draw_ring(painter, option.rect, ring_colour(option.palette, option.palette.color(QPalette.Window)))
            return
        super().drawControl(element, option, painter, widget)

    def drawPrimitive(self, element, option, painter, widget=None) -> None:
        if element == QStyle.PE_FrameFocusRect and isinstance(option, QStyleOptionFocusRect):
            if option.state & QStyle.State_KeyboardFocusChange:  # as Fusion: after a key moved the focus
                background = option.backgroundColor
                if not background.isValid():
                    background = option.palette.color(QPalette.Window)
                draw_ring(painter, option.rect, ring_colour(option.palette, background))
            return
        super().drawPrimitive(element, option, painter, widget)

    def _follow_focus(self, _old: QWidget | None, new: QWidget | None) -> None:
        if self._frame is None or not shiboken6.isValid(self._frame):  # a closed dialog took it along
            self._frame = FocusRing()
        self._frame.setWidget(ring_target(new))  # None hides it


def ring_target(focused: QWidget | None) -> QWidget | None:
    """The focused widget, unless it is in a popup: a menu or a combo box's open list marks its current entry."""
    if focused is None or focused.window().windowType() == Qt.Popup:
        return None
    return focused


def install(app: QApplication) -> FocusRingStyle:
    """Wrap the application's style (Fusion, or whatever the desktop or -style chose) once."""
    style = app.style()
    if not isinstance(style, FocusRingStyle):
        style = FocusRingStyle(style.name())
        app.setStyle(style)
    return style
