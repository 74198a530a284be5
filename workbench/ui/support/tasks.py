"""The window's one way to do work off the GUI thread: decoding images, reading the run history, waiting on the
kernel, a run itself.

`tasks.submit(slot, job, on_result, on_error)` runs `job()` on a pool thread; `tasks.watch(slot, future, on_result,
on_error)` waits for a Future something else completes (a kernel's answer). Either way the outcome comes back on the
GUI thread, to one of three callbacks kept apart (superqt's returned / errored, Orange's FutureWatcher): its result
to `on_result`, the exception it raised to `on_error`, a cancellation to `on_cancelled` — so no caller ever asks
whether a result is an exception.

A slot holds one task at a time (Orange's ConcurrentMixin, superqt's workers): a new task in a busy slot supersedes
the old one, whose outcome is then dropped when it comes (a newer drop of images, a newer click on a run), or —
with `exclusive=True` — is refused (Train while a run is alive). Jobs never touch widgets and open their own SQLite
connections.
"""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any, Callable, NamedTuple

from PySide6.QtCore import QCoreApplication, QEvent, QObject, QRunnable, Qt, QThreadPool, Signal, Slot

MAX_THREADS = 8  # kernel calls wait on a socket, not a core: a run, a prediction and a report can all be out


class _Job(QRunnable):
    def __init__(self, job: Callable[[], Any], future: Future):
        super().__init__()
        self.job, self.future = job, future

    def run(self) -> None:
        try:
            result = self.job()
        except Exception as exc:  # handed to on_error, which shows it: a job never takes the app down
            self.future.set_exception(exc)
        else:
            self.future.set_result(result)


class _Callbacks(NamedTuple):
    on_result: Callable[[Any], None]
    on_error: Callable[[BaseException], None]
    on_cancelled: Callable[[], None] | None


class Tasks(QObject):
    """Lives on the GUI thread, so its queued `_done` signal lands there."""

    _done = Signal(str, int, object)  # slot, ticket, the finished Future

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self.pool = QThreadPool(self)
        self.pool.setMaxThreadCount(MAX_THREADS)
        self._current: dict[str, int] = {}  # slot → the ticket whose outcome is wanted
        self._running: dict[str, set[int]] = {}  # slot → tickets whose outcome has not been delivered yet
        self._callbacks: dict[int, _Callbacks] = {}
        self._tickets = 0
        # Queued even when a future is done already (it then calls back from here): the outcome never arrives
        # before the caller of watch() has returned.
        self._done.connect(self._deliver, Qt.QueuedConnection)

    def submit(self, slot: str, job: Callable[[], Any], on_result: Callable[[Any], None],
               on_error: Callable[[BaseException], None], *, exclusive: bool = False) -> bool:
        """Run `job()` on a pool thread; False (and nothing started) when `exclusive` and the slot is busy."""
        if exclusive and self.busy(slot):
            return False
        future: Future = Future()
        self.watch(slot, future, on_result, on_error)
        self.pool.start(_Job(job, future))
        return True

    def watch(self, slot: str, future: Future, on_result: Callable[[Any], None],
              on_error: Callable[[BaseException], None], on_cancelled: Callable[[], None] | None = None) -> None:
        """Hand `future`'s outcome to the callback that fits it, on the GUI thread (unless superseded)."""
        self._tickets += 1
        ticket = self._tickets
        self._current[slot] = ticket
        self._running.setdefault(slot, set()).add(ticket)
        self._callbacks[ticket] = _Callbacks(on_result, on_error, on_cancelled)
        future.add_done_callback(lambda done: self._done.emit(slot, ticket, done))

    def busy(self, slot: str) -> bool:
        return bool(self._running.get(slot))

    def idle(self) -> bool:
        """No slot has a task whose outcome is still to come (the window at rest, as the accessibility walk needs)."""
        return not any(self._running.values())

    def drop(self, slot: str) -> None:
        """Whatever the slot's task returns is no longer wanted (the job itself runs to its end)."""
        self._current.pop(slot, None)

    @Slot(str, int, object)
    def _deliver(self, slot: str, ticket: int, future: Future) -> None:
        self._running.get(slot, set()).discard(ticket)
        callbacks = self._callbacks.pop(ticket)
        if self._current.get(slot) != ticket:
            return
        self._current.pop(slot)
        if future.cancelled():
            if callbacks.on_cancelled is not None:
                callbacks.on_cancelled()
        elif future.exception() is not None:
            callbacks.on_error(future.exception())
        else:
            callbacks.on_result(future.result())

    def wait(self, msecs: int = 30_000) -> bool:
        """Wait for running jobs (at shutdown) and hand over their outcomes, so that nothing is left busy."""
        done = self.pool.waitForDone(msecs)
        QCoreApplication.sendPostedEvents(self, QEvent.MetaCall)
        return done
