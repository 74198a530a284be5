"""What one run knows and updates, from its config to its last event (`RunState`), and what a read-back hands the
loop and its instruments (`ReadBack`). Plain data: the loop (trainer.py) and each instrument change it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import torch

from ..domain import checkpoint
from ..domain.data import DeviceBatches, Split
from ..domain.distributed import Distributed
from ..domain.compile_explain import RunCompileLog
from ..ground.config import TrainConfig
from ..ground.errors import WorkbenchError
from ..ground.events import CompileReport, Emit
from ..history.warm_starts import WarmSource
from .plan import WarmupPlan
from .steps import Session


class StopFlag(Protocol):
    def is_set(self) -> bool: ...


class CompileFailure(WorkbenchError):
    kind = "compile"


class Diverged(Exception):
    """The loss is not finite, or EXPLODED_FACTOR (ground.alerts) times the run's first: the run fails (kind
    'diverged')."""


@dataclass
class Totals:
    steps: int = 0
    steady_samples: int = 0
    steady_seconds: float = 0.0
    compile_breakdown: dict[str, float] = field(default_factory=dict)  # seconds by CompileFinished phase
    recording_seconds: float = 0.0  # the CUDA-graph recording steps read back so far
    epoch_loss_sum: float = 0.0
    epoch_steps: int = 0
    best_val_accuracy: float | None = None  # None until an epoch has been validated
    first_loss: float | None = None
    epochs_ended: int = 0  # epochs that were validated (EpochEnd emitted); a max_steps cut may end one early
    last_epoch: dict[str, float] = field(default_factory=dict)  # train_loss, val_loss, val_accuracy
    peak_memory_mib: float = 0.0

    @property
    def compile_seconds(self) -> float:
        return sum(self.compile_breakdown.values(), 0.0)



@dataclass
class RunState:
    """Everything one run knows and updates, from its config to its last event."""

    config: TrainConfig
    emit: Emit
    stop: StopFlag
    started: float  # perf_counter() when run() was called: EpochEnd and RunFinished count from here
    device: torch.device
    classes: tuple[str, ...]
    batches: DeviceBatches  # this process's share of the training split
    val_split: Split
    train_size: int  # the whole training split (every process's shard): what the recompile forecast counts
    total_steps: int  # planned: epochs × steps per epoch, capped by max_steps
    plan: WarmupPlan  # the first steps kept off the steady figures (a profiled window is added to it)
    # The run's Instruments (instruments/base.py, which imports this module), in the order their hooks are called.
    instruments: list = field(default_factory=list)
    resume: checkpoint.Checkpoint | None = None  # the checkpoint a continued run goes on from (config.resume)
    dist: Distributed = field(default_factory=Distributed)  # this process's place among the run's processes
    session: Session = field(init=False)  # set by the loop's _prepare; replaced by a fallback to eager
    report: CompileReport | None = None  # explain's report; None when the run is not compiled
    warm: WarmSource | None = None  # the recorded run whose compile cache was loaded (instruments.warm_start)
    log: RunCompileLog = field(init=False)  # set by _prepare, once explain is done
    val_batches: DeviceBatches = field(init=False)  # set by _prepare
    totals: Totals = field(default_factory=Totals)
    warnings: list[str] = field(default_factory=list)  # for the final compile report
    stopped: bool = False
    step: int = 0  # the step being trained (or, while validating, the last one trained)
    phase: str = "train"  # "train" | "eval": what the run is doing
    epoch: int = 1  # the epoch being trained (the one a checkpoint resumes)
    skip_batches: int = 0  # a run continued mid-epoch: the batches of its first epoch already trained
    record_amp_health: bool = False  # fp16's per-step record (the AMP health instrument asks for it)
    break_frames: dict[str, tuple] = field(default_factory=dict)  # user frames of the breaks the run met, by type

    @property
    def output_dim(self) -> int:
        return len(self.classes)

    def out_of_steps(self) -> bool:
        return bool(self.config.max_steps) and self.totals.steps >= self.config.max_steps

    def steady_steps(self) -> float:
        """Steady steps read back so far (a global batch each)."""
        return self.totals.steady_samples / self.config.batch_size

    def steady_step_seconds(self) -> float | None:
        """The mean steady step so far; None before a steady step was read back."""
        steps = self.steady_steps()
        return self.totals.steady_seconds / steps if steps else None


@dataclass
class Block:
    """Steps whose losses are still on the device, to be read back together (one sync) by the loop's _flush."""

    start: float  # when the block's clock started
    kind: str = "steady"  # WarmupPlan.kind of its steps: a block never mixes kinds
    losses: list[torch.Tensor] = field(default_factory=list)
    correct: list[torch.Tensor] = field(default_factory=list)  # each step's count of right predictions
    ends: list[float] = field(default_factory=list)  # when each step returned (exact step times on the sync CPU)


@dataclass
class ReadBack:
    """A block of steps read back from the device: the global figures of each step, and what rode along for the
    instruments (each its own slice of the same sync)."""

    kind: str  # the block's WarmupPlan.kind
    first_step: int
    losses: list[float]
    accuracies: list[float]
    step_seconds: list[float]
    walls: list[float]  # Unix time each step ended (its Step's wall)
    seconds: float  # the block's, from its clock's start to the read-back
    riders: dict[int, list[float]] = field(default_factory=dict)  # by the instrument's index in RunState.instruments
    loss_scales: list[float] | None = None  # fp16: the scale after each step (the AMP health instrument's reading)
