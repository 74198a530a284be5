"""The report's "Where the time and the memory go" section: a run's profiled window (its heaviest ops, its memory
by category at the peak, its trace) and its mixed precision (the recommendation, the dtype census, fp16's loss
scale and skipped steps). From the run's ProfileReport, AmpReport and AmpSkipped events; runs without them get
nothing here."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Sequence

from ...ground.events import AmpReport, AmpSkipped, Event, ProfileReport, Step
from ...ground.memory_trace import MemoryTimeline
from .html import esc, file_href, table
from .cells import run_cell
from .facts import RunFacts
from .page import section
from .svgchart import Series, line_chart

TOP_OPS = 15  # rows of the op table
TOP_CENSUS = 12
MAX_SKIPPED_ROWS = 20


def insight_html(events: Sequence[Event], color: str, base: Path | None) -> str:
    """The section's body for one run ("" when it was neither profiled nor mixed-precision)."""
    profile = next((e for e in reversed(events) if isinstance(e, ProfileReport)), None)
    amp = next((e for e in events if isinstance(e, AmpReport)), None)
    parts = []
    if profile is not None:
        parts.append(profile_html(profile, base))
    if amp is not None:
        parts.append(amp_html(amp, [e for e in events if isinstance(e, AmpSkipped)],
                              [e for e in events if isinstance(e, Step) and e.loss_scale is not None], color))
    return "".join(parts)


def section_insight(runs: list[RunFacts], base: Path | None) -> str:
    """The section: each run's profiled window and mixed precision; a pointer to both when no run has either."""
    bodies = [(run, insight_html(run.record.events, run.color, base)) for run in runs]
    body = "".join(f"<h3>{run_cell(run)}</h3>{html}" for run, html in bodies if html)
    return section("insight", body or (
        "<p class=muted>No run here was profiled or trained in mixed precision. Set <i>Profile steps</i> (or run "
        "<code>workbench profile</code>) for the op table, the memory by category and a trace; choose bf16 or fp16 "
        "under <i>Precision</i> for the dtype census and, with fp16, the loss scale and skipped steps.</p>"))


def profile_html(report: ProfileReport, base: Path | None) -> str:
    summary = report.summary
    cost = summary.cost
    head = f"<h4>Profile: steps {report.first_step}–{report.last_step} on {esc(report.device)}</h4>"
    if cost.profiled_step_ms and cost.steady_step_ms:
        head += (f"<p>A profiled step took {cost.profiled_step_ms:.2f} ms against {cost.steady_step_ms:.2f} ms "
                 f"for a steady one: the profiler's own cost, which is why these steps stay off the throughput "
                 f"figures.</p>")
    device = summary.device == "cuda"
    rows = [[esc(op.name), esc(op.region or "eager"), esc(op.calls), _ms(op.self_cpu_us), _ms(op.cpu_us)]
            + ([_ms(op.self_device_us), _ms(op.device_us)] if device else [])
            + [f"<code>{esc(op.shapes)}</code>" if op.shapes else ""]
            for op in summary.ops[:TOP_OPS]]
    head_cells = ["Op", "Region", "Calls", "Self CPU", "CPU total"] + (
        ["Self device", "Device total"] if device else []) + ["Input shapes"]
    return head + table(head_cells, rows) + _memory_html(report.memory) + _trace_links(report, base)


def _memory_html(memory: MemoryTimeline | None) -> str:
    if memory is None or not memory.categories or not memory.times_us:
        return ""
    categories = memory.categories
    totals = [sum(series[i] for series in categories.values()) for i in range(len(memory.times_us))]
    at = max(range(len(totals)), key=totals.__getitem__)
    rows = [[esc(name), f"{series[at] / 2**20:,.2f} MiB"] for name, series in categories.items() if series[at]]
    source = "the CUDA allocator's history" if memory.source == "cuda allocator" else "the profiler's memory events"
    largest = [[f"{a.bytes / 2**20:,.2f} MiB", esc(a.category), f"<code>{esc(a.where)}</code>"]
               for a in memory.largest[:5]]
    return (f"<p>Memory at its peak ({totals[at] / 2**20:,.2f} MiB), by category, from {source}"
            + (f" — {esc(memory.note)}" if memory.note else "") + ":</p>"
            + table(["Category", "At the peak"], rows)
            + (table(["Largest allocations", "Category", "Where"], largest) if largest else ""))


def _trace_links(report: ProfileReport, base: Path | None) -> str:
    links = []
    if report.trace:
        links.append(f"<a href='{esc(file_href(report.trace, base))}'>Chrome/Perfetto trace</a> "
                     f"<span class=muted>({report.trace_bytes / 2**20:.1f} MiB gzipped: open it in ui.perfetto.dev "
                     f"or chrome://tracing)</span>")
    if report.trimmed:
        links.append(f"<span class=muted>left out of the trace to keep it openable: {esc(report.trimmed)}</span>")
    if report.snapshot:
        links.append(f"<a href='{esc(file_href(report.snapshot, base))}'>CUDA memory snapshot</a> "
                     f"<span class=muted>(drop it on pytorch.org/memory_viz)</span>")
    if report.problem:
        links.append(f"<span class=missing>{esc(report.problem)}</span>")
    return "".join(f"<p>{link}</p>" for link in links)


def amp_html(report: AmpReport, skipped: list[AmpSkipped], scaled: list[Step], color: str) -> str:
    groups = report.census.groups
    low = "bf16" if report.dtype == "bf16" else "fp16"
    parts = [f"<h4>Mixed precision ({esc(report.dtype)})</h4>",
             f"<p><b>Recommended for this device:</b> {esc(report.recommendation)}</p>",
             f"<p>Under autocast, {groups.low} op call(s) ran in {low} and {groups.fp32} in "
             f"fp32 (one forward and loss of the model):</p>",
             table(["Op", "Calls", "Dtype", "Group"],
                   [[esc(row.op), esc(row.calls), esc(row.dtype), esc(row.group)]
                    for row in report.census.ops[:TOP_CENSUS]])]
    if scaled:
        parts.append(line_chart("fp16 loss scale (log2)", "log2", [Series(
            color, [s.step for s in scaled], [math.log2(s.loss_scale) if s.loss_scale > 0 else math.nan
                                              for s in scaled])]))
        share = len(skipped) / len(scaled)
        parts.append(f"<p>{len(skipped)} of {len(scaled)} optimizer steps skipped ({share:.1%}): their gradients "
                     f"overflowed, GradScaler skipped the step and halved the scale.</p>")
        if skipped:
            parts.append(table(["Step", "Scale it ran with", "First non-finite gradient"],
                               [[str(s.step), f"{s.scale:g}", f"<code>{esc(s.param)}</code>" if s.param else "—"]
                                for s in skipped[:MAX_SKIPPED_ROWS]]))
    return "".join(parts)


def _ms(us: float | None) -> str:
    return "—" if us is None else f"{us / 1000:,.3f} ms"
