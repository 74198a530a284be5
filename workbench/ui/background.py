"""Short jobs off the GUI thread: reading a run's events from the database, writing a report.

`run_in_background(job, on_done)` runs `job()` on Qt's thread pool; `on_done(result)` is then called on the GUI
thread, where `result` is the job's return value or the exception it raised. Jobs must not touch widgets, and open
their own database connection (SQLite connections belong to one thread at a time).
"""

from __future__ import annotations

from typing import Any, Callable

from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal, Slot


class _Relay(QObject):
    """Created on the GUI thread, so its queued signal lands there."""

    done = Signal(object)

    def __init__(self, on_done: Callable[[Any], None]):
        super().__init__()
        self.on_done = on_done
        self.done.connect(self._deliver)

    @Slot(object)
    def _deliver(self, result: Any) -> None:
        _running.discard(self)
        self.on_done(result)


class _Job(QRunnable):
    def __init__(self, job: Callable[[], Any], relay: _Relay):
        super().__init__()
        self.job, self.relay = job, relay

    def run(self) -> None:
        try:
            result = self.job()
        except Exception as exc:  # handed to on_done, which shows it: a job never takes the app down
            result = exc
        self.relay.done.emit(result)


_running: set[_Relay] = set()  # keeps each relay alive until its result has been delivered


def run_in_background(job: Callable[[], Any], on_done: Callable[[Any], None]) -> None:
    relay = _Relay(on_done)
    _running.add(relay)
    QThreadPool.globalInstance().start(_Job(job, relay))


def wait_for_background(msecs: int = 30_000) -> bool:
    """Wait for running jobs (at shutdown); their results are then dropped with the app."""
    return QThreadPool.globalInstance().waitForDone(msecs)
