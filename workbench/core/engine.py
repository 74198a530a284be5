"""The training engine: one run = a config in, a stream of events out.

`Trainer().run(config, emit, stop)` trains on the calling thread, which thereby owns every compile and every call
of the compiled model (Dynamo is not thread-safe, its config is thread-local, and CUDA graph trees live in
thread-local state). It knows nothing about who listens: the GUI worker, the CLI and the DDP launcher all pass an
`emit` callable. Losses are read back from the device in blocks (`.item()` per step would be a sync per step), so
per-step figures in a block share the block's timing.
"""

from __future__ import annotations

import contextlib
import gc
import math
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Protocol

import torch
import torch._dynamo
from torch import nn
from torch.nn import functional as F

from . import checkpoint, devices
from .config import ConfigError, TrainConfig
from .data import DataError, DeviceBatches, Split, classes_of, load_splits
from .distributed import Distributed, weights_checksum
from .errors import WorkbenchError, first_line
from .events import (CompileFinished, CompileReport, CompileStarted, Emit, EpochEnd, GraphBreak, Notice,
                     RunFailed, RunFinished, RunStarted, Step)
from .inspect import RunCompileLog, explain_model
from .model import check_outputs, model_for

FLUSH_SECONDS = 0.05  # how often losses are read back from the device (and Step events go out)
DIST_FLUSH_STEPS = 10  # multi-process: read back every N steps, the same step on every rank (a collective)
EVAL_BATCH = 1024
DIVERGENCE_FACTOR = 100.0  # a step loss this many times the first step's loss means the run has blown up


class StopFlag(Protocol):
    def is_set(self) -> bool: ...


class CompileFailure(WorkbenchError):
    kind = "compile"


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


@dataclass
class _Totals:
    steps: int = 0
    steady_samples: int = 0
    steady_seconds: float = 0.0
    compile_seconds: float = 0.0
    epoch_loss_sum: float = 0.0
    epoch_steps: int = 0
    best_val_accuracy: float | None = None  # None until an epoch has been validated
    first_loss: float | None = None
    epochs_ended: int = 0  # epochs that were validated (EpochEnd emitted); a max_steps cut may end one early
    last_epoch: dict = field(default_factory=dict)
    peak_memory_mib: float = 0.0


class Diverged(Exception):
    pass


class Trainer:
    def __init__(self, out_dir: str | Path | None = None, *, flush_seconds: float = FLUSH_SECONDS,
                 distributed: Distributed | None = None):
        self.out_dir = Path(out_dir) if out_dir else None
        self.flush_seconds = flush_seconds
        self.dist = distributed or Distributed()

    # -- the run ------------------------------------------------------------------------------------------------
    def run(self, config: TrainConfig, emit: Emit, stop: StopFlag | None = None) -> RunFinished | RunFailed:
        """Train to the end, to a stop, or to a failure. Always emits exactly one RunFinished or RunFailed."""
        stop = stop or threading.Event()
        started = time.perf_counter()
        # The step loop creates small objects (events) all the time; without this, Python's full collections keep
        # re-walking every long-lived object of torch and the app (measured: ~3% of eager throughput on a CPU).
        gc.collect()
        gc.freeze()
        try:
            return self._run(config, emit, stop, started)
        except WorkbenchError as exc:
            return self._fail(emit, RunFailed(kind=exc.kind, message=str(exc), hint=exc.hint))
        except Diverged as exc:
            return self._fail(emit, RunFailed(kind="diverged", message=str(exc), hint=(
                "the loss blew up: lower the learning rate (try 10× smaller), or turn AMP off")))
        except torch.OutOfMemoryError as exc:
            return self._fail(emit, RunFailed(kind="out_of_memory", message=first_line(exc), hint=(
                "lower the batch size or the hidden size, or use bf16")))
        except Exception as exc:  # a bug or an unexpected framework error: still one clean event, not a crash
            return self._fail(emit, RunFailed(
                kind="internal", message=f"{type(exc).__name__}: {first_line(exc)}",
                hint="this looks like a bug in Workbench or PyTorch; the log has details"))
        finally:
            gc.unfreeze()

    @staticmethod
    def _fail(emit: Emit, event: RunFailed) -> RunFailed:
        emit(event)
        return event

    def _run(self, config: TrainConfig, emit: Emit, stop: StopFlag, started: float) -> RunFinished:
        config.check_runnable(devices.cuda_available())
        device = devices.resolve_device(config.device)
        if device.type == "cuda":
            torch.cuda.set_device(device)
            torch.cuda.reset_peak_memory_stats(device)
        train_split, val_split = load_splits(config.dataset, config.data_root)
        classes = classes_of(config.dataset, config.data_root)
        _configure_dynamo()

        torch.manual_seed(config.seed)  # same seed on every rank: identical initial weights and batch order
        world = self.dist.world_size
        if config.batch_size % world:
            raise ConfigError("batch_size", f"{config.batch_size} (the global batch) does not split evenly over "
                                            f"{world} processes", f"a multiple of {world}")
        batches = DeviceBatches(train_split, config.batch_size // world, device, seed=config.seed,
                                rank=self.dist.rank, world_size=world)
        if len(batches) == 0:
            raise ConfigError("batch_size", f"{config.batch_size} is larger than the {len(train_split)} "
                                            f"training images", f"1 to {len(train_split)}")
        total_steps = len(batches) * config.epochs
        if config.max_steps:
            total_steps = min(total_steps, config.max_steps)
        emit(RunStarted(config=config.to_dict(), device=str(device), device_name=devices.device_name(device),
                        versions=devices.versions(), train_size=len(train_split), val_size=len(val_split),
                        steps_per_epoch=len(batches), total_steps=total_steps, world_size=world))

        self._output_dim = len(classes)
        self._total_steps = total_steps
        self._warnings: list[str] = []
        model = model_for(config, self._output_dim).to(device)
        example = next(batches.epoch(0))[0]
        check_outputs(model, example, self._output_dim)
        report, session = self._prepare(config, model, device, example, emit)
        log = RunCompileLog()
        totals = _Totals()
        val_batches = DeviceBatches(val_split, EVAL_BATCH, device, shuffle=False, drop_last=False,
                                    rank=self.dist.rank, world_size=world)
        stopped = False
        for epoch in range(1, config.epochs + 1):
            session, stopped = self._train_epoch(config, session, batches, epoch, emit, stop, totals, report,
                                                 device)
            if stopped:
                break
            val_started = time.perf_counter()
            session, metrics = self._with_fallback(config, session, report, emit,
                                                   lambda s: evaluate(s.model, val_batches, config, device,
                                                                      reduce=self.dist.sum))
            val_seconds = time.perf_counter() - val_started
            val_loss, val_accuracy = metrics
            train_loss = totals.epoch_loss_sum / totals.epoch_steps
            totals.best_val_accuracy = max(totals.best_val_accuracy or 0.0, val_accuracy)
            totals.last_epoch = {"train_loss": train_loss, "val_loss": val_loss, "val_accuracy": val_accuracy}
            emit(EpochEnd(epoch=epoch, train_loss=train_loss, val_loss=val_loss, val_accuracy=val_accuracy,
                          seconds=time.perf_counter() - started, val_seconds=val_seconds,
                          val_samples=len(val_split)))
            totals.epochs_ended += 1
            if config.max_steps and totals.steps >= config.max_steps:
                break

        if report is not None:
            emit(self._final_report(report, log, totals, session))
        metrics = {
            **totals.last_epoch,
            "best_val_accuracy": totals.best_val_accuracy,
            "samples_per_s": totals.steady_samples / totals.steady_seconds if totals.steady_seconds else 0.0,
            "compile_seconds": totals.compile_seconds,
            "peak_memory_mib": totals.peak_memory_mib,
            "backend_used": config.backend if session.compiled else "eager",
            "epochs_completed": totals.epochs_ended,
        }
        if self.dist.active:  # DDP keeps replicas identical; check it rather than assume it
            metrics["replica_checksums"] = self.dist.gather(weights_checksum(session.model))
            if len(set(metrics["replica_checksums"])) > 1:
                emit(Notice("warning", "the model replicas of the processes ended with different weights",
                            "this should not happen with DDP; please report it with the run's events"))
        if self.out_dir is not None and self.dist.is_main and totals.steps > 0:
            try:
                metrics["checkpoint"] = str(checkpoint.save(
                    self.out_dir / "checkpoint.pt", session.model, config, metrics=metrics,
                    versions=devices.versions(), classes=classes))
            except checkpoint.CheckpointWriteError as exc:  # the run itself finished: report it, keep its figures
                emit(Notice("error", str(exc), exc.hint))
        finished = RunFinished(steps=totals.steps, epochs=metrics["epochs_completed"],
                               seconds=time.perf_counter() - started, stopped=stopped, metrics=metrics)
        emit(finished)
        return finished

    # -- setup --------------------------------------------------------------------------------------------------
    def _prepare(self, config: TrainConfig, model: nn.Module, device: torch.device, example: torch.Tensor,
                 emit: Emit) -> tuple[CompileReport | None, _Session]:
        """Explain (before anything is compiled: explain resets Dynamo), then compile in place."""
        if not config.compiled:
            return None, self._session(config, model, compiled=False)
        problem = devices.backend_problem(config.backend, device)
        if problem:
            self._compile_failed(config, emit, problem)
            return _empty_report(config, problem), self._session(config, model, compiled=False)
        try:
            with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
                report = explain_model(model, example, config)  # must not shift the run's random stream
        except Exception as exc:  # an untraceable model is itself a finding: report it, let compile decide
            report = _empty_report(config, f"explain failed: {first_line(exc)}")
        torch._dynamo.reset()  # start the real compile from a clean slate, not from explain's traces
        emit(report)  # the Compile panel can show the breaks before the first step compiles
        if report.graph_break_count and not config.fullgraph:
            first = report.breaks[0] if report.breaks else None
            where = f" at {first.where}" if first else ""
            emit(Notice("warning", f"{report.graph_break_count} graph break(s){where}: those parts run eagerly",
                        "the Compile panel lists each break with its source line"))
        # The model is compiled in place, so state_dict() keys carry no '_orig_mod.' prefix.
        model.compile(backend=config.backend, fullgraph=config.fullgraph, dynamic=config.dynamic,
                      **({"mode": config.mode} if config.backend == "inductor" else {}))
        return report, self._session(config, model, compiled=True)

    def _session(self, config: TrainConfig, model: nn.Module, *, compiled: bool,
                 carried: _Session | None = None) -> _Session:
        """Optimizer, schedule and scaler for `model`; with `carried`, continuing from that session's state."""
        if config.optimizer == "adamw":
            optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
        else:
            optimizer = torch.optim.SGD(model.parameters(), lr=config.lr, momentum=0.9,
                                        weight_decay=config.weight_decay)
        # The schedule first: building LambdaLR sets the learning rate to the first step's, which the carried
        # optimizer state (its learning rate included) must then overwrite.
        scheduler = lr_schedule(optimizer, config, self._total_steps)
        device = next(model.parameters()).device
        scaler = torch.amp.GradScaler(device.type) if config.amp == "fp16" else None
        if carried is not None:
            optimizer.load_state_dict(carried.optimizer.state_dict())
            if scheduler is not None and carried.scheduler is not None:
                scheduler.load_state_dict(carried.scheduler.state_dict())
            if scaler is not None and carried.scaler is not None:
                scaler.load_state_dict(carried.scaler.state_dict())
        return _Session(model=model, train_model=self.dist.wrap(model), optimizer=optimizer, scaler=scaler,
                        compiled=compiled, scheduler=scheduler, autocast=autocast_context(config, device))

    # -- training -----------------------------------------------------------------------------------------------
    def _train_epoch(self, config: TrainConfig, session: _Session, batches: DeviceBatches, epoch: int, emit: Emit,
                     stop: StopFlag, totals: _Totals, report: CompileReport | None,
                     device: torch.device) -> tuple[_Session, bool]:
        session.model.train()
        totals.epoch_loss_sum, totals.epoch_steps = 0.0, 0
        pending: list[torch.Tensor] = []
        ends: list[float] = []  # when each pending step returned (exact step times on the synchronous CPU)
        block_start = time.perf_counter()
        # One process checks the stop flag before every step. Several must stop at the same step or DDP would
        # wait forever for the ones that stopped: they agree (a collective) at each read-back instead.
        together = self.dist.active
        for x, y in batches.epoch(epoch):
            if not together and stop.is_set():
                self._flush(pending, ends, block_start, config, epoch, emit, totals, device, compiling=False)
                return session, True
            # The first step of a compiled model compiles it; it stays off the throughput figures even when the
            # compile fails and the step is retried eagerly (the failed attempt's time is in it).
            compiling = session.compiled and totals.steps == 0
            if compiling:
                emit(CompileStarted(config.backend, config.mode))
            if session.compiled:  # only a compiled model can fail to compile (and fall back)
                session, loss = self._with_fallback(config, session, report, emit,
                                                    lambda s: train_step(s, x, y, config, device))
            else:
                loss = train_step(session, x, y, config, device)
            pending.append(loss)
            ends.append(time.perf_counter())
            totals.steps += 1
            due = len(pending) >= DIST_FLUSH_STEPS if together else ends[-1] - block_start >= self.flush_seconds
            if compiling or due:
                seconds, measured_at, stop_agreed = self._flush(pending, ends, block_start, config, epoch, emit,
                                                                totals, device, compiling, stop.is_set())
                if compiling and session.compiled:  # a fallback to eager compiled nothing
                    totals.compile_seconds = seconds
                    emit(CompileFinished(config.backend, config.mode, seconds))
                # The next block's clock starts where this one's stopped: the time spent emitting events (and
                # whatever listeners do with them) counts against throughput, as it should.
                pending, ends, block_start = [], [], measured_at
                if stop_agreed:
                    return session, True
            if config.max_steps and totals.steps >= config.max_steps:
                break
        _, _, stop_agreed = self._flush(pending, ends, block_start, config, epoch, emit, totals, device,
                                        compiling=False, stop_requested=stop.is_set())
        return session, stop_agreed

    def _flush(self, pending: list[torch.Tensor], ends: list[float], block_start: float, config: TrainConfig,
               epoch: int, emit: Emit, totals: _Totals, device: torch.device, compiling: bool,
               stop_requested: bool = False) -> tuple[float, float, bool]:
        """Read a block of losses back from the device (one sync) and emit their Step events. Returns the block's
        seconds, the moment they were measured, and (multi-process only) whether any process was asked to stop.

        With several processes the stop flags ride along in the losses' all_reduce (one collective per block):
        a rank asked to stop makes its flag's mean non-zero everywhere, so all ranks stop at the same step."""
        values = torch.stack(pending).float() if pending else torch.zeros(0, device=device)
        if self.dist.active:
            values = torch.cat([values, torch.tensor([1.0 if stop_requested else 0.0], device=device)])
        reduced = self.dist.mean(values).tolist()  # sync point; the global mean
        losses, stop_agreed = (reduced[:-1], reduced[-1] > 0) if self.dist.active else (reduced, False)
        measured_at = time.perf_counter()
        if not losses:
            return 0.0, measured_at, stop_agreed
        seconds = measured_at - block_start
        n = len(losses)
        if device.type == "cpu":  # ops ran synchronously: the gaps between step ends are the step times
            step_seconds = [b - a for a, b in zip([block_start] + ends[:-1], ends)]
        else:  # queued asynchronously: only the block as a whole was timed
            step_seconds = [seconds / n] * n
        samples = n * config.batch_size  # the global batch: every process's share together
        if not compiling:
            totals.steady_samples += samples
            totals.steady_seconds += seconds
        memory = devices.memory_mib(device)
        totals.peak_memory_mib = max(totals.peak_memory_mib, devices.peak_mib(memory) or 0.0)
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
            emit(Step(step=first_step + i, epoch=epoch, loss=loss, samples_per_s=samples / seconds,
                      step_seconds=step_seconds[i], memory=memory, compiling=compiling))
        return seconds, measured_at, stop_agreed

    def _with_fallback(self, config: TrainConfig, session: _Session, report: CompileReport | None, emit: Emit,
                       action: Callable[[_Session], object]):
        """Run `action`; if the compiled model fails to compile, fail the run or (if allowed) go eager, loudly."""
        try:
            return session, action(session)
        except Exception as exc:
            if not session.compiled or not _is_compile_error(exc):
                raise
            reason = _compile_error_text(exc)
            if config.fullgraph and report is not None and report.breaks:
                where = report.breaks[0]
                source = f" `{where.frames[-1].source}`" if where.frames else ""
                raise CompileFailure(
                    f"fullgraph is on but the model has {report.graph_break_count} graph break(s); the first is at "
                    f"{where.where}{source}: {where.reason.splitlines()[0]}",
                    "remove the break from forward(), or turn fullgraph off to run that part eagerly") from None
            self._compile_failed(config, emit, reason)
            session = self._eager_copy(config, session)
            self._warnings.append(f"fell back to eager: {reason}")
            return session, action(session)

    def _compile_failed(self, config: TrainConfig, emit: Emit, reason: str) -> None:
        if not config.allow_eager_fallback:
            raise CompileFailure(f"{config.backend} compile failed: {reason}",
                                 "choose another backend (aot_eager or eager), or allow falling back to eager")
        emit(Notice("warning", f"{config.backend} compile failed, continuing in eager mode: {reason}",
                    "the run is slower than a compiled one; the Compile panel has the details"))

    def _eager_copy(self, config: TrainConfig, session: _Session) -> _Session:
        """A fresh, uncompiled model with the same weights and optimizer state: nothing learned is lost."""
        device = next(session.model.parameters()).device
        model = model_for(config, self._output_dim).to(device)
        model.load_state_dict(session.model.state_dict())
        return self._session(config, model, compiled=False, carried=session)

    def _final_report(self, report: CompileReport, log: RunCompileLog, totals: _Totals,
                      session: _Session) -> CompileReport:
        warnings = list(report.warnings) + self._warnings
        skips = log.cudagraph_skips()
        if skips:
            warnings.append(f"CUDA graphs were skipped {skips} time(s): those graphs ran without CUDA graphs")
        known = {b.reason.splitlines()[0] for b in report.breaks if b.reason}
        extra = tuple(
            GraphBreak(reason=reason) for reason in log.break_reasons() if reason.splitlines()[0] not in known)
        breaks = report.breaks + extra
        return CompileReport(
            compiled=session.compiled and report.compiled, backend=report.backend, mode=report.mode,
            graph_count=max(report.graph_count, log.graph_count() if session.compiled else 0),
            graph_break_count=max(report.graph_break_count, len(breaks)), breaks=breaks,
            op_count=report.op_count, compile_seconds=totals.compile_seconds, recompiles=log.recompiles(),
            warnings=tuple(warnings), source="run")


# -- step functions (module level: the benchmark times exactly these) ------------------------------------------
def autocast_context(config: TrainConfig, device: torch.device):
    """Autocast for forward + loss only; nullcontext when AMP is off."""
    if config.amp == "off":
        return contextlib.nullcontext()
    dtype = torch.bfloat16 if config.amp == "bf16" else torch.float16
    return torch.autocast(device_type=device.type, dtype=dtype)


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
               device: torch.device) -> torch.Tensor:
    """One optimizer step. Backward and the optimizer stay outside the compiled region and outside autocast."""
    with session.autocast:
        loss = F.cross_entropy(session.train_model(x), y)
    if session.scaler is not None:
        session.scaler.scale(loss).backward()
        session.scaler.step(session.optimizer)
        session.scaler.update()
    else:
        loss.backward()
        session.optimizer.step()
    session.optimizer.zero_grad(set_to_none=True)
    if session.scheduler is not None:
        session.scheduler.step()
    return loss.detach()


def evaluate(model: nn.Module, batches: DeviceBatches, config: TrainConfig, device: torch.device,
             reduce: Callable[[torch.Tensor], torch.Tensor] | None = None) -> tuple[float, float]:
    """Mean loss and accuracy over a split; sums stay on the device until the end (one sync). With several
    processes each evaluates its shard and `reduce` sums the shards: the figure is the global one."""
    was_training = model.training
    model.eval()
    loss_sum = torch.zeros((), device=device)
    correct = torch.zeros((), device=device, dtype=torch.long)
    count = 0
    with torch.no_grad(), autocast_context(config, device):
        for x, y in batches.epoch(0):
            logits = model(x)
            loss_sum += F.cross_entropy(logits.float(), y, reduction="sum")
            correct += (logits.argmax(dim=-1) == y).sum()
            count += y.numel()
    model.train(was_training)
    sums = torch.stack([loss_sum.float(), correct.float(), torch.tensor(float(count), device=device)])
    if reduce is not None:
        sums = reduce(sums)
    loss_total, correct_total, count_total = sums.tolist()
    return loss_total / max(count_total, 1), correct_total / max(count_total, 1)


@dataclass(frozen=True)
class SplitResult:
    """A model's answers on a whole split, on the CPU: what `workbench evaluate` and the report show."""

    loss: float
    accuracy: float
    probabilities: torch.Tensor  # (N, classes) float32
    labels: torch.Tensor  # (N,) int64

    @property
    def predictions(self) -> torch.Tensor:
        return self.probabilities.argmax(dim=-1)

    def confusion(self) -> torch.Tensor:
        """(classes × classes) counts; rows are the true class, columns the predicted one."""
        k = self.probabilities.shape[1]
        index = self.labels * k + self.predictions  # evaluate_split refuses labels outside 0…k-1
        return torch.bincount(index, minlength=k * k).reshape(k, k)


def evaluate_split(model: nn.Module, split: Split, config: TrainConfig, device: torch.device) -> SplitResult:
    """One pass over a whole split: loss, accuracy and every class probability. Labels the model has no output
    for (a dataset with more classes than it was trained on) are a DataError, not an index error in the loss."""
    batches = DeviceBatches(split, EVAL_BATCH, device, shuffle=False, drop_last=False)
    label_range = (int(split.labels.min()), int(split.labels.max())) if len(split) else (0, 0)
    was_training = model.training
    model.eval()
    loss_sum, probabilities = 0.0, []
    try:
        with torch.no_grad(), autocast_context(config, device):
            for x, y in batches.epoch(0):
                logits = model(x).float()
                if label_range[0] < 0 or label_range[1] >= logits.shape[-1]:
                    raise DataError(f"the split has labels {label_range[0]}…{label_range[1]} but the model has "
                                    f"{logits.shape[-1]} outputs (classes 0…{logits.shape[-1] - 1})",
                                    "evaluate on the dataset the model was trained on, or one with as many classes")
                loss_sum += F.cross_entropy(logits, y, reduction="sum").item()
                probabilities.append(logits.softmax(dim=-1).cpu())
    finally:
        model.train(was_training)
    probs = torch.cat(probabilities)
    labels = split.labels.cpu()
    accuracy = (probs.argmax(dim=-1) == labels).float().mean().item() if len(labels) else 0.0
    return SplitResult(loss=loss_sum / max(len(labels), 1), accuracy=accuracy, probabilities=probs, labels=labels)


# -- helpers ----------------------------------------------------------------------------------------------------
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

