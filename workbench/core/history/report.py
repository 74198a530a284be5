"""A run report: one self-contained HTML file (plus a JSON twin) rebuilt from the run history.

Everything comes from the recorded event stream and the run's checkpoint, so a report can be made long after the
run, on a machine without network: no external CSS, JS, fonts or images. Charts are inline SVG drawn here (no
plotting dependency) and downsampled so a million-step run stays small; images are inline PNG `data:` URIs.
Every string that a user or a framework wrote (paths, graph-break reasons, failure messages) is HTML-escaped.

This module renders and writes; it never loads a checkpoint and imports no torch. The re-evaluation arrives as
plain data (`Evaluation`, made by `domain.evaluate.evaluate_run`); `run.reports.write_report` puts the two together.
"""

from __future__ import annotations

import base64
import dataclasses
import io
import json
import math
import re
import statistics
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from ..ground.atomic import write_text_atomic
from ..ground.config import TrainConfig, uses_cuda_graphs
from ..ground.errors import WorkbenchError
from ..ground.events import (COMPILE_EVENT_KINDS, CompileEvent, CompileFinished, CompileReport, EpochEnd, Frame,
                             Notice, RunFailed, RunFinished, Step, peak_mib)
from ..ground.fixit import FixItCard, bug_report, fixit_cards
from ..ground.forecast import CONFIRMED, DID_NOT_HAPPEN, NOT_PREDICTED
from ..ground.payback import Payback
from .html import esc, file_href
from .report_insight import insight_html
from .html import table as _table
from .curves import Curves, curves_from_events, differing_settings, run_label
from .runs import RunRecord
from .svgchart import Series, StepMark, line_chart

FORMAT = "workbench-report"
FORMAT_VERSION = 1
PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f",
           "#bcbd22")
MIN_STEADY_STEPS = 10  # fewer steady steps than this say nothing about a run's throughput
MEMORY_KEYS = ("allocated", "reserved", "peak", "rss")  # the usual order; any other key follows
# The compile timeline: one colour and a short name per CompileEvent kind (COMPILE_EVENT_KINDS), in lane order.
KIND_STYLE = {
    "graph": ("#4c78a8", "graph compiled"),
    "recompile": ("#e45756", "recompile"),
    "graph_break": ("#f58518", "graph break"),
    "fallback": ("#6a3d9a", "fallback to eager"),
    "cache_miss": ("#9d755d", "cache miss"),
    "cache_hit": ("#54a24b", "cache hit"),
    "cudagraph_skip": ("#d62f9d", "CUDA graphs skipped"),
}
OTHER_KIND = ("#999999", "")  # a kind this version does not know: grey, named by its key
CACHE_KINDS = ("cache_hit", "cache_miss")  # of one step: summarised in one row of the timeline table
MAX_TIMELINE_ROWS = 300  # per run in the HTML; the JSON twin has every event
SECTIONS = {  # anchor → heading; the tests look for these headings
    "runs": "Runs covered",
    "config": "Configuration and environment",
    "curves": "Curves",
    "metrics": "Final metrics",
    "compile": "Compile report",
    "insight": "Where the time and the memory go",
    "comparison": "Comparison",
    "failures": "Failures",
}


class ReportError(WorkbenchError):
    """The report could not be written; the message names the path and the reason."""

    kind = "io"


@dataclass(frozen=True)
class Misclassified:
    index: int  # position in the validation split
    pixels: np.ndarray  # (28, 28) uint8
    true: int
    predicted: int
    confidence: float  # probability the model gave its (wrong) prediction


@dataclass(frozen=True)
class Evaluation:
    """A run's checkpoint re-evaluated on its validation split, on the CPU in float32."""

    size: int
    loss: float
    accuracy: float
    classes: tuple[str, ...]
    confusion: tuple[tuple[int, ...], ...]  # rows: true class, columns: predicted class
    misclassified: tuple[Misclassified, ...]  # the most confident mistakes first


# -- public API -------------------------------------------------------------------------------------------------
def json_twin(out: Path) -> Path:
    """Where the JSON twin of the HTML report at `out` goes; a ReportError when that is `out` itself."""
    out = Path(out)
    json_path = out.with_suffix(".json")
    if json_path == out:
        raise ReportError(f"the report path {out} ends in .json, which is where the JSON twin goes",
                          "name the report something.html")
    return json_path


def write_report_files(records: list[RunRecord], evaluations: dict[int, Evaluation | None], out: Path, *,
                       reasons: dict[int, str] | None = None) -> tuple[Path, Path]:
    """Render the report and write the HTML at `out` and its JSON twin next to it; return both paths.

    Both files are written atomically; if the second cannot be written the first is removed again, so no
    half-report is left."""
    out = Path(out)
    json_path = json_twin(out)
    text, data = build_report(records, evaluations, reasons=reasons, base=out.resolve().parent)
    _write_pair(out, text, json_path, json.dumps(data, indent=2, allow_nan=False))
    return out, json_path


def build_report(records: list[RunRecord], evaluations: dict[int, Evaluation | None], *,
                 reasons: dict[int, str] | None = None, generated: datetime | None = None,
                 base: Path | None = None) -> tuple[str, dict]:
    """The report as HTML text and as a JSON-able dict. Pure: reads nothing, writes nothing.

    `reasons` says why a run has no evaluation (write_report passes the evaluator's own words); without it the
    reason is worked out from the record. `base` is the folder the HTML will be written to: links to a run's files
    below it are relative (they survive moving the folder), others are absolute file links."""
    generated = generated or datetime.now(timezone.utc)
    runs = _prepare(records)
    reasons = {r.record.id: (reasons or {}).get(r.record.id) or missing_reason(r.record) for r in runs}
    comparison = _comparison(runs) if len(runs) > 1 else None
    sections = [
        _section_runs(runs, generated),
        _section_config(runs),
        _section_curves(runs),
        _section_metrics(runs, evaluations, reasons),
        _section_compile(runs, base),
        _section_insight(runs, base),
        _section_comparison(comparison) if comparison else "",
        _section_failures(runs),
    ]
    title = "Workbench report — " + ", ".join(f"run #{r.record.id}" for r in runs)
    data = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "generated": generated.isoformat(timespec="seconds"),
        "runs": [_run_json(run, evaluations.get(run.record.id), reasons[run.record.id]) for run in runs],
        "comparison": comparison,
    }
    return _page(title, sections), _clean(data)


# -- writing ----------------------------------------------------------------------------------------------------
def _write_pair(html_path: Path, html_text: str, json_path: Path, json_text: str) -> None:
    try:
        write_text_atomic(html_path, html_text)
    except OSError as exc:
        raise _write_error(html_path, exc) from None
    try:
        write_text_atomic(json_path, json_text)
    except OSError as exc:
        html_path.unlink(missing_ok=True)  # a report without its JSON twin is half a report
        raise _write_error(json_path, exc) from None


def _write_error(path: Path, exc: OSError) -> ReportError:
    why = exc.strerror or str(exc)
    if isinstance(exc, (NotADirectoryError, FileExistsError)):
        why = f"{why} (a part of the folder path is a file)"
    return ReportError(f"cannot write the report to {path}: {why}", "choose a file in a folder you can write to")


# -- evaluation (the words only: the evaluating is domain.evaluate's) ------------------------------------------
def missing_reason(record: RunRecord) -> str:
    """Why a run has no evaluation, worked out from its record (no checkpoint, or its file is gone)."""
    if not record.checkpoint:
        why = {"failed": "it failed before saving one", "running": "it is still running",
               "interrupted": "it was interrupted before saving one"}.get(record.status, "none was recorded")
        return f"run #{record.id} has no checkpoint ({why}), so its validation images could not be re-evaluated"
    if not Path(record.checkpoint).is_file():
        return (f"the checkpoint file {record.checkpoint} no longer exists (moved or deleted), so run "
                f"#{record.id} could not be re-evaluated")
    return f"run #{record.id} was not evaluated"


# -- facts per run ----------------------------------------------------------------------------------------------
@dataclass
class _Run:
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


def _prepare(records: list[RunRecord]) -> list[_Run]:
    differing = differing_settings([r.config for r in records])
    return [_facts(record, differing, PALETTE[i % len(PALETTE)]) for i, record in enumerate(records)]


def _facts(record: RunRecord, differing: list[str], color: str) -> _Run:
    events = record.events
    steps = [e for e in events if isinstance(e, Step)]
    epochs = [e for e in events if isinstance(e, EpochEnd)]
    failure = record.failure or next((dataclasses.asdict(e) for e in reversed(events)
                                      if isinstance(e, RunFailed)), None)
    finished = next((e.metrics for e in reversed(events) if isinstance(e, RunFinished)), None)
    return _Run(record=record, label=run_label(record.id, record.config, differing), color=color, steps=steps,
                epochs=epochs, curves=curves_from_events(events), compile=last_compile_report(events), failure=failure,
                notices=[e for e in events if isinstance(e, Notice)],
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


def _system(metrics: dict, key: str, form: str) -> str:
    value = (metrics.get("system") or {}).get(key)
    return form.format(value) if isinstance(value, (int, float)) else "—"


def gpu_text(system: dict) -> str:
    """'cuda:0: 87 % busy, peak 412 W, 61 °C, 30,512 MiB' per GPU of a run's system summary; '' without one."""
    return "; ".join(f"{name}: {g['util_mean']:.0f} % busy, peak {g['power_peak_w']:.0f} W, {g['temp_peak_c']:.0f} °C, "
                     f"{g['memory_peak_mib']:,.0f} MiB" for name, g in system.items()
                     if name.startswith("cuda:") and isinstance(g, dict))


def _median(values: Iterable[float]) -> float | None:
    values = [v for v in values if isinstance(v, (int, float)) and math.isfinite(v)]
    return statistics.median(values) if values else None


def _config_keys(configs: list[dict]) -> list[str]:
    """Every TrainConfig field in declaration order, then anything else a record holds (a newer version's)."""
    keys = [f.name for f in dataclasses.fields(TrainConfig)]
    for config in configs:
        keys += [k for k in config if k not in keys]
    return keys


# -- comparison -------------------------------------------------------------------------------------------------
def _comparison(runs: list[_Run]) -> dict:
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
        payback = _payback(run)
        rows.append({"id": run.record.id, "label": run.label, "backend_used": run.metrics["backend_used"],
                     "samples_per_s": rate, "speedup": speedup,
                     "compile_seconds": run.metrics["compile_seconds"],
                     "peak_memory_mib": run.metrics["peak_memory_mib"],
                     "final_val_accuracy": run.metrics["final_val_accuracy"],
                     "payback": payback.to_dict() if payback else None,
                     "payback_problem": _payback_problem(run) if payback is None else None})
    return {"baseline_run": baseline.record.id, "baseline_note": note, "runs": rows}


def _payback(run: _Run) -> Payback | None:
    return Payback.from_dict(run.finished.get("payback"))


def _payback_problem(run: _Run) -> str | None:
    problem = run.finished.get("payback_problem")
    return problem if isinstance(problem, str) and problem else None


# -- HTML sections ----------------------------------------------------------------------------------------------
def _section_runs(runs: list[_Run], generated: datetime) -> str:
    rows = [[_run_cell(r), esc(r.record.created), esc(r.record.status), esc(r.record.config.get("dataset")),
             esc(r.record.environment.get("device_name") or r.record.environment.get("device"))] for r in runs]
    return (f"<p class=muted>Generated {esc(generated.isoformat(timespec='seconds'))} · "
            f"{len(runs)} run{'s' if len(runs) != 1 else ''}</p>"
            + _section("runs", _table(["Run", "Started", "Status", "Dataset", "Device"], rows)))


def _run_cell(run: _Run) -> str:
    return f"<span class=swatch style='background:{run.color}'></span>{esc(run.label)}"


def _section_config(runs: list[_Run]) -> str:
    configs = [r.record.config for r in runs]
    envs = [r.record.environment for r in runs]
    env_keys = list(dict.fromkeys(k for env in envs for k in env))
    note = "<p class=muted>Highlighted rows differ between the runs.</p>" if len(runs) > 1 else ""
    return _section("config", note + "<h3>Training configuration</h3>" + _comparison_table(runs, configs,
                    _config_keys(configs)) + "<h3>Environment</h3>" + _comparison_table(runs, envs, env_keys))


def _comparison_table(runs: list[_Run], values: list[dict], keys: list[str]) -> str:
    """One column per run; rows whose values differ between runs are highlighted."""
    differing = set(differing_settings(values))
    head = "<tr><th>Setting</th>" + "".join(f"<th>{_run_cell(r)}</th>" for r in runs) + "</tr>"
    body = []
    for key in keys:
        cells = [v.get(key) for v in values]
        differs = key in differing
        body.append(f"<tr{' class=diff' if differs else ''}><th>{esc(key)}</th>"
                    + "".join(f"<td>{esc(_plain(c))}</td>" for c in cells) + "</tr>")
    return f"<table>{head}{''.join(body)}</table>"


def _plain(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value)
    return str(value)


def _section_curves(runs: list[_Run]) -> str:
    legend = _legend(runs)
    charts = [_lossline_chart(runs), _throughputline_chart(runs)] + _memory_charts(runs)
    return _section("curves", legend + "".join(charts))


def _legend(runs: list[_Run]) -> str:
    return "<div class=legend>" + "".join(f"<span>{_run_cell(r)}</span>" for r in runs) + "</div>"


def _lossline_chart(runs: list[_Run]) -> str:
    series = [Series(r.color, r.curves.step, r.curves.loss, r.curves.val_step, r.curves.val_loss) for r in runs]
    marks = _compile_marks(runs)
    note = "<p class=muted>Lines: training loss per step · dots: validation loss at the end of each epoch"
    if marks:
        note += (" · marks along the bottom: the compile timeline, one row per kind (hover a mark for what "
                 "happened; the table in “Compile report” has the details)")
    chart = line_chart("Loss", "loss", series, zero_based=True, marks=marks)
    return chart + note + ".</p>" + _kind_legend(list(dict.fromkeys(m.kind for m in marks)))


def _kind_style(kind: str) -> tuple[str, str]:
    """(colour, short name) of a CompileEvent kind."""
    color, word = KIND_STYLE.get(kind, OTHER_KIND)
    return color, word or kind.replace("_", " ")


def _compile_marks(runs: list[_Run]) -> list[StepMark]:
    """Every run's compile events as step marks, kinds in KIND_STYLE's order (the chart's lanes follow it)."""
    several = len(runs) > 1
    marks = []
    for run in runs:
        who = f"#{run.record.id} · " if several else ""
        for event in run.timeline:
            color, word = _kind_style(event.kind)
            phase = f" ({event.phase})" if event.phase != "train" else ""
            marks.append(StepMark(event.step, event.kind, color,
                                  f"{who}step {event.step:,}{phase} · {word}: {event.title}"))
    order = list(KIND_STYLE)
    return sorted(marks, key=lambda m: order.index(m.kind) if m.kind in order else len(order))


def _kind_legend(kinds: list[str]) -> str:
    if not kinds:
        return ""
    items = []
    for kind in kinds:
        color, word = _kind_style(kind)
        items.append(f"<span title='{esc(COMPILE_EVENT_KINDS.get(kind, kind))}'><span class=swatch "
                     f"style='background:{color}'></span>{esc(word)}</span>")
    return "<div class=marklegend>" + "".join(items) + "</div>"


def _throughputline_chart(runs: list[_Run]) -> str:
    series = [Series(r.color, r.curves.throughput_step, r.curves.throughput) for r in runs]
    note = "<p class=muted>Steps that paid for compilation are left out.</p>"
    return line_chart("Throughput", "samples/s", series, zero_based=True) + note


def _memory_charts(runs: list[_Run]) -> list[str]:
    keys = list(dict.fromkeys(k for r in runs for k in r.curves.memory))
    keys = [k for k in MEMORY_KEYS if k in keys] + [k for k in keys if k not in MEMORY_KEYS]
    # Under CUDA graphs the graph pool counts as reserved, not allocated (pytorch/pytorch#121932): say so where a
    # falling "allocated" line would otherwise mislead, and point at the reserved chart.
    graphed = [r for r in runs if uses_cuda_graphs(r.record.config) and "allocated" in r.curves.memory]
    charts = []
    for key in keys:
        series = [Series(r.color, r.curves.step, r.curves.memory[key]) for r in runs if key in r.curves.memory]
        if key == "allocated" and graphed:
            charts.append(line_chart("Memory: allocated (CUDA-graph pool is in reserved)", "MiB", series)
                          + "<p class=muted>" + ", ".join(esc(r.label) for r in graphed)
                          + " replayed CUDA graphs: their graph pool's memory counts as reserved, not allocated "
                            "(pytorch/pytorch#121932), so allocated drops once the graphs are recorded. Read "
                            "“Memory: reserved” for what they hold.</p>")
            continue
        charts.append(line_chart(f"Memory: {key}", "MiB", series))
    return charts or ["<h3>Memory</h3><p class=muted>No memory readings were recorded.</p>"]


def _section_metrics(runs: list[_Run], evaluations: dict[int, Evaluation | None], reasons: dict[int, str]) -> str:
    rows = [
        ("Status", lambda m: esc(m["status"])),
        ("Steps", lambda m: f"{m['steps']:,}"),
        ("Epochs", lambda m: str(m["epochs"])),
        ("Best validation accuracy", lambda m: _pct(m["best_val_accuracy"])),
        ("Final validation accuracy", lambda m: _pct(m["final_val_accuracy"])),
        ("Final validation loss", lambda m: _num(m["final_val_loss"], ".4f")),
        ("Samples/s (steady state)", lambda m: _num(m["samples_per_s"], ",.0f")),
        ("Compile time", lambda m: _compile_time(m["compile_seconds"], m["backend_used"])),
        ("Peak memory", lambda m: _mib(m["peak_memory_mib"])),
        ("CPU, training process (mean)", lambda m: _system(m, "cpu_process_mean", "{:.0f} % of a core")),
        ("CPU, whole machine (mean)", lambda m: _system(m, "cpu_machine_mean", "{:.0f} %")),
        ("GPU (NVML)", lambda m: esc(gpu_text(m.get("system") or {})) or "—"),
    ]
    head = "<tr><th>Metric</th>" + "".join(f"<th>{_run_cell(r)}</th>" for r in runs) + "</tr>"
    body = "".join(f"<tr><th>{name}</th>" + "".join(f"<td>{cell(r.metrics)}</td>" for r in runs) + "</tr>"
                   for name, cell in rows)
    parts = [f"<table>{head}{body}</table>"]
    for run in runs:
        evaluation = evaluations.get(run.record.id)
        parts.append(f"<h3>Run #{run.record.id}: validation images</h3>")
        if evaluation is None:
            parts.append(f"<p class=missing>Not available: {esc(reasons[run.record.id])}.</p>")
        else:
            parts.append(_evaluation_html(evaluation))
    return _section("metrics", "".join(parts))


def _evaluation_html(ev: Evaluation) -> str:
    summary = (f"<p>Re-evaluated from the checkpoint on the CPU (float32): accuracy <b>{_pct(ev.accuracy)}</b>, "
               f"loss {ev.loss:.4f} on {ev.size:,} validation images.</p>")
    return summary + _confusion_html(ev) + _gallery_html(ev)


def _confusion_html(ev: Evaluation) -> str:
    """Rows are the true class; each cell is shaded by its share of that row (green: right, red: wrong)."""
    names = [esc(c) for c in ev.classes]
    head = "<tr><th>true ↓ / predicted →</th>" + "".join(f"<th>{n}</th>" for n in names) + "<th>total</th></tr>"
    body = []
    for i, row in enumerate(ev.confusion):
        total = sum(row)
        cells = "".join(_confusion_cell(v, total, i == j) for j, v in enumerate(row))
        body.append(f"<tr><th>{names[i]}</th>{cells}<td>{total:,}</td></tr>")
    return f"<table class=confusion>{head}{''.join(body)}</table>"


def _confusion_cell(count: int, total: int, correct: bool) -> str:
    share = count / total if total else 0.0
    alpha = share if correct else min(1.0, share * 4)  # mistakes are rare: make them visible
    rgb = "46,125,50" if correct else "198,40,40"
    ink = "#fff" if alpha > 0.55 else "#222"
    return f"<td style='background:rgba({rgb},{alpha:.2f});color:{ink}'>{count}</td>"


def _gallery_html(ev: Evaluation) -> str:
    if not ev.misclassified:
        return "<p>No validation image was misclassified.</p>"
    figures = []
    for m in ev.misclassified:
        caption = f"true {_class(ev, m.true)} → predicted {_class(ev, m.predicted)} ({m.confidence:.0%})"
        figures.append(f"<figure><img src='{_png_uri(m.pixels)}' width=56 height=56 alt='{esc(caption)}'>"
                       f"<figcaption>{esc(caption)}</figcaption></figure>")
    wrong = sum(sum(row) for row in ev.confusion) - sum(ev.confusion[i][i] for i in range(len(ev.confusion)))
    return (f"<p>{len(ev.misclassified)} of {wrong:,} misclassified images, most confident mistakes first:</p>"
            f"<div class=gallery>{''.join(figures)}</div>")


def _class(ev: Evaluation, index: int) -> str:
    return ev.classes[index] if 0 <= index < len(ev.classes) else str(index)


def _png_uri(pixels: np.ndarray) -> str:
    from PIL import Image

    buffer = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(pixels, dtype=np.uint8)).save(buffer, format="PNG", optimize=True)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def _section_compile(runs: list[_Run], base: Path | None = None) -> str:
    return _section("compile", "".join(_compile_html(run, base) for run in runs))


def _compile_html(run: _Run, base: Path | None = None) -> str:
    """One run's compile report: its facts, then (where the run recorded them) whether compiling paid off, the
    compile timeline, the recompile forecast against what happened, a fix-it card per graph-break type, and the
    link to the full compile trace. Runs recorded before these existed show the facts alone."""
    title = f"<h3>{_run_cell(run)}</h3>"
    timing = _timing_sentence(run)
    insight = _payback_html(run) + _timeline_html(run) + _forecast_html(run)
    trace = _trace_html(run, base)
    report = run.compile
    if report is None:
        backend = run.record.config.get("backend", "eager")
        what = "ran eagerly: nothing was compiled" if backend == "eager" else (
            f"asked for backend {backend}, but no compile report was recorded")
        return title + f"<p>This run {esc(what)}.</p>" + timing + insight + trace
    facts = [
        ("Compiled", "yes" if report.compiled else "no"),
        ("Backend / mode", f"{report.backend} / {report.mode}"),
        ("Graphs", str(report.graph_count)),
        ("Graph breaks", str(report.graph_break_count)),
        ("Operators in the graphs", str(report.op_count)),
        ("Report from", "the training run" if report.source == "run" else "a separate inspection (explain)"),
    ]
    table = "<table class=facts>" + "".join(f"<tr><th>{k}</th><td>{esc(v)}</td></tr>" for k, v in facts) + "</table>"
    return (title + table + timing + insight + _breaks_html(run, report) + _list_html("Recompiles", report.recompiles)
            + _list_html("Warnings", report.warnings) + trace)


def _timing_sentence(run: _Run) -> str:
    compile_s = run.metrics["compile_seconds"]
    step_s = run.metrics["steady_step_seconds"]
    steady = sum(1 for s in run.steps if s.steady)
    if step_s is None:
        return "<p>No steady-state steps were recorded.</p>"
    text = f"Steady-state step: {_duration(step_s)} (median of {steady:,} steps)"
    # compile_seconds counts every phase (first step, first validation, CUDA-graph recording); the step's own is
    # its "train" phase. Runs recorded before phases were counted have only that one.
    phases = {e.phase: e.seconds for e in run.record.events if isinstance(e, CompileFinished)}
    first = phases.pop("train", compile_s)
    if first:
        text += (f" · compile (first step): {_duration(first)}, the time of about "
                 f"{first / step_s:,.0f} steady steps")
    if phases and compile_s:
        words = {"eval": "eval graph (first validation)", "cudagraph recording": "CUDA-graph recording"}
        text += (" · then " + ", ".join(f"{words.get(phase, phase)} {_duration(s)}" for phase, s in phases.items())
                 + f": {_duration(compile_s)} compiling in all")
    return f"<p>{text}.</p>"


def _breaks_html(run: _Run, report: CompileReport) -> str:
    """A fix-it card per type of graph break (ground.fixit): what it is, how to fix it, where in the user's code."""
    if not report.breaks:
        return "<p>No graph breaks.</p>" if report.compiled else ""
    cards = fixit_cards(report.breaks)
    count = sum(card.count for card in cards)
    head = (f"<h4>Graph breaks</h4><p>{count:,} graph break{'s' if count != 1 else ''} of "
            f"{len(cards)} type{'s' if len(cards) != 1 else ''}; each card says what the break is and how to "
            f"remove it.</p>")
    return head + "".join(_card_html(card, run) for card in cards)


def _card_html(card: FixItCard, run: _Run) -> str:
    times = f"{card.count:,} break{'s' if card.count != 1 else ''}"
    category = f" · {esc(card.category.replace('_', ' '))}" if card.category else ""
    inside = ""
    if card.inside_pytorch:  # nothing for the user to change: the report to file upstream, ready to copy
        report = bug_report(card, _versions(run.record.environment), run.record.config)
        inside = ("<p class=inside>No line of your code was recorded for this break: it happened inside PyTorch, "
                  "where there is nothing for you to change. If the fix below does not apply, please report it to "
                  "PyTorch (github.com/pytorch/pytorch/issues).</p><details><summary>Bug report, ready to copy "
                  f"(Markdown)</summary><pre>{esc(report)}</pre></details>")
    hints = ("<ul>" + "".join(f"<li>{esc(h)}</li>" for h in card.hints) + "</ul>") if card.hints else ""
    recipe = f"<p><b>Fix:</b></p><pre class=recipe>{esc(card.recipe)}</pre>" if card.recipe.strip() else ""
    link = ""
    if card.link:  # shown, not linked: the report makes no request to the network, not even a click away
        link = f"<p class=muted>Dynamo's page for this break: <code class=url>{esc(card.link)}</code></p>"
    return (f"<div class=card><h5>{esc(card.type)}</h5><p class=muted>{times}{category}</p>"
            f"<p>{esc(card.explanation)}</p>{inside}{hints}{recipe}{_frames_html(card.frames)}{link}</div>")


def _versions(environment: dict) -> dict:
    """The version entries of a run's environment (RunStarted's versions, stored beside the device)."""
    return {k: v for k, v in environment.items() if k not in ("device", "device_name")}


def _frames_html(frames: Sequence[Frame]) -> str:
    """The user's source lines, innermost last."""
    if not frames:
        return ""
    rows = [[f"<code>{esc(f'{f.file}:{f.line}')}</code>", f"<code>{esc(f.function)}</code>",
             f"<code>{esc(f.source)}</code>" if f.source else "—"] for f in frames]
    return "<p><b>Where in your code:</b></p>" + _table(["Where", "Function", "Source line"], rows)


# -- compile insight: payback, timeline, forecast, trace ------------------------------------------------------
def _payback_html(run: _Run) -> str:
    payback, problem = _payback(run), _payback_problem(run)
    if payback is None:
        return f"<h4>Did compiling pay off?</h4><p class=muted>{esc(_sentence(problem))}.</p>" if problem else ""
    facts = [
        ("Eager step", f"{payback.eager_step_s * 1e3:.2f} ms"),
        ("Compiled step", f"{payback.compiled_step_s * 1e3:.2f} ms"),
        ("Speed-up", f"{payback.speedup:.2f}×" if math.isfinite(payback.speedup) else "—"),
        ("Compile time", _duration(payback.compile_s)),
        ("Break-even step", payback.short()),
    ]
    table = "<table class=facts>" + "".join(f"<tr><th>{k}</th><td>{esc(v)}</td></tr>" for k, v in facts) + "</table>"
    verdict = "ok" if payback.paid_off else "bad" if payback.break_even_step is None else "warn"
    method = f"<p class=muted>Method: {esc(payback.method)}.</p>" if payback.method else ""
    return (f"<h4>Did compiling pay off?</h4><p class='verdict {verdict}'>{esc(_sentence(payback.verdict()))}.</p>"
            + table + method)


def _sentence(text: str) -> str:
    text = text.strip().rstrip(".")
    return text[:1].upper() + text[1:]


def _timeline_html(run: _Run) -> str:
    """The compile timeline as a table, a row per event; a step's cache hits and misses are one row."""
    if not run.timeline:
        return ""
    groups = _timeline_groups(run.timeline)
    shown = groups[:MAX_TIMELINE_ROWS]
    rows = [_cache_row(g) if g[0].kind in CACHE_KINDS else _event_row(g[0]) for g in shown]
    more = (f"<p class=muted>{len(groups) - len(shown):,} more rows are left out here; the JSON twin has every "
            f"event.</p>" if len(groups) > len(shown) else "")
    n = len(run.timeline)
    return (f"<h4>Compile timeline</h4><p class=muted>{n:,} thing{'s' if n != 1 else ''} the compiler did, in "
            f"order; the loss chart marks each at its step.</p>"
            + _table(["Step", "Phase", "Kind", "What happened", "Where", "Details"], rows) + more)


def _timeline_groups(events: Sequence[CompileEvent]) -> list[list[CompileEvent]]:
    """One group per event, except the cache hits and misses of one step and phase: one group, where the first
    of them happened."""
    groups: list[list[CompileEvent]] = []
    caches: dict[tuple[int, str], list[CompileEvent]] = {}
    for event in events:
        if event.kind not in CACHE_KINDS:
            groups.append([event])
        elif (event.step, event.phase) in caches:
            caches[(event.step, event.phase)].append(event)
        else:
            caches[(event.step, event.phase)] = group = [event]
            groups.append(group)
    return groups


def _kind_cell(kind: str) -> str:
    color, word = _kind_style(kind)
    return f"<span class=swatch style='background:{color}'></span>{esc(word)}"


def _event_row(event: CompileEvent) -> list[str]:
    where = "—"
    if event.frames:
        source = event.frames[-1].source
        where = f"<code>{esc(event.where)}</code>" + (f"<br><code>{esc(source)}</code>" if source else "")
    lines = [event.detail.strip()] if event.detail.strip() else []
    if len(event.frames) > 1:
        lines.append("User stack (innermost last):\n" + "\n".join(
            f"  {f.file}:{f.line} in {f.function}" + (f"\n    {f.source}" if f.source else "") for f in event.frames))
    if event.compile_id:
        lines.append(f"Dynamo compile id {event.compile_id} (frame/compile)")
    details = (f"<details><summary>details</summary><pre>{esc(chr(10).join(lines))}</pre></details>"
               if lines else "—")
    return [f"{event.step:,}", esc(event.phase), _kind_cell(event.kind), esc(event.title), where, details]


CACHE_NAME = re.compile(r"^(.*?\bcache)\b", re.IGNORECASE)  # "FX-graph cache hit" → "FX-graph cache"


def cache_summary(events: Sequence[CompileEvent]) -> str:
    """"FX-graph cache: 2 misses, AOTAutograd cache: 1 hit": the cache hits and misses counted per cache."""
    counts: dict[str, dict[str, int]] = {}
    for event in events:
        found = CACHE_NAME.match(event.title)
        name = found[1] if found else "cache"
        word = "hit" if event.kind == "cache_hit" else "miss"
        counts.setdefault(name, {}).setdefault(word, 0)
        counts[name][word] += 1
    plural = {"hit": "hits", "miss": "misses"}
    return ", ".join(f"{name}: " + ", ".join(f"{n:,} {word if n == 1 else plural[word]}" for word, n in words.items())
                     for name, words in counts.items())


def _cache_row(events: list[CompileEvent]) -> list[str]:
    first = events[0]
    kinds = "<br>".join(_kind_cell(k) for k in dict.fromkeys(e.kind for e in events))
    lines = [e.title + (f" ({e.detail})" if e.detail else "") + (f" [compile id {e.compile_id}]" if e.compile_id
                                                                   else "") for e in events]
    details = f"<details><summary>{len(events):,} events</summary><pre>{esc(chr(10).join(lines))}</pre></details>"
    return [f"{first.step:,}", esc(first.phase), kinds, esc(cache_summary(events)), "—", details]


def _forecast_checks(run: _Run) -> list[dict] | None:
    checks = run.finished.get("recompile_forecast")
    if not isinstance(checks, list):
        return None
    return [c for c in checks if isinstance(c, dict)]


VERDICT_CLASS = {CONFIRMED: "ok", DID_NOT_HAPPEN: "warn", NOT_PREDICTED: "bad"}


def _forecast_html(run: _Run) -> str:
    """The recompiles forecast from the run's config, each with what really happened."""
    checks = _forecast_checks(run)
    if checks is None:
        return ""
    head = "<h4>Recompile forecast vs reality</h4>"
    if not checks:
        return head + "<p>No recompile was forecast, and none happened.</p>"
    rows = []
    for check in checks:
        verdict = str(check.get("verdict") or "—")
        what = esc(check.get("text") or "—")
        if check.get("expected"):
            what += " <span class=muted>(by design)</span>"
        count = check.get("count")
        if isinstance(count, int) and not isinstance(count, bool) and count > 1:
            what += f" <span class=muted>({count:,} recompiles)</span>"
        observed = check.get("observed") if isinstance(check.get("observed"), list) else []
        seen = "".join(f"<pre>{esc(o)}</pre>" for o in observed) or "—"
        rows.append([f"<span class='verdict {VERDICT_CLASS.get(verdict, '')}'>{esc(verdict)}</span>",
                     esc(check.get("when") or "—"), what, esc(check.get("fix") or "—"), seen])
    note = ("<p class=muted>Forecast from the run's settings and data sizes before it ran, held against the "
            "recompiles Dynamo reported (“observed”, in its own words).</p>")
    return head + note + _table(["Verdict", "When", "What", "Fix", "Observed"], rows)


def _trace_html(run: _Run, base: Path | None) -> str:
    """The link to the full compile trace (tlparse's index.html), or why there is none to follow."""
    trace = run.finished.get("compile_trace")
    problem = run.finished.get("compile_trace_problem")
    problem = problem if isinstance(problem, str) and problem else ""
    if not isinstance(trace, str) or not trace:
        return f"<p class=missing>Compile trace: {esc(problem)}.</p>" if problem else ""
    if not problem:
        return (f"<p><a href='{esc(file_href(trace, base))}'>Full compile trace (tlparse)</a> "
                f"<span class=muted>({esc(trace)})</span></p>")
    return (f"<p class=missing>The compile trace was recorded in <a href='{esc(file_href(trace, base))}'>"
            f"<code>{esc(trace)}</code></a> but not rendered: {esc(problem)}.</p>")


def _list_html(title: str, items: Iterable[str]) -> str:
    items = list(items)
    if not items:
        return ""
    return f"<h4>{title}</h4><ul>" + "".join(f"<li><pre>{esc(i)}</pre></li>" for i in items) + "</ul>"


def _section_insight(runs: list[_Run], base: Path | None) -> str:
    """Profiled windows and mixed precision (report_insight); a pointer to both when no run has either."""
    bodies = [(run, insight_html(run.record.events, run.color, base)) for run in runs]
    body = "".join(f"<h3>{_run_cell(run)}</h3>{html}" for run, html in bodies if html)
    return _section("insight", body or (
        "<p class=muted>No run here was profiled or trained in mixed precision. Set <i>Profile steps</i> (or run "
        "<code>workbench profile</code>) for the op table, the memory by category and a trace; choose bf16 or fp16 "
        "under <i>Precision</i> for the dtype census and, with fp16, the loss scale and skipped steps.</p>"))


def _section_comparison(comparison: dict) -> str:
    rows = [[f"#{r['id']} {esc(r['label'].split(' ', 1)[-1])}", _num(r["samples_per_s"], ",.0f"),
             "—" if r["speedup"] is None else f"{r['speedup']:.2f}×",
             _compile_time(r["compile_seconds"], r["backend_used"]),
             _mib(r["peak_memory_mib"]), _pct(r["final_val_accuracy"])] for r in comparison["runs"]]
    head = ["Run", "Samples/s", "Speed-up", "Compile time", "Peak memory", "Final accuracy"]
    if any(r.get("payback") or r.get("payback_problem") for r in comparison["runs"]):  # runs from before: no column
        head.append("Compile paid off at")
        for row, r in zip(rows, comparison["runs"]):
            row.append(_break_even_cell(r))
    return _section("comparison", f"<p>{esc(comparison['baseline_note'])}.</p>" + _table(head, rows))


def _break_even_cell(row: dict) -> str:
    """A comparison row's break-even step, its verdict as the tooltip; why it was not measured; or a dash."""
    payback = Payback.from_dict(row.get("payback"))
    if payback is not None:
        return f"<span title='{esc(payback.verdict())}'>{esc(payback.short())}</span>"
    if row.get("payback_problem"):
        return f"<span class=muted title='{esc(row['payback_problem'])}'>not measured</span>"
    return "—"


def _section_failures(runs: list[_Run]) -> str:
    items = [text for text in (_failure_html(r) for r in runs) if text]
    notices = [f"<li>{_run_cell(r)}: {esc(n.level)}: {esc(n.message)}"
               + (f" <span class=muted>({esc(n.hint)})</span>" if n.hint else "") + "</li>"
               for r in runs for n in r.notices if n.level in ("warning", "error")]
    body = "".join(items) if items else "<p>No failures: every run finished.</p>"
    if notices:
        body += "<h3>Notices during the runs</h3><ul>" + "".join(notices) + "</ul>"
    return _section("failures", body)


def _failure_html(run: _Run) -> str:
    status = run.record.status
    if run.failure:
        f = run.failure
        hint = f"<p><b>What to try:</b> {esc(f.get('hint'))}</p>" if f.get("hint") else ""
        return (f"<div class=failure><h3>{_run_cell(run)} failed ({esc(f.get('kind'))})</h3>"
                f"<pre>{esc(f.get('message'))}</pre>{hint}</div>")
    words = {
        "stopped": f"was stopped by the user after {run.metrics['steps']:,} steps",
        "interrupted": "was interrupted: its process ended without finishing (killed or crashed); the report "
                       "shows what was recorded until then",
        "running": "was still running when this report was made; the report shows what was recorded so far",
    }.get(status)
    return f"<p class=stopped>{_run_cell(run)} {esc(words)}.</p>" if words else ""


# -- JSON -------------------------------------------------------------------------------------------------------
def _run_json(run: _Run, evaluation: Evaluation | None, reason: str) -> dict:
    record = run.record
    return {
        "id": record.id,
        "label": run.label,
        "created": record.created,
        "status": record.status,
        "config": record.config,
        "environment": record.environment,
        "metrics": run.metrics,
        "epochs": [dataclasses.asdict(e) for e in run.epochs],
        "compile": _compile_json(run.compile),
        **_insight_json(run),
        "profile": run.finished.get("profile"),
        "amp": run.finished.get("amp"),
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


def _insight_json(run: _Run) -> dict:
    """The compile insight a run recorded: its timeline, payback, forecast checks, fix-it cards and compile trace
    (None or empty for runs recorded before they existed)."""
    payback = _payback(run)
    trace = run.finished.get("compile_trace")
    trace_problem = run.finished.get("compile_trace_problem")
    report = run.compile
    return {
        "compile_timeline": [{**dataclasses.asdict(e), "where": e.where} for e in run.timeline],
        "payback": payback.to_dict() if payback else None,
        "payback_problem": _payback_problem(run) if payback is None else None,
        "recompile_forecast": _forecast_checks(run),
        "fixit_cards": [_card_json(c) for c in fixit_cards(report.breaks)] if report and report.breaks else [],
        "compile_trace": trace if isinstance(trace, str) and trace else None,
        "compile_trace_problem": trace_problem if isinstance(trace_problem, str) and trace_problem else None,
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


# -- HTML helpers -----------------------------------------------------------------------------------------------
def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:.2%}"


def _num(value: float | None, spec: str) -> str:
    return "—" if value is None or not math.isfinite(value) else format(value, spec)


def _mib(value: float | None) -> str:
    return "—" if value is None else f"{value:,.0f} MiB"


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    if seconds == 0:
        return "0 s"
    if seconds < 1e-3:
        return f"{seconds * 1e6:.0f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds:.2f} s"


def _compile_time(seconds: float | None, backend_used: str | None) -> str:
    return "none (eager)" if not seconds and backend_used == "eager" else _duration(seconds)


def _section(anchor: str, body: str) -> str:
    return f"<section id={anchor}><h2>{SECTIONS[anchor]}</h2>{body}</section>"


CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:#222;max-width:1040px;margin:2em auto;
padding:0 1em}
h1{font-size:1.6em;margin-bottom:.2em}h2{border-bottom:1px solid #ddd;padding-bottom:.2em;margin-top:2em}
h3{font-size:1.05em;margin:1.4em 0 .4em}h4{margin:1em 0 .3em}
table{border-collapse:collapse;margin:.4em 0}th,td{border:1px solid #e2e2e2;padding:3px 8px;text-align:left;
vertical-align:top}th{background:#f6f6f6;font-weight:600}tr.diff td,tr.diff th{background:#fff4c2}
table.confusion td{text-align:right;min-width:2.4em}
pre,code{font:12px ui-monospace,Menlo,Consolas,monospace;white-space:pre-wrap;word-break:break-word;margin:0}
.muted{color:#666}.missing{color:#8a5a00;background:#fff8e6;padding:.4em .6em}
.failure{border-left:4px solid #c62828;background:#fdf0f0;padding:.3em .8em;margin:.6em 0}
.swatch{display:inline-block;width:.8em;height:.8em;border-radius:2px;margin-right:.4em;vertical-align:-1px}
.legend span{margin-right:1.4em;white-space:nowrap}
svg.chart{width:100%;max-width:760px;height:auto;font-size:11px;fill:#444}
svg .plot{fill:#fff;stroke:#ccc}svg .grid{stroke:#eee}svg .axis{stroke:#999}svg .label{fill:#666}
svg .marker{stroke:#fff;stroke-width:1.2}
.marklegend{font-size:12px;color:#444}.marklegend>span{margin-right:1.2em;white-space:nowrap;cursor:help}
.card{border:1px solid #e2e2e2;border-left:4px solid #f58518;padding:.2em .9em .6em;margin:.7em 0}
.card h5{font-size:1em;margin:.5em 0 .1em}.card .inside{color:#8a5a00}pre.recipe{background:#f6f8fa;padding:.5em .7em}
.verdict.ok{color:#2e7d32;font-weight:600}.verdict.warn{color:#8a5a00;font-weight:600}
.verdict.bad{color:#c62828;font-weight:600}
.gallery{display:flex;flex-wrap:wrap;gap:10px}
figure{margin:0;width:96px;font-size:11px;text-align:center}
figure img{image-rendering:pixelated;background:#000;display:block;margin:0 auto 2px}
nav a{margin-right:1em}
"""


def _page(title: str, sections: list[str]) -> str:
    nav = "".join(f"<a href='#{anchor}'>{heading}</a>" for anchor, heading in SECTIONS.items()
                  if f"<section id={anchor}>" in "".join(sections))
    return (f"<!DOCTYPE html><html lang=en><head><meta charset=utf-8><title>{esc(title)}</title>"
            f"<meta name=viewport content='width=device-width,initial-scale=1'><style>{CSS}</style></head>"
            f"<body><h1>{esc(title)}</h1><nav>{nav}</nav>{''.join(sections)}</body></html>\n")
