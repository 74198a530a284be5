"""Kernel processes seen from the parent: start one, prove it is ours, drive a run in it, end it for sure.

Why a process: a training step is Python code too, so in the window's process it would share one GIL with painting
(measured: 0.4–0.75× of headless) — and the window does not import torch at all. A kernel has its own interpreter,
GIL and Dynamo state; the parent only reads messages (see protocol.py). A run gets a fresh kernel (started ahead of
time as a spare); torchrun starts one per rank, and rank 0 streams the events. If the parent disappears, the
kernel sees EOF, stops after its current step and exits: no orphans."""

from __future__ import annotations

import ipaddress
import json
import os
import queue
import re
import secrets
import selectors
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import ExitStack
from typing import Callable, Sequence

from ..ground.errors import WorkbenchError
from ..ground.events import Event, Notice, RunFailed, RunFinished, Step, from_dict, is_terminal
from ..ground.results import RunResults
from ..ground.stacks import RankStack
from . import forkserver, stacks
from .protocol import ADDRESS_ENV, REQUEST_ENV, RUN_JOB_ID, TOKEN_ENV, Cancel, Job, Lines, Profile, send
from .run_request import Launch, RunRequest
from .stacks import STACKS_DIR_ENV

CONNECT_TIMEOUT_S = 120.0  # a cold start imports torch; a loaded machine can take a while
STOP_GRACE_S = 60.0  # after asking to stop: time to finish the current step (a compile can take this long)
KILL_GRACE_S = 5.0
# The handshake: any local process can connect to the listener before the kernel does; none may hold up the start
# or a stop. Each peer has this long from its accept, and this many bytes, to send its hello line.
HELLO_DEADLINE_S = 2.0
HELLO_MAX_BYTES = 4096
MAX_PENDING_PEERS = 64
POLL_S = 0.2  # how often the start deadline, the child's exit and a stop are checked while waiting
SUMMARY_GRACE_S = 30.0  # for torchrun to end its ranks and print its failure summary
# A frozen (PyInstaller) app has no `python -m`: its executable re-runs itself with one of these (see cli.main).
CHILD_FLAG = "--workbench-child"  # be a training child process
TORCHRUN_FLAG = "--workbench-torchrun"  # be torchrun


class ChildError(WorkbenchError):
    kind = "crashed"


class StoppedStarting(ChildError):
    """The user stopped the run before the child was ready to take it."""


class ChildProcess:
    """One started child (possibly still importing torch), ready to take one run."""

    def __init__(self, command: Sequence[str] | None = None, env: dict | None = None, *, ranks: int = 1,
                 name: str = "the training process", own_temp_dir: bool = False):
        """`own_temp_dir`: a temp folder for torchrun (see torchrun.py), removed by close()."""
        self.name = name  # how messages call it: "the training process", "the PyTorch kernel"
        self.ranks = ranks  # > 1: torchrun and its ranks; a failure is explained from torchrun's summary
        self.token = self.new_token()
        self.temp_dir: str | None = None
        self.stacks_dir: str | None = None  # torchrun's ranks answer for their stacks there (run/stacks.py)
        self.requests: queue.SimpleQueue[Profile] = queue.SimpleQueue()  # control messages for `run` to send
        with ExitStack() as opened:  # a failure on the way closes what was opened before it
            try:
                if own_temp_dir:
                    self.temp_dir = tempfile.mkdtemp(prefix="workbench-torchrun-")
                    opened.callback(shutil.rmtree, self.temp_dir, ignore_errors=True)
                    # the ranks' stacks are asked for there, unless the run has a folder for them (on a host)
                    self.stacks_dir = os.environ.get(STACKS_DIR_ENV) or os.path.join(self.temp_dir, "stacks")
                    env = {**(env or {}), TORCHRUN_TEMP_ENV: self.temp_dir, STACKS_DIR_ENV: self.stacks_dir}
                self.listener = opened.enter_context(socket.create_server(("127.0.0.1", 0)))
                host, port = self.listener.getsockname()[:2]
                self.stderr = opened.enter_context(tempfile.TemporaryFile())
                child_env = {**os.environ, **child_threads(), **(env or {}), TOKEN_ENV: self.token,
                             ADDRESS_ENV: f"{host}:{port}", "PYTHONUNBUFFERED": "1"}
                if command is None and forkserver.enabled():  # a kernel: forked, PyTorch already imported
                    self.process = forkserver.spawn(child_env, 1, self.stderr.fileno())  # stdout: as Popen's
                else:
                    self.process = subprocess.Popen(
                        list(command or child_command()), env=child_env, stdin=subprocess.DEVNULL,
                        stderr=self.stderr, start_new_session=True)  # its own process group: stopping it ends
                    # torchrun's ranks too
            except OSError as exc:
                raise ChildError(f"cannot start {self.name}: {exc.strerror or exc}") from None
            opened.pop_all()
        self.conn: socket.socket | None = None
        self.lines: Lines | None = None
        self.ready = False
        self.terminated = False  # ended by us: torchrun's failure summary (if any) is then not the story

    @staticmethod
    def new_token() -> str:
        """The secret a child proves itself with; it travels in the child's environment, never on a command line."""
        return secrets.token_hex(16)

    # -- connection -------------------------------------------------------------------------------------------
    def connect(self, timeout: float = CONNECT_TIMEOUT_S, stop: threading.Event | None = None) -> None:
        """Wait for the child to connect, prove itself, and finish its imports (at once if it already has)."""
        if self.ready:
            return
        deadline = time.monotonic() + timeout
        if self.conn is None:
            self.conn, self.lines = self._accept_ours(deadline, timeout, stop)
        while not self.ready:
            if stop is not None and stop.is_set():
                raise StoppedStarting(f"stopped while {self.name} was starting")
            message = self.read_message(POLL_S, "while loading PyTorch")
            if message and message.get("ready"):
                self.ready = True
            if time.monotonic() > deadline:
                raise ChildError(f"{self.name} was not ready within {timeout:.0f} s")

    def _accept_ours(self, deadline: float, timeout: float, stop: threading.Event | None
                     ) -> tuple[socket.socket, Lines]:
        """The first connection that says hello with our token. Any local process can connect to the listener, so
        no peer may hold this up: each gets HELLO_MAX_BYTES and HELLO_DEADLINE_S from its accept (not per byte),
        all are served together (a silent or trickling one never delays the kernel's), and the child's exit, the
        start deadline and `stop` are checked every POLL_S whatever the peers do."""
        pending: dict[socket.socket, tuple[float, bytearray]] = {}  # peer → (its deadline, what it sent)
        self.listener.setblocking(False)
        with selectors.DefaultSelector() as selector:
            selector.register(self.listener, selectors.EVENT_READ)
            try:
                while True:
                    self._check_alive("while starting")
                    now = time.monotonic()
                    if now > deadline:
                        raise ChildError(f"{self.name} did not start within {timeout:.0f} s")
                    if stop is not None and stop.is_set():
                        raise StoppedStarting(f"stopped while {self.name} was starting")
                    for peer, (peer_deadline, _) in list(pending.items()):
                        if now > peer_deadline:
                            self._drop(selector, pending, peer)
                    wait = min([POLL_S] + [max(0.0, d - now) for d, _ in pending.values()])
                    for key, _ in selector.select(wait):
                        if key.fileobj is self.listener:
                            self._accept_peer(selector, pending)
                            continue
                        ours = self._hello(selector, pending, key.fileobj)
                        if ours is not None:
                            return ours
            finally:
                for peer in list(pending):
                    self._drop(selector, pending, peer)
                self.listener.close()

    def _accept_peer(self, selector: selectors.BaseSelector, pending: dict) -> None:
        try:
            peer, _ = self.listener.accept()
        except (BlockingIOError, InterruptedError, ConnectionAbortedError):
            return
        if len(pending) >= MAX_PENDING_PEERS:  # a flood of connections: the oldest (its hello overdue) goes
            self._drop(selector, pending, next(iter(pending)))
        peer.setblocking(False)
        pending[peer] = (time.monotonic() + HELLO_DEADLINE_S, bytearray())
        selector.register(peer, selectors.EVENT_READ)

    def _hello(self, selector: selectors.BaseSelector, pending: dict, peer: socket.socket
               ) -> tuple[socket.socket, Lines] | None:
        """Read what `peer` sent; once it has sent a whole line: the connection if that is our hello (with whatever
        followed it kept for the reader), else it is dropped. Also dropped: a peer that closed, or that sent
        HELLO_MAX_BYTES without a newline."""
        _, received = pending[peer]
        try:
            chunk = peer.recv(HELLO_MAX_BYTES + 1 - len(received))
        except (BlockingIOError, InterruptedError):
            return None
        except OSError:
            chunk = b""
        received += chunk
        end = received.find(b"\n")
        if not chunk or (end < 0 and len(received) > HELLO_MAX_BYTES):
            self._drop(selector, pending, peer)
            return None
        if end < 0:
            return None
        try:
            hello = json.loads(bytes(received[:end]))
        except ValueError:
            hello = None
        token = hello.get("hello") if isinstance(hello, dict) else None
        if not isinstance(token, str) or not secrets.compare_digest(token, self.token):
            self._drop(selector, pending, peer)  # someone else's connection: ignore it
            return None
        selector.unregister(peer)
        del pending[peer]
        peer.setblocking(True)
        return peer, Lines(peer, buffer=bytes(received[end + 1:]))

    @staticmethod
    def _drop(selector: selectors.BaseSelector, pending: dict, peer: socket.socket) -> None:
        selector.unregister(peer)
        del pending[peer]
        peer.close()

    def read_message(self, timeout: float, when: str) -> dict | None:
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
        last = getattr(self.process, "failure", "") or self.stderr_tail()  # a fork that never happened says why
        return f"{self.name} {how} {when}" + (f"; its last message: {last}" if last else "")

    def stderr_tail(self, lines: int = 1) -> str:
        if self.stderr.closed:  # closed by another thread as the process ended: nothing more to tell
            return ""
        self.stderr.seek(0)
        text = self.stderr.read().decode(errors="replace").strip().splitlines()
        meaningful = [line for line in text if line.strip() and not line.startswith((" ", "\t", "W1", "I1"))]
        return " | ".join(meaningful[-lines:])[-400:]

    # -- the run ----------------------------------------------------------------------------------------------
    def run(self, request: RunRequest | None, emit: Callable[[Event], None], stop: threading.Event) -> Event:
        """Send the run (None: it went in the environment, as for torchrun's ranks), pass every event to `emit`,
        return the terminal event.

        A kernel that dies without a terminal event (crash, kill, out of memory) becomes RunFailed(kind="crashed")
        naming its exit and its last words on stderr. Stop is forwarded; a kernel that does not stop within
        STOP_GRACE_S is terminated with its whole process group. A stop before the kernel is ready ends it at once,
        as a stopped run (RunFinished with stopped set) with nothing trained — and so does a stop before the first
        Step event: nothing has been trained yet, and the kernel may be stuck where no cancel is read (a user
        model's constructor that never returns), so its process group is terminated without the grace."""
        started = time.monotonic()
        try:
            self.connect(stop=stop)
            if request is not None:
                send(self.conn, Job(RUN_JOB_ID, "train", {"request": request.to_dict()}).to_message())
            stop_sent_at = None
            stepped = False  # a Step event has arrived: something is being trained, so a stop gets its grace
            while True:
                if stop.is_set() and not stepped:
                    raise StoppedStarting("stopped before the first step")
                if stop.is_set() and stop_sent_at is None:
                    self._try_send(Cancel(RUN_JOB_ID).to_dict())
                    stop_sent_at = time.monotonic()
                while not self.requests.empty():  # sent from this thread only: messages never interleave
                    self._try_send(self.requests.get().to_dict())
                if stop_sent_at is not None and time.monotonic() - stop_sent_at > STOP_GRACE_S:
                    self.terminate()
                    raise ChildError(f"{self.name} did not stop within {STOP_GRACE_S:.0f} s and was "
                                     f"terminated")
                message = self.read_message(0.1, "during the run")
                if message is None:
                    continue
                if "error" in message:  # refused before training (e.g. an unreadable request)
                    error = message["error"]
                    message = {"event": {"type": "RunFailed", "kind": error.get("kind", "internal"),
                                         "message": error.get("message", ""), "hint": error.get("hint", "")}}
                if "event" not in message:
                    continue
                event = from_dict(message["event"])
                stepped = stepped or isinstance(event, Step)
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

    def profile(self, steps: int) -> None:
        """Ask the run to profile its next `steps` steps; sent by `run`'s thread at its next poll: one thread
        writes to the connection."""
        self.requests.put(Profile(steps))

    def _try_send(self, message: dict) -> None:
        try:
            send(self.conn, message)
        except OSError:
            pass  # already gone: the read loop reports how it ended

    def collect_stacks(self) -> list[RankStack]:
        """Every rank's stack and last collectives (run/stacks.py); none for a single kernel."""
        return stacks.collect(self.stacks_dir) if self.stacks_dir else []

    def terminate(self) -> None:
        """SIGTERM the child's process group (torchrun and its ranks too), then SIGKILL what is left. Never raises:
        a child that outlives even SIGKILL (stuck in the kernel, on a dead file system) is left to the system, and
        whatever the run had already reported stands."""
        if self.process.poll() is not None:
            return
        self.terminated = True
        _signal_group(self.process, "SIGTERM")
        try:
            self.process.wait(timeout=KILL_GRACE_S)
        except subprocess.TimeoutExpired:
            _signal_group(self.process, "SIGKILL")
            try:
                self.process.wait(timeout=KILL_GRACE_S)
            except subprocess.TimeoutExpired:
                pass

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
        else:
            self.listener.close()
        if self.process.poll() is None:
            self.terminate()
        self.stderr.close()
        if self.temp_dir is not None:
            shutil.rmtree(self.temp_dir, ignore_errors=True)


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
    return [sys.executable, "-m", "workbench.core.kernel.main"]


def _signal_group(process: subprocess.Popen | forkserver.ForkedProcess, name: str) -> None:
    import signal

    if isinstance(process, forkserver.ForkedProcess):
        process.send_signal(getattr(signal, name))  # to its group, or once it is forked
        return
    try:
        if hasattr(os, "killpg"):
            os.killpg(process.pid, getattr(signal, name))
        else:
            process.kill()
    except ProcessLookupError:
        pass


_FAILURE_ENTRY = re.compile(  # one entry of torchrun's failure summary: "rank : 1 (local_rank: 1)  exitcode : -9 …"
    r"rank\s*:\s*(\d+)\s*\(local_rank[^)]*\)\s*exitcode\s*:\s*(-?\d+)[^\n]*?(?:\((SIG\w+)\))?\s*$", re.MULTILINE)
_ROOT_CAUSE = "Root Cause (first observed failure)"
_RANK_SAID = re.compile(r"^rank (\d+) failed \((\w+)\): (.*)$", re.MULTILINE)
PEER_GONE = ("connection reset", "connection closed", "broken pipe", "timed out", "remote worker")  # what a rank
# says when a peer vanished: a symptom of another rank's failure, not a failure of its own


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
        if not any(symptom in text.lower() for symptom in PEER_GONE):
            return rank, text
    for rank, code, signal_name, root in entries:
        if root:
            return rank, killed(rank, code, signal_name) if code < 0 else (
                said.get(rank) or f"exited with code {code}")
    return None


def launch_command(launch: Launch) -> list[str]:
    """torchrun (python -m torch.distributed.run) starting a kernel on every local rank. A frozen app runs itself as
    torchrun, and torchrun runs it again (without Python) as each rank.

    torchrun's c10d stores (the rendezvous's and the agent's, which the ranks use) are unauthenticated and listen on
    every interface whatever address they are given; run through `kernel/torchrun.py`, they listen on the one address
    in STORE_ADDRESS_ENV instead (see `launch_env`): 127.0.0.1 on one machine, the --master-addr given on several."""
    if frozen():
        command = [sys.executable, TORCHRUN_FLAG, f"--nproc-per-node={launch.nproc_per_node}"]
    else:
        command = [sys.executable, "-m", "workbench.core.kernel.torchrun", f"--nproc-per-node={launch.nproc_per_node}"]
    if launch.nnodes == 1 and launch.master_port is None:
        # What --standalone does (a c10d rendezvous on a free port), on 127.0.0.1 rather than "localhost" (which may
        # be ::1) and with the agent's store there too (--local-addr).
        command += ["--nnodes=1", "--rdzv-backend=c10d", "--rdzv-endpoint=127.0.0.1:0",
                    f"--rdzv-id={secrets.token_hex(8)}", "--local-addr=127.0.0.1"]
    else:
        command += [f"--nnodes={launch.nnodes}", f"--node-rank={launch.node_rank}",
                    f"--master-addr={launch.master_addr}", f"--master-port={launch.master_port}"]
    if frozen():
        return command + ["--no-python", *child_command()]
    return command + ["-m", "workbench.core.kernel.main"]


STORE_ADDRESS_ENV = "WORKBENCH_STORE_ADDRESS"  # torchrun.py: the one address torchrun's stores listen on
TORCHRUN_TEMP_ENV = "WORKBENCH_TORCHRUN_TEMP"  # torchrun.py: its temp folder (it leaves a torchelastic_* there)


def launch_env(launch: Launch) -> dict[str, str]:
    """The environment of a torchrun: the one address its stores listen on (none for a host name: which of its
    addresses the other nodes reach is theirs to know, so torch's default stands), and the interface its process
    group's sockets use when one was chosen (a run across hosts: the preflight's)."""
    if launch.nnodes == 1 and launch.master_port is None:
        return {STORE_ADDRESS_ENV: "127.0.0.1"}
    interface = {"GLOO_SOCKET_IFNAME": launch.interface, "NCCL_SOCKET_IFNAME": launch.interface} if (
        launch.interface) else {}
    try:
        ipaddress.ip_address(launch.master_addr)
    except ValueError:
        return interface
    return {STORE_ADDRESS_ENV: launch.master_addr, **interface}


def start_distributed(request: RunRequest) -> ChildProcess:
    """torchrun starting `nproc_per_node` ranks here to train the request data-parallel; `.run(None, …)` streams
    rank 0's events. Returned before the run so that its owner can terminate the whole process group at will."""
    launch = request.launch
    threads = max(1, (os.cpu_count() or 1) // launch.nproc_per_node)  # CPU ranks share the cores, not fight
    env = {REQUEST_ENV: request.to_json(), "OMP_NUM_THREADS": str(threads), **launch_env(launch)}
    return ChildProcess(launch_command(launch), env=env, ranks=launch.world_size, own_temp_dir=True)


def supervise_node(request: RunRequest, stop: threading.Event) -> int:
    """A node other than 0 of a multi-node run: its ranks send nothing here (rank 0 streams the events to node
    0's parent); start them, forward a stop as termination, and return torchrun's exit code."""
    env = {REQUEST_ENV: request.replace(db=None, record=False).to_json(), **launch_env(request.launch)}
    child = ChildProcess(launch_command(request.launch), env=env, own_temp_dir=True)
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


def other_node(request: RunRequest, stop: threading.Event) -> RunFinished | RunFailed:
    """A node other than 0 of a multi-node run: its ranks report to node 0, so the outcome here is only how they
    exited (node 0 writes the checkpoint and the record)."""
    started = time.monotonic()
    code = supervise_node(request, stop)
    if code == 0 or stop.is_set():
        return RunFinished(steps=0, epochs=0, seconds=time.monotonic() - started, stopped=stop.is_set(),
                           results=RunResults(node_exit_code=code))
    return RunFailed(kind="crashed", message=f"this node's {request.launch.nproc_per_node} process(es) exited "
                                             f"with code {code}", hint="node 0 has the run's events and record")
