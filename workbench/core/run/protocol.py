"""The kernel protocol: JSON lines over one token-checked TCP connection on 127.0.0.1. Torch-free.

Every job that needs PyTorch (train, explain, predict, evaluate, load a checkpoint, export, report) crosses the
process boundary as these messages; the window imports none of torch. Version 1:

    kernel → parent   {"hello": TOKEN, "pid": …, "protocol": 1}   proves the connection is ours (token from the env)
    kernel → parent   {"ready": true}                             PyTorch imported: jobs are served from now on
    parent → kernel   {"id": N, "job": NAME, "args": {…}}         one job; NAME is one of JOBS
    kernel → parent   {"id": N, "event": {…}}                     a run's events (train only), in order
    kernel → parent   {"id": N, "progress": …}                    a job's partial result before its answer (jobs
                                                                  with a `progress` argument: the finders' points)
    kernel → parent   {"id": N, "result": …}                      the job's answer (a run's: its terminal event)
    kernel → parent   {"id": N, "error": {kind, message, hint}}   the job failed in a way the user can act on
    parent → kernel   {"cancel": N}                               stop job N after its current step (a run, a finder)
    parent → kernel   {"profile": STEPS}                          profile the run's next STEPS steps
EOF from the parent means the same as cancelling everything: the kernel finishes its step and exits (no orphans).
"""

from __future__ import annotations

import json
import socket
from dataclasses import dataclass
from typing import Any

from ..ground.errors import WorkbenchError

PROTOCOL_VERSION = 1
# What a kernel serves. `train` is served by a fresh run kernel (one run, then it exits: fresh Dynamo state keeps
# compile times honest and nothing leaks between runs); the others by the long-lived service kernel.
JOBS = ("capabilities", "train", "explain", "predict", "evaluate", "load_checkpoint", "export_checkpoint", "report",
        "evaluate_view", "dataset_preview", "check_fullgraph", "export_model", "lr_find",
        "batch_find")


class JobError(WorkbenchError):
    """A job the kernel refused or could not do; `kind` is the kernel's (config, data, untrusted_code, …)."""

    def __init__(self, kind: str, message: str, hint: str = "", detail: dict | None = None):
        super().__init__(message, hint)
        self.kind = kind
        self.detail = detail or {}

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "message": str(self), "hint": self.hint, "detail": self.detail}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "JobError":
        return cls(str(data.get("kind", "internal")), str(data.get("message", "")), str(data.get("hint", "")),
                   data.get("detail") or {})


@dataclass(frozen=True)
class Job:
    """One request to a kernel."""

    id: int
    name: str
    args: dict

    def to_message(self) -> dict[str, Any]:
        return {"id": self.id, "job": self.name, "args": self.args}

    @classmethod
    def from_message(cls, message: dict[str, Any]) -> "Job":
        name = message.get("job")
        if name not in JOBS:
            raise JobError("protocol", f"unknown job {name!r}", f"one of: {', '.join(JOBS)}")
        return cls(id=int(message["id"]), name=name, args=dict(message.get("args") or {}))


def send(conn: socket.socket, message: dict) -> None:
    conn.sendall((json.dumps(message) + "\n").encode())


def send_line(conn: socket.socket, line: str) -> None:
    """An already-serialised message (a run's events are serialised once and wrapped, not re-encoded)."""
    conn.sendall((line + "\n").encode())


def event_line(job_id: int, event_json: str) -> str:
    return f'{{"id":{job_id},"event":{event_json}}}'


MAX_LINE_BYTES = 64 << 20  # a message from our own kernel (a predict's answer can be megabytes); a peer not yet
# proven ours gets far less (process.HELLO_MAX_BYTES)


class LineTooLong(ValueError):
    """A line over the reader's limit: a protocol error, like unreadable JSON (nothing more of it is buffered)."""


class Lines:
    """Newline-delimited messages from a socket, with a timeout per read and a limit on a line's size."""

    def __init__(self, conn: socket.socket, max_line: int = MAX_LINE_BYTES, buffer: bytes = b""):
        self.conn = conn
        self.max_line = max_line
        self.buffer = bytearray(buffer)

    def read(self, timeout: float | None) -> dict | None:
        """The next message; None on timeout. Raises EOFError when the peer has gone, LineTooLong (a ValueError)
        for a line over `max_line` bytes."""
        end = self.buffer.find(b"\n")
        if end < 0:
            self.conn.settimeout(timeout)
        while end < 0:
            if len(self.buffer) > self.max_line:
                self._too_long()
            try:
                chunk = self.conn.recv(65536)
            except (socket.timeout, BlockingIOError):
                return None
            except OSError as exc:
                raise EOFError(str(exc)) from None
            if not chunk:
                raise EOFError("connection closed")
            searched = len(self.buffer)  # only the new bytes can hold the newline: no rescan of a long line
            self.buffer += chunk
            end = self.buffer.find(b"\n", searched)
        if end > self.max_line:
            self._too_long()
        line = bytes(self.buffer[:end])
        del self.buffer[:end + 1]
        return json.loads(line)

    def _too_long(self):
        self.buffer = bytearray()
        raise LineTooLong(f"a message longer than {self.max_line} bytes")
