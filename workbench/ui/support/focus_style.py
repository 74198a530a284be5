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
from PySide6.QtCore import QEvent, QRect, QRectF, Qt
from PySide6.QtGui import QColor, QPainter, QPalette, QPen, QRegion
from PySide6.QtWidgets import QApplication, QFocusFrame, QProxyStyle, QStyle, QStyleOptionFocusRect, QWidget

RING = 2  # logical pixels: twice that many device pixels at 2× scale
OUTSIDE = 1  # of them beyond the focused widget's edge
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
    """The focus frame, masked to its ring and painting the ring itself: the widget under it keeps its drops, and
    its repaints (a plot's, many a second while training) do not repaint the frame. Qt sizes it the style's
    focus-frame margin beyond the widget; the ring straddles the widget's edge, OUTSIDE pixels beyond it, so it
    shows where a neighbour or the dock's edge clips what lies outside (a scroll area filling its dock)."""

    def __init__(self):
        super().__init__()
        self.setObjectName("focusRing")

    def ring(self) -> QRect:
        inset = self.style().pixelMetric(QStyle.PM_FocusFrameHMargin) - OUTSIDE
        return self.rect().adjusted(inset, inset, -inset, -inset)

    def event(self, event) -> bool:
        handled = super().event(event)
        if event.type() == QEvent.Resize:  # QFocusFrame follows its widget's geometry by resizing itself
            ring = self.ring()
            self.setMask(QRegion(ring) - QRegion(ring.adjusted(RING, RING, -RING, -RING)))
        return handled

    def paintEvent(self, _event) -> None:
        palette = (self.widget() or self).palette()
        draw_ring(QPainter(self), self.ring(), ring_colour(palette, palette.color(QPalette.Window)))


class FocusRingStyle(QProxyStyle):
    """The application's style, with a visible focus ring; one FocusRing moves to whichever widget has focus.

    No pixelMetric override: Qt asks a style's pixelMetric hundreds of thousands of times a minute (layouts, item
    views, pyqtgraph's widgets), and a Python override took half the GUI thread while training (measured: 889,000
    calls, 4.9 s of 20 s). styleHint and drawPrimitive are asked a few hundred times a second (about 1%)."""

    def __init__(self, base: str = ""):
        super().__init__(base)  # by name: a fresh base, not the application's current style, which setStyle deletes
        self._frame: FocusRing | None = None
        QApplication.instance().focusChanged.connect(self._follow_focus)

    def styleHint(self, hint, option=None, widget=None, returnData=None) -> int:
        if hint == QStyle.SH_FocusFrame_AboveWidget:
            return 1  # above the widget: not under a plot's or a view's own painting
        if hint == QStyle.SH_FocusFrame_Mask:
            return 0  # FocusRing masks itself: PySide hands a Python style the hint's answer as a bare
            # QStyleHintReturn, whose region it cannot set
        return super().styleHint(hint, option, widget, returnData)

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
