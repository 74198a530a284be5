"""The fork server: PyTorch imported once, a fresh kernel forked from it in milliseconds.

Why: a kernel that starts as a new interpreter spends seconds importing torch, Dynamo and torchvision before it
can take a job (measured on 2 cores: ~3–5 s, more when two start at once), and the window starts one for every
run and for the service kernel; a sweep starts one per trial. The fork server is one process per parent that
has imported all of that and nothing else: no job has run in it, no tensor op (so no OpenMP pool), no CUDA call
(a CUDA context does not survive a fork), no compile (so every kernel forked from it starts with fresh Dynamo
state and pays its own compile: compile times stay honest), and it is single-threaded when it forks. It forks,
the child becomes an ordinary kernel (its own session, its own connection to the parent, its own environment,
working folder and stdio), and the server goes back to waiting. A kernel that crashes takes nothing else down;
a server that dies is started again at the next spawn.

The parent talks to its server over a private AF_UNIX SOCK_SEQPACKET socketpair (nothing listens anywhere): one
datagram per message, JSON, with the child's stdout and stderr passed as file descriptors (SCM_RIGHTS):

    parent → server   {"spawn": ID, "env": {…}, "cwd": DIR}  + [stdout fd, stderr fd]
    server → parent   {"ready": true, "pid": …}                    imports done (sent once)
    parent → server   {"caught_up": true}                          after the spawns that waited for "ready": the
                                                                   server imports what only later kernels need
    server → parent   {"forked": ID, "pid": PID}
    server → parent   {"exited": PID, "code": C}                   C as Popen's returncode (-N: killed by signal N)

A server is started with the parent's environment and forks only children whose environment matches it except
for the variables read at run time (WORKBENCH_*, the thread count, …): PyTorch reads many variables once, at
import (TORCH_LOGS, CXX, TORCHINDUCTOR_*), so a changed one gets a new server instead of being silently ignored.

Linux only (a fork after importing torch is not safe on macOS, and Windows has no fork); WORKBENCH_FORKSERVER=0
turns it off, and every kernel is then a new interpreter as before.
"""

from __future__ import annotations

import atexit
import itertools
import json
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from typing import Mapping

SERVER_FLAG = "--workbench-forkserver"  # a frozen app runs itself as the server with this flag (see cli.main)
DISABLE_ENV = "WORKBENCH_FORKSERVER"  # "0": no fork server, every kernel a fresh interpreter
MAX_MESSAGE = 1 << 20  # one datagram: a spawn request carries the child's whole environment
# Variables a kernel reads at run time, never at import: a spawn may set them to anything. OMP_NUM_THREADS is
# read at import by OpenMP, so a forked child applies it itself (torch.set_num_threads).
RUN_TIME_ONLY = ("WORKBENCH_", "PYTEST_", "OMP_NUM_THREADS", "PYTHONUNBUFFERED")
UNKNOWN_EXIT = 255  # a child whose server died before it (or stopped answering): its exit code was never seen
EXIT_REPORT_S = 2.0  # a child seen to have ended whose server has not said so by then: the server is not answering
WAIT_POLL_S = 0.1  # how often a wait looks at the child itself, besides the server's word
KEPT_SERVERS = 2  # servers for different import environments kept at once (tests change CXX, TORCH_LOGS, …)


def enabled() -> bool:
    return sys.platform.startswith("linux") and os.environ.get(DISABLE_ENV, "1") != "0"


def import_environment(env: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """The part of an environment that a server's imports may have read: what must match for a fork."""
    return tuple(sorted((k, v) for k, v in env.items() if not k.startswith(RUN_TIME_ONLY)))


# -- the parent's side ------------------------------------------------------------------------------------------
class ForkedProcess:
    """A kernel forked by a fork server, seen as a `subprocess.Popen` is: `pid`, `poll()`, `wait()`, signals.

    It exists from the moment the spawn is sent, before the server (perhaps still importing torch) has forked it:
    `poll()` is None meanwhile, and a signal sent then is delivered as soon as the child exists."""

    def __init__(self, server: "ForkServer", env: Mapping[str, str]):
        self._server = server
        self.env = dict(env)  # what it runs with (its /proc/PID/environ shows the server's, from before the fork)
        self._changed = threading.Condition()
        self._pid: int | None = None
        self.returncode: int | None = None
        self._pending_signal: int | None = None
        self._pidfd: int | None = None  # the child itself, watched: readable once it has ended, reaped or not
        self._ended_seen: float | None = None  # when it was first seen ended without the server's word
        self.failure = ""  # why it never started, when it did not

    @property
    def pid(self) -> int | None:
        """The child's pid; waits for the server's reply when the child already runs (a kernel can connect to its
        parent a moment before that reply is read). None if it never started."""
        with self._changed:
            self._changed.wait_for(lambda: self._pid is not None or self.returncode is not None, timeout=5.0)
            return self._pid

    def poll(self) -> int | None:
        """Its exit code once ended: as the server reports it; UNKNOWN_EXIT when the server cannot (it died first,
        or is frozen — SIGSTOP, a debugger — and a child it forked has ended without a word from it)."""
        with self._changed:
            if self.returncode is None and self._pid is not None:
                if not self._server.alive:
                    self._orphaned()
                elif self._seen_ended():
                    now = time.monotonic()
                    self._ended_seen = self._ended_seen or now
                    if now - self._ended_seen > EXIT_REPORT_S:
                        self._ended(UNKNOWN_EXIT, "its fork server did not report its exit")
            return self.returncode

    def _seen_ended(self) -> bool:
        """Whether the child has ended, seen by this process itself (its pidfd is readable once it exits, before
        anyone reaps it): the server's word is not needed to know it, only to know its exit code."""
        if self._pidfd is None:
            return False
        return bool(select.select([self._pidfd], [], [], 0)[0])

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._changed:
            while self.poll() is None:  # woken by the server's report, else looking at the child every WAIT_POLL_S
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise subprocess.TimeoutExpired(f"forked kernel {self._pid}", timeout)
                self._changed.wait(WAIT_POLL_S if left is None else min(WAIT_POLL_S, left))
            return self.returncode

    def send_signal(self, signum: int) -> None:
        """To the child's whole process group (it leads one, as a Popen(start_new_session=True) child does)."""
        with self._changed:
            if self.returncode is not None:
                return
            if self._pid is None:
                if self._server.cancel(self):  # never sent to the server: it will never exist
                    self.returncode = -signum
                    self._changed.notify_all()
                else:
                    self._pending_signal = signum  # sent the moment it has been forked (milliseconds)
                return
            pid = self._pid
        try:
            os.killpg(pid, signum)
        except ProcessLookupError:
            pass

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    # called by the server's reader thread
    def _forked(self, pid: int) -> None:
        with self._changed:
            self._pid = pid
            try:
                self._pidfd = os.pidfd_open(pid)
            except OSError:  # ended and reaped already (the report follows), or no pidfd here (Linux < 5.3)
                self._pidfd = None
            pending, self._pending_signal = self._pending_signal, None
            self._changed.notify_all()
        if pending is not None:
            self.send_signal(pending)

    def _ended(self, code: int, failure: str = "") -> None:
        with self._changed:
            if self.returncode is None:
                self.returncode, self.failure = code, failure
            if self._pidfd is not None:
                os.close(self._pidfd)
                self._pidfd = None
            self._changed.notify_all()

    def _orphaned(self) -> None:
        """Under the lock: the server died first, so nobody reaps this child for us; alive or gone is all we
        can still tell."""
        try:
            os.kill(self._pid, 0)
        except ProcessLookupError:
            self._ended(UNKNOWN_EXIT)


class ForkServer:
    """One fork server process, started with `env`; `spawn()` asks it for a child."""

    def __init__(self, env: Mapping[str, str]):
        self.key = import_environment(env)
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.stderr = tempfile.TemporaryFile()
        try:
            self.process = subprocess.Popen(
                server_command(theirs.fileno()), env={**dict(self.key), "PYTHONUNBUFFERED": "1"},
                pass_fds=[theirs.fileno()],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self.stderr,
                start_new_session=True)  # a Ctrl+C in the terminal is for the parent, not for the server
        except OSError:
            ours.close()
            self.stderr.close()
            raise
        finally:
            theirs.close()
        self.sock = ours
        self.ready = threading.Event()
        self.alive = True
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._spawning: dict[int, ForkedProcess] = {}  # sent or queued, not yet forked
        self._queued: dict[int, tuple[bytes, list[int]]] = {}  # not yet sent: the server is importing
        self._children: dict[int, ForkedProcess] = {}
        threading.Thread(target=self._read, name="workbench-forkserver", daemon=True).start()

    def spawn(self, env: Mapping[str, str], stdout: int, stderr: int) -> ForkedProcess:
        """A child with this environment, working folder and stdio; returns at once. While the server is still
        importing torch the request waits here (its descriptors duplicated), so that a child stopped before then
        is simply never forked. Raises OSError when the server is gone."""
        child = ForkedProcess(self, env)
        with self._lock:
            if not self.alive:
                raise ConnectionError("the fork server has ended")
            spawn_id = next(self._ids)
            message = json.dumps({"spawn": spawn_id, "env": dict(env), "cwd": os.getcwd()}).encode()
            self._spawning[spawn_id] = child
            if self.ready.is_set():
                try:
                    socket.send_fds(self.sock, [message], [stdout, stderr])
                except OSError:
                    del self._spawning[spawn_id]
                    raise
            else:
                self._queued[spawn_id] = (message, [os.dup(stdout), os.dup(stderr)])
        return child

    def cancel(self, child: ForkedProcess) -> bool:
        """Drop a child whose request has not gone to the server yet; False when it has (it will be forked)."""
        with self._lock:
            spawn_id = next((i for i in self._queued if self._spawning.get(i) is child), None)
            if spawn_id is None:
                return False
            _, fds = self._queued.pop(spawn_id)
            del self._spawning[spawn_id]
        for fd in fds:
            os.close(fd)
        return True

    def _send_queued(self) -> None:
        """The server is ready: the requests that waited go now, in order."""
        with self._lock:
            self.ready.set()
            queued, self._queued = self._queued, {}
            try:
                for message, fds in queued.values():
                    socket.send_fds(self.sock, [message], fds)
                self.sock.send(json.dumps({"caught_up": True}).encode())  # the server may do its idle work now
            except OSError:
                pass  # the server is going: the reader fails what it had not forked
            finally:
                for _, fds in queued.values():
                    for fd in fds:
                        os.close(fd)

    def children(self) -> list[ForkedProcess]:
        """Every child spawned and not yet seen to end (forked or still to be)."""
        with self._lock:
            return [*self._spawning.values(), *self._children.values()]

    def _read(self) -> None:
        while True:
            try:
                data = self.sock.recv(MAX_MESSAGE)
                message = json.loads(data) if data else None
            except (OSError, ValueError):
                message = None
            if not isinstance(message, dict):
                return self._gone()
            if message.get("ready"):
                self._send_queued()
            elif "forked" in message:
                with self._lock:
                    child = self._spawning.pop(message["forked"], None)
                    if child is not None:
                        self._children[message["pid"]] = child
                if child is not None:
                    child._forked(message["pid"])
            elif "exited" in message:
                with self._lock:
                    child = self._children.pop(message["exited"], None)
                if child is not None:
                    child._ended(int(message["code"]))

    def _gone(self) -> None:
        """The server has ended (killed, or closed by us): what it had not forked never will be."""
        with self._lock:
            self.alive = False
            never, self._spawning = list(self._spawning.values()), {}
            children = list(self._children.values())
            queued, self._queued = self._queued, {}
        for _, fds in queued.values():
            for fd in fds:
                os.close(fd)
        why = f"the fork server ended before it could start this kernel{self._last_words()}"
        for child in never:
            child._ended(1, why)
        for child in children:
            child.poll()  # wakes anyone waiting: gone or still running is read from the system from now on
            with child._changed:
                child._changed.notify_all()

    def _last_words(self) -> str:
        try:
            self.stderr.seek(0)
            lines = [line for line in self.stderr.read().decode(errors="replace").splitlines() if line.strip()]
        except (OSError, ValueError):
            return ""
        return f" (its last message: {lines[-1][-300:]})" if lines else ""

    def close(self) -> None:
        """EOF to the server: it exits (the children it forked live on, each with its own parent connection). A
        server still importing PyTorch reads no EOF until its imports are done (half a minute on a loaded machine):
        it has forked nothing, so it is ended at once."""
        with self._lock:
            self.alive = False
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()
        if not self.ready.is_set():
            self.process.kill()
        try:
            self.process.wait(timeout=5.0)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.stderr.close()


def server_command(fd: int) -> list[str]:
    if getattr(sys, "frozen", False):  # a PyInstaller app is its own interpreter
        return [sys.executable, SERVER_FLAG, str(fd)]
    return [sys.executable, "-m", "workbench.core.kernel.forkserver_main", str(fd)]


_servers: list[ForkServer] = []  # most recently used last
_servers_lock = threading.Lock()


def spawn(env: Mapping[str, str], stdout: int, stderr: int) -> ForkedProcess:
    """A kernel forked from this process's fork server for `env` (started on first use, and again after it
    died). Raises OSError when no server can be started."""
    key = import_environment(env)
    with _servers_lock:
        for attempt in range(2):  # a server found dead at the send is replaced once
            server = next((s for s in _servers if s.key == key and s.alive), None)
            if server is None:
                server = ForkServer(env)
                _servers.append(server)
                _retire_extra_servers()
            else:
                _servers.remove(server)
                _servers.append(server)
            try:
                return server.spawn(env, stdout, stderr)
            except OSError:
                if attempt:
                    raise
                server.alive = False
        raise AssertionError("unreachable")


def _retire_extra_servers() -> None:
    """Under the lock: close the least recently used servers beyond KEPT_SERVERS that have no child left (one
    that still has children keeps reporting their exits until the next retirement)."""
    dead = [s for s in _servers if not s.alive]
    for server in dead:
        _servers.remove(server)
        server.close()
    extra = len(_servers) - KEPT_SERVERS
    for server in [s for s in _servers[:-1] if not s.children()][:max(0, extra)]:
        _servers.remove(server)
        server.close()


def live_children() -> list[ForkedProcess]:
    """The kernels this process had forked that have not ended: what a check for leftovers looks at (a forked
    kernel's /proc/PID/environ shows its server's environment, not its own)."""
    with _servers_lock:
        servers = list(_servers)
    return [child for server in servers for child in server.children() if child.poll() is None]


@atexit.register
def close_all() -> None:
    """Every server this process started: the window calls it as it closes, before the interpreter's exit waits
    on threads that wait on a server (and at exit, for the CLI)."""
    with _servers_lock:
        for server in _servers:
            server.close()
        _servers.clear()
