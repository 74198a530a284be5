"""The kernel: the process that holds PyTorch. Started by a parent (the window, the CLI, torchrun) and driven over
the protocol in protocol.py.

One program, two uses:
- a **run kernel** serves one `train` job and exits: every run starts with fresh Dynamo state (honest compile times,
  nothing leaks between runs). The window starts one ahead of time, so Train does not wait for torch to import.
  torchrun starts one per rank with the request in the environment; rank 0 streams the events.
- the **service kernel** is long-lived and serves the short jobs (capabilities, explain, predict, evaluate,
  load/export a checkpoint, report) one at a time, on its main thread — which therefore owns every compile
  (explain resets Dynamo: it never shares a process with a run). A job that takes a `stop` flag (the finders) can
  be cancelled while it runs.

One reader thread (`_Inbox`) takes every message from the parent: jobs queue for the main thread, control messages
(cancel, profile) act at once on the job in progress.
"""

from __future__ import annotations

import gc
import inspect
import os
import queue
import socket
import sys
import threading
from typing import Callable

from ..ground.errors import WorkbenchError, first_line
from ..ground.signals import RunSignals
from . import stacks_answer
from ..run.protocol import (ADDRESS_ENV, PROTOCOL_VERSION, REQUEST_ENV, RUN_JOB_ID, SERVICE_OF_JOB, TOKEN_ENV, Cancel,
                            Job, JobError, Lines, NeedsConsent, Profile, event_line, read_control, send, send_line)
from ..run.run_request import RunRequest

# The parent gone, a run stops after its step and writes its files; a kernel still here this long after is stuck
# (a rank blocked before a collective, the others waiting in it: no step ends) and exits, so that nothing of a run
# outlives everyone (torchrun then ends the other ranks). Longer than any step, evaluation or checkpoint here.
ORPHAN_EXIT_S = 300.0
EXIT_ORPHANED = 3


def kernel_main() -> int:
    rank = int(os.environ.get("RANK", "0"))
    stacks_answer.arm()  # a rank of several: it answers for its stack from now on, however stuck it gets
    conn = None
    if rank == 0:  # the parent talks to rank 0 only
        host, port = os.environ[ADDRESS_ENV].rsplit(":", 1)
        conn = socket.create_connection((host, int(port)))
        send(conn, {"hello": os.environ[TOKEN_ENV], "pid": os.getpid(), "protocol": PROTOCOL_VERSION})
    from . import job_handlers  # the heavy imports (torch) happen while the parent may still be choosing what to do

    job_handlers.quiet_torch_logs()
    inbox = _Inbox(Lines(conn)) if conn is not None else None
    if conn is not None:
        send(conn, {"ready": True})
    if os.environ.get(REQUEST_ENV):  # a torchrun rank: the run came in the environment
        return _serve_run(RunRequest.from_json(os.environ[REQUEST_ENV]), conn, inbox, job_id=RUN_JOB_ID)
    while True:
        message = inbox.next_job()
        if message is None:
            return _exit(conn)  # the parent has gone (or never used this pre-started kernel)
        try:
            job = Job.from_message(message)
        except (JobError, KeyError, ValueError, TypeError) as exc:
            error = exc if isinstance(exc, JobError) else JobError("protocol", f"unreadable job: {exc}")
            send(conn, {"id": message.get("id"), "error": error.to_dict()})
            continue
        if job.name == "train":
            try:
                request = RunRequest.from_dict(job.args["request"])
            except (WorkbenchError, KeyError, TypeError) as exc:
                send(conn, {"id": job.id, "error": _error(exc).to_dict()})
                return _exit(conn)
            return _serve_run(request, conn, inbox, job_id=job.id)
        stop = inbox.begin(job.id)
        try:
            send(conn, _answer(job, job_handlers.HANDLERS, lambda partial: send(conn, {"id": job.id,
                                                                               "progress": partial.to_dict()}),
                               stop))
        finally:
            inbox.end()


def _answer(job: Job, handlers: dict[type, Callable[..., object]], progress: Callable[[object], None],
            stop: threading.Event) -> dict:
    """Run one service job: its typed request to its handler, the typed answer back as the table encodes it;
    whatever goes wrong is an error message, never a dead kernel. A job that reports as it goes (a `progress`
    parameter) sends its partial results first; one that can be cancelled (a `stop` parameter) gets the flag a
    cancel sets."""
    try:
        request = job.request()
        handler = handlers[type(request)]
        parameters = inspect.signature(handler).parameters
        given = {name: value for name, value in (("progress", progress), ("stop", stop)) if name in parameters}
        return {"id": job.id, "result": SERVICE_OF_JOB[job.name].encode(handler(request, **given))}
    except Exception as exc:  # noqa: BLE001 - every failure is the job's answer
        return {"id": job.id, "error": _error(exc).to_dict()}


def _error(exc: BaseException) -> JobError:
    if isinstance(exc, JobError):
        return exc
    if isinstance(exc, WorkbenchError):
        if isinstance(getattr(exc, "model_spec", None), str):  # a user's model file, imported only with consent
            return NeedsConsent(exc.model_spec, str(exc), exc.hint)
        return JobError(exc.kind, str(exc), exc.hint)
    return JobError("internal", f"{type(exc).__name__}: {first_line(exc)}",
                    "this looks like a bug in Workbench or PyTorch; the log has details")


def _serve_run(request: RunRequest, conn: socket.socket | None, inbox: "_Inbox | None", job_id: int) -> int:
    """Train one request here, streaming its events to the parent; then exit (a run kernel is used once)."""
    from . import job_handlers

    stop = inbox.begin(job_id) if inbox is not None else RunSignals()
    send_lock = threading.Lock()

    def send_event(line: str) -> None:
        try:
            with send_lock:
                send_line(conn, event_line(job_id, line))
        except OSError:
            stop.set()  # the parent has gone: finish this step and end

    result = job_handlers.train(request, send_event if conn is not None else None, stop)
    if int(os.environ.get("WORLD_SIZE", "1")) > 1 and result.__class__.__name__ == "RunFailed":
        # Leave at once with an error: torchrun then ends the other ranks instead of letting them wait forever
        # in a collective, and its summary names this rank.
        print(f"rank {os.environ.get('RANK', '0')} failed ({result.kind}): {result.message}", file=sys.stderr,
              flush=True)
        os._exit(1)
    job_handlers.shutdown_distributed()
    return _exit(conn)


def _exit(conn: socket.socket | None) -> int:
    if conn is not None:
        conn.close()
    # Interpreter teardown garbage-collects every object torch created (measured ~1 s after a run, ~0.2 s frozen);
    # the parent waits for this exit before it reports the run ended (a Stop must take < 2 s). atexit still runs.
    gc.freeze()
    return 0


def _abandon() -> None:
    """No parent, and stuck: end without waiting for the stuck thread (no exit handler could run past it)."""
    print(f"workbench: the parent went away {ORPHAN_EXIT_S:.0f} s ago and this kernel did not stop: exiting",
          file=sys.stderr, flush=True)
    os._exit(EXIT_ORPHANED)


class _Inbox:
    """The one reader of the parent's messages. Jobs queue for the main thread, which does one at a time; a control
    message acts at once on the job in progress: a Cancel of job N sets its stop flag (a cancel for a job that has
    ended is dropped), a Profile asks the run to profile. EOF from the parent stops the job in progress
    and ends the queue: finish this step and exit."""

    def __init__(self, lines: Lines):
        self._jobs: queue.Queue[dict | None] = queue.Queue()
        self._lock = threading.Lock()
        self._current: tuple[int, RunSignals] | None = None
        self._gone = False
        threading.Thread(target=self._read, args=(lines,), name="workbench-control", daemon=True).start()

    def next_job(self) -> dict | None:
        """The next job's message, waiting for it; None once the parent has gone."""
        return self._jobs.get()

    def begin(self, job_id: int) -> RunSignals:
        """Job `job_id` starts: its stop flag (already set if the parent has gone)."""
        stop = RunSignals()
        with self._lock:
            self._current = (job_id, stop)
            if self._gone:
                stop.set()
        return stop

    def end(self) -> None:
        with self._lock:
            self._current = None

    def _read(self, lines: Lines) -> None:
        while True:
            try:
                message = lines.read(timeout=None)
            except (EOFError, ValueError):  # gone, or not speaking the protocol: either way, no parent to serve
                with self._lock:
                    self._gone = True
                    if self._current is not None:
                        self._current[1].set()
                self._jobs.put(None)
                orphaned = threading.Timer(ORPHAN_EXIT_S, _abandon)
                orphaned.daemon = True
                orphaned.start()
                return
            if not isinstance(message, dict):
                continue
            if "job" in message:
                self._jobs.put(message)
                continue
            with self._lock:
                current = self._current
            if current is None:
                continue
            job_id, stop = current
            control = read_control(message)
            if isinstance(control, Cancel) and control.cancel == job_id:
                stop.set()
            elif isinstance(control, Profile):
                stop.request_profile(control.profile)


if __name__ == "__main__":
    raise SystemExit(kernel_main())
