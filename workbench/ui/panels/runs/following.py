"""A run shown while another process records it (a CLI run, another window's, a host's run this computer follows)
goes on drawing: every FOLLOW_MS the events recorded after the last one read are read off the GUI thread
(RunStore.events_after: a cursor, the run's new steps only, however long it already is) and handed on, until the
run has ended."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from PySide6.QtCore import QObject, QTimer

from ....core.ground.events import Event, is_terminal
from ....core.history.runs import RunStore
from ...support.tasks import Tasks

FOLLOW_MS = 1000  # a recorder commits every few seconds (recording.RECORD_INTERVAL): a second is soon enough
SLOT = "follow"


class RunFollower(QObject):
    def __init__(self, tasks: Tasks, db: Path | str | None, deliver: Callable[[list[Event]], None],
                 on_error: Callable[[BaseException], None]):
        super().__init__(tasks)
        self.tasks, self.db, self.deliver, self.on_error = tasks, db, deliver, on_error
        self.run_id: int | None = None
        self.cursor = -1  # the last seq read
        self.read_counts: list[int] = []  # events each read brought, for measuring (scripts/runs_follow_cost.py)
        self.timer = QTimer(self)
        self.timer.setInterval(FOLLOW_MS)
        self.timer.timeout.connect(self._poll)

    def follow(self, run_id: int, cursor: int) -> None:
        """Read the run's events after `cursor` now and then, until it ends (or `stop`)."""
        self.stop()
        self.run_id, self.cursor = run_id, cursor
        self.read_counts = []
        self.timer.start()

    def stop(self) -> None:
        self.timer.stop()
        self.run_id = None
        self.tasks.drop(SLOT)

    @property
    def following(self) -> bool:
        return self.run_id is not None

    def _poll(self) -> None:
        if self.run_id is None or self.tasks.busy(SLOT):
            return
        run_id, cursor = self.run_id, self.cursor

        def read() -> tuple[int, list[tuple[int, Event]], str]:
            with RunStore(self.db, recover=False) as store, store.snapshot():
                return run_id, store.events_after(run_id, cursor), store.get(run_id).status

        self.tasks.submit(SLOT, read, self._read, self._failed)

    def _read(self, result: tuple[int, list[tuple[int, Event]], str]) -> None:
        run_id, events, status = result
        if run_id != self.run_id:
            return
        self.read_counts.append(len(events))
        if events:
            self.cursor = events[-1][0]
            self.deliver([event for _seq, event in events])
        if status != "running" or any(is_terminal(event) for _seq, event in events):
            self.stop()

    def _failed(self, exc: BaseException) -> None:
        self.stop()
        self.on_error(exc)
