"""Training in a child process, driven over a localhost socket: the GUI's default runner and the DDP launcher's.

Why a process: a training step is Python code too, so in the GUI's process it shares one GIL with painting — the
GUI stutters and training slows (measured: 0.4–0.75× of headless). A child has its own interpreter, GIL and
Dynamo state; the parent only reads events.

Protocol (JSON lines over one TCP connection on 127.0.0.1; stdout stays free for whatever the model prints):
    child → parent   {"hello": TOKEN, "pid": …}       proves the connection is ours (the token came in the env)
    child → parent   {"ready": true}                  imports done: a pre-started child waits here
    parent → child   {"run": {config, out_dir, db, record}}   (or, for torchrun, in the env: every rank needs it)
    child → parent   one event per line (events.to_json), ending with RunFinished or RunFailed
    parent → child   {"stop": true}                   stop after the current step (EOF means the same)
If the parent disappears, the child sees EOF, stops after its current step and exits: no orphans.
Under torchrun only rank 0 connects; the ranks agree on stopping through a collective (see the engine).
"""

from __future__ import annotations

import gc
import json
import os
import re
import secrets
import socket
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Callable, Sequence

from .errors import WorkbenchError
from .events import Event, Notice, RunFailed, RunFinished, from_dict, is_terminal

TOKEN_ENV = "WORKBENCH_CHILD_TOKEN"
ADDRESS_ENV = "WORKBENCH_CHILD_ADDRESS"
REQUEST_ENV = "WORKBENCH_CHILD_REQUEST"
CONNECT_TIMEOUT_S = 120.0  # a cold start imports torch; a loaded machine can take a while
STOP_GRACE_S = 60.0  # after asking to stop: time to finish the current step (a compile can take this long)
KILL_GRACE_S = 5.0
SUMMARY_GRACE_S = 30.0  # for torchrun to end its ranks and print its failure summary
# A frozen (PyInstaller) app has no `python -m`: its executable re-runs itself with one of these (see cli.main).
CHILD_FLAG = "--workbench-child"  # be a training child process
TORCHRUN_FLAG = "--workbench-torchrun"  # be torchrun


class ChildError(WorkbenchError):
    kind = "crashed"


class StoppedStarting(ChildError):
    """The user stopped the run before the child was ready to take it."""


def _send(conn: socket.socket, message: dict) -> None:
    conn.sendall((json.dumps(message) + "\n").encode())


class _Lines:
    """Newline-delimited messages from a socket, with a timeout per read."""

    def __init__(self, conn: socket.socket):
        self.conn = conn
        self.buffer = b""

    def read(self, timeout: float | None) -> dict | None:
        """The next message; None on timeout. Raises EOFError when the peer has gone."""
        self.conn.settimeout(timeout)
        while b"\n" not in self.buffer:
            try:
                chunk = self.conn.recv(65536)
            except (socket.timeout, BlockingIOError):
                return None
            except OSError as exc:
                raise EOFError(str(exc)) from None
            if not chunk:
                raise EOFError("connection closed")
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)


class ChildProcess:
    """One started child (possibly still importing torch), ready to take one run."""

    def __init__(self, command: Sequence[str] | None = None, env: dict | None = None, *, ranks: int = 1):
        self.ranks = ranks  # > 1: torchrun and its ranks; a failure is explained from torchrun's summary
        self.token = secrets.token_hex(16)
        with ExitStack() as opened:  # a failure on the way closes what was opened before it
            try:
                self.listener = opened.enter_context(socket.create_server(("127.0.0.1", 0)))
                host, port = self.listener.getsockname()[:2]
                self.stderr = opened.enter_context(tempfile.TemporaryFile())
                child_env = {**os.environ, **child_threads(), **(env or {}), TOKEN_ENV: self.token,
                             ADDRESS_ENV: f"{host}:{port}", "PYTHONUNBUFFERED": "1"}
                self.process = subprocess.Popen(
                    list(command or child_command()), env=child_env, stdin=subprocess.DEVNULL, stderr=self.stderr,
                    start_new_session=True)  # its own process group: stopping it ends torchrun's ranks too
            except OSError as exc:
                raise ChildError(f"cannot start the training process: {exc.strerror or exc}") from None
            opened.pop_all()
        self.conn: socket.socket | None = None
        self.lines: _Lines | None = None
        self.ready = False
        self.terminated = False  # ended by us: torchrun's failure summary (if any) is then not the story

    # -- connection -------------------------------------------------------------------------------------------
    def connect(self, timeout: float = CONNECT_TIMEOUT_S, stop: threading.Event | None = None) -> None:
        """Wait for the child to connect, prove itself, and finish its imports (at once if it already has)."""
        if self.ready:
            return
        deadline = time.monotonic() + timeout
        self.listener.settimeout(0.2)
        while self.conn is None:
            self._check_alive("while starting")
            if time.monotonic() > deadline:
                raise ChildError(f"the training process did not start within {timeout:.0f} s")
            if stop is not None and stop.is_set():
                raise StoppedStarting("stopped while the training process was starting")
            try:
                conn, _ = self.listener.accept()
            except socket.timeout:
                continue
            lines = _Lines(conn)
            try:
                hello = lines.read(timeout=10)
            except (EOFError, ValueError):
                hello = None
            if not isinstance(hello, dict) or hello.get("hello") != self.token:
                conn.close()  # someone else's connection: ignore it
                continue
            self.conn, self.lines = conn, lines
        self.listener.close()
        while not self.ready:
            message = self._read(0.2, "while loading PyTorch")
            if message and message.get("ready"):
                self.ready = True
            if time.monotonic() > deadline:
                raise ChildError(f"the training process was not ready within {timeout:.0f} s")

    def _read(self, timeout: float, when: str) -> dict | None:
        try:
            return self.lines.read(timeout)
        except EOFError:
            # torchrun first ends the other ranks, then prints which one failed: give it time to, on a busy machine
            self._wait_or_terminate(KILL_GRACE_S if self.ranks <= 1 else SUMMARY_GRACE_S)
            raise ChildError(self._exit_text(when)) from None

    def _wait_or_terminate(self, seconds: float) -> None:
        """Let the child exit on its own; end its process group if it lingers (e.g. torchrun tearing down)."""
        try:
            self.process.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            self.terminate()

    def _check_alive(self, when: str) -> None:
        if self.process.poll() is not None:
            raise ChildError(self._exit_text(when))

    def _exit_text(self, when: str) -> str:
        code = self.process.poll()
        how = f"was killed by signal {-code}" if code is not None and code < 0 else f"exited with code {code}"
        last = self.stderr_tail()
        return f"the training process {how} {when}" + (f"; its last message: {last}" if last else "")

    def stderr_tail(self, lines: int = 1) -> str:
        self.stderr.seek(0)
        text = self.stderr.read().decode(errors="replace").strip().splitlines()
        meaningful = [line for line in text if line.strip() and not line.startswith((" ", "\t", "W1", "I1"))]
        return " | ".join(meaningful[-lines:])[-400:]

    # -- the run ----------------------------------------------------------------------------------------------
    def run(self, request: dict | None, emit: Callable[[Event], None], stop: threading.Event) -> Event:
        """Send the run request (None: it went in the environment), pass every event to `emit`, return the
        terminal event.

        A child that dies without a terminal event (crash, kill, out of memory) becomes RunFailed(kind="crashed")
        naming its exit and its last words on stderr. Stop is forwarded; a child that does not stop within
        STOP_GRACE_S is terminated with its whole process group. A stop before the child is ready ends it at once,
        as a stopped run (RunFinished with stopped set) with nothing trained."""
        started = time.monotonic()
        try:
            self.connect(stop=stop)
            if request is not None:
                _send(self.conn, {"run": request})
            stop_sent_at = None
            while True:
                if stop.is_set() and stop_sent_at is None:
                    self._try_send({"stop": True})
                    stop_sent_at = time.monotonic()
                if stop_sent_at is not None and time.monotonic() - stop_sent_at > STOP_GRACE_S:
                    self.terminate()
                    raise ChildError(f"the training process did not stop within {STOP_GRACE_S:.0f} s and was "
                                     f"terminated")
                message = self._read(0.1, "during the run")
                if message is None:
                    continue
                event = from_dict(message)
                if is_terminal(event):
                    self._wait_or_terminate(SUMMARY_GRACE_S)
                    if isinstance(event, RunFailed):
                        event = self._rank_failure() or event  # rank 0 saw a symptom; torchrun knows the cause
                    emit(event)
                    return event
                emit(event)
        except StoppedStarting as exc:  # as a stop during a run ends: RunFinished(stopped), here with nothing trained
            self.terminate()
            emit(Notice("info", f"{exc}; nothing was trained"))
            finished = RunFinished(steps=0, epochs=0, seconds=time.monotonic() - started, stopped=True)
            emit(finished)
            return finished
        except (ChildError, OSError, ValueError) as exc:  # OSError: the socket; ValueError: unreadable JSON
            self.terminate()  # the run is over for us: nothing may keep running (no-op if it has exited)
            failed = self._rank_failure() or RunFailed(kind="crashed", message=str(exc), hint=(
                "see the log for details; if it ran out of memory, lower the batch or hidden size"))
            emit(failed)
            return failed
        finally:
            self.close()

    def _rank_failure(self) -> RunFailed | None:
        """Which rank failed first and how, from the failure summary torchrun prints as it exits on its own (one
        we ended has none worth reading), and the ranks' own last words."""
        if self.ranks <= 1 or self.process.poll() is None or self.terminated:
            return None
        self.stderr.seek(0)
        culprit = torchrun_culprit(self.stderr.read().decode(errors="replace"))
        if culprit is None:
            return None
        rank, how = culprit
        return RunFailed(kind="crashed", message=f"rank {rank} of {self.ranks} failed: {how}; torchrun stopped the "
                                                 f"other ranks", hint="the log has each rank's output")

    def _try_send(self, message: dict) -> None:
        try:
            _send(self.conn, message)
        except OSError:
            pass  # already gone: the read loop reports how it ended

    def terminate(self) -> None:
        """SIGTERM the child's process group (torchrun and its ranks too), then SIGKILL what is left."""
        if self.process.poll() is not None:
            return
        self.terminated = True
        _signal_group(self.process, "SIGTERM")
        try:
            self.process.wait(timeout=KILL_GRACE_S)
        except subprocess.TimeoutExpired:
            _signal_group(self.process, "SIGKILL")
            self.process.wait(timeout=KILL_GRACE_S)

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
        else:
            self.listener.close()
        if self.process.poll() is None:
            self.terminate()
        self.stderr.close()


def child_threads() -> dict[str, str]:
    """The child's intra-op threads: every core but one, which the process driving it (the GUI: painting, reading
    events) needs. OpenMP threads spin-wait on each other, so one preempted by the GUI stalls the rest: on 2 cores
    the app trained at 41k samples/s with 2 threads, 53k with 1 (`workbench bench --gui`). An OMP_NUM_THREADS the
    user set is kept."""
    if "OMP_NUM_THREADS" in os.environ:
        return {}
    return {"OMP_NUM_THREADS": str(max(1, (os.cpu_count() or 1) - 1))}


def frozen() -> bool:
    """True inside a PyInstaller bundle, whose executable is the app itself rather than a Python interpreter."""
    return bool(getattr(sys, "frozen", False))


def child_command() -> list[str]:
    if frozen():
        return [sys.executable, CHILD_FLAG]
    return [sys.executable, "-m", "workbench.core.child"]


def _signal_group(process: subprocess.Popen, name: str) -> None:
    import signal

    try:
        if hasattr(os, "killpg"):
            os.killpg(process.pid, getattr(signal, name))
        else:
            process.kill()
    except ProcessLookupError:
        pass


def _request(config, out_dir: Path, db: str | Path | None, record: bool) -> dict:
    return {"config": config.to_dict(), "out_dir": str(out_dir), "db": str(db) if db else None, "record": record}


def run_in_child(config, out_dir: Path, *, emit: Callable[[Event], None], stop: threading.Event,
                 db: str | Path | None = None, record: bool = True, child: ChildProcess | None = None) -> Event:
    """Train `config` in a child process (a pre-started one if given); events arrive through `emit`."""
    return (child or ChildProcess()).run(_request(config, out_dir, db, record), emit, stop)


_FAILURE_ENTRY = re.compile(  # one entry of torchrun's failure summary: "rank : 1 (local_rank: 1)  exitcode : -9 …"
    r"rank\s*:\s*(\d+)\s*\(local_rank[^)]*\)\s*exitcode\s*:\s*(-?\d+)[^\n]*?(?:\((SIG\w+)\))?\s*$", re.MULTILINE)
_ROOT_CAUSE = "Root Cause (first observed failure)"
_RANK_SAID = re.compile(r"^rank (\d+) failed \((\w+)\): (.*)$", re.MULTILINE)
_SYMPTOMS = ("connection reset", "connection closed", "broken pipe", "timed out", "remote worker")


def torchrun_culprit(stderr: str) -> tuple[int, str] | None:
    """(rank, what happened) of the rank that caused a torchrun failure, or None when it is not clear.

    In order: a rank killed by a signal from outside (SIGTERM is not one: torchrun sends it to every surviving
    rank once one has failed); a rank that reported a failure of its own (not merely that a peer vanished — the
    symptom every other rank then sees); torchrun's own "root cause" entry (its first observed failure)."""
    said = {int(m.group(1)): f"{m.group(2)}: {m.group(3).strip()}" for m in _RANK_SAID.finditer(stderr)}
    entries = sorted(((int(m.group(1)), int(m.group(2)), m.group(3), stderr.rfind(_ROOT_CAUSE, 0, m.start()) >= 0)
                      for m in _FAILURE_ENTRY.finditer(stderr)), key=lambda entry: not entry[3])  # root first

    def killed(rank: int, code: int, signal_name: str | None) -> str:
        return f"killed by {signal_name or f'signal {-code}'}" + (
            f" (its last message: {said[rank]})" if rank in said else "")

    for rank, code, signal_name, _ in entries:
        if code < 0 and signal_name != "SIGTERM" and code != -15:
            return rank, killed(rank, code, signal_name)
    for rank, text in sorted(said.items()):
        if not any(symptom in text.lower() for symptom in _SYMPTOMS):
            return rank, text
    for rank, code, signal_name, root in entries:
        if root:
            return rank, killed(rank, code, signal_name) if code < 0 else (
                said.get(rank) or f"exited with code {code}")
    return None


def start_distributed(config, out_dir: Path, launch, *, db: str | Path | None = None,
                      record: bool = True) -> ChildProcess:
    """torchrun starting `launch.nproc_per_node` ranks here to train `config` data-parallel; `.run(None, …)` streams
    rank 0's events. Returned before the run so that its owner can terminate the whole process group at will."""
    from .distributed import launch_command

    threads = max(1, (os.cpu_count() or 1) // launch.nproc_per_node)  # CPU ranks share the cores, not fight
    env = {REQUEST_ENV: json.dumps(_request(config, out_dir, db, record)), "OMP_NUM_THREADS": str(threads)}
    return ChildProcess(launch_command(launch), env=env, ranks=launch.world_size)


def run_distributed(config, out_dir: Path, launch, *, emit: Callable[[Event], None], stop: threading.Event,
                    db: str | Path | None = None, record: bool = True) -> Event:
    """Train `config` data-parallel (see start_distributed); the terminal event once every process has ended."""
    return start_distributed(config, out_dir, launch, db=db, record=record).run(None, emit, stop)


def supervise_node(config, out_dir: Path, launch, *, stop: threading.Event) -> int:
    """A node other than 0 of a multi-node run: its ranks send nothing here (rank 0 streams the events to node
    0's parent); start them, forward a stop as termination, and return torchrun's exit code."""
    from .distributed import launch_command

    env = {REQUEST_ENV: json.dumps(_request(config, out_dir, None, False))}
    child = ChildProcess(launch_command(launch), env=env)
    try:
        while not stop.is_set():
            try:
                return child.process.wait(timeout=0.2)
            except subprocess.TimeoutExpired:
                continue
        child.terminate()
        return child.process.wait()
    finally:
        child.close()


# -- the child's side -------------------------------------------------------------------------------------------
def child_main() -> int:
    rank = int(os.environ.get("RANK", "0"))
    conn = None
    if rank == 0:  # the parent talks to rank 0 only
        host, port = os.environ[ADDRESS_ENV].rsplit(":", 1)
        conn = socket.create_connection((host, int(port)))
        _send(conn, {"hello": os.environ[TOKEN_ENV], "pid": os.getpid()})
    from . import devices, distributed  # the heavy imports happen while the parent may still be choosing a run
    from .config import TrainConfig
    from .engine import Trainer
    from .events import to_json
    from .runfiles import run_recorded

    stop = threading.Event()
    lines = _Lines(conn) if conn is not None else None
    if conn is not None:
        _send(conn, {"ready": True})
    if os.environ.get(REQUEST_ENV):
        request = json.loads(os.environ[REQUEST_ENV])
    else:
        try:
            request = lines.read(timeout=None)["run"]
        except EOFError:
            return 0  # the parent never used this pre-started child
    if lines is not None:
        threading.Thread(target=_listen, args=(lines, stop), name="workbench-control", daemon=True).start()
    send_lock = threading.Lock()

    def send(line: str) -> None:
        try:
            with send_lock:
                conn.sendall((line + "\n").encode())
        except OSError:
            stop.set()

    config = TrainConfig.from_dict(request["config"])
    out_dir = Path(request["out_dir"]).resolve()  # the checkpoint path this trainer reports is kept in the history
    result = None
    try:
        cuda = devices.uses_cuda(config.device)
        dist = distributed.from_environment(cuda)
        if dist.active and cuda:  # one GPU per rank, whatever single device the config named
            config = config.replace(device=f"cuda:{dist.local_rank}")
        trainer = Trainer(out_dir=out_dir if dist.is_main else None, distributed=dist)
        if dist.is_main:
            result = run_recorded(config, out_dir, line_sinks=(send,), stop=stop, db=request.get("db"),
                                  record=request.get("record", True), trainer=trainer)
        else:
            result = trainer.run(config, lambda event: None, stop)
    except WorkbenchError as exc:  # e.g. an output folder that cannot be written: nothing was trained
        result = RunFailed(kind=exc.kind, message=str(exc), hint=exc.hint)
        if conn is not None:
            send(to_json(result))
    if int(os.environ.get("WORLD_SIZE", "1")) > 1 and isinstance(result, RunFailed):
        # Leave at once with an error: torchrun then ends the other ranks instead of letting them wait forever
        # in a collective, and its summary names this rank.
        print(f"rank {rank} failed ({result.kind}): {result.message}", file=sys.stderr, flush=True)
        os._exit(1)
    distributed.shutdown()
    if conn is not None:
        conn.close()
    # Interpreter teardown garbage-collects every object torch created (measured ~1 s after a run, ~0.2 s frozen);
    # the parent waits for this exit before it reports the run ended (a Stop must take < 2 s). atexit still runs.
    gc.freeze()
    return 0


def _listen(lines: _Lines, stop: threading.Event) -> None:
    """Control messages from the parent; EOF means the parent has gone: finish this step and exit."""
    try:
        while not stop.is_set():
            control = lines.read(timeout=None)
            if control and control.get("stop"):
                stop.set()
    except (EOFError, ValueError):
        stop.set()


if __name__ == "__main__":
    raise SystemExit(child_main())
