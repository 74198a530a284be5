"""How the window's features tell the user how their work went: the banner (what needs reading: a failure, a file
that could not be written), the Log (what happened, in order) and the status line (what is under way). `Feedback`
is handed to each feature, so none reaches into the window or another feature for them."""

from __future__ import annotations

from typing import Callable

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QHBoxLayout, QLabel, QWidget

from ..panels.log import LogPanel
from ..support.announce import announce
from ..support.dismiss import dismiss_button
from ..support.elapsed import WAIT_MARK, Elapsed

LIGHT_BANNER = {"error": "#fde7e9", "warning": "#fff4ce", "info": "#e7f1fd"}
DARK_BANNER = {"error": "#5c1e24", "warning": "#5a4a12", "info": "#1e3a5c"}


class Banner(QWidget):
    """A dismissible message strip above the plots: run failures and file errors show here, not as tracebacks."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.label = QLabel()
        self.label.setObjectName("bannerText")
        self.label.setTextFormat(Qt.PlainText)  # messages quote files and runs: never rendered as rich text
        self.label.setWordWrap(True)
        self.label.setTextInteractionFlags(Qt.TextSelectableByMouse)
        close = dismiss_button("bannerClose", "Dismiss message", "Dismiss this message", self.hide)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(8, 4, 8, 4)
        layout.addWidget(self.label, 1)
        layout.addWidget(close)
        self.setAutoFillBackground(True)
        self.level, self.dark = "info", False
        self.hide()

    def show_message(self, level: str, text: str) -> None:
        self.level = level
        self.label.setText(text)
        self._colour()
        self.show()
        announce(self, text, assertive=level == "error")

    def set_dark(self, dark: bool) -> None:
        self.dark = dark
        self._colour()

    def _colour(self) -> None:
        background = (DARK_BANNER if self.dark else LIGHT_BANNER)[self.level]
        self.setStyleSheet(f"background: {background}; border-radius: 4px;")


class Feedback:
    """The banner, the Log and the status line, as one thing a feature can speak through."""

    def __init__(self, banner: Banner, log: LogPanel, status: Callable[[str], None], settle: Callable[[], None]):
        self.banner = banner
        self.log = log
        self._status, self._settle = status, settle
        self.waiting = Elapsed(status, banner)

    def busy(self, text: str) -> None:
        """The status line says what is under way ("Explaining…"); a wait (its text ends in "…") says its seconds
        too once it has lasted a while."""
        self.waiting.stop()
        if text.endswith(WAIT_MARK):
            self.waiting.start(text)
        else:
            self._status(text)

    def settled(self) -> None:
        """The work has ended: the status line goes back to the run's progress."""
        self.waiting.stop()
        self._settle()

    def show(self, level: str, text: str) -> None:
        """On the banner: "error", "warning" or "info"."""
        self.banner.show_message(level, text)

    def note(self, level: str, text: str) -> None:
        """A line in the Log."""
        self.log.add(level, text)

    def announce(self, text: str) -> None:
        """For a screen reader only (what the window shows anyway, e.g. a run starting)."""
        announce(self.log, text)
