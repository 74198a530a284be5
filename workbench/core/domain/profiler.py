"""`torch.profiler` around a window of a run's steady steps: the op table, the timeline, memory by category, and a
Chrome/Perfetto trace small enough to open.

The window is part of the real run (same model, compiled or not, same batches), placed after the compile and the
warm-up steps so it shows the steady state (`profile_window`). Its steps are slower (the profiler records every op,
its shapes and its memory) and stay off the run's steady figures. The analysis is ground.profile_trace's and
ground.memory_trace's, torch-free, on the trace the profiler exports: the same code reads a fixture in the tests.
On CUDA the allocator's own history is recorded over the same steps (categories from its stacks) and saved as a
snapshot for PyTorch's memory viewer.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pickle
import statistics
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import torch
from torch import nn

from ..ground.atomic import atomic_path
from ..ground.errors import first_line
from ..ground.events import ProfileReport
from ..ground.memory_trace import from_profiler, from_snapshot
from ..ground.profile_trace import ProfileCost, summarise, write_trace
from ..ground.results import ProfileSummary

# Steady steps skipped between the warm-up and the window: the allocator, the optimizer's state and the CPU's
# caches settle in the first few steady steps.
SETTLE_STEPS = 3
TRACE_FILE = "trace.json.gz"
SNAPSHOT_FILE = "memory-snapshot.pickle"
TOP_OPS = 10  # the heaviest ops the run's results keep (the full table is in the ProfileReport event)
SNAPSHOT_ENTRIES = 200_000  # the allocator history's ring buffer: enough for hundreds of steps of a small model


def profile_window(first_steady: int, total_steps: int, steps: int) -> tuple[int, int] | None:
    """(first, last) steps to profile: `steps` of them after SETTLE_STEPS steady ones, moved earlier (down to
    `first_steady`) and shortened when the run is too short; None when it has no steady step to profile."""
    if steps <= 0 or total_steps < first_steady:
        return None
    first = min(first_steady + SETTLE_STEPS, max(first_steady, total_steps - steps + 1))
    return first, min(total_steps, first + steps - 1)


class StepProfiler:
    """Profiles steps `first`…`last` of a run: `step(n)` wraps each step, `report()` ends the window."""

    def __init__(self, device: torch.device, window: tuple[int, int], out_dir: Path | None):
        self.device = device
        self.first, self.last = window
        self.out_dir = out_dir
        self._profile: torch.profiler.profile | None = None
        self.step_seconds: list[float] = []

    def covers(self, step: int) -> bool:
        return self.first <= step <= self.last

    @contextmanager
    def step(self, step: int) -> Iterator[None]:
        """One profiled step, named "ProfilerStep#<step>" in the trace (the name Perfetto and HTA know)."""
        if step == self.first:
            self._start()
        with torch.profiler.record_function(f"ProfilerStep#{step}"):
            yield

    def _start(self) -> None:
        activities = [torch.profiler.ProfilerActivity.CPU]
        if self.device.type == "cuda":
            activities.append(torch.profiler.ProfilerActivity.CUDA)
            # Python stacks only: symbolising C++ frames ("all") can make the snapshot take minutes.
            torch.cuda.memory._record_memory_history(stacks="python", max_entries=SNAPSHOT_ENTRIES,
                                                     device=self.device)
        self._profile = torch.profiler.profile(activities=activities, record_shapes=True, profile_memory=True)
        self._profile.start()

    def report(self, model: nn.Module, optimizer: torch.optim.Optimizer, steady_step_s: float | None
               ) -> ProfileReport:
        """Stop the profiler (after the device's queue drains) and build the report; write the trace and, on CUDA,
        the allocator snapshot into `out_dir`. What cannot be written is said in `problem`, never raised."""
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        profile, self._profile = self._profile, None
        profile.stop()
        trace = _exported(profile)
        summary = summarise(trace)
        step_ms = [s.dur_us / 1000 for s in summary.steps]
        summary = dataclasses.replace(summary, cost=ProfileCost(
            profiled_step_ms=statistics.median(step_ms) if step_ms else None,
            steady_step_ms=steady_step_s * 1000 if steady_step_s else None))
        problems: list[str] = []
        snapshot_path = ""
        if self.device.type == "cuda":
            snapshot = torch.cuda.memory._snapshot(self.device)
            torch.cuda.memory._record_memory_history(enabled=None, device=self.device)
            memory = from_snapshot(snapshot, known=_known_addresses(model, optimizer),
                                   device=self.device.index or 0)
            snapshot_path = self._write(SNAPSHOT_FILE, lambda path: path.write_bytes(pickle.dumps(snapshot)),
                                        problems)
        else:
            memory = from_profiler(trace, _baseline(model, optimizer))
        trace_path, trace_bytes, trimmed = "", 0, ""
        if self.out_dir is not None:
            try:
                trace_bytes, trimmed = write_trace(trace, self.out_dir / TRACE_FILE)
                trace_path = str(self.out_dir / TRACE_FILE)
            except OSError as exc:
                problems.append(f"the trace could not be written: {first_line(exc)}")
        return ProfileReport(first_step=self.first, last_step=self.last, device=str(self.device), summary=summary,
                             memory=memory, trace=trace_path, trace_bytes=trace_bytes, trimmed=trimmed,
                             snapshot=snapshot_path, problem="; ".join(problems))

    def abandon(self) -> None:
        """A run that ends (stopped, failed) inside the window: stop recording, report nothing."""
        if self._profile is not None:
            self._profile.stop()
            self._profile = None
            if self.device.type == "cuda":
                torch.cuda.memory._record_memory_history(enabled=None, device=self.device)

    def _write(self, name: str, write, problems: list[str]) -> str:
        if self.out_dir is None:
            return ""
        target = self.out_dir / name
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            with atomic_path(target) as tmp:
                write(tmp)
        except OSError as exc:
            problems.append(f"{name} could not be written: {first_line(exc)}")
            return ""
        return str(target)


def profile_metrics(report: ProfileReport) -> ProfileSummary:
    """The run's results' `profile`: where the trace is and the heaviest ops (the CLI, `runs show`, the report)."""
    memory = report.memory
    return ProfileSummary(first_step=report.first_step, last_step=report.last_step, trace=report.trace,
                          trace_bytes=report.trace_bytes, trimmed=report.trimmed, snapshot=report.snapshot,
                          top_ops=report.summary.ops[:TOP_OPS], cost=report.summary.cost,
                          memory_peak_bytes=memory.peak_bytes if memory else None,
                          memory_source=memory.source if memory else None, problem=report.problem)


def _exported(profile: torch.profiler.profile) -> dict:
    """The profile as the Chrome trace dict torch writes (through a temp file: that is the only exporter)."""
    fd, path = tempfile.mkstemp(prefix="workbench-profile-", suffix=".json")
    os.close(fd)
    try:
        profile.export_chrome_trace(path)
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    finally:
        os.unlink(path)


def _tensors_of(optimizer: torch.optim.Optimizer) -> Iterator[torch.Tensor]:
    for state in optimizer.state.values():
        for value in state.values():
            if isinstance(value, torch.Tensor):
                yield value


def _baseline(model: nn.Module, optimizer: torch.optim.Optimizer) -> dict[str, int]:
    """Bytes alive before the window that the profiler's events never show: the weights and the optimizer state."""
    return {"parameters": sum(p.numel() * p.element_size() for p in model.parameters()),
            "optimizer state": sum(t.numel() * t.element_size() for t in _tensors_of(optimizer))}


def _known_addresses(model: nn.Module, optimizer: torch.optim.Optimizer) -> dict[int, str]:
    """The allocator addresses of the weights and the optimizer state (what a snapshot's stacks cannot name)."""
    known = {t.untyped_storage().data_ptr(): "optimizer state" for t in _tensors_of(optimizer) if t.numel()}
    known.update({p.untyped_storage().data_ptr(): "parameters" for p in model.parameters()})
    return known
