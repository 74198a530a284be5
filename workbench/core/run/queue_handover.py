"""A host's queued entries handed over to the host (remote/host_queue.py), which then trains them one after another
with no connection to this computer, and later taken back: each run attached and recorded in this computer's history
as any run on a host is, and its entry ended as it did. Torch-free.

Handing over is what keeps a host's queue working when the window closes (Keep working in the background) or with
`workbench queue handover --host H`: from then on the host's own queue supervisor decides when each run starts.
`collect` (the window, at opening and every minute while the host has some; `workbench queue work --host H`) follows
the runs: a run that ended is replayed from the host's log at once, one still training is followed to its end. A
cancel asked here (the Queue dock, `workbench queue cancel`) is passed to the host first. A sweep's trials are not
handed over: the study is here, and asks each trial's settings as it starts."""

from __future__ import annotations

import json
import math
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..ground.errors import WorkbenchError, first_line
from ..ground.events import EpochEnd, Event, RunFailed, RunFinished, is_terminal
from ..history.queue import CANCELLED, FAILED, INTERRUPTED, QueueEntry, RunQueue
from .queued_run import run_id_of
from .queue_worker import WorkDone, ended_state
from .remote.kernels import RemoteRun, answer_as, ask_host
from .remote.ssh import Remote, RemoteError
from .remote.wire import HostQueue
from .run_request import Launch, RunRequest

START_WAIT_S = 30.0  # how long a run the host is about to start is waited for, before it is taken back later


def hand_over(db: str | Path | None, place: str, python: str | None = None) -> tuple[list[int], str]:
    """The queued entries of the host `place` handed to its own queue: their ids, and what was done ("" when there
    were none). `python`: the host's Python that has Workbench (the entries' own by default). A RemoteError (the
    entries queued again, as they were) when the host cannot take them."""
    if "," in place:  # a host set's entries: its hosts train them together, started from here
        return [], ""
    with RunQueue(db) as queue:
        entries = queue.take_for_host(place)
        if not entries:
            return [], ""
        ids = [entry.id for entry in entries]
        try:
            host_queue = _host_queue_started(Remote.parse(place, python or entries[0].python), entries)
        except (RemoteError, OSError):
            queue.not_handed(ids)
            raise
        queue.handed(ids, host_queue.key)
    return ids, f"{len(ids)} entr{'y' if len(ids) == 1 else 'ies'} handed over to {place}, which trains them " \
                f"on its own (its queue {host_queue.key})"


def _host_queue_started(remote: Remote, entries: list[QueueEntry]) -> HostQueue:
    """The host's queue of the entries' runs (each checked there, where it trains: a setting the host refuses
    fails that run alone)."""
    requests = [RunRequest(config=entry.config, out_dir="", db=None, record=True, launch=Launch()).to_dict()
                for entry in entries]
    answer = ask_host(remote, "queue", when="while handing the queue over",
                      first_line=json.dumps({"requests": requests}))
    return answer_as(HostQueue, answer, f"{remote} did not take the queue")


def host_queue_state(remote: Remote, key: str, cancel: list[int] = ()) -> HostQueue:
    """How the host's queue `key` stands (cancelling requests `cancel` first)."""
    answer = ask_host(remote, *(("queue-cancel", key, *map(str, cancel)) if cancel else ("queued", key)),
                      when="while reading the host's queue")
    return answer_as(HostQueue, answer, f"{remote} did not say how its queue {key} stands")


@dataclass
class Collected(WorkDone):
    """What `collect` did: each entry it ended, how (as a worker says it); what it could not do."""

    problem: str = ""


def collect(db: str | Path | None, place: str, stop: threading.Event, *, emit: Callable[[Event], None] =
            lambda event: None, say: Callable[[str], None] = lambda line: None) -> Collected:
    """Take back the runs of `place` its host trains: each ended one recorded here and its entry ended as the run
    did; one still training followed to its end (until `stop`: then left training there, its entry as it was)."""
    done = Collected()
    with RunQueue(db) as queue:
        entries = queue.with_host(place)
        by_queue: dict[str, list[QueueEntry]] = {}
        for entry in entries:
            by_queue.setdefault(entry.handed.rpartition(":")[0], []).append(entry)
        try:
            for key, handed in by_queue.items():
                _take_back_queue(queue, key, handed, place, db, stop, emit, say, done)
        except (RemoteError, OSError) as exc:
            done.problem = f"cannot reach {place} for its queue: {first_line(exc)}"
    return done


def _take_back_queue(queue: RunQueue, key: str, handed: list[QueueEntry], place: str, db, stop: threading.Event,
                     emit: Callable[[Event], None], say: Callable[[str], None], done: Collected) -> None:
    """The entries of the host's queue `key`, in order, until one has not ended there yet (a cancel asked here
    passed on first)."""
    remote = Remote.parse(place, handed[0].python)
    state = host_queue_state(remote, key, [_index(e) for e in handed if queue.cancel_asked(e.id)])
    for entry in handed:
        if stop.is_set():
            return
        state = _started(remote, state, _index(entry), stop)
        ended = _take_back(queue, entry, state, remote, db, stop, emit)
        if ended is None:
            return  # not started there yet, or left training: the rest come after it
        done.ended.append(ended)
        say(f"entry {entry.id} {ended[1]} on {place}" + (f": {ended[0].error}" if ended[0].error else ""))


def _started(remote: Remote, state: HostQueue, index: int, stop: threading.Event) -> HostQueue:
    """The queue's state once request `index` has started there (the run before it has just ended: the host's
    supervisor starts the next within moments), or its supervisor has ended; as it is after START_WAIT_S."""
    deadline = time.monotonic() + START_WAIT_S
    while state.runs[index] is None and state.alive and time.monotonic() < deadline and not stop.wait(0.2):
        state = host_queue_state(remote, state.key)
    return state


def _take_back(queue: RunQueue, entry: QueueEntry, state: HostQueue, remote: Remote, db, stop: threading.Event,
               emit: Callable[[Event], None]) -> tuple[QueueEntry, str] | None:
    """One handed entry's run, recorded here as it ended; None while it has not (not started yet, or left)."""
    index = _index(entry)
    run = state.runs[index] if index < len(state.runs) else None
    if run is None:
        if state.alive:
            return None  # its turn has not come on the host
        queue.ended(entry.id, INTERRUPTED, error=f"the queue of {remote} stopped before it started (the host "
                                                 "restarted?): retry it")
    elif run == "":
        queue.ended(entry.id, CANCELLED, error="cancelled")
    else:
        process, best = RemoteRun(remote, db=db), -math.inf

        def heard(event: Event) -> None:
            nonlocal best
            if isinstance(event, EpochEnd):
                best = max(best, event.val_accuracy)
            emit(event)

        followed = threading.Event()
        threading.Thread(target=_leave_on_stop, args=(process, stop, followed), daemon=True,
                         name="workbench-queue-leave").start()
        try:  # (its own stop, never set: a stop here leaves the run training there, it does not cancel it)
            outcome = process.attach(run, heard, threading.Event())
        except (WorkbenchError, OSError) as exc:
            queue.ended(entry.id, FAILED, error=f"cannot take its run back from {remote}: {first_line(exc)}")
            return queue.entry(entry.id), FAILED
        finally:
            followed.set()
        if not is_terminal(outcome) or (isinstance(outcome, RunFailed) and outcome.kind == "detached"):
            return None  # left training there: taken back later
        run_id = run_id_of(db, process.started.out_dir) if process.started else None
        result = outcome if isinstance(outcome, (RunFinished, RunFailed)) else RunFailed(kind="remote",
                                                                                          message=str(outcome))
        ended_as, error = ended_state(result, index in state.cancelled or queue.cancel_asked(entry.id), None,
                                      run_id, best if best > -math.inf else None)
        queue.ended(entry.id, ended_as, run_id=run_id, best=best if best > -math.inf else None, error=error)
    after = queue.entry(entry.id)
    return after, after.state


def _leave_on_stop(process: RemoteRun, stop: threading.Event, followed: threading.Event) -> None:
    while not followed.is_set():
        if stop.wait(0.5):
            process.detach()
            return


def _index(entry: QueueEntry) -> int:
    return int(entry.handed.rpartition(":")[2])
