"""Recording a run into the history as it trains: an event sink that buffers events, commits them in batches and
survives a database that is locked, full or read-only for a while (see RunRecorder). The history itself is
runs.py's RunStore."""

from __future__ import annotations

import json
import time
from pathlib import Path

from ..ground.events import (EpochEnd, Event, Notice, RunFailed, RunFinished, RunStarted, Step, is_terminal, to_dict,
                             to_json)
from .runs import RunStore, RunStoreError
from .trash import folder_bytes

RECORD_INTERVAL = 0.5  # seconds between commits of buffered events
MAX_PENDING_EVENTS = 200_000  # events a recorder keeps in memory while the database cannot take them
MAX_PENDING_BYTES = 64 * 2**20  # ... and their JSON's size
MAX_RETRY_DELAY_S = 5.0  # while behind, retry at least this often
FINAL_RETRY_S = 30.0  # how long the terminal event is retried while the problem looks passing


class RunRecorder:
    """An event sink that records one run: buffers events and commits them every RECORD_INTERVAL seconds.

    Recording problems (a locked, full or read-only database) never fail a training run, and a passing one does
    not cost the record: events that could not be committed stay buffered (at most MAX_PENDING_EVENTS /
    MAX_PENDING_BYTES; beyond that new progress events are dropped, and said so) and are retried at the next
    flush, backing off while the problem lasts; a run row that could not be written is retried the same way. The
    terminal event is retried for up to FINAL_RETRY_S while the problem looks passing (locked, busy, full), so the
    run's true end — status, summary, checkpoint — lands. `on_notice` gets one warning Notice when recording falls
    behind and one info Notice when it has caught up; `on_error` gets the problem when the run could not be
    recorded at all (its row never written) — or, without `on_notice`, when recording first falls behind.
    """

    def __init__(self, store: RunStore, *, out_dir: str | None = None, on_error=None, on_notice=None,
                 interval: float = RECORD_INTERVAL, host: str | None = None):
        self.store = store
        self.out_dir = out_dir
        self.host = host
        self.on_error = on_error
        self.on_notice = on_notice
        self.interval = interval
        self.run_id: int | None = None
        self.pending: list[Event] = []
        self.lines: list[str] = []
        self.pending_bytes = 0
        self.seq = 0
        self.last_commit = time.monotonic()
        self.next_try = 0.0  # while behind: not before this (monotonic) time
        self.delay = interval
        self.behind: RunStoreError | None = None  # the problem recording is behind on, while it is
        self.dropped = 0  # events dropped because the buffer was full
        self.done = False  # the terminal event was handled: later events are not this run's record
        self.failed = False  # the run's end could not be recorded
        self.reported = False  # on_error was told
        self.disk_bytes: int | None = None  # its folder's size when it ended (a folder on this computer only)
        self._started: RunStarted | None = None

    def __call__(self, event: Event, line: str | None = None) -> None:
        if self.done:
            return
        if isinstance(event, RunStarted):
            self._started = event
        line = line if line is not None else to_json(event)
        keep = isinstance(event, RunStarted) or is_terminal(event)
        if not keep and (len(self.pending) >= MAX_PENDING_EVENTS
                         or self.pending_bytes + len(line) > MAX_PENDING_BYTES):
            self._drop()
        else:
            self.pending.append(event)
            self.lines.append(line)
            self.pending_bytes += len(line)
        if is_terminal(event):
            self.done = True
            self._finish(event)
        elif isinstance(event, RunStarted):  # the row now (the events follow in the first batch)
            try:
                self._start()
            except RunStoreError as exc:
                self._fell_behind(exc)
        elif time.monotonic() - self.last_commit >= self.interval:
            if self.behind is None or time.monotonic() >= self.next_try:
                self.flush(event)

    def resume(self, run_id: int, seq: int, started: RunStarted) -> None:
        """Go on with a record the history holds already, from its `seq`-th event (`started`: its first): a run
        attached again, whose record this computer wrote up to there."""
        self.run_id, self.seq, self._started = run_id, seq, started

    def _drop(self) -> None:
        self.dropped += 1
        if self.dropped == 1 and self.on_notice:
            self.on_notice(Notice("warning", f"the run history cannot keep up: more than {MAX_PENDING_EVENTS} "
                                             f"events or {MAX_PENDING_BYTES // 2**20} MiB are waiting to be "
                                             "written; further progress events are left out of this run's "
                                             "record", "the run's own files (events.jsonl) keep every event"))

    def _start(self) -> None:
        self.run_id = self.store.start_run(self._started.config.to_dict(), self.out_dir, self.host)

    def flush(self, last: Event | None = None) -> bool:
        """Commit what is buffered (the run's row first, if it is not written yet); True when nothing is left."""
        self.last_commit = time.monotonic()
        try:
            if self.run_id is None:
                if self._started is None:  # no row before RunStarted: keep the events for its first batch
                    if self.done:  # a run that failed before it started is not recorded (as before)
                        self.pending, self.lines, self.pending_bytes = [], [], 0
                    return True
                self._start()
            if self.pending:
                summary = _summary(self.pending, last)
                if self.done and self.disk_bytes is not None:
                    summary["disk_bytes"] = self.disk_bytes
                self.store.append_events(self.run_id, self.seq, self.pending, summary, self.lines)
                self.seq += len(self.pending)
                self.pending, self.lines, self.pending_bytes = [], [], 0
        except RunStoreError as exc:
            self._fell_behind(exc)
            return False
        if self.behind is not None:
            self._caught_up()
        return True

    def _fell_behind(self, exc: RunStoreError) -> None:
        if self.behind is None:
            self.delay = max(self.interval, 0.05)
            if self.on_notice and not self.done:
                self.on_notice(Notice("warning", f"the run history is falling behind: {exc}; this run's events "
                                                 "are kept and written when the database can take them",
                                      exc.hint))
            elif not self.on_notice and self.on_error:
                self.reported = True
                self.on_error(exc)
        else:
            self.delay = min(self.delay * 2, MAX_RETRY_DELAY_S)
        self.behind = exc
        self.next_try = time.monotonic() + self.delay

    def _caught_up(self) -> None:
        self.behind = None
        if self.on_notice:
            dropped = f" ({self.dropped} progress events were left out)" if self.dropped else ""
            self.on_notice(Notice("info", f"the run history has caught up: this run is recorded in "
                                          f"{self.store.path}{dropped}"))

    def _finish(self, last: Event) -> None:
        """The run ended: its end has to land, with its folder's size. Retry a passing problem for up to
        FINAL_RETRY_S."""
        if self.out_dir and self.host is None and Path(self.out_dir).is_dir():  # (a remote run's is on its host)
            # The checkpoint is written; the event log is still in its temp file there, all but this last line.
            self.disk_bytes = folder_bytes(self.out_dir)
        deadline = time.monotonic() + FINAL_RETRY_S
        delay = 0.05
        while not self.flush(last):
            if not self.behind.transient or time.monotonic() + delay > deadline:
                break
            time.sleep(delay)
            delay = min(delay * 2, 1.0)
        else:
            return
        exc, self.failed = self.behind, True
        if self.run_id is None or not self.on_notice:
            if self.on_error and not self.reported:
                self.on_error(exc)
        else:
            self.on_notice(Notice("warning", f"the run history is missing the end of this run: {exc}; it shows "
                                             f"{self.seq} of its events", exc.hint))


def _summary(batch: list[Event], last: Event | None) -> dict:
    """Columns of the run's row that this batch changes."""
    summary: dict = {}
    for event in batch:
        if isinstance(event, RunStarted):
            summary["environment"] = json.dumps({"device": event.device, "device_name": event.device_name,
                                                 **event.versions.to_dict()})
        elif isinstance(event, EpochEnd):
            best = summary.get("best_val_accuracy")
            summary["best_val_accuracy"] = event.val_accuracy if best is None else max(best, event.val_accuracy)
        elif isinstance(event, Step):
            summary["steps"] = event.step
    if isinstance(last, RunFinished):
        results = last.results
        summary.update(status="stopped" if last.stopped else "finished", steps=last.steps,
                       best_val_accuracy=results.best_val_accuracy, samples_per_s=results.samples_per_s,
                       compile_seconds=results.compile_seconds, peak_memory_mib=results.peak_memory_mib,
                       backend_used=results.backend_used, checkpoint=results.checkpoint or None)
    elif isinstance(last, RunFailed):
        summary.update(status="failed", failure=json.dumps(to_dict(last)))
    return summary
