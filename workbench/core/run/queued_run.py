"""One run of a queue: a sweep's trial, a configuration's seed. Each is a recorded run of its own, trained in a kernel
process of its own (or on a host over SSH), and the queue needs only two things back: how it ended and which run of
the history it is. Torch-free.

The run's folder is made here only once its request has been accepted (a config this machine refuses leaves no
empty folder), and a remote run's folder is known only when the host has started it: `on_folder` hears it then.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..ground.config import TrainConfig
from ..ground.events import EpochEnd, Event, RunFailed, RunFinished, RunStarted
from ..history.runs import RunStore
from .launch import start_run
from .remote.kernels import RemoteRun
from .run_request import Launch, RunRequest, new_run_dir
from .remote.ssh import Remote

StartRun = Callable[..., RunFinished | RunFailed]  # launch.start_run's signature


@dataclass(frozen=True)
class RecordedRun:
    """How a queued run ended, and what the queue keeps of it."""

    outcome: RunFinished | RunFailed
    run_id: int | None  # its row in the history (None: it never started, or its record was lost)
    best_val_accuracy: float | None  # the best epoch's (None: no epoch ended)


def train_recorded(config: TrainConfig, emit: Callable[[Event], None], stop: threading.Event, *, cuda_devices: int,
                   db: str | Path | None = None, runs_dir: str | Path | None = None, remote: Remote | None = None,
                   on_folder: Callable[[str], None] = lambda folder: None,
                   start: StartRun = start_run, process=None) -> RecordedRun:
    """Train `config` as a recorded run (on `remote`, if given: its record is kept in this computer's history all the
    same); every event goes to `emit`, and `stop` ends it after its current step. Raises ConfigError, with nothing
    started, when this machine cannot run `config`. `start`: what trains the request (launch.start_run; the callers
    pass the one they imported, which is where their tests replace it). `process`: what runs it, when neither here
    nor on one host (a run across hosts: hosts/across.py), with the host's `started` as a RemoteRun has it."""
    request = RunRequest.build(config, cuda_devices=cuda_devices, out_dir="", db=db, launch=Launch())
    if process is None and remote is not None:
        process = RemoteRun(remote, db=request.db)
    if process is None:
        request = request.replace(out_dir=str(new_run_dir(runs_dir)))
        on_folder(request.out_dir)
    best = -math.inf

    def heard(event: Event) -> None:
        nonlocal best
        if isinstance(event, RunStarted) and process is not None:
            on_folder(process.started.out_dir)
        if isinstance(event, EpochEnd):
            best = max(best, event.val_accuracy)
        emit(event)

    outcome = start(request, heard, stop, process=process)
    folder = process.started.out_dir if process is not None and process.started else request.out_dir
    return RecordedRun(outcome, run_id_of(request.db, folder), best if best > -math.inf else None)


def run_id_of(db: str | None, out_dir: str) -> int | None:
    if not out_dir:  # a remote run that never started has no folder (and "" would resolve to this one)
        return None
    with RunStore(db, recover=False) as store:
        return store.id_for_out_dir(out_dir)
