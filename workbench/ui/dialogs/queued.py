"""What a dialog that trains a queue of runs on a thread of its own shares (Run → Sweep…, Repeat with seeds…): its
task slot, Stop, a refusal said in its status line, and a run's start and epoch ends crossing from the queue's
thread to the GUI thread (its steps do not: the Runs dock and the plots are not this dialog's)."""

from __future__ import annotations

import threading

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QDialog, QLabel, QWidget

from ...core.ground.events import EpochEnd, Event, RunStarted
from ..support.tasks import Tasks


class QueuedRunsDialog(QDialog):
    """A subclass sets `slot`, builds `status` (a QLabel) and `_update_inputs()`, and handles `_on_heard(key,
    event)`: `key` is what its queue names a run by (a trial's number, a seed)."""

    _heard = Signal(int, object)  # (key, RunStarted or EpochEnd), emitted on the queue's thread
    slot = ""
    status: QLabel

    def __init__(self, tasks: Tasks, parent: QWidget | None = None):
        super().__init__(parent)
        self.tasks = tasks
        self.stop_flag = threading.Event()
        self._heard.connect(self._on_heard)

    @property
    def running(self) -> bool:
        return self.tasks.busy(self.slot)

    def stop(self) -> bool:
        """End the running run after its current step and start no other; whether the queue is still running (it
        ends shortly)."""
        if self.running and not self.stop_flag.is_set():
            self.stop_flag.set()
            self.status.setText("Stopping after this step…")
            self._update_inputs()
        return self.running

    def _refuse(self, text: str) -> bool:
        self.status.setText(text)
        return False

    def _forward(self, key: int, event: Event) -> None:
        """On the queue's thread: a run's start and epoch ends cross to the GUI thread; its steps do not."""
        if isinstance(event, (RunStarted, EpochEnd)):
            self._heard.emit(key, event)

    def _on_heard(self, key: int, event: Event) -> None:
        raise NotImplementedError

    def _update_inputs(self) -> None:
        raise NotImplementedError
