"""The far end of a remote kernel: what `ssh HOST python3 -m workbench.core.run.remote.host …` runs. Torch-free.

The window (or the CLI) on another machine reaches this host only through the SSH session's stdin and stdout, so
nothing here listens on any network interface and no secret travels on a command line (SSH has authenticated the
session; the kernels behind it are reached as they are locally, on a token-checked loopback socket):

    hello                  one JSON line: this host's Workbench version, protocol, Python — the first contact
    kernel                 a service kernel, its protocol bridged to stdin/stdout (ends with the session)
    spare                  a run kernel started ahead (PyTorch imported while the user sets up the next run), held
                           as long as the session: its key answered; ended, and its folder removed, unless claimed
    start [SPARE]          a run (its RunRequest as the first stdin line), detached from the session: it trains on
                           when the connection drops; then streams it as `attach` does. SPARE: in that spare's
                           kernel (a fresh one if it is gone)
    attach KEY [FROM]      a run's events from the FROM-th on (those the caller has not seen), then live until its
                           terminal event; stdin's control lines (cancel, profile) go to the run
    runs                   the runs this host has trained for remote callers, running and finished (JSON)
    fetch                  a file or folder (its path as the first stdin line) as a size line and its bytes
    receive                a file from the caller (a line {"name", "size"}, then its bytes) into a transfer folder
                           of its own; answers the path it was written to
    staging                a new empty folder for a job's output (answers its path)
    stacks KEY             every rank of run KEY on this host: its stack and last collectives (run/stacks.py)
    queue, queued KEY, queue-cancel KEY I…
                           runs handed over to this host's own queue, started one after another (host_queue.py)

A detached run is a supervisor process (`supervise KEY`, its own session) driving a run kernel as the CLI does, in
a folder of its own (remote/run_folders.py: the request, the event log an attach replays, the control file).

Whether a supervisor still runs is a lock, not a guess: it holds an exclusive lock on the folder's ALIVE file for as
long as it lives (the system releases it when the process ends, however it ends), and the session that starts it
returns only once it holds it. A pid and its /proc/PID/cmdline would not do: the command line is still empty for a
moment after a process starts (seen in 27 and 51 of 300 reads), and a pid can be reused by another program.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import socket
import sys
import tarfile
import tempfile
import threading
import time
from pathlib import Path
from typing import BinaryIO

from ...ground import paths
from ...ground.processes import process_alive
from ...ground.atomic import write_text_atomic
from ...ground.events import RunFailed, from_dict, is_terminal, to_json
from ..protocol import PROTOCOL_VERSION, RUN_JOB_ID, Cancel, Profile, event_line, read_control
from .run_folders import (ABANDONED, CLAIMED, CONTROL, REQUEST, SPARE, STACKS, RunFolder,
                          new_folder, runs_root, supervise_detached)
from .wire import Hello, HostPath, RunInfo, RunStart, SpareRun
from ..run_request import RunRequest, new_run_dir
from ..stacks import STACKS_DIR_ENV, RankStacks, collect

LOST_GRACE_S = 2.0  # a supervisor that looks gone: how long its log may still grow before the run is called lost
POLL_S = 0.05  # how often an attach looks for new events, and a supervisor for control lines
CLAIM_WAIT_S = 60.0  # a claimed spare whose request has not come by then was claimed by a `start` that died


def hello() -> Hello:
    from ...ground.appinfo import version

    return Hello(version(), PROTOCOL_VERSION, sys.executable, sys.version.split()[0], socket.gethostname(),
                 str(paths.data_dir()))


# -- the service kernel, bridged ---------------------------------------------------------------------------------
def serve_kernel(out: BinaryIO) -> int:
    """A service kernel started here as the window starts one locally; its messages copied both ways between it
    and this session (the kernel's own stdout goes to stderr: a stray print never corrupts the protocol)."""
    from ..process import ChildError, ChildProcess

    write_line(out, {"hello": "ssh", "pid": os.getpid(), "protocol": PROTOCOL_VERSION})
    child = ChildProcess(name="the PyTorch kernel")
    try:
        child.connect()
    except ChildError as exc:
        write_line(out, {"error": {"kind": "crashed", "message": str(exc), "hint": ""}})
        child.close()
        return 1
    write_line(out, {"ready": True})
    conn = child.conn

    def inbound() -> None:  # the caller's messages to the kernel; its EOF is the kernel's (it then exits)
        with open(0, "rb", buffering=0, closefd=False) as stdin:
            for chunk in iter(lambda: stdin.read(65536), b""):
                try:
                    conn.sendall(chunk)
                except OSError:
                    return
        try:
            conn.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    threading.Thread(target=inbound, name="workbench-bridge-in", daemon=True).start()
    try:
        if child.lines.buffer:  # what the kernel sent after "ready", read by the handshake
            out.write(bytes(child.lines.buffer))
        conn.settimeout(None)
        for chunk in iter(lambda: conn.recv(65536), b""):
            out.write(chunk)
    except OSError:
        pass
    finally:
        child.close()
    return 0


# -- detached runs -----------------------------------------------------------------------------------------------
def start_run(stdin: BinaryIO, out: BinaryIO, spare: str | None = None) -> int:
    """The run whose request is stdin's first line, under a supervisor that outlives this session: the spare's
    (`spare`, claimed: its kernel has imported PyTorch already), else a fresh one in a new folder; then its events,
    as `attach`."""
    request = RunRequest.from_json(stdin.readline().decode())
    folder = _claimed(spare) if spare else None
    out_dir = new_run_dir()  # this host's runs folder: the caller's paths mean nothing here
    request = request.replace(out_dir=str(out_dir), db=None, record=True)
    if folder is not None:
        write_text_atomic(folder.path / REQUEST, request.to_json())  # its supervisor polls for it: whole or absent
    else:
        folder = new_folder()
        (folder.path / REQUEST).write_text(request.to_json())
        supervise_detached(folder)
    write_line(out, RunStart(folder.key, str(out_dir), socket.gethostname()).to_dict())
    return attach(folder, 0, stdin, out)


def _claimed(key: str) -> RunFolder | None:
    """The spare `key`, claimed for a run; None when it cannot be (ended meanwhile, or its supervisor is gone)."""
    folder = RunFolder(Path(key).name)
    if not folder.claim(CLAIMED):
        return None
    if not folder.supervised():
        shutil.rmtree(folder.path, ignore_errors=True)
        return None
    return folder


def hold_spare(stdin: BinaryIO, out: BinaryIO) -> int:
    """A supervisor started ahead with its run kernel (the window's next run on this host starts warm, as a run
    on the window's own computer does), held while this session lasts: at its end, a spare not claimed by a
    `start` is abandoned (its supervisor then ends, and removes its folder)."""
    folder = new_folder()
    (folder.path / SPARE).write_text(str(os.getpid()))
    supervise_detached(folder)
    write_line(out, SpareRun(folder.key).to_dict())
    for _ in iter(lambda: stdin.read(65536), b""):  # until the caller closes the session (or it drops)
        pass
    folder.claim(ABANDONED)
    return 0


def supervise(key: str, announce: int | None = None) -> int:
    """Train the folder's request as the CLI does, every event appended to the folder's log (flushed: an attach
    reads it as it grows); cancel and profile lines appended to its control file act on the run. First of all, the
    folder's ALIVE lock is taken and the starting session told so (by closing `announce`)."""
    folder = RunFolder(key)
    folder.hold_alive()
    if announce is not None:
        os.close(announce)

    from ..process import ChildProcess, other_node, start_distributed

    spare = None
    if not (folder.path / REQUEST).exists():  # a spare: its kernel imports PyTorch while it waits for a request
        spare = ChildProcess()
        if not _requested(folder):
            spare.close()
            shutil.rmtree(folder.path, ignore_errors=True)
            return 0
    request = folder.request()
    os.environ[STACKS_DIR_ENV] = str(folder.path / STACKS)  # where this host's ranks answer `stacks`
    stop = threading.Event()
    with open(folder.log, "a", encoding="utf-8") as log:
        def emit(event) -> None:
            log.write(to_json(event) + "\n")
            log.flush()

        launch = request.launch
        if launch.distributed and spare is not None:
            spare.close()
        if launch.distributed and launch.node_rank != 0:  # this host's ranks report to node 0: only how they ended
            emit(other_node(request, stop))
            return 0
        process = start_distributed(request) if launch.distributed else spare or ChildProcess()
        threading.Thread(target=_follow_control, args=(folder, process, stop), daemon=True,
                         name="workbench-control").start()
        process.run(None if launch.distributed else request, emit, stop)  # as run.launch.start_run drives it
    return 0


def _requested(folder: RunFolder) -> bool:
    """Wait for a spare's request: True once claimed and written; False when abandoned (its holder said so, or
    ended without saying: killed), or claimed by a `start` that never wrote its request."""
    claimed_at = None
    while True:
        if (folder.path / REQUEST).exists():
            return True
        if (folder.path / ABANDONED).exists():
            return False
        if (folder.path / CLAIMED).exists():
            claimed_at = claimed_at or time.monotonic()
            if time.monotonic() - claimed_at > CLAIM_WAIT_S:
                return False
        try:
            holder = int((folder.path / SPARE).read_text())
        except (OSError, ValueError):
            holder = None  # claimed (the request follows) or being written
        if holder is not None and not process_alive(holder) and folder.claim(ABANDONED):
            return False
        time.sleep(POLL_S)


def _follow_control(folder: RunFolder, process, stop: threading.Event) -> None:
    """Act on the control lines attaches append to the folder's control file: a cancel sets `stop` (and ends this),
    a profile of N ≥ 1 steps goes to the run's process."""
    path, seen = folder.path / CONTROL, 0
    while True:
        try:
            with open(path, "rb") as control:
                control.seek(seen)
                data = control.read()
        except FileNotFoundError:
            data = b""
        whole = data[:data.rfind(b"\n") + 1]
        seen += len(whole)
        for line in whole.splitlines():
            control = _control(line)
            if isinstance(control, Cancel) and control.cancel == RUN_JOB_ID:
                stop.set()
                return  # the run is stopping: nothing more to control
            if isinstance(control, Profile):
                process.profile(control.profile)
        time.sleep(POLL_S)


def _control(line: bytes) -> Cancel | Profile | None:
    try:
        return read_control(json.loads(line))
    except ValueError:
        return None


def attach(folder: RunFolder, start: int, stdin: BinaryIO, out: BinaryIO) -> int:
    """The run's events from the `start`-th on, then live, each as the kernel protocol's event message; ends after
    the terminal event (or when the caller goes). A supervisor that died without one (killed, the host rebooted)
    ends the stream with a RunFailed that says so."""
    gone = threading.Event()
    threading.Thread(target=_forward_control, args=(folder, stdin, gone), daemon=True,
                     name="workbench-control").start()
    index = 0
    with open(folder.log, "a+b") as log:  # created if the supervisor has not written yet
        log.seek(0)
        partial = b""
        while not gone.is_set():
            chunk = log.read()
            if not chunk and not folder.supervised():
                chunk = _last_words(log)
                if not chunk:
                    _lost_supervisor(folder, out)
                    return 1
            if not chunk:
                time.sleep(POLL_S)
                continue
            lines = (partial + chunk).split(b"\n")
            partial = lines.pop()
            batch, ended = [], False
            for line in lines:
                if index >= start:
                    batch.append((event_line(RUN_JOB_ID, line.decode()) + "\n").encode())
                index += 1
                if _terminal(line):
                    ended = True
                    break
            out.write(b"".join(batch))  # one write per poll, not per event: SSH sends (and encrypts) a packet each
            if ended:
                return 0
    return 0


def _terminal(line: bytes) -> bool:
    """Whether an event line is a run's last (a cheap look first: every line of the log passes here)."""
    if not line.startswith((b'{"type":"RunFinished"', b'{"type":"RunFailed"')):
        return False
    try:
        return is_terminal(from_dict(json.loads(line)))
    except ValueError:
        return False


def _last_words(log: BinaryIO) -> bytes:
    """What the log gains within LOST_GRACE_S of its supervisor looking gone: under load, the supervisor's last
    lines were seen to land after it already looked gone (a full-suite run lost a finished run's RunFinished)."""
    deadline = time.monotonic() + LOST_GRACE_S
    while True:
        chunk = log.read()
        if chunk or time.monotonic() > deadline:
            return chunk
        time.sleep(POLL_S)


def _lost_supervisor(folder: RunFolder, out: BinaryIO) -> None:
    failed = RunFailed(kind="crashed", message=f"the run on {socket.gethostname()} ended without finishing: its "
                                               f"supervisor (pid {folder.pid()}) is gone",
                       hint=f"its log is {folder.path / 'supervisor.log'}")
    write_line(out, json.loads(event_line(RUN_JOB_ID, to_json(failed))))


def _forward_control(folder: RunFolder, stdin: BinaryIO, gone: threading.Event) -> None:
    """The caller's control lines (cancel, profile) appended to the run's control file; its EOF ends the attach."""
    for line in iter(stdin.readline, b""):
        control = _control(line)
        if control is not None:
            with open(folder.path / CONTROL, "ab") as out:
                out.write(json.dumps(control.to_dict()).encode() + b"\n")
    gone.set()


def list_runs() -> list[RunInfo]:
    root = runs_root()
    found = []
    for path in sorted(root.iterdir()) if root.is_dir() else ():
        folder = RunFolder(path.name)
        try:
            request = folder.request()
        except (OSError, ValueError, KeyError):
            continue
        events, last = _count(folder.log)
        status = last if last else ("running" if folder.supervised() else "lost")
        found.append(RunInfo(folder.key, status, events, request.out_dir, request.config.dataset,
                             request.config.epochs))
    return found


def _count(log: Path) -> tuple[int, str]:
    """How many events the log holds, and how the run ended ("" while it runs)."""
    try:
        data = log.read_bytes()
    except OSError:
        return 0, ""
    lines = data.split(b"\n")[:-1]
    end = ""
    if lines and _terminal(lines[-1]):
        last = json.loads(lines[-1])
        end = "failed" if last.get("type") == "RunFailed" else ("stopped" if last.get("stopped") else "finished")
    return len(lines), end


# -- files back --------------------------------------------------------------------------------------------------
def send_file(stdin: BinaryIO, out: BinaryIO) -> int:
    """The file or folder named by stdin's first line: a header line (its size, and "tar" for a folder), then its
    bytes (a folder as an uncompressed tar stream)."""
    path = Path(stdin.readline().decode().strip()).expanduser()
    if path.is_file():
        write_line(out, {"size": path.stat().st_size, "kind": "file"})
        with open(path, "rb") as source:
            for chunk in iter(lambda: source.read(1 << 20), b""):
                out.write(chunk)
        return 0
    if path.is_dir():
        size = sum(item.stat().st_size for item in path.rglob("*") if item.is_file())
        write_line(out, {"size": size, "kind": "tar"})
        with tarfile.open(fileobj=out, mode="w|") as tar:
            tar.add(path, arcname=".")
        return 0
    write_line(out, {"error": f"{path} does not exist on {socket.gethostname()}"})
    return 1


def receive_file(stdin: BinaryIO, out: BinaryIO) -> int:
    """A file sent by the caller (a checkpoint a local job needs here, a copy of its run history), written into a
    new folder of its own under the data folder's `transfers/`; answers {"path": …} once it is whole."""
    header = json.loads(stdin.readline())
    name, size = Path(str(header["name"])).name or "file", int(header["size"])
    target = Path(staging_folder()) / name
    with open(target, "wb") as sink:
        left = size
        while left:
            chunk = stdin.read(min(left, 1 << 20))
            if not chunk:
                write_line(out, {"error": f"the copy ended after {size - left} of {size} bytes"})
                return 1
            sink.write(chunk)
            left -= len(chunk)
    write_line(out, HostPath(str(target)).to_dict())
    return 0


def staging_folder() -> str:
    """A new empty folder under the data folder's `transfers/`, where a job writes what is then copied back."""
    root = paths.data_dir() / "transfers"
    root.mkdir(parents=True, exist_ok=True)
    return tempfile.mkdtemp(dir=root)


def write_line(out: BinaryIO, message: dict) -> None:
    out.write((json.dumps(message) + "\n").encode())


class WholeWrites:
    """The session's stdout, unbuffered, each write whole (a pipe takes part of a large write when a signal comes
    in the middle: the rest is written, not dropped)."""

    def __init__(self, fd: int):
        self.file = io.FileIO(fd, "wb")

    def write(self, data: bytes) -> int:
        view = memoryview(data)
        while view:
            view = view[self.file.write(view) or 0:]
        return len(data)

    def flush(self) -> None:
        pass


def main(argv: list[str]) -> int:
    """Stdout is kept for the protocol alone: whatever else prints goes to stderr."""
    out = WholeWrites(os.dup(1))
    os.dup2(2, 1)
    stdin = io.FileIO(0, "rb", closefd=False)
    command, args = (argv[0] if argv else ""), argv[1:]
    try:
        if command == "hello":
            write_line(out, hello().to_dict())
            return 0
        if command == "kernel":
            return serve_kernel(out)
        if command == "start":
            return start_run(io.BufferedReader(stdin), out, args[0] if args else None)
        if command == "spare":
            return hold_spare(stdin, out)
        if command == "attach":
            folder = RunFolder(Path(args[0]).name)
            if not (folder.path / REQUEST).is_file():
                write_line(out, {"error": f"no run {args[0]!r} on {socket.gethostname()}"})
                return 1
            write_line(out, RunStart(folder.key, folder.request().out_dir, socket.gethostname()).to_dict())
            return attach(folder, int(args[1]) if len(args) > 1 else 0, io.BufferedReader(stdin), out)
        if command == "runs":
            write_line(out, {"runs": [run.to_dict() for run in list_runs()]})
            return 0
        if command == "fetch":
            return send_file(io.BufferedReader(stdin), out)
        if command == "receive":
            return receive_file(io.BufferedReader(stdin), out)
        if command == "staging":
            write_line(out, HostPath(staging_folder()).to_dict())
            return 0
        if command == "stacks":  # every rank of the run on this host: its stack and last collectives
            folder = RunFolder(Path(args[0]).name)
            write_line(out, RankStacks(tuple(collect(folder.path / STACKS))).to_dict())
            return 0
        if command == "supervise":
            return supervise(args[0], int(args[1]) if len(args) > 1 else None)
        if command in ("queue", "queued", "queue-cancel", "supervise-queue"):  # a queue the host works itself
            from . import host_queue

            return host_queue.main(command, args, io.BufferedReader(stdin), lambda m: write_line(out, m))
        if command in ("facts", "listen", "reach"):  # the preflight of a run across hosts (probe.py)
            from . import probe

            if command == "facts":
                write_line(out, probe.facts(args[0] if args else None).to_dict())
                return 0
            if command == "listen":
                return probe.listen(args[0], int(args[1]), float(args[2]), stdin, lambda m: write_line(out, m))
            write_line(out, probe.reach(args[0], int(args[1])).to_dict())
            return 0
    except BrokenPipeError:  # the caller went away: the run (if any) goes on under its supervisor
        return 0
    print(f"unknown command {command!r}: one of hello, kernel, spare, start, attach, runs, fetch, receive, "
          "staging, supervise, stacks, queue, queued, queue-cancel, facts, listen, reach", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
