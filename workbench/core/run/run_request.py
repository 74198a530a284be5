"""`RunRequest`: the one thing that crosses a thread or process boundary to start a run. Torch-free.

A request is built and validated once, by whoever starts the run (the CLI's flags, the window's form, a benchmark),
against what the machine can do (`Capabilities`), and then only travels: as JSON to a run process, in the
environment to torchrun's ranks. The engine checks only that the config can run on this machine's devices
(`TrainConfig.check_runnable`, cheap): the benchmark, the finders and tests call it without a request.
"""

from __future__ import annotations

import json
import socket
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from ..ground import paths
from ..ground.codec import Record
from ..ground.config import ConfigError, TrainConfig
from ..ground.errors import WorkbenchError

WHERE = ("process", "here")  # a fresh run process (the default), or the caller's own process (debugging, tests)
MAX_PORT = 65535  # TCP's largest; 0 is no port at all (bind's "any"), which other nodes cannot be told


class LaunchError(WorkbenchError):
    kind = "config"


@dataclass(frozen=True)
class Launch(Record):
    """How many processes train together, on how many machines, and where a single-process run trains."""

    nproc_per_node: int = 1
    nnodes: int = 1
    node_rank: int = 0
    master_addr: str = "127.0.0.1"
    master_port: int | None = None
    where: str = "process"
    interface: str = ""  # the network interface this node's process group uses (NCCL/Gloo); "": their own choice

    @property
    def world_size(self) -> int:
        return self.nproc_per_node * self.nnodes

    @property
    def distributed(self) -> bool:
        return self.world_size > 1


def check_launch(launch: Launch, batch_size: int, device: str, cuda_devices: int) -> None:
    """Everything about the processes that can be refused before any starts, with what to do instead.
    `cuda_devices`: how many this machine has (the kernel knows; the window asks it)."""
    if launch.where not in WHERE:
        raise LaunchError(f"unknown place to train '{launch.where}'", f"one of: {', '.join(WHERE)}")
    if launch.nproc_per_node < 1 or launch.nnodes < 1:
        raise LaunchError("--nproc-per-node and --nnodes must be at least 1")
    if not 0 <= launch.node_rank < launch.nnodes:
        raise LaunchError(f"--node-rank {launch.node_rank} is outside 0…{launch.nnodes - 1} for {launch.nnodes} "
                          f"node(s)")
    if launch.distributed and launch.where == "here":
        raise LaunchError("several processes always train under torchrun, never in this process")
    if device != "cpu" and cuda_devices and launch.nproc_per_node > cuda_devices:
        raise LaunchError(f"{launch.nproc_per_node} processes were asked for but this machine has "
                          f"{cuda_devices} CUDA device(s); with nccl each process needs its own GPU",
                          f"use --nproc-per-node {cuda_devices} or fewer (or --device cpu for gloo)")
    if batch_size % launch.world_size:
        nearest = batch_size // launch.world_size * launch.world_size or launch.world_size
        raise LaunchError(f"the batch size {batch_size} is the global batch and must split evenly over "
                          f"{launch.world_size} processes", f"use a multiple of {launch.world_size}, e.g. {nearest}")
    if launch.nnodes > 1 and launch.master_port is None:
        raise LaunchError("a multi-node run needs --master-addr and --master-port (the same on every node)")
    if launch.master_port is not None and not 1 <= launch.master_port <= MAX_PORT:
        # Before the probe: binding a number outside TCP's range raises OverflowError, not a refusal.
        raise LaunchError(f"--master-port {launch.master_port} is not a TCP port (1…{MAX_PORT})",
                          "choose a free port such as 29500 (the same on every node), or leave it out on a single "
                          "machine (a free one is picked)")
    if launch.master_port is not None and launch.node_rank == 0 and _is_local(launch.master_addr):
        if not port_free(launch.master_addr, launch.master_port):
            raise LaunchError(f"port {launch.master_port} on {launch.master_addr} is already in use",
                              "choose another --master-port, or leave it out on a single machine (a free one is "
                              "picked)")


def _is_local(address: str) -> bool:
    return address in ("127.0.0.1", "localhost", "::1", socket.gethostname(), "0.0.0.0")


def port_free(address: str, port: int) -> bool:
    """Whether `port` can be bound on `address` (IPv4 or IPv6, e.g. ::1)."""
    host = address if address != "localhost" else "127.0.0.1"
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.bind((host, port))
        return True
    except OSError:
        return False


def new_run_dir(root: str | Path | None = None) -> Path:
    """A folder of its own for every run (no shared `latest` that a later run overwrites): a timestamp, made
    unique by a counter if two runs start within the same microsecond. Created here, so that it is reserved; a
    folder that cannot be created is left to the run's own check, which says so in words."""
    base = (Path(root) if root is not None else paths.runs_dir()).resolve()
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S-%f")
    for n in range(1, 1000):
        candidate = base / (stamp if n == 1 else f"{stamp}-{n}")
        try:
            candidate.mkdir(parents=True)
            return candidate
        except FileExistsError:
            continue
        except OSError:
            return candidate
    return candidate


@dataclass(frozen=True)
class RunRequest(Record):
    """Config, output folder, record (and where), launch. `out_dir` is absolute: the history keeps it."""

    config: TrainConfig
    out_dir: str
    db: str | None = None  # None: the default run database
    record: bool = True
    launch: Launch = field(default_factory=Launch)

    @classmethod
    def build(cls, config: TrainConfig, *, cuda_devices: int, out_dir: str | Path | None = None,
              db: str | Path | None = None, record: bool = True, launch: Launch | None = None) -> "RunRequest":
        """The one place a run is checked against the machine before anything starts. `out_dir` "": the run's
        folder is chosen where it trains (a run on another host gets one there; none is made here)."""
        launch = launch or Launch()
        config.check_runnable(cuda_devices > 0)
        if config.device.startswith("cuda:") and int(config.device.partition(":")[2]) >= cuda_devices:
            raise ConfigError("device", f"'{config.device}' was asked for but this machine has {cuda_devices} "
                                        f"CUDA device(s)", ", ".join(["auto", "cpu", *(f"cuda:{i}" for i in
                                                                                    range(cuda_devices))]))
        check_launch(launch, config.batch_size, config.device, cuda_devices)
        folder = "" if out_dir == "" else str(Path(out_dir).resolve() if out_dir is not None else new_run_dir())
        return cls(config=config, out_dir=folder, db=str(db) if db is not None else None, record=record,
                   launch=launch)

    def replace(self, **changes: Any) -> "RunRequest":
        return replace(self, **changes)

    # -- the wire (the codec's to_dict and from_dict) ------------------------------------------------------------
    def to_json(self) -> str:
        return json.dumps(self.to_dict())

    @classmethod
    def from_json(cls, text: str) -> "RunRequest":
        return cls.from_dict(json.loads(text))
