"""What the finders find, as plain data: the kernel measures (kernel/lr_finder.py, kernel/batch_finder.py), the
window and the CLI draw and print. Torch-free, so that the window reads fields, never keys."""

from __future__ import annotations

from dataclasses import dataclass

from .forecast import steps_per_epoch
from .codec import Record


@dataclass(frozen=True)
class LrPoint(Record):
    step: int  # 1-based, as the run counts
    lr: float
    loss: float
    smoothed: float


@dataclass(frozen=True)
class LrFinding(Record):
    points: tuple[LrPoint, ...]
    suggestion: float | None
    ended: str  # why the test ended, in words ("stopped" when the user stopped it)
    compiled: bool  # whether the steps ran compiled (a failed compile falls back to eager)
    # Recompiles after the first compile, validation's own (its no-grad graph, expected in every compiled run)
    # left out: 0 when the learning rate is no guard. recompile_reasons: every one, as Dynamo words it.
    recompiles: int
    recompile_reasons: tuple[str, ...]
    rule: str
    lr_min: float
    lr_max: float

    @property
    def stopped(self) -> bool:
        return self.ended == "stopped"


@dataclass(frozen=True)
class BatchPoint(Record):
    batch_size: int
    samples_per_s: float  # steady steps only
    peak_memory_mib: float  # the CUDA allocator's peak, or the process's RSS on the CPU
    fits: bool = True  # on CUDA: within the headroom


@dataclass(frozen=True)
class BatchFinding(Record):
    device: str
    points: tuple[BatchPoint, ...]
    suggestion: int | None
    # The batch the device's rule alone would have suggested (the fastest on the CPU, the largest that fits on
    # CUDA), passed over because it gives fewer than min_steps_per_epoch optimizer steps an epoch of train_size
    # images; None when that batch is the suggestion. The window says what it would cost.
    passed_over: int | None
    train_size: int  # images in the training split
    min_steps_per_epoch: int
    rule: str
    memory_total_mib: float | None  # the device's, on CUDA
    ended: str

    @property
    def stopped(self) -> bool:
        return self.ended == "stopped"

    def steps_per_epoch(self, batch_size: int) -> int:
        """Optimizer steps an epoch of the training split takes at `batch_size` (one process, as measured)."""
        return steps_per_epoch(batch_size, self.train_size)
