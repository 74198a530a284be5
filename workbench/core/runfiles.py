"""A run's files in its output folder — events.jsonl (the whole stream) and metrics.json (the summary) — and
`run_recorded`, which runs the engine with those files and the run history kept.

Events are streamed to a hidden temp file and renamed into place when the run ends, so a reader never sees half a
file; the checkpoint itself is written by the engine (checkpoint.save, also atomic).
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Callable

from .atomic import commit, temp_beside, write_text_atomic
from .config import TrainConfig
from .engine import StopFlag, Trainer
from .errors import WorkbenchError
from .events import EpochEnd, Event, Notice, RunFailed, RunFinished, RunStarted, is_terminal, to_json


class RunFilesError(WorkbenchError):
    kind = "io"


class RunWriter:
    def __init__(self, out_dir: Path):
        self.out_dir = Path(out_dir)
        try:
            fd, self._tmp = temp_beside(self.out_dir / "events.jsonl")
        except OSError as exc:
            raise WorkbenchError(f"cannot write to output folder '{out_dir}': {exc.strerror or exc}",
                                 "choose a folder you can write to with --out") from None
        self._fh = os.fdopen(fd, "w", encoding="utf-8")
        self._started: RunStarted | None = None
        self._epochs: list[dict] = []

    def write(self, event: Event, line: str) -> None:
        self._fh.write(line + "\n")
        if isinstance(event, RunStarted):
            self._started = event
        elif isinstance(event, EpochEnd):
            self._epochs.append(dataclasses.asdict(event))

    def abort(self) -> None:
        """The process is being interrupted: leave no temp file behind."""
        self._fh.close()
        self._tmp.unlink(missing_ok=True)

    def close(self, result: RunFinished | RunFailed) -> None:
        """Put events.jsonl (and, for a finished run, metrics.json) in place; a file that cannot be written (disk
        full, folder removed) is a RunFilesError naming it."""
        target = self.out_dir / "events.jsonl"
        try:
            self._fh.close()
            commit(self._tmp, target)
            if isinstance(result, RunFinished):
                target = self.out_dir / "metrics.json"
                write_text_atomic(target, json.dumps(self._summary(result), indent=2))
        except OSError as exc:
            self._tmp.unlink(missing_ok=True)
            raise RunFilesError(f"cannot write {target}: {exc.strerror or exc}",
                                "check that the output folder still exists and its disk has space") from None

    def _summary(self, result: RunFinished) -> dict:
        return {
            "config": self._started.config if self._started else None,
            "device": self._started.device_name if self._started else None,
            "versions": self._started.versions if self._started else None,
            "steps": result.steps,
            "epochs": self._epochs,
            "seconds": result.seconds,
            "stopped": result.stopped,
            "metrics": result.metrics,
        }


def run_recorded(config: TrainConfig, out_dir: Path, *, sinks: tuple[Callable[[Event], None], ...] = (),
                 stop: StopFlag | None = None, db: str | Path | None = None, record: bool = True,
                 trainer: Trainer | None = None,
                 line_sinks: tuple[Callable[[str], None], ...] = ()) -> RunFinished | RunFailed:
    """One run with everything a user expects kept: its files in `out_dir`, its history in the run database,
    and every event passed on to `sinks` (a progress bar, the GUI) — or, as its JSON line, to `line_sinks` (a
    child process's connection to its parent). The CLI, the GUI and the training child all start runs here.

    A run database that cannot be written (locked, read-only) never costs the run, nor do run files that cannot be
    put in place at its end: a Notice says so, before the terminal event."""
    from .runs import RunRecorder, RunStore, RunStoreError

    out_dir = Path(out_dir).resolve()  # the database keeps the paths: a relative one means another folder elsewhere
    writer = RunWriter(out_dir)  # before training: an unwritable folder fails now, not after an hour
    notices: list[Notice] = []

    def note(exc: RunStoreError) -> None:
        notices.append(Notice("warning", f"this run is not recorded in the run history: {exc}", exc.hint))

    recorder = None
    if record:
        try:
            recorder = RunRecorder(RunStore(db), out_dir=str(out_dir), on_error=note)
        except RunStoreError as exc:
            note(exc)

    def deliver(event: Event, line: str) -> None:
        for sink in sinks:
            sink(event)
        for sink in line_sinks:
            sink(line)

    def emit(event: Event) -> None:
        line = to_json(event)  # once per event: the file, the database and a parent process all take the line
        if recorder is not None:
            recorder(event, line)
        if not is_terminal(event):
            writer.write(event, line)
            deliver(event, line)
            while notices:  # a recording problem reported while handling this event
                emit(notices.pop(0))
            return
        # Readers stop at the terminal event: whatever is said about recording it has to come before it.
        while notices:
            emit(notices.pop(0))
        writer.write(event, line)
        try:
            writer.close(event)
        except RunFilesError as exc:  # the run itself ended as it says: keep its event, after the problem
            problem = Notice("error", str(exc), exc.hint)
            deliver(problem, to_json(problem))
        deliver(event, line)

    engine = trainer or Trainer(out_dir=out_dir)
    try:
        return engine.run(config, emit, stop)
    except BaseException:
        writer.abort()
        raise
    finally:
        if recorder is not None:
            recorder.store.close()
