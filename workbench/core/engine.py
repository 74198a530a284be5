"""The training engine: one run = a config in, a stream of events out.

`Trainer().run(config, emit, stop)` trains on the calling thread, which thereby owns every compile and every call
of the compiled model (Dynamo is not thread-safe, its config is thread-local, and CUDA graph trees live in
thread-local state). It knows nothing about who listens: the GUI worker, the CLI and the DDP launcher all pass an
`emit` callable; nor where a finished model goes: the caller's `save_checkpoint` decides. Losses are read back
from the device in blocks (`.item()` per step would be a sync per step), so per-step figures in a block share the
block's timing.

A run reads top to bottom in `Trainer._run`: `_start` (device, data, RunStarted), `_prepare` (model, explain,
compile), then per epoch `_train_epoch` and `_validate`, and `_finish` (final report, metrics, checkpoint,
RunFinished). Everything one run knows and updates lives in one `_Run`.

Steady throughput counts only steady steps: a compiling first step and, on CUDA, the warm-up steps (`WarmupPlan`)
are read back in blocks of their own and kept off it. Compile time counts every phase that compiles or records
(`CompileFinished.phase`): the first step, the first validation, and the CUDA-graph recording steps.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import gc
import itertools
import math
import os
import re
import statistics
import threading
import time
import traceback
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Protocol, TypeVar

import torch
import torch._dynamo
from torch import nn
from torch.nn import functional as F

from .domain import amp, checkpoint, devices
from .domain.compile_trace import CompileTracer, render_trace
from .domain.system import SystemSampler
from .domain.system import summary as system_summary
from .domain.data import DeviceBatches, Split, classes_of, load_splits
from .domain.distributed import Distributed, weights_checksum
from .domain.evaluate import autocast_context, evaluate
from .domain.inspect import RunCompileLog, explain_model
from .domain.model import check_outputs, model_for
from .domain.profiler import StepProfiler, profile_metrics, profile_window
from .ground.config import EVAL_BATCH, ConfigError, TrainConfig, split_model_spec, uses_cuda_graphs
from .ground.errors import WorkbenchError, first_line
from .ground.events import (AmpReport, CompileEvent, CompileFinished, CompileReport, CompileStarted, Emit, EpochEnd,
                            GraphBreak, Notice, ProfileReport, RunFailed, RunFinished, RunStarted, Step,
                            peak_mib)
from .ground.forecast import check_as_dict, check_forecast, forecast_recompiles
from .ground.payback import METHOD as PAYBACK_METHOD
from .ground.payback import Payback
from .ground.signals import RunSignals

FLUSH_SECONDS = 0.05  # how often losses are read back from the device (and Step events go out)
DIST_FLUSH_STEPS = 10  # multi-process: read back every N steps, the same step on every rank (a collective)
DIVERGENCE_FACTOR = 100.0  # a step loss this many times the first step's loss means the run has blown up
# CUDA's first steps load kernels (lazily, on first use), create the cuBLAS handle and grow the caching allocator;
# the optimizer's state appears at step 1. A fixed count rather than "the first read-back block": on CUDA a block
# spans FLUSH_SECONDS, hundreds of steps of a small network, whose average would still carry step 1's cost.
CUDA_WARMUP_STEPS = 5
# CUDA graph trees (mode "reduce-overhead"/"max-autotune", backend "cudagraphs") run each graph once eagerly in the
# graph pool (step 1, with the compile), record it on its second call (step 2) and replay it from the third.
CUDAGRAPH_RECORDING_STEPS = 1
# CUDA graph trees assert when compiled and replayed from a thread Python created (pytorch/pytorch#123177);
# fixed by pytorch/pytorch#184357, first released in torch 2.13.0 (2.12.1 still asserts).
CUDAGRAPH_THREADS_FIXED = (2, 13)
# Payback calibration (Trainer._payback): rounds of a compiled and an eager block of steps, each block about this
# long (and within these step counts): long enough to average a read-back's sync, short next to any real run.
PAYBACK_ROUNDS = 5
PAYBACK_BLOCK_SECONDS = 0.05
PAYBACK_BLOCK_STEPS = (3, 50)

T = TypeVar("T")

# An fp16 step whose gradients overflow is skipped by GradScaler (AmpSkipped says so, with the step and the
# gradient); the schedule steps on regardless, which torch then mistakes for a wrong call order.
warnings.filterwarnings("ignore", message=r"Detected call of `lr_scheduler\.step\(\)` before `optimizer\.step\(\)`",
                        category=UserWarning)


class StopFlag(Protocol):
    def is_set(self) -> bool: ...


class CompileFailure(WorkbenchError):
    kind = "compile"


@dataclass(frozen=True)
class TrainedModel:
    """What a finished run hands to `save_checkpoint`: the weights and what it takes to rebuild and judge them."""

    model: nn.Module  # the trained module (compiled in place when a backend was used: no '_orig_mod.' keys)
    config: TrainConfig
    metrics: dict  # the run's final figures
    classes: tuple[str, ...]
    versions: dict  # the library versions it was trained with
    training_state: dict | None = None  # what continuing the run needs (Trainer._training_snapshot)


SaveCheckpoint = Callable[[TrainedModel], str]  # returns where it wrote; may raise checkpoint.CheckpointWriteError


@dataclass
class _Session:
    """What a run trains with; replaced as a whole when a compile failure falls back to eager."""

    model: nn.Module  # the module holding the weights (compiled in place when a backend is used)
    train_model: nn.Module  # what forward is called on (the DDP wrapper in a multi-process run)
    optimizer: torch.optim.Optimizer
    scaler: torch.amp.GradScaler | None
    compiled: bool
    autocast: contextlib.AbstractContextManager  # built once, entered every step (torch.autocast is reusable)
    scheduler: torch.optim.lr_scheduler.LRScheduler | None = None
    # fp16 health (domain.amp): per step, [scale after the update, each parameter's gradient norm], on the device
    # until the block's read-back. None: not recorded (no scaler, or the benchmark's bare steps).
    health: list[torch.Tensor] | None = None
    params: list[torch.Tensor] = field(default_factory=list)  # the model's parameters, in named_parameters order
    zero: torch.Tensor | None = None  # the norm of a parameter without a gradient (made once, on the device)


@dataclass(frozen=True)
class WarmupPlan:
    """Which of a run's first steps stay off the steady figures, and why. Each kind is read back in blocks of its
    own (never mixed with steady steps: on CUDA a block's steps share its average time)."""

    warmup_steps: int = 0  # steps 1…warmup_steps are warm-up (step 1 is "compiling" instead when it compiles)
    recording_steps: int = 0  # steps 2…1+recording_steps record CUDA graphs (while the model is compiled)
    profile: tuple[int, int] | None = None  # steps first…last run under torch.profiler (domain.profiler)
    start: int = 0  # steps trained before this run (a continued run): its own first step is start + 1

    def kind(self, step: int, compiled: bool) -> str:
        """'compiling', 'recording', 'warmup', 'profiling' or 'steady' for 1-based `step` of a (still) compiled
        model or not."""
        own = step - self.start  # compiling and warming up happen in this run's first steps
        if own == 1 and compiled:
            return "compiling"
        if compiled and 2 <= own <= 1 + self.recording_steps:
            return "recording"
        if own <= self.warmup_steps:
            return "warmup"
        if self.profile is not None and self.profile[0] <= step <= self.profile[1]:
            return "profiling"
        return "steady"

    def first_steady(self, compiled: bool) -> int:
        """The first step that is neither compiling, recording nor warm-up."""
        return self.start + max(self.warmup_steps, 1 + self.recording_steps if compiled else 0) + 1


def warmup_plan(config: TrainConfig, device_type: str, start: int = 0) -> WarmupPlan:
    """On the CPU no step but a compiling first one is special; on CUDA the first CUDA_WARMUP_STEPS are warm-up,
    among them, under CUDA graphs, the recording steps. `start`: steps a continued run's checkpoint had."""
    if device_type != "cuda":
        return WarmupPlan(start=start)
    recording = CUDAGRAPH_RECORDING_STEPS if config.compiled and uses_cuda_graphs(config.to_dict()) else 0
    return WarmupPlan(warmup_steps=max(CUDA_WARMUP_STEPS, 1 + recording), recording_steps=recording, start=start)


@dataclass
class _Totals:
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
    last_epoch: dict = field(default_factory=dict)
    peak_memory_mib: float = 0.0

    @property
    def compile_seconds(self) -> float:
        return sum(self.compile_breakdown.values(), 0.0)


@dataclass
class _Run:
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
    plan: WarmupPlan  # the first steps kept off the steady figures
    session: _Session = field(init=False)  # set by _prepare; replaced by a fallback to eager
    report: CompileReport | None = None  # explain's report; None when the run is not compiled
    log: RunCompileLog = field(init=False)  # set by _prepare, once explain is done
    val_batches: DeviceBatches = field(init=False)  # set by _prepare
    totals: _Totals = field(default_factory=_Totals)
    warnings: list[str] = field(default_factory=list)  # for the final compile report
    stopped: bool = False
    tracer: CompileTracer | None = None  # the compile timeline's source, while a compiled run trains
    timeline_breaks: dict[str, CompileEvent] = field(default_factory=dict)  # the timeline's breaks, by type
    sampler: SystemSampler | None = None  # the system metrics, on the main process
    system_samples: list = field(default_factory=list)  # every SystemSample emitted: the run's summary
    profiler: StepProfiler | None = None  # the profiled window's, on the main process, until its report is out
    amp_report: AmpReport | None = None  # the census and recommendation, when AMP is on
    amp_scale: float = 0.0  # fp16: the scale after the last step read back (the next step runs with it)
    amp_skipped: list = field(default_factory=list)  # fp16: every AmpSkipped emitted
    profile: ProfileReport | None = None  # the profiled window's report, once emitted
    resume: checkpoint.Checkpoint | None = None  # the checkpoint a continued run goes on from (config.resume)
    epoch: int = 1  # the epoch being trained (the one a checkpoint resumes)
    skip_batches: int = 0  # a run continued mid-epoch: the batches of its first epoch already trained

    @property
    def output_dim(self) -> int:
        return len(self.classes)

    def out_of_steps(self) -> bool:
        return bool(self.config.max_steps) and self.totals.steps >= self.config.max_steps


@dataclass
class _Block:
    """Steps whose losses are still on the device, to be read back together (one sync) by `_flush`."""

    start: float  # when the block's clock started
    kind: str = "steady"  # WarmupPlan.kind of its steps: a block never mixes kinds
    losses: list[torch.Tensor] = field(default_factory=list)
    correct: list[torch.Tensor] = field(default_factory=list)  # each step's count of right predictions
    ends: list[float] = field(default_factory=list)  # when each step returned (exact step times on the sync CPU)


class Diverged(Exception):
    pass


class Trainer:
    def __init__(self, *, flush_seconds: float = FLUSH_SECONDS, distributed: Distributed | None = None,
                 save_checkpoint: SaveCheckpoint | None = None, trace_dir: Path | None = None,
                 profile_dir: Path | None = None, amp_health: bool = True, system_metrics: bool = True,
                 lr_factor: Callable[[int], float] | None = None, payback: bool = True):
        """`save_checkpoint` is called once, on the main process, when a run that took steps ends (finished or
        stopped); what it returns is the run's metrics["checkpoint"]. None: nothing is saved. `trace_dir`: where a
        compiled run records PyTorch's structured compile trace (rendered with tlparse at the end); None: not.
        `profile_dir`: where a profiled run (config.profile_steps) writes its trace; None: the report only.
        `amp_health`, `system_metrics`: the fp16 per-step record and the system sampler; always on, except when
        `workbench bench --instruments` prices them. `lr_factor`: the learning rate of step i (0-based) as a
        multiple of config.lr, in place of the config's schedule (the LR range test's exponential sweep).
        `payback`: measure a compiled run against eager after it (off for the range test, whose steps teach
        nothing about a real run's payback)."""
        self.flush_seconds = flush_seconds
        self.dist = distributed or Distributed()
        self.save_checkpoint = save_checkpoint
        self.trace_dir = trace_dir
        self.profile_dir = profile_dir
        self.amp_health = amp_health
        self.system_metrics = system_metrics
        self.lr_factor = lr_factor
        self.payback = payback

    # -- the run ------------------------------------------------------------------------------------------------
    def run(self, config: TrainConfig, emit: Emit, stop: StopFlag | None = None) -> RunFinished | RunFailed:
        """Train to the end, to a stop, or to a failure. Always emits exactly one RunFinished or RunFailed."""
        stop = stop or threading.Event()
        started = time.perf_counter()
        matmul_precision = torch.get_float32_matmul_precision()  # process-global: _start sets the run's
        # The step loop creates small objects (events) all the time; without this, Python's full collections keep
        # re-walking every long-lived object of torch and the app (measured: ~3% of eager throughput on a CPU).
        gc.collect()
        gc.freeze()
        try:
            return self._run(config, emit, stop, started)
        except WorkbenchError as exc:  # the user's constructor failing arrives wrapped (its cause or context)
            underlying = exc.__cause__ or exc.__context__
            return self._fail(emit, (underlying is not None and self._user_code_failure(config.model, underlying))
                              or RunFailed(kind=exc.kind, message=str(exc), hint=exc.hint))
        except Diverged as exc:
            return self._fail(emit, RunFailed(kind="diverged", message=str(exc), hint=(
                "the loss blew up: lower the learning rate (try 10× smaller), or turn AMP off")))
        except torch.OutOfMemoryError as exc:
            return self._fail(emit, RunFailed(kind="out_of_memory", message=first_line(exc), hint=(
                "lower the batch size or the hidden size, or use bf16")))
        except Exception as exc:  # the user's model code, else a bug or an unexpected framework error
            return self._fail(emit, self._user_code_failure(config.model, exc) or RunFailed(
                kind="internal", message=f"{type(exc).__name__}: {first_line(exc)}",
                hint="this looks like a bug in Workbench or PyTorch; the log has details"))
        except SystemExit as exc:  # sys.exit() in the user's model: a failed run, not a quiet exit 0 of the process
            where = self._user_frame(config.model, exc)
            return self._fail(emit, RunFailed(
                kind="model" if where else "internal", message=f"the model called sys.exit({exc.code!r})",
                hint=(f"at {where}: " if where else "") + "a model must not exit the process; raise an exception "
                                                          "or return instead"))
        finally:
            torch.set_float32_matmul_precision(matmul_precision)  # for whoever runs in this process next
            gc.unfreeze()

    @staticmethod
    def _fail(emit: Emit, event: RunFailed) -> RunFailed:
        emit(event)
        return event

    @classmethod
    def _user_code_failure(cls, spec: str, exc: BaseException) -> RunFailed | None:
        """An exception raised in the user's own model file (its traceback passes through it) is the user's to
        fix, named as such — not "a bug in Workbench". None: it did not come from the model file."""
        where = cls._user_frame(spec, exc)
        if where is None:
            return None
        name = spec.rpartition(":")[2]
        return RunFailed(kind="model", message=f"your model {name} raised {type(exc).__name__}: {first_line(exc)}",
                         hint=f"at {where} (in your model's code); fix it there and run again")

    @staticmethod
    def _user_frame(spec: str, exc: BaseException) -> str | None:
        """`file:line` of the last traceback frame inside the user's model file `spec` names; None if none is."""
        parts = split_model_spec(spec)
        if parts is None:
            return None
        try:
            model_file = os.path.realpath(os.path.expanduser(parts[0]))
        except (OSError, ValueError):
            return None
        where = None
        for frame in traceback.extract_tb(exc.__traceback__):
            if frame.filename and os.path.realpath(frame.filename) == model_file:
                where = f"{frame.filename}:{frame.lineno}"
        return where

    def _run(self, config: TrainConfig, emit: Emit, stop: StopFlag, started: float) -> RunFinished:
        run = self._start(config, emit, stop, started)
        try:
            self._prepare(run)
            for epoch in range(run.epoch, config.epochs + 1):
                run.stopped = self._train_epoch(run, epoch)
                if run.stopped:
                    break
                self._validate(run, epoch)
                if run.out_of_steps():
                    break
            return self._finish(run)
        finally:
            if run.tracer is not None:
                run.tracer.remove()
            if run.sampler is not None:
                run.sampler.stop()
            if run.profiler is not None:
                run.profiler.abandon()

    # -- setup --------------------------------------------------------------------------------------------------
    def _start(self, config: TrainConfig, emit: Emit, stop: StopFlag, started: float) -> _Run:
        """Device, data and the plan; announces the run (RunStarted)."""
        config.check_runnable(devices.cuda_available())
        # Process-global, so set per run: a run kernel is fresh for each run; an in-process run gets it undone.
        torch.set_float32_matmul_precision(config.matmul_precision)
        device = devices.resolve_device(config.device)
        if device.type == "cuda":
            torch.cuda.set_device(device)
            torch.cuda.reset_peak_memory_stats(device)
        resume = checkpoint.for_resume(config) if config.resume else None
        if resume is not None and self.dist.active:
            raise ConfigError("resume", "a run is continued in one process", "train it with one process")
        train_split, val_split = load_splits(config.dataset, config.data_root)
        classes = classes_of(config.dataset, config.data_root)
        _configure_dynamo()

        torch.manual_seed(config.seed)  # same seed on every rank: identical initial weights and batch order
        world = self.dist.world_size  # run.request.check_launch made sure the global batch splits evenly
        batches = DeviceBatches(train_split, config.batch_size // world, device, seed=config.seed,
                                rank=self.dist.rank, world_size=world)
        if len(batches) == 0:
            raise ConfigError("batch_size", f"{config.batch_size} is larger than the {len(train_split)} "
                                            f"training images", f"1 to {len(train_split)}")
        total_steps = len(batches) * config.epochs
        if config.max_steps:
            total_steps = min(total_steps, config.max_steps)
        start = resume.training_state.get("step", 0) if resume is not None else 0
        if start >= total_steps:
            limit = (f"max steps {config.max_steps}" if config.max_steps and config.max_steps < len(batches) *
                     config.epochs else f"{config.epochs} epoch(s)")
            raise ConfigError("epochs", f"the run to continue has trained {start} steps already and this one plans "
                                        f"{total_steps} ({limit}): nothing is left to train",
                              "more epochs, or more max steps")
        emit(RunStarted(config=config.to_dict(), device=str(device), device_name=devices.device_name(device),
                        versions=devices.versions(), train_size=len(train_split), val_size=len(val_split),
                        steps_per_epoch=len(batches), total_steps=total_steps, world_size=world,
                        resumed_step=start))
        notice = cudagraph_thread_notice(config)
        if notice is not None:
            emit(notice)
        sampler = SystemSampler(device, started).start() if self.dist.is_main and self.system_metrics else None
        return _Run(config=config, emit=emit, stop=stop, started=started, device=device, classes=classes,
                    batches=batches, val_split=val_split, train_size=len(train_split), total_steps=total_steps,
                    plan=warmup_plan(config, device.type, start), sampler=sampler, resume=resume)

    def _prepare(self, run: _Run) -> None:
        """The model, explained and compiled (or not): the run's session; then the validation batches."""
        model = model_for(run.config, run.output_dim).to(run.device)
        if run.resume is not None:  # the weights before anything traces or compiles the model
            model.load_state_dict(run.resume.state_dict)
        example, labels = next(run.batches.epoch(0))
        check_outputs(model, example, run.output_dim)
        if run.config.amp != "off":  # before compiling: the census traces the eager model's ops
            self._amp_report(run, model, example, labels)
        run.report, run.session = self._compile(run, model, example)
        self._plan_profile(run)
        run.log = RunCompileLog()  # from here on: the run's own compiles, not explain's
        run.val_batches = DeviceBatches(run.val_split, EVAL_BATCH, run.device, shuffle=False, drop_last=False,
                                        rank=self.dist.rank, world_size=self.dist.world_size)
        if self.dist.active:
            # The replicas were built from the same seed, so they start identical; from here each rank draws its
            # own dropout masks (the same seed everywhere would drop the same units on every rank). The batch
            # order does not use this stream: DeviceBatches shards one permutation of its own seed.
            torch.manual_seed(rank_seed(run.config.seed, self.dist.rank))
        if run.resume is not None:  # last: nothing above may draw from the random streams it puts back
            self._resume(run, run.resume.training_state)

    def _resume(self, run: _Run, state: dict) -> None:
        """Go on where the checkpoint's run stopped: its optimizer, schedule and scaler, its figures, its place in
        the epochs and its random streams (dropout), so that stopping and continuing trains what one run would."""
        session, totals = run.session, run.totals
        try:
            session.optimizer.load_state_dict(state["optimizer"])
            if session.scheduler is not None and state.get("scheduler") is not None:
                session.scheduler.load_state_dict(state["scheduler"])
            if session.scaler is not None and state.get("scaler") is not None:
                session.scaler.load_state_dict(state["scaler"])
                run.amp_scale = float(state["scaler"]["scale"])
            totals.steps, totals.epochs_ended = int(state["step"]), int(state["epochs_ended"])
            totals.best_val_accuracy, totals.first_loss = state["best_val_accuracy"], state["first_loss"]
            run.epoch, run.skip_batches = int(state["epoch"]), int(state["epoch_step"])
            totals.epoch_loss_sum = float(state["epoch_loss_sum"])
            torch.set_rng_state(state["rng"]["cpu"])
            if run.device.type == "cuda" and state["rng"].get("cuda") is not None:
                torch.cuda.set_rng_state(state["rng"]["cuda"], run.device)
        except (KeyError, TypeError, ValueError, RuntimeError) as exc:
            raise ConfigError("resume", f"the training state in {run.config.resume} is damaged or from another "
                                        f"version: {type(exc).__name__}: {first_line(exc)}") from None

    def _amp_report(self, run: _Run, model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> None:
        """Which ops autocast runs in the low precision, and the precision this device should use."""
        config, device = run.config, run.device
        census = amp.dtype_census(model, x, y, autocast_context(config, device))
        run.amp_report = AmpReport(dtype=config.amp, device=str(device), census=census,
                                   recommendation=amp.recommendation(device))
        run.amp_scale = config.loss_scale
        run.emit(run.amp_report)

    def _plan_profile(self, run: _Run) -> None:
        """Place the profiled window (config.profile_steps) after the compile and the warm-up; every process plans
        it (their read-backs stay aligned), the main one profiles."""
        steps = run.config.profile_steps
        if not steps:
            return
        window = profile_window(run.plan.first_steady(run.session.compiled), run.total_steps, steps)
        if window is None:
            run.emit(Notice("warning", f"not profiled: the run has no steady step to profile ({run.total_steps} "
                                       f"step(s) in all)", "train more steps (epochs or max steps)"))
            return
        if window[1] - window[0] + 1 < steps:
            run.emit(Notice("info", f"profiling steps {window[0]}–{window[1]}: the run is too short for {steps}"))
        self._start_profile(run, window)

    def _start_profile(self, run: _Run, window: tuple[int, int]) -> None:
        run.plan = dataclasses.replace(run.plan, profile=window)
        if self.dist.is_main:
            run.profiler = StepProfiler(run.device, window, self.profile_dir)

    def _compile(self, run: _Run, model: nn.Module,
                 example: torch.Tensor) -> tuple[CompileReport | None, _Session]:
        """Explain (before anything is compiled: explain resets Dynamo), then compile in place."""
        config, emit = run.config, run.emit
        if not config.compiled:
            return None, self._session(run, model, compiled=False)
        problem = devices.backend_problem(config.backend, run.device)
        if problem:
            self._compile_failed(run, problem)
            return _empty_report(config, problem), self._session(run, model, compiled=False)
        try:
            with torch.random.fork_rng(devices=[run.device] if run.device.type == "cuda" else []):
                report = explain_model(model, example, config)  # must not shift the run's random stream
        except Exception as exc:  # an untraceable model is itself a finding: report it, let compile decide
            report = _empty_report(config, f"explain failed: {first_line(exc)}")
        torch._dynamo.reset()  # start the real compile from a clean slate, not from explain's traces
        emit(report)  # the Compile panel can show the breaks before the first step compiles
        # From here on, what the compiler does is the run's: the timeline (and the raw trace) starts now.
        run.tracer = CompileTracer(self.trace_dir if self.dist.is_main else None).install()
        if report.graph_break_count and not config.fullgraph:
            first = report.breaks[0] if report.breaks else None
            where = f" at {first.where}" if first else ""
            emit(Notice("warning", f"{report.graph_break_count} graph break(s){where}: those parts run eagerly",
                        "the Compile panel lists each break with its source line"))
        # The model is compiled in place, so state_dict() keys carry no '_orig_mod.' prefix.
        model.compile(backend=config.backend, fullgraph=config.fullgraph, dynamic=config.dynamic,
                      **({"mode": config.mode} if config.backend == "inductor" else {}))
        return report, self._session(run, model, compiled=True)

    def _session(self, run: _Run, model: nn.Module, *, compiled: bool, carried: _Session | None = None) -> _Session:
        """Optimizer, schedule and scaler for `model`; with `carried`, continuing from that session's state."""
        config, device = run.config, run.device  # where the model's parameters are (the eager copy's too)
        optimizer = make_optimizer(model.parameters(), config, device.type)
        # The schedule first: building LambdaLR sets the learning rate to the first step's, which the carried
        # optimizer state (its learning rate included) must then overwrite.
        scheduler = (torch.optim.lr_scheduler.LambdaLR(optimizer, self.lr_factor) if self.lr_factor is not None
                     else lr_schedule(optimizer, config, run.total_steps))
        scaler = torch.amp.GradScaler(device.type, init_scale=config.loss_scale) if config.amp == "fp16" else None
        health = scaler is not None and self.amp_health  # fp16's per-step record (domain.amp)
        if carried is not None:
            optimizer.load_state_dict(carried.optimizer.state_dict())
            if scheduler is not None and carried.scheduler is not None:
                scheduler.load_state_dict(carried.scheduler.state_dict())
            if scaler is not None and carried.scaler is not None:
                scaler.load_state_dict(carried.scaler.state_dict())
        return _Session(model=model, train_model=self.dist.wrap(model), optimizer=optimizer, scaler=scaler,
                        compiled=compiled, scheduler=scheduler, autocast=autocast_context(config, device),
                        health=[] if health else None, params=list(model.parameters()),
                        zero=torch.zeros((), device=device) if health else None)

    # -- training -----------------------------------------------------------------------------------------------
    def _train_epoch(self, run: _Run, epoch: int) -> bool:
        """One epoch of steps, read back in blocks. True when the run was stopped."""
        config, totals = run.config, run.totals
        run.session.model.train()
        batches = run.batches.epoch(epoch)
        if run.skip_batches:  # continued mid-epoch: the epoch goes on after the batches its checkpoint trained
            totals.epoch_steps, run.skip_batches = run.skip_batches, 0
            batches = itertools.islice(batches, totals.epoch_steps, None)
        else:
            totals.epoch_loss_sum, totals.epoch_steps = 0.0, 0
        run.epoch = epoch
        block = _Block(start=time.perf_counter())
        # One process checks the stop flag before every step. Several must stop at the same step or DDP would
        # wait forever for the ones that stopped: they agree (a collective) at each read-back instead.
        together = self.dist.active
        for x, y in batches:
            if not together and run.stop.is_set():
                self._flush(run, block, epoch)
                return True
            # The first step of a compiled model compiles it; it stays off the throughput figures even when the
            # compile fails and the step is retried eagerly (the failed attempt's time is in it). So do CUDA's
            # warm-up steps (the plan); each kind of step is read back in blocks of its own.
            step = totals.steps + 1
            kind = run.plan.kind(step, run.session.compiled)
            if block.losses and kind != block.kind:  # steady steps before a profiled window: read back on their own
                _, stop_agreed = self._flush(run, block, epoch, run.stop.is_set())
                if stop_agreed:
                    return True
            block.kind = kind
            if kind == "compiling":
                run.emit(CompileStarted(config.backend, config.mode))
            if run.tracer is not None:
                run.tracer.step = step
            if kind == "profiling" and run.profiler is not None:
                with run.profiler.step(step):
                    loss, correct = self._step(run, x, y)
            else:
                loss, correct = self._step(run, x, y)
            block.losses.append(loss)
            block.correct.append(correct)
            block.ends.append(time.perf_counter())
            totals.steps += 1
            if together:
                due = len(block.losses) >= DIST_FLUSH_STEPS
            else:
                due = block.ends[-1] - block.start >= self.flush_seconds
            # The same step on every rank (a function of the step number): multi-process read-backs stay aligned.
            phase_ends = kind != "steady" and (run.out_of_steps()
                                               or run.plan.kind(step + 1, run.session.compiled) != kind)
            if phase_ends or due:
                seconds, stop_agreed = self._flush(run, block, epoch, run.stop.is_set())
                self._compile_phase_read(run, kind, seconds, phase_ends)
                if kind == "profiling" and phase_ends:
                    self._profile_read(run)
                    block.start = time.perf_counter()  # building the report is no step's time
                if stop_agreed:
                    return True
                if isinstance(run.stop, RunSignals):
                    self._take_requests(run, run.stop)
            if run.out_of_steps():
                break
        _, stop_agreed = self._flush(run, block, epoch, stop_requested=run.stop.is_set())
        return stop_agreed

    @staticmethod
    def _compile_phase_read(run: _Run, kind: str, seconds: float, phase_ends: bool) -> None:
        """Count a read-back block of compiling or recording steps; emit its CompileFinished when the phase ends.
        A fallback to eager compiled (or recorded) nothing: no event then."""
        config, totals = run.config, run.totals
        if not run.session.compiled:
            return
        if kind == "compiling":  # the first step: forward + backward graphs (and the optimizer step)
            totals.compile_breakdown["train"] = seconds
            run.emit(CompileFinished(config.backend, config.mode, seconds, phase="train"))
        elif kind == "recording":
            totals.recording_seconds += seconds
            if phase_ends:
                totals.compile_breakdown["cudagraph recording"] = totals.recording_seconds
                run.emit(CompileFinished(config.backend, config.mode, totals.recording_seconds,
                                         phase="cudagraph recording"))

    def _take_requests(self, run: _Run, signals: RunSignals) -> None:
        """What the user asked for during the run (read at a read-back, so no block mixes kinds): a profile of the
        next steps."""
        steps = signals.take_profile_request()
        if not steps:
            return
        window = run.plan.profile
        if window is not None and window[1] > run.totals.steps:
            run.emit(Notice("info", f"already profiling steps {window[0]}–{window[1]}"))
            return
        if self.dist.active:  # the processes plan their read-backs alike; only rank 0 hears the request
            run.emit(Notice("warning", "a multi-process run cannot be profiled on request",
                            "set Profile steps before starting it"))
            return
        first = max(run.totals.steps + 1, run.plan.first_steady(run.session.compiled))
        if first > run.total_steps:
            run.emit(Notice("info", "not profiled: the run ends before another steady step"))
            return
        self._start_profile(run, (first, min(run.total_steps, first + steps - 1)))

    def _profile_read(self, run: _Run) -> None:
        """The profiled window is over: its report, after the Steps it covers."""
        profiler, run.profiler = run.profiler, None
        if profiler is None:
            return
        totals = run.totals
        steady_steps = totals.steady_samples / run.config.batch_size
        steady_step_s = totals.steady_seconds / steady_steps if steady_steps else None
        try:
            report = profiler.report(run.session.model, run.session.optimizer, steady_step_s)
        except Exception as exc:  # noqa: BLE001 - a profile that cannot be read must not cost the run
            run.emit(Notice("warning", f"the profile of steps {profiler.first}–{profiler.last} could not be built: "
                                       f"{type(exc).__name__}: {first_line(exc)}",
                            "this looks like a bug in Workbench or PyTorch; the run goes on"))
            return
        run.profile = report
        run.emit(report)

    def _step(self, run: _Run, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """One optimizer step (its loss and correct count still on the device); a compiled one may fall back to
        eager."""
        if run.session.compiled:  # only a compiled model can fail to compile (and fall back)
            return self._with_fallback(run, lambda s: train_step(s, x, y, run.config, run.device))
        return train_step(run.session, x, y, run.config, run.device)

    def _flush(self, run: _Run, block: _Block, epoch: int, stop_requested: bool = False) -> tuple[float, bool]:
        """Read a block of losses back from the device (one sync) and emit their Step events; only a block of steady
        steps counts toward the steady throughput. Returns the block's seconds and (multi-process only) whether any
        process was asked to stop. The block starts again, empty, its clock at the moment of the read-back: the time
        spent emitting events (and whatever listeners do with them) counts against throughput, as it should.

        The correct counts ride along with the losses (the same read-back, the same collective), and with several
        processes so do the stop flags: a rank asked to stop makes its flag's mean non-zero everywhere, so all ranks
        stop at the same step."""
        config, device, totals = run.config, run.device, run.totals
        ends, block_start = block.ends, block.start
        health = run.session.health
        n = len(block.losses)
        # fp16: each step's [scale, gradient norms…] rides along (unless a fallback cut the record short)
        health_rows = health[-n:] if health is not None and len(health) >= n > 0 else []
        if health is not None:
            health.clear()
        values = _stacked(block.losses, block.correct, device, health_rows)
        if self.dist.active:
            values = torch.cat([values, torch.tensor([1.0 if stop_requested else 0.0], device=device)])
        reduced = self.dist.mean(values).tolist()  # sync point; the global means
        reduced, stop_agreed = (reduced[:-1], reduced[-1] > 0) if self.dist.active else (reduced, False)
        losses = reduced[:n]
        width = len(run.session.params) + 1  # a step's record: its scale, then each gradient's norm
        rows = [reduced[2 * n + k * width:2 * n + (k + 1) * width] for k in range(n)] if health_rows else []
        scales = [row[0] for row in rows]
        bad_index = [amp.first_nonfinite(row[1:]) for row in rows]
        # Every process's share of every step is the same size (the shards and the epoch drop the remainder): the
        # mean count over that share is the global fraction.
        share = config.batch_size // self.dist.world_size
        accuracies = [count / share for count in reduced[n:2 * n]]
        measured_at = time.perf_counter()
        block.start, block.losses, block.correct, block.ends = measured_at, [], [], []
        if not losses:
            return 0.0, stop_agreed
        seconds = measured_at - block_start
        if device.type == "cpu":  # ops ran synchronously: the gaps between step ends are the step times
            step_seconds = [b - a for a, b in zip([block_start] + ends[:-1], ends)]
        else:  # queued asynchronously: only the block as a whole was timed
            step_seconds = [seconds / n] * n
        samples = n * config.batch_size  # the global batch: every process's share together
        compiling, warmup = block.kind == "compiling", block.kind in ("recording", "warmup")
        if block.kind == "steady":
            totals.steady_samples += samples
            totals.steady_seconds += seconds
        memory = devices.memory_mib(device)
        totals.peak_memory_mib = max(totals.peak_memory_mib, peak_mib(memory) or 0.0)
        first_step = totals.steps - n + 1
        if totals.first_loss is None:
            totals.first_loss = losses[0]
        for i, loss in enumerate(losses):
            if not math.isfinite(loss):
                raise Diverged(f"loss is {loss} at step {first_step + i} (epoch {epoch}, lr {config.lr:g})")
            if loss > DIVERGENCE_FACTOR * totals.first_loss:
                raise Diverged(f"loss exploded from {totals.first_loss:.3g} to {loss:.3g} at step {first_step + i} "
                               f"(epoch {epoch}, lr {config.lr:g})")
            totals.epoch_loss_sum += loss
            totals.epoch_steps += 1
            run.emit(Step(step=first_step + i, epoch=epoch, loss=loss, samples_per_s=samples / seconds,
                          step_seconds=step_seconds[i], memory=memory, compiling=compiling, warmup=warmup,
                          accuracy=accuracies[i], loss_scale=scales[i] if scales else None,
                          profiled=block.kind == "profiling"))
        if scales:
            self._amp_read(run, first_step, scales, bad_index)
        self._emit_gathered(run)  # after the steps they happened in: the timeline has their x by then
        return seconds, stop_agreed

    @staticmethod
    def _amp_read(run: _Run, first_step: int, scales: list[float], bad_index: list[int]) -> None:
        """fp16: the steps GradScaler skipped in a block just read back, each an AmpSkipped event."""
        names = [name for name, _ in run.session.model.named_parameters()]
        for skipped in amp.skipped_steps(first_step, scales, bad_index, run.amp_scale, names):
            run.amp_skipped.append(skipped)
            run.emit(skipped)
        run.amp_scale = scales[-1]

    @staticmethod
    def _emit_gathered(run: _Run) -> None:
        """What the compiler did and the system samples since the last read-back (both gathered off the events'
        thread, emitted on it)."""
        if run.sampler is not None:
            for sample in run.sampler.drain():
                run.system_samples.append(sample)
                run.emit(sample)
        if run.tracer is not None:
            for event in run.tracer.drain():
                if event.kind == "graph_break":  # its user frames serve the final report's breaks
                    run.timeline_breaks.setdefault(event.title.removeprefix("graph break: "), event)
                run.emit(event)

    def _validate(self, run: _Run, epoch: int) -> None:
        """The epoch's validation (the global figure, over every process's shard) and its EpochEnd."""
        totals = run.totals
        if run.tracer is not None:
            run.tracer.phase = "eval"
        val_started = time.perf_counter()
        val_loss, val_accuracy = self._with_fallback(
            run, lambda s: evaluate(s.model, run.val_batches, run.config, run.device, reduce=self.dist.sum))
        val_seconds = time.perf_counter() - val_started
        self._emit_gathered(run)
        if run.tracer is not None:
            run.tracer.phase = "train"
        if run.session.compiled and "eval" not in totals.compile_breakdown:
            # The eval phase's method: the whole first validation pass of a compiled model, nothing subtracted. It
            # is the first eval call, which compiles the eval graph (eval mode under no_grad is a graph of its own),
            # so there is no earlier compiled pass whose time could be subtracted; running the pass once is small
            # next to the compile. (A fallback to eager during it leaves the session uncompiled: nothing counted.)
            totals.compile_breakdown["eval"] = val_seconds
            run.emit(CompileFinished(run.config.backend, run.config.mode, val_seconds, phase="eval"))
        train_loss = totals.epoch_loss_sum / totals.epoch_steps
        totals.best_val_accuracy = max(totals.best_val_accuracy or 0.0, val_accuracy)
        totals.last_epoch = {"train_loss": train_loss, "val_loss": val_loss, "val_accuracy": val_accuracy}
        run.emit(EpochEnd(epoch=epoch, train_loss=train_loss, val_loss=val_loss, val_accuracy=val_accuracy,
                          seconds=time.perf_counter() - run.started, val_seconds=val_seconds,
                          val_samples=len(run.val_split)))
        totals.epochs_ended += 1

    # -- compile failures ---------------------------------------------------------------------------------------
    def _with_fallback(self, run: _Run, action: Callable[[_Session], T]) -> T:
        """Run `action` on the session; if the compiled model fails to compile, fail the run or (if allowed) go
        eager, loudly: the run's session becomes an eager copy and `action` runs again on it."""
        try:
            return action(run.session)
        except Exception as exc:
            if not run.session.compiled or not _is_compile_error(exc):
                raise
            reason = _compile_error_text(exc)
            report = run.report
            if run.config.fullgraph and report is not None and report.breaks:
                where = report.breaks[0]
                source = f" `{where.frames[-1].source}`" if where.frames else ""
                raise CompileFailure(
                    f"fullgraph is on but the model has {report.graph_break_count} graph break(s); the first is at "
                    f"{where.where}{source}: {where.reason.splitlines()[0]}",
                    "remove the break from forward(), or turn fullgraph off to run that part eagerly") from None
            self._compile_failed(run, reason)
            run.session = self._eager_copy(run)
            run.warnings.append(f"fell back to eager: {reason}")
            self._emit_gathered(run)  # what the compiler did before it failed
            tracer = run.tracer
            run.emit(CompileEvent(step=tracer.step if tracer else run.totals.steps + 1, kind="fallback",
                                  title="compile failed: the run went on in eager mode", detail=reason,
                                  phase=tracer.phase if tracer else "train"))
            return action(run.session)

    def _compile_failed(self, run: _Run, reason: str) -> None:
        config = run.config
        if not config.allow_eager_fallback:
            raise CompileFailure(f"{config.backend} compile failed: {reason}",
                                 "choose another backend (aot_eager or eager), or allow falling back to eager")
        run.emit(Notice("warning", f"{config.backend} compile failed, continuing in eager mode: {reason}",
                        "the run is slower than a compiled one; the Compile panel has the details"))

    def _eager_copy(self, run: _Run) -> _Session:
        """A fresh, uncompiled model with the same weights and optimizer state: nothing learned is lost."""
        session = run.session
        device = next(session.model.parameters()).device
        model = model_for(run.config, run.output_dim).to(device)
        model.load_state_dict(session.model.state_dict())
        return self._session(run, model, compiled=False, carried=session)

    # -- the end ------------------------------------------------------------------------------------------------
    def _finish(self, run: _Run) -> RunFinished:
        """The final compile report, the run's figures, the payback, the checkpoint, and RunFinished."""
        payback = self._payback(run) if run.report is not None else None
        if run.sampler is not None:
            run.sampler.finish()
        self._emit_gathered(run)
        if run.report is not None:
            run.emit(self._final_report(run))
        metrics = self._metrics(run)
        if run.system_samples:
            metrics["system"] = system_summary(run.system_samples)
        if run.sampler is not None and run.sampler.gpu_problem:
            metrics["system_gpu_problem"] = run.sampler.gpu_problem
        if run.amp_report is not None:
            metrics["amp"] = amp.amp_summary(run.config.amp, run.amp_report.recommendation, run.amp_report.census,
                                             run.amp_skipped, run.amp_scale if run.session.scaler else None,
                                             run.totals.steps)
        if run.profile is not None:
            metrics["profile"] = profile_metrics(run.profile)
        if isinstance(payback, Payback):
            metrics["payback"] = payback.to_dict()
        elif payback:
            metrics["payback_problem"] = payback
        if run.report is not None and run.session.compiled:
            metrics["recompile_forecast"] = self._forecast_checked(run)
        if run.tracer is not None and run.tracer.trace_dir is not None:
            index, problem = render_trace(run.tracer.trace_dir)
            metrics["compile_trace"] = str(index or run.tracer.trace_dir)
            if problem:
                metrics["compile_trace_problem"] = problem
                run.emit(Notice("warning" if index is None and "tlparse" in problem else "info",
                                f"compile trace recorded in {run.tracer.trace_dir}; {problem}"))
        if self.dist.active:  # DDP keeps replicas identical; check it rather than assume it
            metrics["replica_checksums"] = self.dist.gather(weights_checksum(run.session.model))
            if len(set(metrics["replica_checksums"])) > 1:
                run.emit(Notice("warning", "the model replicas of the processes ended with different weights",
                                "this should not happen with DDP; please report it with the run's events"))
        if self.save_checkpoint is not None and self.dist.is_main and run.totals.steps > 0:
            self._save(run, metrics)
        finished = RunFinished(steps=run.totals.steps, epochs=metrics["epochs_completed"],
                               seconds=time.perf_counter() - run.started, stopped=run.stopped, metrics=metrics)
        run.emit(finished)
        return finished

    # -- payback ------------------------------------------------------------------------------------------------
    def _payback(self, run: _Run) -> Payback | str:
        """Compiled against eager step time, measured side by side in this process after training (METHOD in
        ground.payback), with the run's compile seconds: whether compiling paid for itself. The calibration's steps
        train copies of nothing: the weights, optimizer, schedule, scaler and random state are put back after it,
        and none of it reaches the run's own figures. A string: why it was not measured."""
        totals = run.totals
        if not self.payback:
            return "not measured: not asked for"
        if not run.session.compiled:
            return "not measured: the run fell back to eager"
        if self.dist.active:
            return "not measured: a multi-process run (measure it with one process)"
        if run.stopped:
            return "not measured: the run was stopped"
        steady_steps = totals.steady_samples / run.config.batch_size
        if steady_steps < 1:
            return "not measured: the run took no steady steps"
        low, high = PAYBACK_BLOCK_STEPS
        block = min(high, max(low, round(PAYBACK_BLOCK_SECONDS / (totals.steady_seconds / steady_steps))))
        batches = list(itertools.islice(itertools.cycle(run.batches.epoch(0)), block))
        session, state = run.session, _training_state(run.session)
        health, session.health = session.health, None  # the calibration's steps are no steps of the run
        session.model.train()
        times: dict[str, list[float]] = {"compiled": [], "eager": []}
        try:
            with torch.random.fork_rng(devices=[run.device] if run.device.type == "cuda" else []):
                self._timed_block(run, batches, eager=True)  # eager's own first-call costs stay out of its figure
                for round_ in range(PAYBACK_ROUNDS):
                    for eager in ((False, True) if round_ % 2 == 0 else (True, False)):
                        times["eager" if eager else "compiled"].append(self._timed_block(run, batches, eager))
        finally:
            _restore_training_state(session, state)
            session.health = health
        return Payback(eager_step_s=statistics.median(times["eager"]),
                       compiled_step_s=statistics.median(times["compiled"]), compile_s=totals.compile_seconds,
                       steps=totals.steps, method=PAYBACK_METHOD.format(rounds=PAYBACK_ROUNDS, block=block))

    def _forecast_checked(self, run: _Run) -> list[dict]:
        """The recompile forecast for this run's config and data, held against the recompiles it really hit."""
        forecasts = forecast_recompiles(run.config, run.train_size, len(run.val_split), self.dist.world_size,
                                        rank=self.dist.rank)
        return [check_as_dict(check) for check in check_forecast(forecasts, run.log.recompiles())]

    @staticmethod
    def _timed_block(run: _Run, batches: list, eager: bool) -> float:
        """Seconds per step of `batches` trained compiled or (force_eager: Dynamo steps aside) eagerly, to a sync."""
        stance = torch.compiler.set_stance("force_eager") if eager else contextlib.nullcontext()
        with stance:
            start = time.perf_counter()
            loss = None
            for x, y in batches:
                loss, _ = train_step(run.session, x, y, run.config, run.device)
            if loss is not None:
                loss.item()  # the device's queue done: asynchronous CUDA steps are timed whole
            return (time.perf_counter() - start) / len(batches)

    @staticmethod
    def _metrics(run: _Run) -> dict:
        totals, config = run.totals, run.config
        return {
            **totals.last_epoch,
            "best_val_accuracy": totals.best_val_accuracy,
            "samples_per_s": totals.steady_samples / totals.steady_seconds if totals.steady_seconds else 0.0,
            "compile_seconds": totals.compile_seconds,  # every phase: the sum of compile_breakdown
            "compile_breakdown": dict(totals.compile_breakdown),  # seconds by CompileFinished.phase
            "peak_memory_mib": totals.peak_memory_mib,
            "backend_used": config.backend if run.session.compiled else "eager",
            "epochs_completed": totals.epochs_ended,
        }

    def _save(self, run: _Run, metrics: dict) -> None:
        """Hand the trained model to save_checkpoint; where it went becomes metrics["checkpoint"], or why it could
        not be written metrics["checkpoint_error"] (the run still finishes; the CLI makes it an error exit)."""
        trained = TrainedModel(model=run.session.model, config=run.config, metrics=metrics, classes=run.classes,
                               versions=devices.versions(), training_state=self._training_snapshot(run))
        try:
            metrics["checkpoint"] = str(self.save_checkpoint(trained))
        except checkpoint.CheckpointWriteError as exc:  # the run itself finished: report it, keep its figures
            metrics["checkpoint_error"] = str(exc)
            run.emit(Notice("error", str(exc), exc.hint))

    @staticmethod
    def _training_snapshot(run: _Run) -> dict:
        """What continuing this run needs besides its weights (checkpoint.training_state; see _resume). Taken at
        the end: nothing after the last step draws from the random streams (the payback calibration forks them)."""
        session, totals = run.session, run.totals
        epoch, done, loss_sum = run.epoch, totals.epoch_steps, totals.epoch_loss_sum
        if done >= len(run.batches):  # the epoch's steps are all trained: continuing starts the next one
            epoch, done, loss_sum = epoch + 1, 0, 0.0
        cuda = run.device.type == "cuda"
        return {"step": totals.steps, "epoch": epoch, "epoch_step": done, "epoch_loss_sum": loss_sum,
                "epochs_ended": totals.epochs_ended, "best_val_accuracy": totals.best_val_accuracy,
                "first_loss": totals.first_loss, "optimizer": session.optimizer.state_dict(),
                "scheduler": session.scheduler.state_dict() if session.scheduler is not None else None,
                "scaler": session.scaler.state_dict() if session.scaler is not None else None,
                "rng": {"cpu": torch.get_rng_state(), "cuda": torch.cuda.get_rng_state(run.device) if cuda else None}}

    @staticmethod
    def _final_report(run: _Run) -> CompileReport:
        report, log, session = run.report, run.log, run.session
        warnings = list(report.warnings) + run.warnings
        skips = log.cudagraph_skips()
        if skips:
            warnings.append(f"CUDA graphs were skipped {skips} time(s): those graphs ran without CUDA graphs")
        known = {b.reason.splitlines()[0] for b in report.breaks if b.reason}
        # Breaks only the run met (Dynamo's counters keep no stack): the timeline's record of them has the frames.
        extra = tuple(GraphBreak(reason=reason, frames=_frames_of(run, reason.splitlines()[0]))
                      for reason in log.break_reasons() if reason.splitlines()[0] not in known)
        breaks = report.breaks + extra
        return CompileReport(
            compiled=session.compiled and report.compiled, backend=report.backend, mode=report.mode,
            graph_count=max(report.graph_count, log.graph_count() if session.compiled else 0),
            graph_break_count=max(report.graph_break_count, len(breaks)), breaks=breaks,
            op_count=report.op_count, compile_seconds=run.totals.compile_seconds, recompiles=log.recompiles(),
            warnings=tuple(warnings), source="run")


# -- step functions (module level: the benchmark times exactly these; autocast_context is domain.evaluate's) ---
def make_optimizer(params, config: TrainConfig, device_type: str) -> torch.optim.Optimizer:
    """The run's optimizer. On CUDA the fused implementation: one kernel for the whole update, and under a
    GradScaler (fp16) it reads the scaler's found_inf on the device, where a non-fused step calls found_inf.item(),
    a host sync every step (pytorch/pytorch#80167). Not on the CPU: fused CPU kernels are recent (absent from
    older torch versions the project allows) and no faster there than the default foreach path."""
    fused = {"fused": True} if device_type == "cuda" else {}
    if config.optimizer == "adamw":
        return torch.optim.AdamW(params, lr=config.lr, weight_decay=config.weight_decay, **fused)
    return torch.optim.SGD(params, lr=config.lr, momentum=0.9, weight_decay=config.weight_decay, **fused)


def lr_schedule(optimizer: torch.optim.Optimizer, config: TrainConfig,
                total_steps: int) -> torch.optim.lr_scheduler.LRScheduler | None:
    """Cosine decay to zero over the planned steps, after a short linear warm-up (5%)."""
    if config.lr_schedule == "constant":
        return None
    warmup = max(1, total_steps // 20)

    def factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        progress = min(1.0, (step - warmup) / max(1, total_steps - warmup))
        return 0.5 * (1.0 + math.cos(math.pi * progress))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


def train_step(session: _Session, x: torch.Tensor, y: torch.Tensor, config: TrainConfig,
               device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """One optimizer step: its loss and its count of right predictions, both still on the device. Backward and the
    optimizer stay outside the compiled region and outside autocast. The count is taken from the logits at once,
    before anything else runs the model: under CUDA graphs the next replay overwrites the graph's outputs."""
    with session.autocast:
        logits = session.train_model(x)
        loss = F.cross_entropy(logits, y)
    correct = (logits.detach().argmax(-1) == y).sum()
    if session.scaler is not None:
        session.scaler.scale(loss).backward()
        norms = amp.grad_norms(session.params, session.zero) if session.health is not None else None
        session.scaler.step(session.optimizer)
        session.scaler.update()
        if norms is not None:
            session.health.append(amp.step_record(session.scaler, norms))
    else:
        loss.backward()
        session.optimizer.step()
    session.optimizer.zero_grad(set_to_none=True)
    if session.scheduler is not None:
        session.scheduler.step()
    return loss.detach(), correct


# -- helpers ----------------------------------------------------------------------------------------------------
def _frames_of(run: _Run, break_type: str) -> tuple:
    event = run.timeline_breaks.get(break_type)
    return event.frames if event is not None else ()


def _training_state(session: _Session) -> dict:
    """Copies of everything a training step changes: weights, optimizer, schedule, scaler."""
    return {"model": {k: v.detach().clone() for k, v in session.model.state_dict().items()},
            "optimizer": copy.deepcopy(session.optimizer.state_dict()),
            "scheduler": session.scheduler.state_dict() if session.scheduler is not None else None,
            "scaler": session.scaler.state_dict() if session.scaler is not None else None}


def _restore_training_state(session: _Session, state: dict) -> None:
    """Put `_training_state`'s copies back, in place (CUDA graphs keep the parameters' addresses)."""
    with torch.no_grad():
        for name, value in session.model.state_dict().items():
            value.copy_(state["model"][name])
    session.optimizer.load_state_dict(state["optimizer"])
    if session.scheduler is not None:
        session.scheduler.load_state_dict(state["scheduler"])
    if session.scaler is not None:
        session.scaler.load_state_dict(state["scaler"])


def _stacked(losses: list[torch.Tensor], counts: list[torch.Tensor], device: torch.device,
             health: list[torch.Tensor] = ()) -> torch.Tensor:
    """A block's losses, then its correct counts, then (fp16) each step's [scale, gradient norms…], as one float
    vector on the device: one read-back for all, and a few kernels per block rather than a cast per step."""
    if not losses:
        return torch.zeros(0, device=device)
    parts = [torch.stack(losses).float(), torch.stack(counts).float()]
    if health:
        parts.append(torch.stack(health).flatten())
    return torch.cat(parts)


def rank_seed(seed: int, rank: int) -> int:
    """The seed of a rank's training stream (dropout) once the shared-seed model is built: its own per rank."""
    return seed + rank


def cudagraph_thread_notice(config: TrainConfig) -> Notice | None:
    """A warning for a CUDA-graph run trained on a thread other than the main one (an in-process run: the app's
    kernel trains on its main thread) with a torch that asserts there (pytorch/pytorch#123177)."""
    if not (config.compiled and uses_cuda_graphs(config.to_dict())):
        return None
    if threading.current_thread() is threading.main_thread():
        return None
    found = re.match(r"(\d+)\.(\d+)", str(torch.__version__))
    if found is None or (int(found[1]), int(found[2])) >= CUDAGRAPH_THREADS_FIXED:
        return None
    fixed = ".".join(map(str, CUDAGRAPH_THREADS_FIXED))
    return Notice("warning", f"CUDA graphs ({config.backend}"
                             f"{' · ' + config.mode if config.backend == 'inductor' else ''}) on a worker thread: "
                             f"torch {torch.__version__} may fail with an AssertionError in cudagraph_trees "
                             f"(pytorch/pytorch#123177, fixed in torch {fixed})",
                  f"upgrade to torch ≥ {fixed}, train in a run process (the app's default), or choose a mode "
                  f"without CUDA graphs (default, max-autotune-no-cudagraphs)")


def _configure_dynamo() -> None:
    """Dynamo's config is thread-local (torch ≥ 2.12): set it on the thread that compiles, i.e. here."""
    import torch._dynamo.config as dynamo_config

    dynamo_config.suppress_errors = False  # a failed compile must surface, never silently run eager
    dynamo_config.recompile_limit = 16  # train + eval shapes and modes, with room to spare


def _is_compile_error(exc: BaseException) -> bool:
    module = type(exc).__module__ or ""
    return module.startswith(("torch._dynamo", "torch._inductor", "torch.fx", "torch._subclasses")) or \
        "BackendCompilerFailed" in type(exc).__name__


def _compile_error_text(exc: BaseException) -> str:
    text = first_line(exc)
    if "cpp" in text.lower() or "c++" in text.lower() or "compiler" in text.lower():
        text += " (Inductor on the CPU needs a working C++ compiler, e.g. g++)"
    return text


def _empty_report(config: TrainConfig, warning: str) -> CompileReport:
    return CompileReport(compiled=False, backend=config.backend, mode=config.mode, warnings=(warning,))

