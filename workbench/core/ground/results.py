"""What a finished run measured (`RunFinished.results`, a checkpoint's, the run history's): typed, and read by field.

Its plain-data form is one flat object, the run's "metrics", in the layout every version has written: in metrics.json,
in the event logs (events.jsonl, the run history's events) and in checkpoints. So `RunResults.to_dict()` writes that
layout exactly (each instrument's part only when the run had it) and `RunResults.from_dict()` reads every layout
older versions wrote (what they did not write takes its default), refusing, as every Record does, a value of the
wrong type or a key it does not know. Nothing else reads that layout by key.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from .forecast import ForecastCheck
from .payback import Payback
from .profile_trace import OpRow, ProfileCost
from .codec import Record


@dataclass(frozen=True)
class GpuSummary(Record):
    """One GPU over the run (NVML, sampled twice a second): mean utilisation, peaks of the rest."""

    util_mean: float  # %
    memory_peak_mib: float
    power_peak_w: float
    temp_peak_c: float


@dataclass(frozen=True)
class SystemSummary(Record):
    """The machine during the run (domain.system's samples): means and peaks. In the layout the GPUs sit beside the
    means, each under its device's name ("cuda:0"), as they always have."""

    samples: int
    cpu_process_mean: float  # % of one core used by the training process
    cpu_machine_mean: float  # % of the whole machine
    rss_peak_mib: float
    gpus: dict[str, GpuSummary] = field(default_factory=dict)  # none without NVML

    def to_dict(self) -> dict[str, Any]:
        data = super().to_dict()
        gpus = data.pop("gpus")
        return {**data, **gpus}

    @classmethod
    def read(cls, data: Any, where: str) -> SystemSummary:
        if not isinstance(data, dict):
            raise ValueError(f"{where} is {type(data).__name__}, not an object")
        means = {f.name for f in dataclasses.fields(cls)} - {"gpus"}
        gpus = {name: value for name, value in data.items() if name not in means}
        return super().read({**{k: v for k, v in data.items() if k in means}, "gpus": gpus}, where)


@dataclass(frozen=True)
class NonFinite(Record):
    """The first fp16 step whose gradients overflowed, and the first parameter (in the model's order) hit."""

    step: int
    param: str


@dataclass(frozen=True)
class AmpSummary(Record):
    """Mixed precision over the run (domain.amp): the census's totals, the advice and the steps GradScaler skipped."""

    dtype: str  # "bf16" | "fp16"
    recommendation: str
    census_groups: dict[str, int]  # op calls by group: "low" (bf16/fp16), "fp32", "other"
    skipped: int
    skipped_steps: tuple[int, ...]  # the first of them (amp.SKIPPED_LISTED)
    first_nonfinite: NonFinite | None
    final_scale: float | None  # None without a GradScaler (bf16)
    skipped_share: float  # of the run's steps, 0..1


@dataclass(frozen=True)
class ProfileSummary(Record):
    """The profiled window (domain.profiler): where its trace went and its heaviest ops (the full table is in the
    ProfileReport event)."""

    first_step: int
    last_step: int
    trace: str  # the gzipped trace; "" when it was not written
    trace_bytes: int
    trimmed: str  # what the size cap left out of the trace
    snapshot: str  # CUDA: the allocator snapshot; "" on the CPU
    top_ops: tuple[OpRow, ...]  # rows of the op table, heaviest first
    cost: ProfileCost
    memory_peak_bytes: int | None
    memory_source: str | None  # where the memory timeline came from; None without one
    problem: str  # why a part is missing; "" when none


@dataclass(frozen=True)
class CompileTrace(Record):
    """Where a run's compile trace is: tlparse's index.html, or the raw trace's folder when it was not rendered."""

    path: str
    problem: str = ""  # why it was not rendered (no tlparse, …); "" when it was


@dataclass(frozen=True)
class RunResults(Record):
    """A run's figures at its end, and what each instrument found. The defaults are what a run that measured
    nothing (or a version that did not write it) says."""

    train_loss: float | None = None  # of the last validated epoch; None when no epoch was validated
    val_loss: float | None = None
    val_accuracy: float | None = None
    best_val_accuracy: float | None = None
    samples_per_s: float = 0.0  # steady steps only; 0 when there were none
    compile_seconds: float = 0.0  # every phase: the sum of compile_breakdown
    compile_breakdown: dict[str, float] = field(default_factory=dict)  # seconds by CompileFinished.phase
    peak_memory_mib: float = 0.0
    backend_used: str = "eager"  # the configured backend, or "eager" when the run fell back
    epochs_completed: int = 0
    system: SystemSummary | None = None
    system_gpu_problem: str = ""  # why the system figures have no GPU (no NVML); "" when none
    amp: AmpSummary | None = None
    profile: ProfileSummary | None = None
    payback: Payback | None = None
    payback_problem: str = ""  # why the payback was not measured; "" when it was, or for an eager run
    recompile_forecast: tuple[ForecastCheck, ...] | None = None  # None: not a compiled run (nothing was checked)
    compile_trace: CompileTrace | None = None
    replica_checksums: tuple[str, ...] = ()  # a multi-process run: each rank's weights' checksum
    checkpoint: str = ""  # where the checkpoint was written; "" when it was not
    checkpoint_error: str = ""  # why it could not be written
    node_exit_code: int | None = None  # a multi-node run's other node: how its processes exited

    def to_dict(self) -> dict[str, Any]:
        """The flat layout (see the module's docstring): the figures every run has, then each part the run had."""
        data: dict[str, Any] = {name: getattr(self, name) for name in ("train_loss", "val_loss", "val_accuracy")
                                if getattr(self, name) is not None}
        data.update(best_val_accuracy=self.best_val_accuracy, samples_per_s=self.samples_per_s,
                    compile_seconds=self.compile_seconds, compile_breakdown=dict(self.compile_breakdown),
                    peak_memory_mib=self.peak_memory_mib, backend_used=self.backend_used,
                    epochs_completed=self.epochs_completed)
        parts = {"system": self.system, "system_gpu_problem": self.system_gpu_problem, "amp": self.amp,
                 "profile": self.profile, "payback": self.payback, "payback_problem": self.payback_problem}
        data.update({name: part if isinstance(part, str) else part.to_dict() for name, part in parts.items() if part})
        if self.recompile_forecast is not None:  # an empty list too: checked, and nothing to say
            data["recompile_forecast"] = [check.to_dict() for check in self.recompile_forecast]
        if self.compile_trace is not None and self.compile_trace.path:
            data["compile_trace"] = self.compile_trace.path
        if self.compile_trace is not None and self.compile_trace.problem:
            data["compile_trace_problem"] = self.compile_trace.problem
        ends = {"replica_checksums": list(self.replica_checksums), "checkpoint": self.checkpoint,
                "checkpoint_error": self.checkpoint_error}
        data.update({name: value for name, value in ends.items() if value})
        if self.node_exit_code is not None:
            data["node_exit_code"] = self.node_exit_code
        return data

    @classmethod
    def read(cls, data: Any, where: str) -> RunResults:
        if not isinstance(data, dict):
            raise ValueError(f"{where} is {type(data).__name__}, not an object")
        data = dict(data)
        trace = {key: data.pop(key) for key in ("compile_trace", "compile_trace_problem") if key in data}
        if trace:
            data["compile_trace"] = {"path": trace.get("compile_trace", ""),
                                     "problem": trace.get("compile_trace_problem", "")}
        return super().read(data, where)
