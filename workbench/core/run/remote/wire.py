"""What a remote host's `remote.host` program answers on the SSH session, as typed records (the same ground rule as
a service job's answers: read field by field on arrival, never by string key). Torch-free."""

from __future__ import annotations

from dataclasses import dataclass

from ...ground.codec import Record


@dataclass(frozen=True)
class Hello(Record):
    """The first contact: which Workbench and protocol the host runs, and with which Python."""

    workbench: str
    protocol: int
    python: str
    python_version: str
    hostname: str
    data_dir: str


@dataclass(frozen=True)
class RunStart(Record):
    """A detached run's name on its host (`key`), its output folder there, and the host's own name."""

    key: str
    out_dir: str
    hostname: str


@dataclass(frozen=True)
class SpareRun(Record):
    """A run kernel started ahead on the host (`spare`): the folder `key` that the next `start KEY` trains in."""

    key: str


@dataclass(frozen=True)
class HostPath(Record):
    """A path on the host: where a received file was written, or a new folder for a job's output."""

    path: str


@dataclass(frozen=True)
class RunInfo(Record):
    """One of a host's detached runs: how it stands ("running", "finished", "stopped", "failed", or "lost": its
    supervisor ended without a terminal event) and how many events its log holds."""

    key: str
    status: str
    events: int
    out_dir: str
    dataset: str
    epochs: int


@dataclass(frozen=True)
class HostQueue(Record):
    """A queue handed over to a host (remote/host_queue.py): for each of its requests, in order, the run it became
    (its key; "" when cancelled before it started; None while not started yet), whether its supervisor still runs,
    and which requests were cancelled."""

    key: str
    runs: tuple[str | None, ...]
    alive: bool
    cancelled: tuple[int, ...] = ()
