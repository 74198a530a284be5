"""What the report needs from each recorded run, worked out once from its record and event stream (`RunFacts`), and
the runs compared side by side. Plain data: the HTML sections and the JSON twin both read it.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from dataclasses import dataclass
from typing import Iterable

from ...ground.events import CompileEvent, CompileReport, EpochEnd, Notice, RunFailed, Step
from ...ground.payback import Payback
from ...ground.codec import Record
from ...ground.results import RunResults, SystemSummary
import numpy as np

from ..curves import Curves, curves_from_columns
from ..step_columns import StepBlock, block_of, steady_mask
from ..naming import differing_settings, run_label
from ..layers import RunLayers, run_layers
from ..runs import RunRecord

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f",
           "#bcbd22")
MIN_STEADY_STEPS = 10  # fewer steady steps than this say nothing about a run's throughput


@dataclass(frozen=True)
class RunFigures(Record):
    """A run's final figures as the report shows them (its "metrics" in the JSON twin): from the run's row where it
    has them, else from its events (failed or interrupted runs have no final figures of their own)."""

    status: str
    steps: int
    epochs: int  # validated
    best_val_accuracy: float | None
    final_val_accuracy: float | None
    final_val_loss: float | None
    samples_per_s: float | None
    compile_seconds: float | None
    steady_step_seconds: float | None  # the median steady step
    peak_memory_mib: float | None
    backend_used: str | None
    system: SystemSummary | None


@dataclass
class RunFacts:
    """What the report needs from one record, worked out once."""

    record: RunRecord
    label: str
    color: str
    block: StepBlock  # its steps as columns
    epochs: list[EpochEnd]
    curves: Curves
    compile: CompileReport | None
    failure: dict | None
    notices: list[Notice]
    figures: RunFigures
    timeline: list[CompileEvent]  # in the order they happened
    # What the run measured at its end: the payback, the recompile forecast, the compile trace, the profile… A run
    # without a RunFinished (failed, interrupted) has the defaults: none of them.
    results: RunResults
    layers: RunLayers  # its layer table, per-layer figures and alerts (empty for runs recorded before them)


def prepare_runs(records: list[RunRecord]) -> list[RunFacts]:
    differing = differing_settings([r.config for r in records])
    return [_facts(record, differing, PALETTE[i % len(PALETTE)]) for i, record in enumerate(records)]


def _label(record: RunRecord, differing: list[str]) -> str:
    """'#3 inductor · bf16', and the name its user gave it: '#3 inductor · bf16 — warm-up'."""
    label = run_label(record.id, record.config, differing)
    return f"{label} — {record.name}" if record.name else label


def _facts(record: RunRecord, differing: list[str], color: str) -> RunFacts:
    """A record read with its steps as columns (RunStore.get_with_columns), or with Step events (a stream)."""
    if record.step_columns is not None:
        block, events = record.step_columns, record.events
    else:
        steps = [(seq, e) for seq, e in enumerate(record.events) if isinstance(e, Step)]
        block = block_of([seq for seq, _s in steps], [s for _seq, s in steps])
        events = [e for e in record.events if not isinstance(e, Step)]
    epochs = [e for e in events if isinstance(e, EpochEnd)]
    failure = record.failure or next((dataclasses.asdict(e) for e in reversed(events)
                                      if isinstance(e, RunFailed)), None)
    results = record.results or RunResults()
    return RunFacts(record=record, label=_label(record, differing), color=color, block=block,
                    epochs=epochs, curves=curves_from_columns(block, events), compile=last_compile_report(events),
                    failure=failure, notices=[e for e in events if isinstance(e, Notice)],
                    figures=_figures(record, block, epochs, results.system),
                    timeline=[e for e in events if isinstance(e, CompileEvent)], results=results,
                    layers=run_layers(events, record.config))


def last_compile_report(events: list) -> CompileReport | None:
    """The last report of what happened while training; an explain-only report when there is nothing better."""
    reports = [e for e in events if isinstance(e, CompileReport)]
    from_run = [r for r in reports if r.source == "run"]
    return (from_run or reports or [None])[-1]


def _figures(record: RunRecord, block: StepBlock, epochs: list[EpochEnd], system: SystemSummary | None
             ) -> RunFigures:
    steady = np.flatnonzero(steady_mask(block))
    peak = block.present["peak"]  # MemorySample.peak_mib: the CUDA peak, else the RSS
    peaks = np.where(peak, block.values["peak"], block.values["rss"])[peak | block.present["rss"]].tolist()
    compiling = np.flatnonzero(block.flags["compiling"])
    best = record.best_val_accuracy if record.best_val_accuracy is not None else (
        max((e.val_accuracy for e in epochs), default=None))
    return RunFigures(
        status=record.status,
        steps=record.steps or (int(block.step[-1]) if len(block) else 0),
        epochs=len(epochs),
        best_val_accuracy=best,
        final_val_accuracy=epochs[-1].val_accuracy if epochs else None,
        final_val_loss=epochs[-1].val_loss if epochs else None,
        samples_per_s=record.samples_per_s if record.samples_per_s is not None else (
            _median(block.values["samples_per_s"][steady].tolist()) if len(steady) >= MIN_STEADY_STEPS else None),
        compile_seconds=record.compile_seconds if record.compile_seconds is not None else (
            float(block.values["step_seconds"][compiling[0]]) if len(compiling) else None),
        steady_step_seconds=_median(block.values["step_seconds"][steady].tolist()),
        peak_memory_mib=record.peak_memory_mib if record.peak_memory_mib is not None else max(peaks, default=None),
        backend_used=record.backend_used,
        system=system,
    )


def _median(values: Iterable[float]) -> float | None:
    values = [v for v in values if isinstance(v, (int, float)) and math.isfinite(v)]
    return statistics.median(values) if values else None


@dataclass(frozen=True)
class ComparedRun(Record):
    """One run of the comparison (a row of its table and of the JSON twin's "comparison")."""

    id: int
    label: str
    backend_used: str | None
    samples_per_s: float | None
    speedup: float | None  # against the baseline run
    compile_seconds: float | None
    peak_memory_mib: float | None
    final_val_accuracy: float | None
    payback: Payback | None
    payback_problem: str | None  # why the payback was not measured, when it was not and the run says why


@dataclass(frozen=True)
class Comparison(Record):
    baseline_run: int
    baseline_note: str
    runs: tuple[ComparedRun, ...]


def compare_runs(runs: list[RunFacts]) -> Comparison:
    """Throughput, compile time and memory side by side, speed-ups against an eager fp32 run (or the first)."""
    baseline = next((r for r in runs if r.record.config.get("backend") == "eager"
                     and r.record.config.get("amp") == "off"), None)
    note = f"speed-up is relative to run #{baseline.record.id} (eager, AMP off)" if baseline else ""
    if baseline is None:
        baseline = runs[0]
        note = (f"no eager run with AMP off was selected, so speed-up is relative to the first run, "
                f"#{baseline.record.id}")
    base_rate = baseline.figures.samples_per_s
    rows = []
    for run in runs:
        figures, payback = run.figures, run.results.payback
        rate = figures.samples_per_s
        rows.append(ComparedRun(
            id=run.record.id, label=run.label, backend_used=figures.backend_used, samples_per_s=rate,
            speedup=rate / base_rate if rate is not None and base_rate else None,
            compile_seconds=figures.compile_seconds, peak_memory_mib=figures.peak_memory_mib,
            final_val_accuracy=figures.final_val_accuracy, payback=payback,
            payback_problem=(run.results.payback_problem or None) if payback is None else None))
    return Comparison(baseline_run=baseline.record.id, baseline_note=note, runs=tuple(rows))
