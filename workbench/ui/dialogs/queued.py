"""What a dialog whose runs are queue entries shares (Run → Sweep…, Repeat with seeds…): its runs are lined up in
the queue (features/queue.py) and trained by whoever works it, the window or `workbench queue work`, one after
another like any other entry, so they outlive the dialog and the window, and show in the Queue dock. The dialog
follows its own entries: which started, how far the window's running one is, how each ended, and the time left (the
entries left times the mean entry so far). Stop cancels them: the running one after its step, the others at once."""

from __future__ import annotations

import statistics

from PySide6.QtWidgets import QDialog, QLabel, QWidget

from ...core.ground.errors import WorkbenchError, first_line
from ...core.ground.events import EpochEnd, Event, RunStarted
from ...core.history.queue import QueueEntry
from ..support.form_errors import form_text
from ..support.tasks import Tasks


def error_text(exc: BaseException) -> str:
    """A Workbench error as the Setup form says it (its setting by the form's label, its hint); anything else as
    its type and first line (never a traceback)."""
    return form_text(exc) if isinstance(exc, WorkbenchError) else f"{type(exc).__name__}: {first_line(exc)}"


class QueuedRunsDialog(QDialog):
    """A subclass builds `status` (a QLabel) and `_update_inputs()`, and handles `_on_heard(entry, event)` (a run
    start or epoch end of the entry the window trains), `_on_ended(entry)` and `_all_ended()`. `queue` is the
    window's Queue feature."""

    status: QLabel

    def __init__(self, tasks: Tasks, queue, parent: QWidget | None = None):
        super().__init__(parent)
        self.tasks, self.queue = tasks, queue
        self.ids: list[int] = []  # the entries this dialog lined up last
        self.ended: dict[int, QueueEntry] = {}  # those of them that have ended, as they ended
        self.stopping = False
        self.hearing: int | None = None  # the entry the window's events were last about
        queue.entryStarted.connect(self._entry_started)
        queue.entryHeard.connect(self._entry_heard)
        queue.entryEnded.connect(self._entry_ended)
        queue.entryRemoved.connect(self._entry_removed)

    @property
    def running(self) -> bool:
        """Some of this dialog's entries are still queued or training."""
        return any(entry_id not in self.ended for entry_id in self.ids)

    def stop(self) -> bool:
        """Cancel this dialog's entries: the running one ends after its current step, no other starts; whether
        some are still running (they end shortly)."""
        if self.running and not self.stopping:
            self.stopping = True
            self.status.setText("Stopping after this step…")
            self.queue.cancel_entries([entry_id for entry_id in self.ids if entry_id not in self.ended])
            self._update_inputs()
        return self.running

    def _line_up(self, add) -> bool:
        """Queue this dialog's runs (`add(place, python)`, see Queue.add_entries) and follow them; False, with the
        reason in the status line, when they cannot be queued."""
        try:
            ids = self.queue.add_entries(add)
        except WorkbenchError as exc:
            return self._refuse(f"Cannot start: {error_text(exc)}")
        self.ids, self.ended, self.stopping = ids, {}, False
        self._update_inputs()
        return True

    @property
    def done(self) -> int:
        return len(self.ended)

    def eta_seconds(self) -> float | None:
        """The entries left times the mean of those that trained (None before one has)."""
        durations = [entry.ended - entry.started for entry in self.ended.values()
                     if entry.started is not None and entry.ended is not None]
        return (len(self.ids) - self.done) * statistics.fmean(durations) if durations else None

    def _mine(self, entry: QueueEntry) -> bool:
        return entry.id in self.ids

    def _entry_started(self, entry: QueueEntry) -> None:
        """(Read from the queue, this may come after the window's first events of the entry: those say more.)"""
        if self._mine(entry) and entry.id != self.hearing:
            self._on_started(entry)

    def _entry_heard(self, entry: QueueEntry, event: Event) -> None:
        if self._mine(entry):
            self.hearing = entry.id
            self._on_heard(entry, event)

    def _entry_ended(self, entry: QueueEntry) -> None:
        if not self._mine(entry) or entry.id in self.ended:
            return
        self.ended[entry.id] = entry
        self._on_ended(entry)
        if not self.running:
            self._all_ended()
        self._update_inputs()

    def _entry_removed(self, entry_id: int) -> None:
        """One of this dialog's entries taken out of the queue (the Queue dock's Remove): no longer waited for."""
        if entry_id in self.ids and entry_id not in self.ended:
            self.ids.remove(entry_id)
            if not self.running:
                self._all_ended()
            self._update_inputs()

    def _refuse(self, text: str) -> bool:
        self.status.setText(text)
        return False

    def _on_started(self, entry: QueueEntry) -> None:
        """An entry of this dialog's started (the window says more of its own through _on_heard)."""

    def _on_heard(self, entry: QueueEntry, event: RunStarted | EpochEnd | Event) -> None:
        raise NotImplementedError

    def _on_ended(self, entry: QueueEntry) -> None:
        raise NotImplementedError

    def _all_ended(self) -> None:
        raise NotImplementedError

    def _update_inputs(self) -> None:
        raise NotImplementedError
