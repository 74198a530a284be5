"""Data-parallel training on PyTorch's own engine: torchrun starts the processes, DDP keeps the replicas in step.

`Distributed` is what the Trainer needs to know about the other processes; its default is a single process, for
which every operation is a no-op. `from_environment()` joins the process group torchrun describes in the
environment (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR/PORT): gloo on the CPU, nccl on CUDA.
`launch_command()` and `check_launch()` are the parent's side: what to run, and what to refuse before running it.
"""

from __future__ import annotations

import hashlib
import os
import socket
import sys
from dataclasses import dataclass

import torch
from torch import nn

from .errors import WorkbenchError


class LaunchError(WorkbenchError):
    kind = "config"


@dataclass
class Distributed:
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def active(self) -> bool:
        return self.world_size > 1

    def wrap(self, model: nn.Module) -> nn.Module:
        """DDP around the (already compiled) module. PyTorch's guidance: torch.compile does not handle the DDP
        wrapper well, so compile the inner module first (model.compile()), then wrap it."""
        if not self.active:
            return model
        from torch.nn.parallel import DistributedDataParallel

        device_ids = [self.local_rank] if next(model.parameters()).is_cuda else None
        return DistributedDataParallel(model, device_ids=device_ids)

    def mean(self, tensor: torch.Tensor) -> torch.Tensor:
        """The average over all processes (the global figure, e.g. of a loss)."""
        if not self.active:
            return tensor
        return self.sum(tensor) / self.world_size

    def sum(self, tensor: torch.Tensor) -> torch.Tensor:
        if not self.active:
            return tensor
        import torch.distributed as dist

        tensor = tensor.clone()
        dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
        return tensor

    def gather(self, value) -> list:
        if not self.active:
            return [value]
        import torch.distributed as dist

        out: list = [None] * self.world_size
        dist.all_gather_object(out, value)
        return out


def weights_checksum(model: nn.Module) -> str:
    """A hash of every parameter and buffer: equal on all ranks when the replicas are in sync."""
    digest = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        digest.update(name.encode())
        # The raw bytes, whatever the dtype: numpy has no bfloat16.
        digest.update(tensor.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()[:16]


def from_environment(cuda: bool) -> Distributed:
    """Join the process group torchrun set up in the environment (a single process when there is none):
    nccl when the run trains on GPUs (each rank on GPU `LOCAL_RANK`), gloo when it trains on the CPU."""
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    if world_size <= 1:
        return Distributed()
    import torch.distributed as dist

    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    backend = "nccl" if cuda else "gloo"
    if cuda:
        torch.cuda.set_device(local_rank)
    if not dist.is_initialized():
        dist.init_process_group(backend=backend)
    return Distributed(rank=dist.get_rank(), world_size=dist.get_world_size(), local_rank=local_rank)


def shutdown() -> None:
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


# -- the launching side -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Launch:
    nproc_per_node: int = 1
    nnodes: int = 1
    node_rank: int = 0
    master_addr: str = "127.0.0.1"
    master_port: int | None = None

    @property
    def world_size(self) -> int:
        return self.nproc_per_node * self.nnodes

    @property
    def distributed(self) -> bool:
        return self.world_size > 1


def check_launch(launch: Launch, batch_size: int, device: str) -> None:
    """Everything that can be refused before any process starts, with what to do instead."""
    if launch.nproc_per_node < 1 or launch.nnodes < 1:
        raise LaunchError("--nproc-per-node and --nnodes must be at least 1")
    if not 0 <= launch.node_rank < launch.nnodes:
        raise LaunchError(f"--node-rank {launch.node_rank} is outside 0…{launch.nnodes - 1} for {launch.nnodes} "
                          f"node(s)")
    from .devices import uses_cuda

    if uses_cuda(device) and launch.nproc_per_node > torch.cuda.device_count():
        raise LaunchError(f"{launch.nproc_per_node} processes were asked for but this machine has "
                          f"{torch.cuda.device_count()} CUDA device(s); with nccl each process needs its own GPU",
                          f"use --nproc-per-node {torch.cuda.device_count()} or fewer (or --device cpu for gloo)")
    if batch_size % launch.world_size:
        nearest = batch_size // launch.world_size * launch.world_size or launch.world_size
        raise LaunchError(f"the batch size {batch_size} is the global batch and must split evenly over "
                          f"{launch.world_size} processes", f"use a multiple of {launch.world_size}, e.g. {nearest}")
    if launch.nnodes > 1 and launch.master_port is None:
        raise LaunchError("a multi-node run needs --master-addr and --master-port (the same on every node)")
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


def launch_command(launch: Launch) -> list[str]:
    """torchrun (python -m torch.distributed.run) starting the training child on every local rank. A frozen app
    runs itself as torchrun, and torchrun runs it again (without Python) as each rank."""
    from .child import TORCHRUN_FLAG, child_command, frozen

    if frozen():
        command = [sys.executable, TORCHRUN_FLAG, f"--nproc-per-node={launch.nproc_per_node}"]
    else:
        command = [sys.executable, "-m", "torch.distributed.run", f"--nproc-per-node={launch.nproc_per_node}"]
    if launch.nnodes == 1 and launch.master_port is None:
        command.append("--standalone")  # one machine: torchrun picks a free port itself
    else:
        command += [f"--nnodes={launch.nnodes}", f"--node-rank={launch.node_rank}",
                    f"--master-addr={launch.master_addr}", f"--master-port={launch.master_port}"]
    if frozen():
        return command + ["--no-python", *child_command()]
    return command + ["-m", "workbench.core.child"]
