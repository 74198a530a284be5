"""A run's files in its output folder — events.jsonl (the whole stream) and metrics.json (the summary) — and
`run_recorded`, which runs the engine with those files and the run history kept.

Events are streamed to a hidden temp file and renamed into place when the run ends, so a reader never sees half a
file; the checkpoint is written here too (checkpoint.save, also atomic), when the engine hands over the model.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
from datetime import datetime
from pathlib import Path
from typing import Callable

from ..ground.atomic import commit, temp_beside, write_text_atomic
from ..engine import StopFlag, TrainedModel, Trainer, standard_instruments
from ..engine.instruments.warm_start import CacheHome
from ..ground.errors import WorkbenchError
from ..ground.events import EpochEnd, Event, Notice, RunFailed, RunFinished, RunStarted, is_terminal, to_json
from ..domain.distributed import Distributed
from ..domain.model import absolute_spec
from ..history.warm_starts import CACHE_FILE, KEY_FILE
from .model_prints import prints_as_notices
from ..run.run_request import RunRequest


class RunFilesError(WorkbenchError):
    kind = "io"


class RunWriter:
    """events.jsonl, streamed to a hidden temp file and put in place by `close`.

    A log that cannot be written on (disk full, quota) never costs the run: the first failure stops the log,
    `on_broken` gets a warning Notice saying so and why, and the run goes on; `close` still puts the part that
    was written in place (cut at its last whole line), or removes it and says so."""

    def __init__(self, out_dir: Path, on_broken: Callable[[Notice], None] | None = None):
        self.out_dir = Path(out_dir)
        try:
            fd, self._tmp = temp_beside(self.out_dir / "events.jsonl")
        except OSError as exc:
            raise WorkbenchError(f"cannot write to output folder '{out_dir}': {exc.strerror or exc}",
                                 "choose a folder you can write to with --out") from None
        self._fh = os.fdopen(fd, "w", encoding="utf-8")
        self._started: RunStarted | None = None
        self._epochs: list[dict] = []
        self.on_broken = on_broken
        self.broken: str | None = None  # why the log stopped, once it did

    def write(self, event: Event, line: str) -> None:
        if self.broken is None:
            try:
                self._fh.write(line + "\n")
            except OSError as exc:
                self._break(exc)
        if isinstance(event, RunStarted):
            self._started = event
        elif isinstance(event, EpochEnd):
            self._epochs.append(dataclasses.asdict(event))

    def flush(self) -> None:
        """Push what is buffered to the file now, so a failure is reported before the run's last event."""
        if self.broken is None:
            try:
                self._fh.flush()
            except OSError as exc:
                self._break(exc)

    def _break(self, exc: OSError) -> None:
        self.broken = _reason(exc)
        try:
            self._fh.close()  # flushes the rest again, fails again, but closes the descriptor
        except OSError:
            pass
        if self.on_broken is not None:
            self.on_broken(Notice("warning", f"the event log {self.out_dir / 'events.jsonl'} is incomplete: it "
                                             f"could not be written ({self.broken}); the run goes on without it",
                                  "free some disk space; the checkpoint and metrics.json are still written "
                                  "when there is room"))

    def abort(self) -> None:
        """The process is being interrupted: leave no temp file behind."""
        try:
            self._fh.close()
        except OSError:
            pass
        self._tmp.unlink(missing_ok=True)

    def close(self, result: RunFinished | RunFailed) -> None:
        """Put events.jsonl (and, for a finished run, metrics.json) in place; a file that cannot be written (disk
        full, folder removed) is a RunFilesError naming it."""
        target = self.out_dir / "events.jsonl"
        cut_short: str | None = None
        try:
            if self.broken is None:
                try:
                    self._fh.close()  # the last buffered lines go to disk here
                except OSError as exc:
                    self.broken = cut_short = _reason(exc)  # (the descriptor is closed all the same)
            if self.broken is not None:
                _cut_to_last_line(self._tmp)
            commit(self._tmp, target)
            if isinstance(result, RunFinished):
                target = self.out_dir / "metrics.json"
                write_text_atomic(target, json.dumps(self._summary(result), indent=2))
        except OSError as exc:
            try:
                self._fh.close()
            except OSError:
                pass
            removed = target.name == "events.jsonl" and self._tmp.exists()
            self._tmp.unlink(missing_ok=True)
            raise RunFilesError(f"cannot write {target}: {exc.strerror or exc}",
                                ("the event log was removed (its temp file too); " if removed else "")
                                + "check that the output folder still exists and its disk has space") from None
        if cut_short is not None:
            log = self.out_dir / "events.jsonl"
            raise RunFilesError(f"the event log {log} is incomplete: its last events could not be written "
                                f"({cut_short})", "free some disk space; the run's other files were written")

    def _summary(self, result: RunFinished) -> dict:
        return {
            "config": self._started.config.to_dict() if self._started else None,
            "device": self._started.device_name if self._started else None,
            "versions": self._started.versions.to_dict() if self._started else None,
            "steps": result.steps,
            "epochs": self._epochs,
            "seconds": result.seconds,
            "stopped": result.stopped,
            "metrics": result.results.to_dict(),
        }


def _reason(exc: OSError) -> str:
    return exc.strerror or (os.strerror(exc.errno) if exc.errno else str(exc))


def _cut_to_last_line(path: Path) -> None:
    """A log cut short by a failed write may end in half a line: keep only its whole lines (readers parse each)."""
    with open(path, "r+b") as fh:
        data = fh.read()
        fh.truncate(data.rfind(b"\n") + 1)


RUN_FILES = ("checkpoint.pt", "checkpoint.safetensors", "metrics.json", "events.jsonl", CACHE_FILE, KEY_FILE)


def set_aside_previous(out_dir: Path) -> Notice | None:
    """A folder that holds another run's files gets them moved into `previous-<timestamp>/` (nothing is deleted),
    so that whatever happens to this run the folder never mixes two runs' files. The info Notice names it."""
    found = [out_dir / name for name in RUN_FILES if (out_dir / name).is_file()]
    if not found:
        return None
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    aside, n = out_dir / f"previous-{stamp}", 1
    while aside.exists():
        n += 1
        aside = out_dir / f"previous-{stamp}-{n}"
    try:
        aside.mkdir()
        for path in found:
            os.replace(path, aside / path.name)
    except OSError as exc:
        raise WorkbenchError(f"cannot move the previous run's files in '{out_dir}' aside: {_reason(exc)}",
                             "choose another folder with --out, or move them yourself") from None
    return Notice("info", f"the output folder held another run's files: moved them into {aside}",
                  "this run's files replace them; nothing was deleted")


def run_recorded(request: RunRequest, *, sinks: tuple[Callable[[Event], None], ...] = (),
                 stop: StopFlag | None = None, distributed: Distributed | None = None,
                 line_sinks: tuple[Callable[[str], None], ...] = (),
                 capture_prints: bool = False) -> RunFinished | RunFailed:
    """One run in this process with everything a user expects kept: its files in the request's folder, its history
    in the run database, and every event passed on to `sinks` (a progress bar) — or, as its JSON line, to
    `line_sinks` (a kernel's connection to its parent). `start_run` and the kernel both train here.

    A run database that cannot be written (locked, read-only) never costs the run, nor do run files that cannot be
    put in place at its end: a Notice says so, before the terminal event. A rank other than 0 of a multi-process
    run trains only: rank 0 keeps the files and the record. `capture_prints` (a kernel, whose terminal the user
    may not see): what the model prints becomes Notices in the run's events (output.py)."""
    from ..history.recording import RunRecorder
    from ..history.runs import RunStore, RunStoreError

    config, db, record = request.config, request.db, request.record
    # The history and the checkpoint keep the model file as an absolute path: a relative one is another file
    # wherever the run is read back (a report from another folder would import that folder's file).
    config = config.replace(model=absolute_spec(config.model))
    if distributed is not None and not distributed.is_main:
        return Trainer(distributed=distributed).run(config, lambda event: None, stop)
    out_dir = Path(request.out_dir).resolve()  # the database keeps the paths: a relative one is another folder
    notices: list[Notice] = []
    moved = set_aside_previous(out_dir)  # before training: the folder holds this run's files only
    if moved is not None:
        notices.append(moved)
    writer = RunWriter(out_dir, on_broken=notices.append)  # before training: an unwritable folder fails now

    def note(exc: RunStoreError) -> None:
        notices.append(Notice("warning", f"this run is not recorded in the run history: {exc}", exc.hint))

    recorder = None
    if record:
        try:
            recorder = RunRecorder(RunStore(db, writing=True), out_dir=str(out_dir), on_error=note,
                                   on_notice=notices.append)
        except RunStoreError as exc:
            note(exc)

    def deliver(event: Event, line: str) -> None:
        for sink in sinks:
            sink(event)
        for sink in line_sinks:
            sink(line)

    def emit(event: Event) -> None:
        if is_terminal(event):  # an event log that cannot take the rest is said (and recorded) before the end
            writer.flush()
            while notices:
                emit(notices.pop(0))
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
            notices.append(Notice("error", str(exc), exc.hint))
        for problem in notices:  # the log broke on this last line, or its files could not be put in place
            deliver(problem, to_json(problem))
        notices.clear()
        deliver(event, line)

    def save_checkpoint(trained: TrainedModel) -> str:  # the run's last file: written here, like all the others
        from ..domain import checkpoint

        return str(checkpoint.save(out_dir / "checkpoint.pt", trained.model, trained.config, results=trained.results,
                                   versions=trained.versions, classes=trained.classes,
                                   training_state=trained.training_state))

    trace_dir = out_dir / "compile-trace" if config.compile_trace else None
    engine = Trainer(distributed=distributed, save_checkpoint=save_checkpoint,
                     instruments=standard_instruments(trace_dir=trace_dir, profile_dir=out_dir / "profile",
                                                      compile_cache=CacheHome(out_dir, db)))
    try:
        with prints_as_notices(notices.append) if capture_prints else contextlib.nullcontext():
            return engine.run(config, emit, stop)
    except BaseException:
        writer.abort()
        raise
    finally:
        if recorder is not None:
            recorder.store.close()
