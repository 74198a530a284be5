"""What the report needs from each recorded run, worked out once from its record and event stream (`RunFacts`), and
the runs compared side by side. Plain data: the HTML sections and the JSON twin both read it.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from dataclasses import dataclass
from typing import Iterable

from ..ground.events import CompileEvent, CompileReport, EpochEnd, Notice, RunFailed, RunFinished, Step, peak_mib
from ..ground.payback import Payback
from .curves import Curves, curves_from_events, differing_settings, run_label
from .runs import RunRecord

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f",
           "#bcbd22")
MIN_STEADY_STEPS = 10  # fewer steady steps than this say nothing about a run's throughput


@dataclass
class RunFacts:
    """What the report needs from one record, worked out once."""

    record: RunRecord
    label: str
    color: str
    steps: list[Step]
    epochs: list[EpochEnd]
    curves: Curves
    compile: CompileReport | None
    failure: dict | None
    notices: list[Notice]
    metrics: dict
    timeline: list[CompileEvent]  # in the order they happened
    finished: dict  # RunFinished.metrics: the payback, the recompile forecast, the compile trace; {} when absent

    def payback(self) -> Payback | None:
        """Whether compiling paid off, as the run measured it; None when it did not measure it."""
        return Payback.from_dict(self.finished.get("payback"))

    def payback_problem(self) -> str | None:
        """Why the payback was not measured; None when there is no reason recorded."""
        problem = self.finished.get("payback_problem")
        return problem if isinstance(problem, str) and problem else None

    def forecast_checks(self) -> list[dict] | None:
        """The recompile forecast held against what happened; None for runs recorded before it existed."""
        checks = self.finished.get("recompile_forecast")
        if not isinstance(checks, list):
            return None
        return [c for c in checks if isinstance(c, dict)]


def prepare_runs(records: list[RunRecord]) -> list[RunFacts]:
    differing = differing_settings([r.config for r in records])
    return [_facts(record, differing, PALETTE[i % len(PALETTE)]) for i, record in enumerate(records)]


def _facts(record: RunRecord, differing: list[str], color: str) -> RunFacts:
    events = record.events
    steps = [e for e in events if isinstance(e, Step)]
    epochs = [e for e in events if isinstance(e, EpochEnd)]
    failure = record.failure or next((dataclasses.asdict(e) for e in reversed(events)
                                      if isinstance(e, RunFailed)), None)
    finished = next((e.metrics for e in reversed(events) if isinstance(e, RunFinished)), None)
    return RunFacts(record=record, label=run_label(record.id, record.config, differing), color=color, steps=steps,
                    epochs=epochs, curves=curves_from_events(events), compile=last_compile_report(events),
                    failure=failure, notices=[e for e in events if isinstance(e, Notice)],
                    metrics={**_metrics(record, steps, epochs),
                             "system": finished.get("system") if isinstance(finished, dict) else None},
                    timeline=[e for e in events if isinstance(e, CompileEvent)],
                    finished=finished if isinstance(finished, dict) else {})


def last_compile_report(events: list) -> CompileReport | None:
    """The last report of what happened while training; an explain-only report when there is nothing better."""
    reports = [e for e in events if isinstance(e, CompileReport)]
    from_run = [r for r in reports if r.source == "run"]
    return (from_run or reports or [None])[-1]


def _metrics(record: RunRecord, steps: list[Step], epochs: list[EpochEnd]) -> dict:
    """The final figures, from the run's row where it has them, else from its events (failed/interrupted runs)."""
    steady = [s for s in steps if s.steady]
    peaks = [peak_mib(s.memory) for s in steps]
    peaks = [p for p in peaks if isinstance(p, (int, float))]
    best = record.best_val_accuracy if record.best_val_accuracy is not None else (
        max((e.val_accuracy for e in epochs), default=None))
    return {
        "status": record.status,
        "steps": record.steps or (steps[-1].step if steps else 0),
        "epochs": len(epochs),
        "best_val_accuracy": best,
        "final_val_accuracy": epochs[-1].val_accuracy if epochs else None,
        "final_val_loss": epochs[-1].val_loss if epochs else None,
        "samples_per_s": record.samples_per_s if record.samples_per_s is not None else (
            _median(s.samples_per_s for s in steady) if len(steady) >= MIN_STEADY_STEPS else None),
        "compile_seconds": record.compile_seconds if record.compile_seconds is not None else (
            next((s.step_seconds for s in steps if s.compiling), None)),
        "steady_step_seconds": _median(s.step_seconds for s in steady),
        "peak_memory_mib": record.peak_memory_mib if record.peak_memory_mib is not None else max(peaks, default=None),
        "backend_used": record.backend_used,
    }


def _median(values: Iterable[float]) -> float | None:
    values = [v for v in values if isinstance(v, (int, float)) and math.isfinite(v)]
    return statistics.median(values) if values else None


def compare_runs(runs: list[RunFacts]) -> dict:
    """Throughput, compile time and memory side by side, speed-ups against an eager fp32 run (or the first)."""
    baseline = next((r for r in runs if r.record.config.get("backend") == "eager"
                     and r.record.config.get("amp") == "off"), None)
    note = f"speed-up is relative to run #{baseline.record.id} (eager, AMP off)" if baseline else ""
    if baseline is None:
        baseline = runs[0]
        note = (f"no eager run with AMP off was selected, so speed-up is relative to the first run, "
                f"#{baseline.record.id}")
    base_rate = baseline.metrics["samples_per_s"]
    rows = []
    for run in runs:
        rate = run.metrics["samples_per_s"]
        speedup = rate / base_rate if rate is not None and base_rate else None
        payback = run.payback()
        rows.append({"id": run.record.id, "label": run.label, "backend_used": run.metrics["backend_used"],
                     "samples_per_s": rate, "speedup": speedup,
                     "compile_seconds": run.metrics["compile_seconds"],
                     "peak_memory_mib": run.metrics["peak_memory_mib"],
                     "final_val_accuracy": run.metrics["final_val_accuracy"],
                     "payback": payback.to_dict() if payback else None,
                     "payback_problem": run.payback_problem() if payback is None else None})
    return {"baseline_run": baseline.record.id, "baseline_note": note, "runs": rows}
