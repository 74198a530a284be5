"""Data-parallel training on PyTorch's own engine: torchrun starts the processes, DDP keeps the replicas in step.

`Distributed` is what the Trainer needs to know about the other processes; its default is a single process, for
which every operation is a no-op. `from_environment()` joins the process group torchrun describes in the
environment (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR/PORT): gloo on the CPU, nccl on CUDA. The launching side
(what to start, what to refuse before starting it) is the run layer's: `run/request.py` and `run/process.py`.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass

import torch
from torch import nn



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
