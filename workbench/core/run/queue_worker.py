"""Working the queue (history/queue.py) without a window: claim the next entry of a place, train it as a recorded run
(queued_run.train_recorded: here in a kernel process, or on the host over SSH), say how it ended, and go on to the
next; a bad entry (a model file gone, a setting this machine refuses) fails alone, with its reason. Torch-free.

One run at a time per device: a place has a slot per device (one per CUDA device asked for, `parallel`; a single one
on the CPU), and a runner holds the slot's lock (a file lock in the data folder, released by the system however the
runner ends) while an entry trains on its device, so that two runners on this computer (the window and `workbench
queue work`) never train on one device at once. An entry that lets Workbench choose its device trains on its slot's;
one naming a CUDA device by its index waits for that device's slot. Cancel of a running entry is read from the queue
every second; a stop of the worker (Ctrl+C, the window closing) stops the running entry after its step, and it is
interrupted: retried, it trains again."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from ..ground import paths
from ..ground.config import TrainConfig
from ..ground.errors import WorkbenchError, first_line
from ..ground.events import Emit, Event, RunFailed, RunFinished
from ..history.queue import CANCELLED, FAILED, FINISHED, HERE, INTERRUPTED, QueueEntry, QueueError, RunQueue
from .launch import start_run
from .queued_run import train_recorded
from .hosts.across import AcrossRun
from .hosts.preflight import preflight
from .remote.ssh import Remote

if TYPE_CHECKING:
    from .sweep import TrialRun

CANCEL_POLL_S = 1.0  # how often a running entry's cancel is looked for
IDLE_POLL_S = 2.0  # `wait`: how often an empty queue is looked at again


@dataclass
class WorkDone:
    """What a worker did: each entry it ended, how, and its best accuracy."""

    ended: list[tuple[QueueEntry, str]] = field(default_factory=list)

    def summary(self) -> str:
        return f"the queue is done: {self.said()}" if self.ended else "the queue had nothing to train here"

    def said(self) -> str:
        """'3 finished, 1 failed; best val accuracy 93.10% (entry 4, run 12)': how each entry ended, and the best."""
        counts = {state: sum(1 for _entry, ended in self.ended if ended == state)
                  for state in (FINISHED, FAILED, CANCELLED, INTERRUPTED)}
        said = ", ".join(f"{count} {state}" for state, count in counts.items() if count)
        best = max(((entry.best_val_accuracy, entry) for entry, state in self.ended
                    if state == FINISHED and entry.best_val_accuracy is not None), default=None,
                   key=lambda pair: pair[0])
        return said + (f"; best val accuracy {best[0]:.2%} (entry {best[1].id}, run {best[1].run_id})" if best
                       else "")


def work(db: str | Path | None, stop: threading.Event, *, cuda_devices: int, place: str = HERE,
         wait: bool = False, runs_dir: str | Path | None = None, say: Callable[[str], None] = print,
         emit: Emit = lambda event: None, parallel: int | None = None) -> WorkDone:
    """Train the queued entries of `place` in order until none is left (`wait`: until `stop`, looking for new ones
    every IDLE_POLL_S); every event of an entry training goes to `emit`, a line about each entry to `say`.
    `parallel`: how many entries train at once, each on a device of its own (slot_devices)."""
    devices = slot_devices(cuda_devices, parallel, place)
    done = WorkDone()
    with RunQueue(db) as queue:
        for entry_id in queue.recover():
            say(f"entry {entry_id} was interrupted: its runner stopped while it trained (retry it: workbench queue "
                f"retry {entry_id})")
    slots = [threading.Thread(target=_work_slot, args=(db, stop, place, slot, device, wait, cuda_devices, runs_dir,
                                                       say, emit, done), name=f"workbench-queue-slot-{slot}")
             for slot, device in enumerate(devices)]
    for thread in slots[1:]:
        thread.start()
    _work_slot(db, stop, place, 0, devices[0], wait, cuda_devices, runs_dir, say, emit, done)
    for thread in slots[1:]:
        thread.join()
    return done


def slot_devices(cuda_devices: int, parallel: int | None, place: str = HERE) -> list[str]:
    """The device each of a runner's slots holds: one slot per CUDA device asked for ("cuda:0", "cuda:1", …), or
    one slot holding none ("") where runs train on the CPU, one at a time. Here `cuda_devices` bounds it; on a host
    (whose devices this computer does not know) the user's `parallel` is taken as its devices."""
    if parallel is None:
        parallel = max(1, cuda_devices) if place == HERE else 1
    if parallel < 1:
        raise QueueError(f"{parallel} runs at once is none", "ask for 1 or more")
    if place == HERE and parallel > max(1, cuda_devices):
        raise QueueError(f"{parallel} runs at once asked for, but this computer has "
                         + (f"{cuda_devices} CUDA device(s): one run per device" if cuda_devices else
                            "no CUDA device: its runs train one at a time on the CPU"),
                         f"--parallel {max(1, cuda_devices)} at most")
    return [f"cuda:{index}" for index in range(parallel)] if parallel > 1 or cuda_devices else [""]


def _work_slot(db, stop: threading.Event, place: str, slot: int, device: str, wait: bool, cuda_devices: int,
               runs_dir, say: Callable[[str], None], emit: Emit, done: WorkDone) -> None:
    """One slot of a runner: under the slot's lock, claim the next entry that fits its device and train it there."""
    with RunQueue(db) as queue:  # a connection of this thread's own
        while not stop.is_set():
            with place_lock(place, stop, slot) as held:
                entry = queue.claim(place, device=device) if held else None
                if entry is not None:
                    say(f"entry {entry.id} ({entry.title}) starts on {entry.where}" + (f", {device}" if device
                                                                                      else ""))
                    state = _train(queue, entry, db, stop, cuda_devices, runs_dir, emit, device)
                    ended = queue.entry(entry.id)
                    done.ended.append((ended, state))
                    say(f"entry {entry.id} {state}" + (f": {ended.error}" if ended.error else "")
                        + (f" (run {ended.run_id})" if ended.run_id is not None else ""))
                    continue
            if not wait or stop.wait(IDLE_POLL_S):
                break


def on_device(config: TrainConfig, device: str) -> TrainConfig:
    """An entry's settings on the slot's `device`: one that lets Workbench choose (auto, cuda) trains there; one
    that names its device keeps it (the CPU, or the slot's own)."""
    return config.replace(device=device) if device and config.device in ("auto", "cuda") else config


def _train(queue: RunQueue, entry: QueueEntry, db, stop: threading.Event, cuda_devices: int, runs_dir,
           emit: Emit, device: str = "") -> str:
    """Train one claimed entry and write how it ended; its state."""
    entry_stop, cancelled = threading.Event(), threading.Event()
    watching = threading.Thread(target=_watch_cancel, args=(db, entry.id, stop, entry_stop, cancelled),
                                name="workbench-queue-cancel", daemon=True)
    watching.start()
    trial: TrialRun | None = None
    try:
        trial = start_entry(queue, entry, db)
        config = on_device(trial.config if trial else entry.config, device)

        def heard(event: Event) -> None:
            emit(event)
            if trial is not None and trial.heard(event):
                entry_stop.set()  # pruned

        remote = Remote.parse(entry.place, entry.python) if entry.place and not entry.across else None
        recorded = train_recorded(config, heard, entry_stop, cuda_devices=cuda_devices, db=db, runs_dir=runs_dir,
                                  remote=remote, on_folder=trial.folder if trial else lambda folder: None,
                                  start=start_run, process=across_hosts(entry, config, db))
    except (WorkbenchError, OSError, ValueError) as exc:  # refused before it started: it fails alone
        if trial is not None:
            trial.refused(exc)
        queue.ended(entry.id, FAILED, error=first_line(exc))
        return FAILED
    finally:
        entry_stop.set()
        watching.join()
    state, error = ended_state(recorded.outcome, cancelled.is_set(), trial, recorded.run_id,
                               recorded.best_val_accuracy)
    queue.ended(entry.id, state, run_id=recorded.run_id, best=recorded.best_val_accuracy, error=error)
    return state


def across_hosts(entry: QueueEntry, config: TrainConfig, db) -> AcrossRun | None:
    """A host set's entry: its hosts checked first (the preflight, as `workbench train --hosts` does), then one
    torchrun a host; a red check fails the entry alone, each red cell said. None for any other entry."""
    if entry.across is None:
        return None
    hosts = [Remote.parse(address, entry.python) for address in entry.hosts]
    device = config.device if config.device in ("cpu", "cuda") else "auto"
    checked = preflight(hosts, entry.across.port, slots=[entry.across.processes] * len(hosts), device=device)
    if not checked.ok:
        raise QueueError(f"{len(checked.red)} preflight check(s) failed: "
                         + "; ".join(cell.said for cell in checked.red),
                         "fix the red cells (workbench preflight --hosts …), then retry it")
    return AcrossRun(hosts, checked, entry.across.processes, db=str(db) if db is not None else None)


def start_entry(queue: RunQueue, entry: QueueEntry, db) -> TrialRun | None:
    """A sweep's trial entry starting: its settings asked of the study, and written into the entry (the dock and
    `queue ls` show what it trains). None for any other entry."""
    if not entry.sweep:
        return None
    from .sweep import next_trial  # Optuna: imported by a sweep's first trial, not with the window

    trial = next_trial(entry.sweep, db)
    queue.trains(entry.id, trial.config, trial.label)
    return trial


def ask_trial(db, entry: QueueEntry) -> TrialRun:
    """start_entry for a sweep's trial entry, with a connection of its own (on the window's study thread)."""
    with RunQueue(db) as queue:
        return start_entry(queue, entry, db)


def ended_state(outcome: RunFinished | RunFailed, cancelled: bool, trial: TrialRun | None, run_id: int | None,
                best: float | None) -> tuple[str, str]:
    """How a queue entry ended, from its run's outcome (a trial told to its study first): its state and why."""
    if trial is not None:
        told = trial.ended(outcome, run_id, best)
        if told.state == "pruned":
            return FINISHED, told.note
    if isinstance(outcome, RunFailed):
        return FAILED, outcome.message
    if outcome.stopped:
        return (CANCELLED, "cancelled") if cancelled else (INTERRUPTED, "the runner was stopped while it trained")
    return FINISHED, ""


def _watch_cancel(db, entry_id: int, stop: threading.Event, entry_stop: threading.Event,
                  cancelled: threading.Event) -> None:
    """Until the entry ends: the worker stopping, or the entry's cancel asked in the queue, stops it."""
    with RunQueue(db) as queue:  # a connection of this thread's own
        while not entry_stop.wait(CANCEL_POLL_S):
            if queue.cancel_asked(entry_id):
                cancelled.set()
                entry_stop.set()
            if stop.is_set():
                entry_stop.set()


class place_lock:
    """A slot of the place, locked (waiting for another runner's entry to end, unless `stop`): `held` says whether
    it was."""

    def __init__(self, place: str, stop: threading.Event, slot: int = 0):
        self.place, self.stop, self.slot = place, stop, slot
        self.fds: list[int] = []

    def __enter__(self) -> bool:
        while (fds := try_places(self.place, self.slot)) is None:
            if self.stop.wait(IDLE_POLL_S):
                return False
        self.fds = fds
        return True

    def __exit__(self, *exc) -> None:
        for fd in self.fds:
            release_place(fd)
        self.fds = []


def try_places(place: str, slot: int = 0) -> list[int] | None:
    """The locks of `slot` on every host of `place` (one, or a host set's: a run across them holds each), or None,
    none held, when another runner holds one."""
    held: list[int] = []
    for host in sorted(place.split(",")) if place else [place]:
        fd = try_place(host, slot)
        if fd is None:
            for taken in held:
                release_place(taken)
            return None
        held.append(fd)
    return held


def try_place(place: str, slot: int = 0) -> int | None:
    """The lock of the place's `slot` (its device) if no other runner holds it (its file descriptor, for
    release_place); None otherwise. A file lock: the system releases it whatever ends its holder."""
    path = paths.data_dir() / "queue" / (f"{place or 'this-computer'}.{slot}.lock".replace("/", "_"))
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def release_place(fd: int) -> None:
    os.close(fd)  # and its lock with it


def start_background_worker(db: str | Path | None, place: str) -> int:
    """`workbench queue work` for `place`, detached (its own session, its output in the data folder's queue/
    worker.log): the queue goes on after the window closes. Its pid."""
    log = paths.data_dir() / "queue" / "worker.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    command = [sys.executable] + ([] if getattr(sys, "frozen", False) else ["-m", "workbench"])
    command += ["queue", *(["--db", str(db)] if db else []), "work", *(["--host", place] if place else [])]
    with open(log, "ab") as out:
        return subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                                start_new_session=True).pid
