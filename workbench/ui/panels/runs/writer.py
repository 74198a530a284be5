"""What the Runs dock writes to the history (names, tags, notes, archive flags, deletions and their Undo), off the GUI
thread and one at a time, in the order asked.

Writes go to one worker thread with one connection, so that two edits of one field never land in the wrong order
(a note saved on Ctrl+S, then again as the focus leaves), and a lock held by a recording run (a few ms each half
second) or a folder moved across devices never holds the GUI thread. Each outcome comes back on the GUI thread
through Tasks, like every other job of the window. `drain()` waits for what is under way (the window closing).
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor, TimeoutError
from pathlib import Path
from typing import Any, Callable

from ....core.history.runs import RunStore
from ...support.tasks import Tasks

DRAIN_S = 30.0  # the longest the window waits, as it closes, for writes under way (a folder copied back by Undo)


class RunsWriter:
    def __init__(self, tasks: Tasks, db: str | Path | None):
        self.tasks, self.db = tasks, db
        self._executor: ThreadPoolExecutor | None = None
        self._store: RunStore | None = None  # opened and used on the worker thread only
        self._last: Future | None = None  # the latest write asked: the writes before it are done when it is

    def submit(self, slot: str, job: Callable[[RunStore], Any], on_result: Callable[[Any], None],
               on_error: Callable[[BaseException], None]) -> None:
        """Run `job(store)` after the writes asked before it; its outcome to `on_result` or `on_error` (a newer
        write in the same slot supersedes an older one's outcome, as Tasks does, never the write itself)."""
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="runs-writer")
        future = self._executor.submit(lambda: job(self._open()))
        self._last = future
        self.tasks.watch(slot, future, on_result, on_error)

    def _open(self) -> RunStore:
        if self._store is None:
            self._store = RunStore(self.db, recover=False)
        return self._store

    def drain(self, timeout: float = DRAIN_S) -> bool:
        """Wait for every write asked so far; False when some are still under way after `timeout` seconds."""
        if self._last is None:
            return True
        try:
            self._last.exception(timeout=timeout)
        except TimeoutError:
            return False
        return True

    def close(self) -> None:
        """Finish the writes asked, then close the connection."""
        if self._executor is not None:
            self._executor.shutdown(wait=True)
            self._executor = None
        if self._store is not None:
            self._store.close()
            self._store = None
