"""The kernel: the process that holds PyTorch. Started by a parent (the window, the CLI, torchrun) and driven over
the protocol in protocol.py.

One program, two uses:
- a **run kernel** serves one `train` job and exits: every run starts with fresh Dynamo state (honest compile times,
  nothing leaks between runs). The window starts one ahead of time, so Train does not wait for torch to import.
  torchrun starts one per rank with the request in the environment; rank 0 streams the events.
- the **service kernel** is long-lived and serves the short jobs (capabilities, explain, predict, evaluate,
  load/export a checkpoint, report) one at a time, on its main thread — which therefore owns every compile
  (explain resets Dynamo: it never shares a process with a run).
"""

from __future__ import annotations

import gc
import inspect
import os
import socket
import sys
import threading
from typing import Callable

from ..ground.errors import WorkbenchError, first_line
from ..ground.signals import RunSignals
from .process import ADDRESS_ENV, REQUEST_ENV, RUN_JOB_ID, TOKEN_ENV
from .protocol import PROTOCOL_VERSION, Job, JobError, Lines, event_line, send, send_line
from .request import RunRequest


def kernel_main() -> int:
    rank = int(os.environ.get("RANK", "0"))
    conn = None
    if rank == 0:  # the parent talks to rank 0 only
        host, port = os.environ[ADDRESS_ENV].rsplit(":", 1)
        conn = socket.create_connection((host, int(port)))
        send(conn, {"hello": os.environ[TOKEN_ENV], "pid": os.getpid(), "protocol": PROTOCOL_VERSION})
    from . import jobs  # the heavy imports (torch) happen while the parent may still be choosing what to do

    jobs.quiet_torch_logs()
    lines = Lines(conn) if conn is not None else None
    if conn is not None:
        send(conn, {"ready": True})
    if os.environ.get(REQUEST_ENV):  # a torchrun rank: the run came in the environment
        return _serve_run(RunRequest.from_json(os.environ[REQUEST_ENV]), conn, lines, job_id=RUN_JOB_ID)
    while True:
        try:
            message = lines.read(timeout=None)
        except EOFError:
            return _exit(conn)  # the parent has gone (or never used this pre-started kernel)
        if not message or "job" not in message:
            continue  # a cancel for a job that already ended
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
            return _serve_run(request, conn, lines, job_id=job.id)
        send(conn, _answer(job, jobs.HANDLERS[job.name], lambda partial: send(conn, {"id": job.id,
                                                                                       "progress": partial})))


def _answer(job: Job, handler: Callable[..., object], progress: Callable[[object], None]) -> dict:
    """Run one short job; whatever goes wrong is an error message, never a dead kernel. A job that reports as it
    goes (a `progress` parameter) sends its partial results first."""
    args = dict(job.args, progress=progress) if "progress" in inspect.signature(handler).parameters else job.args
    try:
        return {"id": job.id, "result": handler(**args)}
    except Exception as exc:  # noqa: BLE001 - every failure is the job's answer
        return {"id": job.id, "error": _error(exc).to_dict()}


def _error(exc: BaseException) -> JobError:
    if isinstance(exc, JobError):
        return exc
    if isinstance(exc, WorkbenchError):
        detail = {"model_spec": exc.model_spec} if hasattr(exc, "model_spec") else {}
        return JobError(exc.kind, str(exc), exc.hint, detail)
    if isinstance(exc, TypeError):  # arguments that do not fit the job: the parent's bug, said plainly
        return JobError("protocol", f"bad arguments: {first_line(exc)}")
    return JobError("internal", f"{type(exc).__name__}: {first_line(exc)}",
                    "this looks like a bug in Workbench or PyTorch; the log has details")


def _serve_run(request: RunRequest, conn: socket.socket | None, lines: Lines | None, job_id: int) -> int:
    """Train one request here, streaming its events to the parent; then exit (a run kernel is used once)."""
    from . import jobs

    stop = RunSignals()
    if lines is not None:
        threading.Thread(target=_listen, args=(lines, stop), name="workbench-control", daemon=True).start()
    send_lock = threading.Lock()

    def send_event(line: str) -> None:
        try:
            with send_lock:
                send_line(conn, event_line(job_id, line))
        except OSError:
            stop.set()  # the parent has gone: finish this step and end

    result = jobs.train(request, send_event if conn is not None else None, stop)
    if int(os.environ.get("WORLD_SIZE", "1")) > 1 and result.__class__.__name__ == "RunFailed":
        # Leave at once with an error: torchrun then ends the other ranks instead of letting them wait forever
        # in a collective, and its summary names this rank.
        print(f"rank {os.environ.get('RANK', '0')} failed ({result.kind}): {result.message}", file=sys.stderr,
              flush=True)
        os._exit(1)
    jobs.shutdown_distributed()
    return _exit(conn)


def _exit(conn: socket.socket | None) -> int:
    if conn is not None:
        conn.close()
    # Interpreter teardown garbage-collects every object torch created (measured ~1 s after a run, ~0.2 s frozen);
    # the parent waits for this exit before it reports the run ended (a Stop must take < 2 s). atexit still runs.
    gc.freeze()
    return 0


def _listen(lines: Lines, stop: RunSignals) -> None:
    """Control messages during a run; EOF means the parent has gone: finish this step and exit."""
    try:
        while not stop.is_set():
            control = lines.read(timeout=None)
            if control and "cancel" in control:
                stop.set()
            elif control and isinstance(control.get("profile"), int) and control["profile"] > 0:
                stop.request_profile(control["profile"])
    except (EOFError, ValueError):
        stop.set()


if __name__ == "__main__":
    raise SystemExit(kernel_main())
