"""A detached run's folder on a host (remote/host.py), and what starts its supervisor: shared by the host's own
commands and by its queue (remote/host_queue.py). Torch-free.

A folder under the data folder's `remote-runs/` holds the request, the event log (one JSON line per event, appended
and flushed as they come: what an attach replays), the supervisor's pid and a control file that attaches append to.
Whether a supervisor still runs is a lock, not a guess: it holds an exclusive lock on the folder's ALIVE file for as
long as it lives (the system releases it when the process ends, however it ends), and the session that starts it
returns only once it holds it. A pid and its /proc/PID/cmdline would not do: the command line is still empty for a
moment after a process starts (seen in 27 and 51 of 300 reads), and a pid can be reused by another program.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from ...ground import paths
from ..run_request import RunRequest

LOG = "events.jsonl"
CONTROL = "control.jsonl"
REQUEST = "request.json"
STACKS = "stacks"  # the ranks' question FIFOs and answers (run/stacks.py)
ALIVE = "alive.lock"  # locked by the folder's supervisor while it runs
# A spare's folder holds SPARE (its holder's pid) until one side renames it, atomically, and so owns what comes next:
# `start` to CLAIMED (the spare trains its request), the holder or the supervisor to ABANDONED (it ends unused).
SPARE, CLAIMED, ABANDONED = "spare", "claimed", "abandoned"

def runs_root() -> Path:
    return paths.data_dir() / "remote-runs"


@dataclass(frozen=True)
class RunFolder:
    """One detached run's folder on this host."""

    key: str

    @property
    def path(self) -> Path:
        return runs_root() / self.key

    @property
    def log(self) -> Path:
        return self.path / LOG

    def request(self) -> RunRequest:
        return RunRequest.from_json((self.path / REQUEST).read_text())

    def claim(self, mark: str) -> bool:
        """Rename the spare's mark to `mark` (CLAIMED or ABANDONED): True for the one side that did it first."""
        try:
            os.rename(self.path / SPARE, self.path / mark)
            return True
        except OSError:
            return False

    def pid(self) -> int | None:
        try:
            return int((self.path / "pid").read_text())
        except (OSError, ValueError):
            return None

    def supervised(self) -> bool:
        """Whether its supervisor still runs: whether ALIVE is locked (an ended or killed supervisor's lock is
        released by the system; a folder whose supervisor never started has none)."""
        return locked(self.path / ALIVE)

    def hold_alive(self) -> int:
        """In the supervisor: lock ALIVE for the life of this process (the descriptor stays open until it ends)."""
        fd = os.open(self.path / ALIVE, os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)
        return fd


def locked(path: Path) -> bool:
    """Whether a process holds the lock file `path` (ours, taken to ask, is let go at once by the close)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


def new_folder() -> RunFolder:
    return RunFolder(new_key(runs_root()))


def new_key(root: Path) -> str:
    """A new folder under `root`, named by the time (mode 0700: only this user reads it); its name."""
    root.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for n in range(1, 1000):
        key = stamp if n == 1 else f"{stamp}-{n}"
        try:
            (root / key).mkdir(mode=0o700)
            return key
        except FileExistsError:
            continue
    raise OSError(f"no free folder under {root}")


def supervise_detached(folder: RunFolder) -> subprocess.Popen:
    """The folder's supervisor, in a session of its own: it outlives this one (and the SSH connection). Returns
    once it holds its ALIVE lock (or has ended): from then on `supervised()` is the truth, however loaded the host."""
    process = start_detached(["supervise", folder.key], folder.path / "supervisor.log")
    (folder.path / "pid").write_text(str(process.pid))
    return process


def start_detached(command: list[str], log: Path) -> subprocess.Popen:
    """`remote.host COMMAND… FD` in a session of its own, its output to `log`; returned once it has closed FD (the
    write end of a pipe, passed as its last argument), which it does when it holds its lock (an early death closes
    it too)."""
    ready, announce = os.pipe()
    try:
        with open(log, "ab") as out:
            process = subprocess.Popen([sys.executable, "-m", "workbench.core.run.remote.host", *command,
                                        str(announce)], stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                                       start_new_session=True, pass_fds=(announce,))
        os.close(announce)
        announce = -1
        os.read(ready, 1)  # b"" once the process has closed its end: locked, or gone
    finally:
        os.close(ready)
        if announce >= 0:
            os.close(announce)
    return process
