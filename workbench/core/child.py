"""Training in a child process, driven over a localhost socket: the GUI's default runner and the DDP launcher's.

Why a process: a training step is Python code too, so in the GUI's process it shares one GIL with painting — the
GUI stutters and training slows (measured: 0.4–0.75× of headless). A child has its own interpreter, GIL and
Dynamo state; the parent only reads events.

Protocol (JSON lines over one TCP connection on 127.0.0.1; stdout stays free for whatever the model prints):
    child → parent   {"hello": TOKEN, "pid": …}       proves the connection is ours (the token came in the env)
    child → parent   {"ready": true}                  imports done: a pre-started child waits here
    parent → child   {"run": {config, out_dir, db, record}}
    child → parent   one event per line (events.to_json), ending with RunFinished or RunFailed
    parent → child   {"stop": true}                   stop after the current step (EOF means the same)
If the parent disappears, the child sees EOF, stops after its current step and exits: no orphans.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable, Sequence

from .errors import WorkbenchError
from .events import Event, RunFailed, from_dict, is_terminal

TOKEN_ENV = "WORKBENCH_CHILD_TOKEN"
ADDRESS_ENV = "WORKBENCH_CHILD_ADDRESS"
CONNECT_TIMEOUT_S = 120.0  # a cold start imports torch; a loaded machine can take a while
STOP_GRACE_S = 60.0  # after asking to stop: time to finish the current step (a compile can take this long)
KILL_GRACE_S = 5.0


class ChildError(WorkbenchError):
    kind = "crashed"


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

    def __init__(self, command: Sequence[str] | None = None, env: dict | None = None):
        self.token = secrets.token_hex(16)
        self.listener = socket.create_server(("127.0.0.1", 0))
        host, port = self.listener.getsockname()[:2]
        self.stderr = tempfile.TemporaryFile()
        child_env = {**os.environ, **(env or {}), TOKEN_ENV: self.token, ADDRESS_ENV: f"{host}:{port}",
                     "PYTHONUNBUFFERED": "1"}
        self.process = subprocess.Popen(
            list(command or [sys.executable, "-m", "workbench.core.child"]), env=child_env,
            stdin=subprocess.DEVNULL, stderr=self.stderr, start_new_session=True)  # own group: stop kills all
        self.conn: socket.socket | None = None
        self.lines: _Lines | None = None
        self.ready = False

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
                raise ChildError("stopped while the training process was starting")
            try:
                conn, _ = self.listener.accept()
            except socket.timeout:
                continue
            lines = _Lines(conn)
            hello = lines.read(timeout=10)
            if not hello or hello.get("hello") != self.token:
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
            self.process.wait(timeout=KILL_GRACE_S)
            raise ChildError(self._exit_text(when)) from None

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
    def run(self, request: dict, emit: Callable[[Event], None], stop: threading.Event) -> Event:
        """Send the run request, pass every event to `emit`, return the terminal event.

        A child that dies without a terminal event (crash, kill, out of memory) becomes RunFailed(kind="crashed")
        naming its exit and its last words on stderr. Stop is forwarded; a child that does not stop within
        STOP_GRACE_S is terminated with its whole process group."""
        try:
            self.connect(stop=stop)
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
                emit(event)
                if is_terminal(event):
                    self.process.wait(timeout=30)
                    return event
        except ChildError as exc:
            failed = RunFailed(kind="crashed", message=str(exc), hint=(
                "see the log for details; if it ran out of memory, lower the batch or hidden size"))
            emit(failed)
            return failed
        finally:
            self.close()

    def _try_send(self, message: dict) -> None:
        try:
            _send(self.conn, message)
        except OSError:
            pass  # already gone: the read loop reports how it ended

    def terminate(self) -> None:
        """SIGTERM the child's process group (torchrun and its ranks too), then SIGKILL what is left."""
        if self.process.poll() is not None:
            return
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


def _signal_group(process: subprocess.Popen, name: str) -> None:
    import signal

    try:
        if hasattr(os, "killpg"):
            os.killpg(process.pid, getattr(signal, name))
        else:
            process.kill()
    except ProcessLookupError:
        pass


def run_in_child(config, out_dir: Path, *, emit: Callable[[Event], None], stop: threading.Event,
                 db: str | Path | None = None, record: bool = True, child: ChildProcess | None = None) -> Event:
    """Train `config` in a child process (a pre-started one if given); events arrive through `emit`."""
    request = {"config": config.to_dict(), "out_dir": str(out_dir), "db": str(db) if db else None, "record": record}
    return (child or ChildProcess()).run(request, emit, stop)


# -- the child's side -------------------------------------------------------------------------------------------
def child_main() -> int:
    host, port = os.environ[ADDRESS_ENV].rsplit(":", 1)
    conn = socket.create_connection((host, int(port)))
    _send(conn, {"hello": os.environ[TOKEN_ENV], "pid": os.getpid()})
    from .config import TrainConfig  # the heavy imports happen while the parent may still be choosing a run
    from .events import to_json
    from .runfiles import run_recorded

    _send(conn, {"ready": True})
    lines = _Lines(conn)
    try:
        message = lines.read(timeout=None)
    except EOFError:
        return 0  # the parent never used this pre-started child
    request = message["run"]
    stop = threading.Event()
    send_lock = threading.Lock()

    def listen() -> None:
        try:
            while not stop.is_set():
                control = lines.read(timeout=None)
                if control and control.get("stop"):
                    stop.set()
        except (EOFError, ValueError):
            stop.set()  # the parent has gone: finish this step and exit

    threading.Thread(target=listen, name="workbench-control", daemon=True).start()

    def send(event) -> None:
        try:
            with send_lock:
                conn.sendall((to_json(event) + "\n").encode())
        except OSError:
            stop.set()

    try:
        run_recorded(TrainConfig.from_dict(request["config"]), Path(request["out_dir"]), sinks=(send,), stop=stop,
                     db=request.get("db"), record=request.get("record", True))
    except WorkbenchError as exc:  # e.g. an output folder that cannot be written: nothing was trained
        send(RunFailed(kind=exc.kind, message=str(exc), hint=exc.hint))
    conn.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(child_main())
