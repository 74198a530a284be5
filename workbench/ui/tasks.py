"""The window's one way to do work off the GUI thread: decoding images, reading the run history, waiting on the
kernel, a run itself.

`tasks.submit(slot, job, on_done)` runs `job()` on a pool thread and calls `on_done(result)` on the GUI thread,
`result` being the job's return value or the exception it raised. A slot holds one task at a time (Orange's
ConcurrentMixin, superqt's workers): a new submit to a busy slot supersedes the old task, whose result is then
dropped when it comes (a newer drop of images, a newer click on a run), or — with `exclusive=True` — is refused
(Train while a run is alive). Jobs never touch widgets and open their own SQLite connections.
"""

from __future__ import annotations

from typing import Any, Callable

from PySide6.QtCore import QCoreApplication, QEvent, QObject, QRunnable, QThreadPool, Signal, Slot

MAX_THREADS = 8  # kernel calls wait on a socket, not a core: a run, a prediction and a report can all be out


class _Job(QRunnable):
    def __init__(self, job: Callable[[], Any], deliver: Callable[[Any], None]):
        super().__init__()
        self.job, self.deliver = job, deliver

    def run(self) -> None:
        try:
            result = self.job()
        except Exception as exc:  # handed to on_done, which shows it: a job never takes the app down
            result = exc
        self.deliver(result)


class Tasks(QObject):
    """Lives on the GUI thread, so its queued `_done` signal lands there."""

    _done = Signal(str, int, object)  # slot, ticket, result

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self.pool = QThreadPool(self)
        self.pool.setMaxThreadCount(MAX_THREADS)
        self._current: dict[str, int] = {}  # slot → the ticket whose result is wanted
        self._running: dict[str, set[int]] = {}  # slot → tickets whose jobs have not delivered yet
        self._callbacks: dict[int, Callable[[Any], None]] = {}
        self._tickets = 0
        self._done.connect(self._deliver)

    def submit(self, slot: str, job: Callable[[], Any], on_done: Callable[[Any], None], *,
               exclusive: bool = False) -> bool:
        """Start `job`; False (and nothing started) when `exclusive` and the slot is busy."""
        if exclusive and self.busy(slot):
            return False
        self._tickets += 1
        ticket = self._tickets
        self._current[slot] = ticket
        self._running.setdefault(slot, set()).add(ticket)
        self._callbacks[ticket] = on_done
        self.pool.start(_Job(job, lambda result: self._done.emit(slot, ticket, result)))
        return True

    def busy(self, slot: str) -> bool:
        return bool(self._running.get(slot))

    def drop(self, slot: str) -> None:
        """Whatever the slot's task returns is no longer wanted (the job itself runs to its end)."""
        self._current.pop(slot, None)

    @Slot(str, int, object)
    def _deliver(self, slot: str, ticket: int, result: Any) -> None:
        self._running.get(slot, set()).discard(ticket)
        on_done = self._callbacks.pop(ticket)
        if self._current.get(slot) == ticket:
            self._current.pop(slot)
            on_done(result)

    def wait(self, msecs: int = 30_000) -> bool:
        """Wait for running jobs (at shutdown) and hand over what they returned, so that nothing is left busy."""
        done = self.pool.waitForDone(msecs)
        QCoreApplication.sendPostedEvents(self, QEvent.MetaCall)
        return done
