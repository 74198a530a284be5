"""The kernel protocol: JSON lines over one token-checked TCP connection on 127.0.0.1. Torch-free.

Every job that needs PyTorch (train, explain, predict, evaluate, load a checkpoint, export, report) crosses the
process boundary as these messages; the window imports none of torch. Version 1:

    kernel → parent   {"hello": TOKEN, "pid": …, "protocol": 1}   proves the connection is ours (token from the env)
    kernel → parent   {"ready": true}                             PyTorch imported: jobs are served from now on
    parent → kernel   {"id": N, "job": NAME, "args": {…}}         one job; NAME is one of JOBS, its args a request
                                                                  (ground/job_requests.py) as to_dict gives it
    kernel → parent   {"id": N, "event": {…}}                     a run's events (train only), in order
    kernel → parent   {"id": N, "progress": …}                    a job's partial result before its answer (jobs
                                                                  with a `progress` argument: the finders' points)
    kernel → parent   {"id": N, "result": …}                      the job's answer (ground/answers.py, SERVICES
                                                                  says which; a run's: its terminal event)
    kernel → parent   {"id": N, "error": {kind, message, hint,    the job failed in a way the user can act on
                                        detail}}
    parent → kernel   {"cancel": N}                               stop job N after its current step (a run, a finder):
                                                                  Cancel, as every control message a typed record
    parent → kernel   {"profile": STEPS}                          profile the run's next STEPS steps (Profile)
EOF from the parent means the same as cancelling everything: the kernel finishes its step and exits (no orphans).
"""

from __future__ import annotations

import json
import socket
from dataclasses import dataclass
from typing import Any

from ..ground import answers, job_requests
from ..ground.capabilities import Capabilities
from ..ground.errors import WorkbenchError
from ..ground.events import CompileReport
from ..ground.finder_results import BatchFinding, BatchPoint, LrFinding, LrPoint
from ..ground.numerics import NumericsReport
from ..ground.codec import Record

# How a kernel finds its parent: set by the parent (process.py), read by the child (kernel.py).
TOKEN_ENV = "WORKBENCH_CHILD_TOKEN"
ADDRESS_ENV = "WORKBENCH_CHILD_ADDRESS"
REQUEST_ENV = "WORKBENCH_CHILD_REQUEST"  # a torchrun rank's RunRequest (every rank needs it)
RUN_JOB_ID = 1  # the one job of a run kernel

PROTOCOL_VERSION = 3  # 2: every service job's arguments and answer are typed records (SERVICES); 3: events are too


@dataclass(frozen=True)
class Service:
    """One service-kernel job: its name on the wire, its request and answer types, the partial results it reports
    as it goes (None: it reports none), and whether a cancel ends it early (it then answers with what it has)."""

    job: str
    request: type
    answer: type
    progress: type | None = None
    cancellable: bool = False

    def encode(self, answer: Any) -> Any:
        return answer.to_dict()

    def decode(self, data: Any) -> Any:
        """The answer `data` describes; a ValueError when it is not one."""
        return self.answer.from_dict(data)


# What the long-lived service kernel serves, one job per request type. `train` is not among them: a run is served
# by a fresh run kernel (one run, then it exits: fresh Dynamo state keeps compile times honest and nothing leaks
# between runs), and answers with its events.
SERVICES = (
    Service("capabilities", job_requests.AskCapabilities, Capabilities),
    Service("explain", job_requests.Explain, CompileReport),
    Service("check_fullgraph", job_requests.CheckFullgraph, answers.FullgraphCheck),
    Service("numerics", job_requests.CompareNumerics, NumericsReport),
    Service("load_checkpoint", job_requests.LoadCheckpoint, answers.CheckpointInfo),
    Service("predict", job_requests.Predict, answers.Predictions),
    Service("evaluate", job_requests.Evaluate, answers.Score),
    Service("evaluate_view", job_requests.EvaluateView, answers.EvaluationView),
    Service("export_checkpoint", job_requests.ExportCheckpoint, answers.Written),
    Service("export_model", job_requests.ExportModel, answers.ParityTable, progress=answers.Doing),
    Service("report", job_requests.WriteReport, answers.Written),
    Service("dataset_preview", job_requests.PreviewDataset, answers.DatasetPreview),
    Service("lr_find", job_requests.FindLr, LrFinding, progress=LrPoint, cancellable=True),
    Service("batch_find", job_requests.FindBatchSize, BatchFinding, progress=BatchPoint, cancellable=True),
)
SERVICE_OF_JOB = {service.job: service for service in SERVICES}
SERVICE_OF_REQUEST = {service.request: service for service in SERVICES}
JOBS = ("train", *SERVICE_OF_JOB)


# -- control messages: parent → kernel, acting at once on the job in progress -----------------------------------
@dataclass(frozen=True)
class Cancel(Record):
    """Stop job `cancel` after its current step (a run, a finder): `{"cancel": N}`."""

    cancel: int


@dataclass(frozen=True)
class Profile(Record):
    """Profile the run's next `profile` steps: `{"profile": STEPS}`."""

    profile: int


def read_control(message: Any) -> Cancel | Profile | None:
    """The control message `message` is, or None when it is none (a job, or what this version does not know): a
    profile of fewer than one step is none either."""
    for kind in (Cancel, Profile):
        try:
            control = kind.from_dict(message)
        except ValueError:
            continue
        return None if isinstance(control, Profile) and control.profile < 1 else control
    return None


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
        """The error `data` describes, as its own type where it has one (NeedsConsent)."""
        kind, message, hint = (str(data.get(key, default)) for key, default in
                               (("kind", "internal"), ("message", ""), ("hint", "")))
        detail = data.get("detail") if isinstance(data.get("detail"), dict) else {}
        if kind == NeedsConsent.KIND and isinstance(detail.get("model_spec"), str):
            return NeedsConsent(detail["model_spec"], message, hint)
        return cls(kind, message, hint, detail)


class NeedsConsent(JobError):
    """The job would import a user's model file (`model_spec`, "path/to/file.py:Class"): the user must consent to
    that very file first; the same request with trust_model_code=True then goes through."""

    KIND = "untrusted_code"

    def __init__(self, model_spec: str, message: str, hint: str = ""):
        super().__init__(self.KIND, message, hint, {"model_spec": model_spec})
        self.model_spec = model_spec

    @property
    def model_file(self) -> str:
        return self.model_spec.rpartition(":")[0]


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

    @classmethod
    def of(cls, job_id: int, request: Any) -> "Job":
        """The job that carries a service request."""
        return cls(job_id, SERVICE_OF_REQUEST[type(request)].job, request.to_dict())

    def request(self) -> Any:
        """This service job's request, typed; a JobError("protocol") when its arguments do not fit."""
        service = SERVICE_OF_JOB[self.name]
        try:
            return service.request.from_dict(self.args)
        except ValueError as exc:
            raise JobError("protocol", f"bad arguments for {self.name}: {exc}") from None


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
