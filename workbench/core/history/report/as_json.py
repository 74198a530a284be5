"""The report's JSON twin: every run's facts, metrics, compile insight, layers, alerts and evaluation as strict JSON
(no NaN), with every compile event (the HTML shows at most MAX_TIMELINE_ROWS of them) and every layer's figures
(the HTML draws at most one line per colour). The layers' histograms stay out (they are most of a LayerStats
event's size): the run's events and its TensorBoard export have them.
"""

from __future__ import annotations

import dataclasses
import math
from datetime import datetime
from typing import Any

from ...ground.events import CompileReport
from ...ground.fixit import FixItCard, fixit_cards
from ..layers import FIGURES, RunLayers
from ...ground.evaluation import Evaluation
from .facts import Comparison, RunFacts

FORMAT = "workbench-report"
FORMAT_VERSION = 1


def report_json(runs: list[RunFacts], evaluations: dict[int, Evaluation | None], reasons: dict[int, str],
                comparison: Comparison | None, generated: datetime) -> dict:
    """The report as a JSON-able dict: strict JSON (NaN and infinities are null), tuples as lists."""
    return _clean({
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "generated": generated.isoformat(timespec="seconds"),
        "runs": [_run_json(run, evaluations.get(run.record.id), reasons[run.record.id]) for run in runs],
        "comparison": comparison.to_dict() if comparison else None,
    })


def _run_json(run: RunFacts, evaluation: Evaluation | None, reason: str) -> dict:
    record = run.record
    return {
        "id": record.id,
        "label": run.label,
        "name": record.name,
        "tags": list(record.tags),
        "notes": record.notes,
        "created": record.created,
        "status": record.status,
        "config": record.config,
        "environment": record.environment,
        "metrics": run.figures.to_dict(),
        "epochs": [dataclasses.asdict(e) for e in run.epochs],
        "compile": _compile_json(run.compile),
        **_insight_json(run),
        "profile": run.results.profile.to_dict() if run.results.profile else None,
        "amp": run.results.amp.to_dict() if run.results.amp else None,
        **_layers_json(run.layers),
        "evaluation": _evaluation_json(evaluation) if evaluation else {"unavailable": reason},
        "failure": run.failure,
        "notices": [dataclasses.asdict(n) for n in run.notices],
    }


def _compile_json(report: CompileReport | None) -> dict | None:
    if report is None:
        return None
    data = dataclasses.asdict(report)
    data["breaks"] = [{"reason": b.reason, "where": b.where, "source": b.frames[-1].source if b.frames else None}
                      for b in report.breaks]
    return data


def _insight_json(run: RunFacts) -> dict:
    """The compile insight a run recorded: its timeline, payback, forecast checks, fix-it cards and compile trace
    (None or empty for runs recorded before they existed)."""
    results, report = run.results, run.compile
    payback, trace, checks = results.payback, results.compile_trace, results.recompile_forecast
    return {
        "compile_timeline": [{**dataclasses.asdict(e), "where": e.where} for e in run.timeline],
        "payback": payback.to_dict() if payback else None,
        "payback_problem": (results.payback_problem or None) if payback is None else None,
        "recompile_forecast": [check.to_dict() for check in checks] if checks is not None else None,
        "fixit_cards": [_card_json(c) for c in fixit_cards(report.breaks)] if report and report.breaks else [],
        "compile_trace": (trace.path or None) if trace else None,
        "compile_trace_problem": (trace.problem or None) if trace else None,
    }


def _layers_json(layers: RunLayers) -> dict:
    """The layer table (None: recorded before it existed), each layer's figures at its sampled steps, and the
    alerts by step (None: no alert rule watched the run; [] : none fired)."""
    summary = layers.summary
    return {
        "layer_table": {"batch": summary.batch, "params": summary.params, "mult_adds": summary.mult_adds,
                        "rows": [row.to_dict() for row in summary.rows]} if summary is not None else None,
        "layer_stats": [{"name": series.name, "steps": list(series.steps),
                         **{figure: list(series.values[figure]) for figure in FIGURES}} for series in layers.layers],
        "alerts": [alert.to_dict() for alert in layers.alerts] if layers.watched else None,
    }


def _card_json(card: FixItCard) -> dict:
    return dataclasses.asdict(card)


def _evaluation_json(ev: Evaluation) -> dict:
    return {"size": ev.size, "loss": ev.loss, "accuracy": ev.accuracy, "classes": list(ev.classes),
            "confusion": [list(row) for row in ev.confusion],
            "misclassified": [{"index": m.index, "true": m.true, "predicted": m.predicted,
                               "confidence": m.confidence} for m in ev.misclassified]}


def _clean(value: Any) -> Any:
    """Strict JSON: NaN and infinities (a diverged loss) become null, tuples become lists."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value
