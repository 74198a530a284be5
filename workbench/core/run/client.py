"""The parent's handle on the long-lived service kernel. Torch-free: this is how the window reaches PyTorch.

`call(job, **args)` returns a `concurrent.futures.Future` at once; calls made while the kernel is still importing
torch wait in a queue and go out when it is ready (queued, never refused). `cancel(future)` asks a job that can
stop early (the finders) to end after its current step; it still answers, with what it found until then. A kernel
that dies (a segfault in a backend, the OOM killer, kill -9) fails the jobs it was doing with a
`JobError(kind="crashed")` that says how it ended, and is started again; `on_state` hears every change
("starting", "ready", "crashed", "failed", "closed").
"""

from __future__ import annotations

import itertools
import threading
import time
from concurrent.futures import Future
from typing import Any, Callable, NamedTuple, Sequence

from ..ground.errors import WorkbenchError
from .process import ChildError, ChildProcess
from .protocol import JOBS, Cancel, Job, JobError, send

MAX_RESTARTS = 3  # within RESTART_WINDOW_S; beyond that the kernel is left down ("failed") with its last words
RESTART_WINDOW_S = 60.0


class _Pending(NamedTuple):
    """A job sent (or queued) and not yet answered."""

    job: str
    future: Future
    on_progress: Callable[[Any], None] | None


class KernelClient:
    def __init__(self, command: Sequence[str] | None = None, *, on_state: Callable[[str, str], None] | None = None,
                 start: bool = True, spawn: Callable[[], ChildProcess] | None = None):
        """`spawn`: how a kernel is started, when not as a local child (a RemoteKernel on another host)."""
        self.command = command
        self.spawn = spawn or (lambda: ChildProcess(command, name="the PyTorch kernel"))
        self._listeners: list[Callable[[str, str], None]] = [on_state] if on_state else []
        self.state = "idle"
        self.detail = ""
        self.pid: int | None = None
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._queued: list[tuple[int, str, dict]] = []  # jobs waiting for a ready kernel
        self._running: dict[int, _Pending] = {}  # every job not yet answered, queued ones included
        self._process: ChildProcess | None = None
        self._closed = threading.Event()
        self._crashes: list[float] = []
        self._thread: threading.Thread | None = None
        if start:
            self.start()

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._supervise, name="workbench-kernel", daemon=True)
            self._thread.start()

    def listen(self, on_state: Callable[[str, str], None]) -> None:
        """Also tell `on_state` of every change from now on (called on the supervising thread)."""
        self._listeners.append(on_state)

    def unlisten(self, on_state: Callable[[str, str], None]) -> None:
        with self._lock:
            if on_state in self._listeners:
                self._listeners.remove(on_state)

    @property
    def ready(self) -> bool:
        return self.state == "ready"

    # -- calls ------------------------------------------------------------------------------------------------
    def call(self, job: str, on_progress: Callable[[Any], None] | None = None, **args) -> Future:
        """Send `job` (queued until the kernel is ready); its answer arrives in the Future, and its partial results
        (a job that reports as it goes) in `on_progress`, on the client's reader thread."""
        if job not in JOBS or job == "train":
            raise ValueError(f"the service kernel does not serve {job!r}")  # a run gets a kernel of its own
        future: Future = Future()
        with self._lock:
            if self._closed.is_set() or self.state == "failed":
                future.set_exception(JobError("crashed", f"the PyTorch kernel is not running "
                                                         f"({self.detail or 'closed'})", "restart Workbench"))
                return future
            job_id = next(self._ids)
            self._running[job_id] = _Pending(job, future, on_progress)
            if self.state == "ready":
                self._send(job_id, job, args)
            else:
                self._queued.append((job_id, job, args))
        return future

    def cancel(self, future: Future) -> bool:
        """Ask the job behind `future` to stop early: one still queued is dropped (its future is cancelled), one
        running is sent a Cancel and answers with what it has. False when it has already been answered."""
        with self._lock:
            job_id = next((i for i, pending in self._running.items() if pending.future is future), None)
            if job_id is None:
                return False
            queued = next((entry for entry in self._queued if entry[0] == job_id), None)
            if queued is None:
                self._send_message(Cancel(job_id).to_dict())
                return True
            self._queued.remove(queued)
            del self._running[job_id]
        future.cancel()
        return True

    def _send(self, job_id: int, job: str, args: dict) -> None:
        """Under the lock. A send that fails means the kernel is going: the reader fails the job with the rest."""
        self._send_message(Job(job_id, job, args).to_message())

    def _send_message(self, message: dict) -> None:
        try:
            send(self._process.conn, message)
        except OSError:
            pass

    # -- the kernel's life ------------------------------------------------------------------------------------
    def _supervise(self) -> None:
        """Start the kernel, serve its answers, restart it when it dies; until close()."""
        while not self._closed.is_set():
            self._set_state("starting", "")
            try:
                process = self.spawn()
            except WorkbenchError as exc:
                self._down(str(exc), restart=False)
                return
            self._process = process
            try:
                process.connect(stop=self._closed)
                with self._lock:
                    self.pid = process.process.pid
                    self.state = "ready"
                    for job_id, job, args in self._queued:
                        self._send(job_id, job, args)
                    self._queued.clear()
                self._set_state("ready", "")
                self._read(process)
            except ChildError as exc:
                if self._closed.is_set():
                    break
                if not self._down(str(exc), restart=True):
                    return
            finally:
                process.close()
        self._fail_all(JobError("crashed", "Workbench is closing"))
        self._set_state("closed", "")

    def _read(self, process: ChildProcess) -> None:
        while not self._closed.is_set():
            message = process.read_message(0.25, "while serving")  # raises ChildError when the kernel has gone
            if not message or "id" not in message:
                continue
            with self._lock:
                entry = (self._running.get if "progress" in message else self._running.pop)(message["id"], None)
            if entry is None:
                continue
            if "progress" in message:
                if entry.on_progress is not None:
                    entry.on_progress(message["progress"])
            elif "error" in message:
                entry.future.set_exception(JobError.from_dict(message["error"]))
            else:
                entry.future.set_result(message.get("result"))

    def _down(self, how: str, *, restart: bool) -> bool:
        """The kernel ended: fail what it was doing, say so, and say whether it is started again."""
        now = time.monotonic()
        self._crashes = [t for t in self._crashes if now - t < RESTART_WINDOW_S] + [now]
        restart = restart and len(self._crashes) <= MAX_RESTARTS
        state = "crashed" if restart else "failed"
        with self._lock:  # at once no longer "ready": a call from now on waits for the next kernel (or is refused)
            self.state, self.detail = state, how  # instead of going to the dead one's socket, never answered
            running, self._running = self._running, {}
            self._queued.clear()
        busy = sorted({pending.job for pending in running.values()})
        error = JobError("crashed", how + (f" (while doing: {', '.join(busy)})" if busy else ""),
                         "the PyTorch kernel is being restarted; try again when the status bar says it is ready"
                         if restart else "restart Workbench")
        for pending in running.values():
            if not pending.future.done():
                pending.future.set_exception(error)
        self._set_state(state, how)
        return restart

    def _fail_all(self, error: JobError) -> None:
        with self._lock:
            running, self._running = self._running, {}
            self._queued.clear()
        for pending in running.values():
            if not pending.future.done():
                pending.future.set_exception(error)

    def _set_state(self, state: str, detail: str) -> None:
        with self._lock:
            self.state, self.detail = state, detail
            listeners = list(self._listeners)
        for listener in listeners:
            try:
                listener(state, detail)
            except RuntimeError:  # a window that has gone (its Qt object deleted): it no longer listens
                self.unlisten(listener)

    def close(self, timeout: float = 10.0) -> None:
        """End the kernel (EOF: it exits by itself; terminated if it lingers) and the supervising thread.

        The supervising thread ends the kernel itself (it sees `_closed` within a read's timeout): closing the
        process under it from here would have it report a crash on a half-closed process."""
        self._closed.set()
        if self._thread is not None:
            self._thread.join(timeout)
        if self._process is not None and (self._thread is None or self._thread.is_alive()):
            self._process.close()  # the thread is stuck (or never ran): end the kernel regardless
