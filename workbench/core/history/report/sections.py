"""The report's sections other than the compile report (compile_section) and where the time and the memory go
(insight): the runs covered, their configuration and environment, the curves, the final metrics with each
run's re-evaluation, the comparison and the failures. Each returns one `<section>`.
"""

from __future__ import annotations

import base64
import dataclasses
import io
import json
from datetime import datetime
from typing import Any

import numpy as np

from ...ground.config import TrainConfig, uses_cuda_graphs
from ..naming import differing_settings
from ..groups import Spread, group_figures, seed_groups
from .html import esc
from .html import table as _table
from ...ground.results_text import gpu_text
from .cells import compile_time, mib, num, pct, run_cell
from .compile_section import compile_marks, kind_legend
from ...ground.evaluation import Evaluation
from .layers_section import alert_marks
from .facts import ComparedRun, Comparison, RunFacts
from .page import section
from .svgchart import Series, line_chart

MEMORY_KEYS = ("allocated", "reserved", "peak", "rss")  # the usual order; any other key follows


def section_runs(runs: list[RunFacts], generated: datetime) -> str:
    rows = [[run_cell(r), esc(r.record.created), esc(r.record.status), esc(r.record.config.get("dataset")),
             esc(r.record.environment.get("device_name") or r.record.environment.get("device")),
             esc(", ".join(r.record.tags)) if r.record.tags else ""] for r in runs]
    return (f"<p class=muted>Generated {esc(generated.isoformat(timespec='seconds'))} · "
            f"{len(runs)} run{'s' if len(runs) != 1 else ''}</p>"
            + section("runs", _table(["Run", "Started", "Status", "Dataset", "Device", "Tags"], rows) + _notes(runs)
                      + _seed_groups(runs)))


def _seed_groups(runs: list[RunFacts]) -> str:
    """Runs among these that differ only by seed, as one group each: the headline figures as mean ± spread (one
    seed's figure says little about the settings; the spread says how much the seed moves it)."""
    records = {r.record.id: r.record for r in runs}
    rows = []
    for group in seed_groups(list(records.values())):
        figures = group_figures([records[run_id] for run_id in group.run_ids])

        def cell(value: Spread | None, fmt) -> str:
            return esc(value.text(fmt)) if value is not None else "—"

        rows.append([esc(group.label), cell(figures.best_val_accuracy, pct),
                     cell(figures.samples_per_s, lambda v: num(v, ",.0f")),
                     cell(figures.compile_seconds, lambda v: num(v, ".1f") + " s"),
                     cell(figures.peak_memory_mib, mib)])
    if not rows:
        return ""
    return ("<h3>Seed groups</h3><p class=muted>Runs whose settings differ only by seed: mean ± standard deviation "
            "(range, runs).</p>" + _table(["Group", "Best val accuracy", "Samples/s", "Compile", "Peak memory"], rows))


def _notes(runs: list[RunFacts]) -> str:
    """Each run's note as its user wrote it: Markdown shown as text (escaped, never rendered: no markup of theirs
    reaches the page)."""
    notes = [f"<h4>{run_cell(r)}</h4><pre>{esc(r.record.notes)}</pre>" for r in runs if r.record.notes]
    return "<h3>Notes</h3>" + "".join(notes) if notes else ""


def section_config(runs: list[RunFacts]) -> str:
    configs = [r.record.config for r in runs]
    envs = [r.record.environment for r in runs]
    env_keys = list(dict.fromkeys(k for env in envs for k in env))
    note = "<p class=muted>Highlighted rows differ between the runs.</p>" if len(runs) > 1 else ""
    return section("config", note + "<h3>Training configuration</h3>" + _comparison_table(runs, configs,
                    _config_keys(configs)) + "<h3>Environment</h3>" + _comparison_table(runs, envs, env_keys))


def _config_keys(configs: list[dict]) -> list[str]:
    """Every TrainConfig field in declaration order, then anything else a record holds (a newer version's)."""
    keys = [f.name for f in dataclasses.fields(TrainConfig)]
    for config in configs:
        keys += [k for k in config if k not in keys]
    return keys


def _comparison_table(runs: list[RunFacts], values: list[dict], keys: list[str]) -> str:
    """One column per run; rows whose values differ between runs are highlighted."""
    differing = set(differing_settings(values))
    head = "<tr><th>Setting</th>" + "".join(f"<th>{run_cell(r)}</th>" for r in runs) + "</tr>"
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


def section_curves(runs: list[RunFacts]) -> str:
    legend = _legend(runs)
    charts = [_lossline_chart(runs), _accuracy_chart(runs), _throughputline_chart(runs)] + _memory_charts(runs)
    return section("curves", legend + "".join(charts))


def _legend(runs: list[RunFacts]) -> str:
    return "<div class=legend>" + "".join(f"<span>{run_cell(r)}</span>" for r in runs) + "</div>"


def _lossline_chart(runs: list[RunFacts]) -> str:
    series = [Series(r.color, r.curves.step, r.curves.loss, r.curves.val_step, r.curves.val_loss) for r in runs]
    timeline, alerts = compile_marks(runs), alert_marks(runs)
    note = "<p class=muted>Lines: training loss per step · dots: validation loss at the end of each epoch"
    if timeline:
        note += (" · marks along the bottom: the compile timeline, one row per kind (hover a mark for what "
                 "happened; the table in “Compile report” has the details)")
    if alerts:
        note += " · the lowest row: the alerts, coloured by severity (hover for what to do; “Alerts” lists them)"
    chart = line_chart("Loss", "loss", series, zero_based=True, marks=timeline + alerts)
    return chart + note + ".</p>" + kind_legend(list(dict.fromkeys(m.kind for m in timeline)))


def _accuracy_chart(runs: list[RunFacts]) -> str:
    """Training accuracy per step (the step's batch) and validation accuracy at each epoch's end, in percent."""
    series = []
    for r in runs:
        curves = r.curves
        train = curves.accuracy if curves.accuracy is not None else np.full(len(curves.step), np.nan)
        series.append(Series(r.color, curves.step, 100.0 * np.asarray(train, dtype=float), curves.val_step,
                             100.0 * np.asarray(curves.val_accuracy, dtype=float)))
    note = ("<p class=muted>Lines: training accuracy of each step's batch · dots: validation accuracy at the end of "
            "each epoch (the best of them is the run's best val accuracy, the last its final one).</p>")
    return line_chart("Accuracy", "%", series, zero_based=True) + note


def _throughputline_chart(runs: list[RunFacts]) -> str:
    series = [Series(r.color, r.curves.throughput_step, r.curves.throughput) for r in runs]
    note = "<p class=muted>Steps that paid for compilation are left out.</p>"
    return line_chart("Throughput", "samples/s", series, zero_based=True) + note


def _memory_charts(runs: list[RunFacts]) -> list[str]:
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


def section_metrics(runs: list[RunFacts], evaluations: dict[int, Evaluation | None], reasons: dict[int, str]) -> str:
    rows = [
        ("Status", lambda m: esc(m.status)),
        ("Steps", lambda m: f"{m.steps:,}"),
        ("Epochs", lambda m: str(m.epochs)),
        ("Best validation accuracy", lambda m: pct(m.best_val_accuracy)),
        ("Final validation accuracy", lambda m: pct(m.final_val_accuracy)),
        ("Final validation loss", lambda m: num(m.final_val_loss, ".4f")),
        ("Samples/s (steady state)", lambda m: num(m.samples_per_s, ",.0f")),
        ("Compile time", lambda m: compile_time(m.compile_seconds, m.backend_used)),
        ("Peak memory", lambda m: mib(m.peak_memory_mib)),
        ("CPU, training process (mean)",
         lambda m: f"{m.system.cpu_process_mean:.0f} % of a core" if m.system else "—"),
        ("CPU, whole machine (mean)", lambda m: f"{m.system.cpu_machine_mean:.0f} %" if m.system else "—"),
        ("GPU (NVML)", lambda m: esc(gpu_text(m.system)) if m.system and m.system.gpus else "—"),
    ]
    head = "<tr><th>Metric</th>" + "".join(f"<th>{run_cell(r)}</th>" for r in runs) + "</tr>"
    body = "".join(f"<tr><th>{name}</th>" + "".join(f"<td>{cell(r.figures)}</td>" for r in runs) + "</tr>"
                   for name, cell in rows)
    parts = [f"<table>{head}{body}</table>"]
    for run in runs:
        evaluation = evaluations.get(run.record.id)
        parts.append(f"<h3>Run #{run.record.id}: validation images</h3>")
        if evaluation is None:
            parts.append(f"<p class=missing>Not available: {esc(reasons[run.record.id])}.</p>")
        else:
            parts.append(_evaluation_html(evaluation))
    return section("metrics", "".join(parts))


def _evaluation_html(ev: Evaluation) -> str:
    summary = (f"<p>Re-evaluated from the checkpoint on the CPU (float32): accuracy <b>{pct(ev.accuracy)}</b>, "
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


def section_comparison(comparison: Comparison) -> str:
    rows = [[f"#{r.id} {esc(r.label.split(' ', 1)[-1])}", num(r.samples_per_s, ",.0f"),
             "—" if r.speedup is None else f"{r.speedup:.2f}×", compile_time(r.compile_seconds, r.backend_used),
             mib(r.peak_memory_mib), pct(r.final_val_accuracy)] for r in comparison.runs]
    head = ["Run", "Samples/s", "Samples/s vs the first run", "Compile time", "Peak memory", "Final accuracy"]
    if any(r.payback or r.payback_problem for r in comparison.runs):  # runs from before: no column
        head.append("Compile paid off at")
        for row, r in zip(rows, comparison.runs):
            row.append(_break_even_cell(r))
    return section("comparison", f"<p>{esc(comparison.baseline_note)}.</p>" + _table(head, rows))


def _break_even_cell(run: ComparedRun) -> str:
    """A compared run's break-even step, its verdict as the tooltip; why it was not measured; or a dash."""
    if run.payback is not None:
        return f"<span title='{esc(run.payback.verdict())}'>{esc(run.payback.short())}</span>"
    if run.payback_problem:
        return f"<span class=muted title='{esc(run.payback_problem)}'>not measured</span>"
    return "—"


def section_failures(runs: list[RunFacts]) -> str:
    items = [text for text in (_failure_html(r) for r in runs) if text]
    notices = [f"<li>{run_cell(r)}: {esc(n.level)}: {esc(n.message)}"
               + (f" <span class=muted>({esc(n.hint)})</span>" if n.hint else "") + "</li>"
               for r in runs for n in r.notices if n.level in ("warning", "error")]
    body = "".join(items) if items else "<p>No failures: every run finished.</p>"
    if notices:
        body += "<h3>Notices during the runs</h3><ul>" + "".join(notices) + "</ul>"
    return section("failures", body)


def _failure_html(run: RunFacts) -> str:
    status = run.record.status
    if run.failure:
        f = run.failure
        hint = f"<p><b>What to try:</b> {esc(f.get('hint'))}</p>" if f.get("hint") else ""
        return (f"<div class=failure><h3>{run_cell(run)} failed ({esc(f.get('kind'))})</h3>"
                f"<pre>{esc(f.get('message'))}</pre>{hint}</div>")
    words = {
        "stopped": f"was stopped by the user after {run.figures.steps:,} steps",
        "interrupted": "was interrupted: its process ended without finishing (killed or crashed); the report "
                       "shows what was recorded until then",
        "running": "was still running when this report was made; the report shows what was recorded so far",
    }.get(status)
    return f"<p class=stopped>{run_cell(run)} {esc(words)}.</p>" if words else ""
