"""A GUI-thread heartbeat: a 10 ms timer that records how late each tick fires.

A late tick means the event loop was busy (or starved of the GIL) for that long — the stall a user feels as a
frozen window. Used by the responsiveness test and by `workbench bench --gui`.
"""

from __future__ import annotations

import time

import numpy as np
from PySide6.QtCore import QObject, Qt, QTimer


class Heartbeat(QObject):
    def __init__(self, interval_ms: int = 10, parent: QObject | None = None):
        super().__init__(parent)
        self.interval = interval_ms / 1000
        self.timer = QTimer(self)
        self.timer.setTimerType(Qt.PreciseTimer)
        self.timer.setInterval(interval_ms)
        self.timer.timeout.connect(self._tick)
        self.delays: list[tuple[float, float]] = []  # (time of tick, delay beyond the interval) in seconds
        self._last = 0.0

    def start(self) -> None:
        self.delays.clear()
        self._last = time.perf_counter()
        self.timer.start()

    def stop(self) -> None:
        self.timer.stop()

    def _tick(self) -> None:
        now = time.perf_counter()
        self.delays.append((now, max(0.0, now - self._last - self.interval)))
        self._last = now

    def stats(self, since: float = 0.0, until: float = float("inf")) -> dict[str, float]:
        """Longest stall, 99th-percentile and median delay (ms) of the ticks in [since, until)."""
        values = np.array([d for t, d in self.delays if since <= t < until]) * 1000
        if values.size == 0:
            return {"ticks": 0, "max_ms": float("nan"), "p99_ms": float("nan"), "p50_ms": float("nan")}
        return {"ticks": int(values.size), "max_ms": float(values.max()),
                "p99_ms": float(np.percentile(values, 99)), "p50_ms": float(np.median(values))}
