"""The training loop: one run = a config in, a stream of events out.

`Trainer().run(config, emit, stop)` trains on the calling thread, which thereby owns every compile and every call
of the compiled model (Dynamo is not thread-safe, its config is thread-local, and CUDA graph trees live in
thread-local state). It knows nothing about who listens: the GUI worker, the CLI and the DDP launcher all pass an
`emit` callable; nor where a finished model goes: the caller's `save_checkpoint` decides. Losses are read back
from the device in blocks (`.item()` per step would be a sync per step), so per-step figures in a block share the
block's timing.

A run reads top to bottom in `Trainer._run`: `_start` (device, data, RunStarted), `_prepare` (model, explain,
compile), then per epoch `_train_epoch` and `_validate`, and `_finish` (final report, results, checkpoint,
RunFinished). What the loop measures beyond loss, accuracy, speed and compile time is done by its instruments
(instruments/: AMP health, profiler, system sampler, compile timeline, payback, resume, warm start, compile
stance), each called at its moments and each adding its own section to the run's results.

Steady throughput counts only steady steps: a compiling first step and, on CUDA, the warm-up steps (`WarmupPlan`)
are read back in blocks of their own and kept off it. Compile time counts every phase that compiles or records
(`CompileFinished.phase`): the first step, the first validation, and the CUDA-graph recording steps.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import itertools
import math
import os
import threading
import time
import traceback
import warnings
from dataclasses import dataclass
from typing import Callable

import torch
from torch import nn

from ..domain import checkpoint, devices
from ..domain.data import DeviceBatches, classes_of, load_splits
from ..domain.distributed import Distributed, weights_checksum
from ..domain.evaluate import evaluate
from ..domain.compile_explain import RunCompileLog
from ..domain.model import check_outputs, model_for
from ..ground.alerts import EXPLODED_FACTOR, divergence_hint
from ..ground.config import EVAL_BATCH, ConfigError, TrainConfig, split_model_spec
from ..ground.errors import WorkbenchError, first_line
from ..ground.events import (CompileFinished, CompileStarted, Emit, EpochEnd, Notice, RunFailed, RunFinished,
                             RunStarted, Step, Versions)
from ..ground.forecast import check_forecast, forecast_recompiles
from ..ground.results import RunResults
from ..ground.signals import RunSignals
from . import compiling, steps
from .instruments.base import Instrument
from .instruments.resume import Resume, training_snapshot
from .instruments.standard import Instruments, standard_instruments
from .plan import cudagraph_thread_notice, warmup_plan
from .state import Block, Diverged, ReadBack, RunState, StopFlag
from .steps import Session

FLUSH_SECONDS = 0.05  # how often losses are read back from the device (and Step events go out)
DIST_FLUSH_STEPS = 10  # multi-process: read back every N steps, the same step on every rank (a collective)

# An fp16 step whose gradients overflow is skipped by GradScaler (AmpSkipped says so, with the step and the
# gradient); the schedule steps on regardless, which torch then mistakes for a wrong call order.
warnings.filterwarnings("ignore", message=r"Detected call of `lr_scheduler\.step\(\)` before `optimizer\.step\(\)`",
                        category=UserWarning)


@dataclass(frozen=True)
class TrainedModel:
    """What a finished run hands to `save_checkpoint`: the weights and what it takes to rebuild and judge them."""

    model: nn.Module  # the trained module (compiled in place when a backend was used: no '_orig_mod.' keys)
    config: TrainConfig
    results: RunResults  # the run's final figures
    classes: tuple[str, ...]
    versions: dict  # the library versions it was trained with
    training_state: dict | None = None  # what continuing the run needs (resume.training_snapshot)


SaveCheckpoint = Callable[[TrainedModel], str]  # returns where it wrote; may raise checkpoint.CheckpointWriteError


class Trainer:
    def __init__(self, *, flush_seconds: float = FLUSH_SECONDS, distributed: Distributed | None = None,
                 save_checkpoint: SaveCheckpoint | None = None, lr_factor: Callable[[int], float] | None = None,
                 instruments: Instruments | None = None):
        """`save_checkpoint` is called once, on the main process, when a run that took steps ends (finished or
        stopped); what it returns is the run's results.checkpoint. None: nothing is saved. `lr_factor`: the learning
        rate of step i (0-based) as a multiple of config.lr, in place of the config's schedule (the LR range test's
        exponential sweep). `instruments`: what watches each run (instruments.standard); None: every standard one,
        keeping no files."""
        self.flush_seconds = flush_seconds
        self.dist = distributed or Distributed()
        self.save_checkpoint = save_checkpoint
        self.lr_factor = lr_factor
        self.instruments = instruments or standard_instruments()

    def _instruments(self, resume: checkpoint.Checkpoint | None) -> list[Instrument]:
        """The run's instruments, in the order their hooks are called; resume last: it puts the random streams
        back after the others have set up."""
        return [*self.instruments(), *([Resume(resume)] if resume is not None else [])]

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
            return _fail(emit, (underlying is not None and _user_code_failure(config.model, underlying))
                         or RunFailed(kind=exc.kind, message=str(exc), hint=exc.hint))
        except Diverged as exc:
            return _fail(emit, RunFailed(kind="diverged", message=str(exc),
                                         hint=f"the loss blew up: {divergence_hint(config.amp)}"))
        except torch.OutOfMemoryError as exc:
            return _fail(emit, RunFailed(kind="out_of_memory", message=first_line(exc), hint=(
                "lower the batch size or the hidden size, or use bf16")))
        except Exception as exc:  # the user's model code, else a bug or an unexpected framework error
            return _fail(emit, _user_code_failure(config.model, exc) or RunFailed(
                kind="internal", message=f"{type(exc).__name__}: {first_line(exc)}",
                hint="this looks like a bug in Workbench or PyTorch; the log has details"))
        except SystemExit as exc:  # sys.exit() in the user's model: a failed run, not a quiet exit 0 of the process
            where = _user_frame(config.model, exc)
            return _fail(emit, RunFailed(
                kind="model" if where else "internal", message=f"the model called sys.exit({exc.code!r})",
                hint=(f"at {where}: " if where else "") + "a model must not exit the process; raise an exception "
                                                          "or return instead"))
        finally:
            torch.set_float32_matmul_precision(matmul_precision)  # for whoever runs in this process next
            gc.unfreeze()

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
            for instrument in run.instruments:
                instrument.close(run)

    # -- setup --------------------------------------------------------------------------------------------------
    def _start(self, config: TrainConfig, emit: Emit, stop: StopFlag, started: float) -> RunState:
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
        compiling.configure_dynamo(config.recompile_limit)

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
        emit(RunStarted(config=config, device=str(device), device_name=devices.device_name(device),
                        versions=Versions.from_dict(devices.versions()), train_size=len(train_split),
                        val_size=len(val_split),
                        steps_per_epoch=len(batches), total_steps=total_steps, world_size=world,
                        resumed_step=start, wall=time.time() - (time.perf_counter() - started)))
        notice = cudagraph_thread_notice(config)
        if notice is not None:
            emit(notice)
        run = RunState(config=config, emit=emit, stop=stop, started=started, device=device, classes=classes,
                       batches=batches, val_split=val_split, train_size=len(train_split), total_steps=total_steps,
                       plan=warmup_plan(config, device.type, start), instruments=self._instruments(resume),
                       resume=resume, dist=self.dist)
        for instrument in run.instruments:
            instrument.started(run)
        return run

    def _prepare(self, run: RunState) -> None:
        """The model, explained and compiled (or not): the run's session; then the validation batches."""
        model = model_for(run.config, run.output_dim).to(run.device)
        example, labels = next(run.batches.epoch(0))
        check_outputs(model, example, run.output_dim)
        for instrument in run.instruments:
            instrument.model_built(run, model, example, labels)  # a continued run's weights are loaded here
        run.report, run.session = compiling.compile_model(run, model, example, self._session_maker(run))
        run.log = RunCompileLog()  # from here on: the run's own compiles, not explain's
        run.val_batches = DeviceBatches(run.val_split, EVAL_BATCH, run.device, shuffle=False, drop_last=False,
                                        rank=self.dist.rank, world_size=self.dist.world_size)
        if self.dist.active:
            # The replicas were built from the same seed, so they start identical; from here each rank draws its
            # own dropout masks (the same seed everywhere would drop the same units on every rank). The batch
            # order does not use this stream: DeviceBatches shards one permutation of its own seed.
            torch.manual_seed(steps.rank_seed(run.config.seed, self.dist.rank))
        for instrument in run.instruments:
            instrument.prepared(run)

    def _session_maker(self, run: RunState) -> compiling.MakeSession:
        def make(model: nn.Module, compiled: bool, carried: Session | None) -> Session:
            # where the model's parameters are (the eager copy's too)
            return steps.new_session(model, run.config, run.device, run.total_steps, compiled=compiled,
                                     wrap=self.dist.wrap, lr_factor=self.lr_factor,
                                     record_health=run.record_amp_health, carried=carried)
        return make

    # -- training -----------------------------------------------------------------------------------------------
    def _train_epoch(self, run: RunState, epoch: int) -> bool:
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
        block = Block(start=time.perf_counter())
        # One process checks the stop flag before every step. Several must stop at the same step or DDP would
        # wait forever for the ones that stopped: they agree (a collective) at each read-back instead.
        together = self.dist.active
        stepping = [instrument for instrument in run.instruments
                    if type(instrument).step_context is not Instrument.step_context]
        for x, y in batches:
            if not together and run.stop.is_set():
                self._flush(run, block, epoch)
                return True
            # The first step of a compiled model compiles it; it stays off the throughput figures even when the
            # compile fails and the step is retried eagerly (the failed attempt's time is in it). So do CUDA's
            # warm-up steps (the plan); each kind of step is read back in blocks of its own.
            run.step = totals.steps + 1
            kind = run.plan.kind(run.step, run.session.compiled)
            if block.losses and kind != block.kind:  # steady steps before a profiled window: read back on their own
                _, stop_agreed = self._flush(run, block, epoch, run.stop.is_set())
                if stop_agreed:
                    return True
            block.kind = kind
            if kind == "compiling":
                run.emit(CompileStarted(config.backend, config.mode))
            contexts = [context for instrument in stepping
                        if (context := instrument.step_context(run, kind)) is not None]
            if contexts:
                with contextlib.ExitStack() as around:
                    for context in contexts:
                        around.enter_context(context)
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
                                               or run.plan.kind(run.step + 1, run.session.compiled) != kind)
            if phase_ends or due:
                seconds, stop_agreed = self._flush(run, block, epoch, run.stop.is_set())
                self._compile_phase_read(run, kind, seconds, phase_ends)
                if phase_ends:
                    for instrument in run.instruments:
                        instrument.phase_ended(run, kind)
                    block.start = time.perf_counter()  # what the instruments did at the phase's end is no step's
                if stop_agreed:
                    return True
                if isinstance(run.stop, RunSignals):
                    for instrument in run.instruments:
                        instrument.requests(run, run.stop)
            if run.out_of_steps():
                break
        _, stop_agreed = self._flush(run, block, epoch, stop_requested=run.stop.is_set())
        return stop_agreed

    @staticmethod
    def _compile_phase_read(run: RunState, kind: str, seconds: float, phase_ends: bool) -> None:
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

    def _step(self, run: RunState, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """One optimizer step (its loss and correct count still on the device); a compiled one may fall back to
        eager."""
        if run.session.compiled:  # only a compiled model can fail to compile (and fall back)
            return self._with_fallback(run, lambda s: steps.train_step(s, x, y, run.config, run.device))
        return steps.train_step(run.session, x, y, run.config, run.device)

    def _flush(self, run: RunState, block: Block, epoch: int, stop_requested: bool = False) -> tuple[float, bool]:
        """Read a block back (one sync), then account for it and emit its Step events. Returns the block's seconds
        and (multi-process only) whether any process was asked to stop. The block starts again, empty, its clock at
        the moment of the read-back: the time spent emitting events (and whatever listeners do with them) counts
        against throughput, as it should."""
        back, stop_agreed = self._read_back(run, block, stop_requested)
        if back is not None:
            for index, instrument in enumerate(run.instruments):
                instrument.read_back(run, back, index)
            self._account(run, back, epoch)
        self._drain(run)  # after the steps they happened in: the timeline has their x by then
        return (back.seconds if back is not None else 0.0), stop_agreed

    def _read_back(self, run: RunState, block: Block, stop_requested: bool) -> tuple[ReadBack | None, bool]:
        """The block's losses and correct counts, and what the instruments put on the ride, as one float vector on
        the device, reduced over the processes (their global means) and read back in one sync. With several
        processes the stop flags ride along too: a rank asked to stop makes its flag's mean non-zero everywhere,
        so all ranks stop at the same step."""
        device, n = run.device, len(block.losses)
        parts = [torch.stack(block.losses).float(), torch.stack(block.correct).float()] if n else []
        spans: dict[int, tuple[int, int]] = {}
        offset = 2 * n
        for index, instrument in enumerate(run.instruments):
            rider = instrument.riders(run, n)
            if rider is not None and n:
                parts.append(rider.float())
                spans[index] = (offset, offset + rider.numel())
                offset += rider.numel()
        if self.dist.active:
            parts.append(torch.tensor([1.0 if stop_requested else 0.0], device=device))
        values = self.dist.mean(torch.cat(parts) if parts else torch.zeros(0, device=device)).tolist()  # the sync
        stop_agreed = self.dist.active and values[-1] > 0
        measured_at, wall_at = time.perf_counter(), time.time()  # read together: a thread preempted between two
        # reads far apart (a loaded machine) put a block's steps milliseconds later than the next block's
        block_start, ends = block.start, block.ends
        block.start, block.losses, block.correct, block.ends = measured_at, [], [], []
        if not n:
            return None, stop_agreed
        seconds = measured_at - block_start
        if device.type == "cpu":  # ops ran synchronously: the gaps between step ends are the step times
            step_seconds = [b - a for a, b in zip([block_start] + ends[:-1], ends)]
        else:  # queued asynchronously: only the block as a whole was timed
            step_seconds = [seconds / n] * n
        # Each step's end in Unix time: the block's start moved from the perf_counter clock to time.time()'s at the
        # read-back, plus the step times so far (the CPU's exact ends; CUDA's block spread evenly).
        walls = list(itertools.accumulate(step_seconds, initial=block_start + wall_at - measured_at))[1:]
        # Every process's share of every step is the same size (the shards and the epoch drop the remainder): the
        # mean count over that share is the global fraction.
        share = run.config.batch_size // self.dist.world_size
        back = ReadBack(kind=block.kind, first_step=run.totals.steps - n + 1, losses=values[:n],
                        accuracies=[count / share for count in values[n:2 * n]], step_seconds=step_seconds,
                        walls=walls, seconds=seconds, riders={i: values[a:b] for i, (a, b) in spans.items()})
        return back, stop_agreed

    def _account(self, run: RunState, back: ReadBack, epoch: int) -> None:
        """The block's figures: divergence, the steady throughput (only steady steps count), peak memory, the
        epoch's loss, and one Step event per step."""
        config, totals = run.config, run.totals
        samples = len(back.losses) * config.batch_size  # the global batch: every process's share together
        if back.kind == "steady":
            totals.steady_samples += samples
            totals.steady_seconds += back.seconds
        memory = devices.memory_mib(run.device)
        totals.peak_memory_mib = max(totals.peak_memory_mib, memory.peak_mib or 0.0)
        if totals.first_loss is None:
            totals.first_loss = back.losses[0]
        for i, loss in enumerate(back.losses):
            step = back.first_step + i
            if not math.isfinite(loss):
                raise Diverged(f"loss is {loss} at step {step} (epoch {epoch}, lr {config.lr:g})")
            if loss > EXPLODED_FACTOR * totals.first_loss:
                raise Diverged(f"loss exploded from {totals.first_loss:.3g} to {loss:.3g} at step {step} "
                               f"(epoch {epoch}, lr {config.lr:g})")
            totals.epoch_loss_sum += loss
            totals.epoch_steps += 1
            run.emit(Step(step=step, epoch=epoch, loss=loss, samples_per_s=samples / back.seconds,
                          step_seconds=back.step_seconds[i], memory=memory, compiling=back.kind == "compiling",
                          warmup=back.kind in ("recording", "warmup"), accuracy=back.accuracies[i],
                          loss_scale=back.loss_scales[i] if back.loss_scales else None,
                          profiled=back.kind == "profiling", wall=back.walls[i]))

    @staticmethod
    def _drain(run: RunState) -> None:
        for instrument in run.instruments:
            instrument.drain(run)

    def _set_phase(self, run: RunState, phase: str) -> None:
        run.phase = phase
        for instrument in run.instruments:
            instrument.phase_changed(run)

    def _validate(self, run: RunState, epoch: int) -> None:
        """The epoch's validation (the global figure, over every process's shard) and its EpochEnd."""
        totals = run.totals
        self._set_phase(run, "eval")
        val_started = time.perf_counter()
        val_loss, val_accuracy = self._with_fallback(
            run, lambda s: evaluate(s.model, run.val_batches, run.config, run.device, reduce=self.dist.sum))
        val_seconds = time.perf_counter() - val_started
        self._drain(run)
        self._set_phase(run, "train")
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
                          val_samples=len(run.val_split), wall=time.time()))
        totals.epochs_ended += 1

    def _with_fallback(self, run: RunState, action):
        return compiling.with_fallback(run, action, self._session_maker(run), lambda: self._drain(run))

    # -- the end ------------------------------------------------------------------------------------------------
    def _finish(self, run: RunState) -> RunFinished:
        """The final compile report, the run's results (its own figures and each instrument's section), the
        checkpoint, and RunFinished."""
        for instrument in run.instruments:
            instrument.ending(run)
        self._drain(run)
        if run.report is not None:
            run.emit(compiling.final_report(run))
        results = self._results(run)
        if self.save_checkpoint is not None and self.dist.is_main and run.totals.steps > 0:
            results = self._save(run, results)
        finished = RunFinished(steps=run.totals.steps, epochs=results.epochs_completed,
                               seconds=time.perf_counter() - run.started, stopped=run.stopped, results=results)
        run.emit(finished)
        return finished

    def _results(self, run: RunState) -> RunResults:
        totals, config = run.totals, run.config
        fields = {
            **totals.last_epoch,
            "best_val_accuracy": totals.best_val_accuracy,
            "samples_per_s": totals.steady_samples / totals.steady_seconds if totals.steady_seconds else 0.0,
            "compile_seconds": totals.compile_seconds,  # every phase: the sum of compile_breakdown
            "compile_breakdown": dict(totals.compile_breakdown),  # seconds by CompileFinished.phase
            "peak_memory_mib": totals.peak_memory_mib,
            "backend_used": config.backend if run.session.compiled else "eager",
            "epochs_completed": totals.epochs_ended,
        }
        if run.report is not None and run.session.compiled:  # held against the recompiles the run really hit
            forecasts = forecast_recompiles(config, run.train_size, len(run.val_split), self.dist.world_size,
                                            rank=self.dist.rank)
            fields["recompile_forecast"] = check_forecast(forecasts, run.log.recompiles())
        for instrument in run.instruments:
            fields.update(instrument.section(run))
        if self.dist.active:  # DDP keeps replicas identical; check it rather than assume it
            fields["replica_checksums"] = tuple(self.dist.gather(weights_checksum(run.session.model)))
            if len(set(fields["replica_checksums"])) > 1:
                run.emit(Notice("warning", "the model replicas of the processes ended with different weights",
                                "this should not happen with DDP; please report it with the run's events"))
        return RunResults(**fields)

    def _save(self, run: RunState, results: RunResults) -> RunResults:
        """Hand the trained model to save_checkpoint; the results say where it went, or why it could not be written
        (the run still finishes; the CLI makes it an error exit)."""
        trained = TrainedModel(model=run.session.model, config=run.config, results=results, classes=run.classes,
                               versions=devices.versions(), training_state=training_snapshot(run))
        try:
            return dataclasses.replace(results, checkpoint=str(self.save_checkpoint(trained)))
        except checkpoint.CheckpointWriteError as exc:  # the run itself finished: report it, keep its figures
            run.emit(Notice("error", str(exc), exc.hint))
            return dataclasses.replace(results, checkpoint_error=str(exc))


# -- a failed run -----------------------------------------------------------------------------------------------
def _fail(emit: Emit, event: RunFailed) -> RunFailed:
    emit(event)
    return event


def _user_code_failure(spec: str, exc: BaseException) -> RunFailed | None:
    """An exception raised in the user's own model file (its traceback passes through it) is the user's to fix,
    named as such — not "a bug in Workbench". None: it did not come from the model file."""
    where = _user_frame(spec, exc)
    if where is None:
        return None
    name = spec.rpartition(":")[2]
    return RunFailed(kind="model", message=f"your model {name} raised {type(exc).__name__}: {first_line(exc)}",
                     hint=f"at {where} (in your model's code); fix it there and run again")


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
