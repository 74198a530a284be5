"""How long a wait has lasted, said while it lasts: a wait the user cannot see progress in (a compile in the kernel,
Compare numerics, an export) shows its seconds from SAID_AFTER_S on, so a wait of ten seconds never looks like a
hang. Feedback's status line uses it for every status that ends in "…" (a wait, by the app's own wording)."""

from __future__ import annotations

import time
from typing import Callable

from PySide6.QtCore import QObject, QTimer

SAID_AFTER_S = 2  # shorter waits are not worth a number
WAIT_MARK = "…"


class Elapsed(QObject):
    def __init__(self, show: Callable[[str], None], parent: QObject | None = None,
                 clock: Callable[[], float] = time.monotonic):
        super().__init__(parent)
        self.show, self.clock = show, clock
        self.text, self.since = "", 0.0
        self.timer = QTimer(self)
        self.timer.setInterval(1000)
        self.timer.timeout.connect(self.tick)

    def start(self, text: str) -> None:
        """Show `text` now, and its seconds once the wait has lasted SAID_AFTER_S."""
        self.text, self.since = text, self.clock()
        self.show(text)
        self.timer.start()

    def stop(self) -> None:
        self.timer.stop()

    def tick(self) -> None:
        seconds = int(self.clock() - self.since)
        if seconds >= SAID_AFTER_S:
            self.show(f"{self.text} {seconds} s")
