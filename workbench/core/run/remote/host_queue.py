"""A host's own queue: runs handed over by another computer's queue (history/queue.py) so that the host trains them
one after another with no connection to it. Torch-free. The host's side of three remote.host commands:

    queue                  the runs to train, in order (one stdin line: {"requests": [RunRequest, …]}), under a
                           queue supervisor detached from the session; answers its key
    queued KEY             how that queue stands (HostQueue): the run started for each request so far, whether its
                           supervisor still runs, which requests were cancelled
    queue-cancel KEY I…    cancel requests I…: one not started never starts, a running one stops after its step

The queue supervisor (`supervise-queue KEY`, its own session) starts each request as `start` does, a run supervisor
of its own in a folder of its own (host.py), records which run a request became (`runs.jsonl`, a line appended per
request), and waits for that run's supervisor to end before the next: it blocks on the run's ALIVE lock, which the
run's supervisor holds for as long as it lives (remote/run_folders.py). A run is followed and recorded on the other
computer by `attach KEY`, as any detached run: the queue only decides when each starts.
"""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path
from typing import BinaryIO, Callable

from ...ground import paths
from ...ground.atomic import write_text_atomic
from ..protocol import RUN_JOB_ID, Cancel
from ..run_request import RunRequest, new_run_dir
from .run_folders import (ALIVE, CONTROL, REQUEST, locked, new_folder, new_key, runs_root, start_detached,
                          supervise_detached)
from .wire import HostQueue

REQUESTS, RUNS, CANCELLED = "requests.jsonl", "runs.jsonl", "cancelled"


def main(command: str, args: list[str], stdin: BinaryIO, answer: Callable[[dict], None]) -> int:
    """remote.host's queue commands (its main hands them over)."""
    if command == "supervise-queue":
        return supervise_queue(args[0], int(args[1]) if len(args) > 1 else None)
    try:
        if command == "queue":
            answer(queue_state(start_queue(stdin)).to_dict())
        elif command == "queued":
            answer(queue_state(args[0]).to_dict())
        else:
            answer(cancel(args[0], [int(index) for index in args[1:]]).to_dict())
    except (OSError, ValueError, KeyError) as exc:  # a queue that is not there, a request it cannot read
        answer({"error": f"{type(exc).__name__}: {exc}"})
        return 1
    return 0


def queues_root() -> Path:
    return paths.data_dir() / "remote-queues"


def start_queue(stdin: BinaryIO) -> str:
    """The queue of stdin's requests, under a supervisor that outlives this session; its key."""
    requests = [RunRequest.from_dict(request) for request in json.loads(stdin.readline())["requests"]]
    key = new_key(queues_root())
    path = queues_root() / key
    write_text_atomic(path / REQUESTS, "".join(request.to_json() + "\n" for request in requests))
    start_detached(["supervise-queue", key], path / "supervisor.log")
    return key


def supervise_queue(key: str, announce: int | None = None) -> int:
    """Start each request of the queue `key` in order, the next once the run before it has ended."""
    path = queues_root() / key
    alive = os.open(path / ALIVE, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(alive, fcntl.LOCK_EX)  # held for the life of this process
    if announce is not None:
        os.close(announce)
    requests = [RunRequest.from_json(line) for line in (path / REQUESTS).read_text().splitlines()]
    for index, request in enumerate(requests):
        if index in _cancelled(path):
            _started(path, index, None)
            continue
        folder = new_folder()
        request = request.replace(out_dir=str(new_run_dir()), db=None, record=True)
        write_text_atomic(folder.path / REQUEST, request.to_json())
        supervise_detached(folder)
        _started(path, index, folder.key)
        if index in _cancelled(path):  # cancelled while it was being started
            _cancel_run(folder.path)
        _wait_for_end(folder.path)
    return 0


def queue_state(key: str) -> HostQueue:
    path = queues_root() / Path(key).name
    if not (path / REQUESTS).is_file():
        raise FileNotFoundError(f"no queue {key!r} on this host")
    count = len((path / REQUESTS).read_text().splitlines())
    runs: list[str | None] = [None] * count
    for index, run in _runs(path).items():
        runs[index] = run or ""  # "": cancelled before it started
    return HostQueue(key=path.name, runs=tuple(runs), alive=locked(path / ALIVE),
                     cancelled=tuple(sorted(_cancelled(path))))


def cancel(key: str, indexes: list[int]) -> HostQueue:
    """Cancel requests `indexes` of the queue `key`: a request not started is skipped; a running run stops after
    its step (a cancel line in its control file, as an attach sends it)."""
    path = queues_root() / Path(key).name
    with open(path / CANCELLED, "a", encoding="utf-8") as out:
        out.write("".join(f"{index}\n" for index in indexes))
    for index, run in _runs(path).items():
        if index in indexes and run:
            _cancel_run(runs_root() / run)
    return queue_state(key)


def _cancel_run(run_folder: Path) -> None:
    with open(run_folder / CONTROL, "ab") as out:
        out.write(json.dumps(Cancel(RUN_JOB_ID).to_dict()).encode() + b"\n")


def _started(path: Path, index: int, run: str | None) -> None:
    with open(path / RUNS, "a", encoding="utf-8") as out:
        out.write(json.dumps({"index": index, "run": run}) + "\n")
        out.flush()


def _runs(path: Path) -> dict[int, str | None]:
    try:
        lines = (path / RUNS).read_text().splitlines()
    except FileNotFoundError:
        return {}
    return {line["index"]: line["run"] for line in map(json.loads, lines)}


def _cancelled(path: Path) -> set[int]:
    try:
        return {int(line) for line in (path / CANCELLED).read_text().split()}
    except FileNotFoundError:
        return set()


def _wait_for_end(run_folder: Path) -> None:
    """Block until the run's supervisor has ended: it holds the folder's ALIVE lock for as long as it lives."""
    fd = os.open(run_folder / ALIVE, os.O_RDONLY | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)
    finally:
        os.close(fd)
