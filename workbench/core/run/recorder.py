"""A run's files in its output folder — events.jsonl (the whole stream) and metrics.json (the summary) — and
`run_recorded`, which runs the engine with those files and the run history kept.

Events are streamed to a hidden temp file and renamed into place when the run ends, so a reader never sees half a
file; the checkpoint is written here too (checkpoint.save, also atomic), when the engine hands over the model.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Callable

from ..ground.atomic import commit, temp_beside, write_text_atomic
from ..engine import StopFlag, TrainedModel, Trainer
from ..ground.errors import WorkbenchError
from ..ground.events import EpochEnd, Event, Notice, RunFailed, RunFinished, RunStarted, is_terminal, to_json
from ..domain.distributed import Distributed
from .request import RunRequest


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


def run_recorded(request: RunRequest, *, sinks: tuple[Callable[[Event], None], ...] = (),
                 stop: StopFlag | None = None, distributed: Distributed | None = None,
                 line_sinks: tuple[Callable[[str], None], ...] = ()) -> RunFinished | RunFailed:
    """One run in this process with everything a user expects kept: its files in the request's folder, its history
    in the run database, and every event passed on to `sinks` (a progress bar) — or, as its JSON line, to
    `line_sinks` (a kernel's connection to its parent). `start_run` and the kernel both train here.

    A run database that cannot be written (locked, read-only) never costs the run, nor do run files that cannot be
    put in place at its end: a Notice says so, before the terminal event. A rank other than 0 of a multi-process
    run trains only: rank 0 keeps the files and the record."""
    from ..history.runs import RunRecorder, RunStore, RunStoreError

    config, db, record = request.config, request.db, request.record
    if distributed is not None and not distributed.is_main:
        return Trainer(distributed=distributed).run(config, lambda event: None, stop)
    out_dir = Path(request.out_dir).resolve()  # the database keeps the paths: a relative one is another folder
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

    def save_checkpoint(trained: TrainedModel) -> str:  # the run's last file: written here, like all the others
        from ..domain import checkpoint

        return str(checkpoint.save(out_dir / "checkpoint.pt", trained.model, trained.config, metrics=trained.metrics,
                                   versions=trained.versions, classes=trained.classes))

    engine = Trainer(distributed=distributed, save_checkpoint=save_checkpoint)
    try:
        return engine.run(config, emit, stop)
    except BaseException:
        writer.abort()
        raise
    finally:
        if recorder is not None:
            recorder.store.close()
