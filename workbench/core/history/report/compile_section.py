"""The report's "Compile report" section, and the compile timeline's marks on its loss chart.

Per run: the compile facts, whether compiling paid off, the compile timeline (a row per thing the compiler did; a
step's cache hits and misses in one row), the recompile forecast against what happened, a fix-it card per type of
graph break, and the link to the full compile trace. Each compile-event kind is drawn with its colour and name from
ground.compile_kinds, the table the window's compile timeline reads too.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Iterable, Sequence

from ...ground.compile_kinds import COMPILE_KINDS, compile_kind
from ...ground.compile_stages import STAGES, GraphCompileTime
from ...ground.events import CompileEvent, CompileFinished, CompileReport, Frame
from ..step_columns import steady_mask
from ...ground.fixit import FixItCard, bug_report, fixit_cards
from ...ground.forecast import CONFIRMED, DID_NOT_HAPPEN, NOT_PREDICTED
from .html import esc, file_href
from .html import table as _table
from .cells import duration, run_cell
from .facts import RunFacts
from .page import section
from .svgchart import StepMark

# The report's view of the kinds table: (colour, name) per kind, in lane order (the loss chart's rows of marks).
KIND_STYLE = {kind: (entry.colour, entry.name) for kind, entry in COMPILE_KINDS.items()}
CACHE_KINDS = ("cache_hit", "cache_miss")  # of one step: summarised in one row of the timeline table
MAX_TIMELINE_ROWS = 300  # per run in the HTML; the JSON twin has every event


def compile_marks(runs: list[RunFacts]) -> list[StepMark]:
    """Every run's compile events as step marks, kinds in KIND_STYLE's order (the chart's lanes follow it)."""
    several = len(runs) > 1
    marks = []
    for run in runs:
        who = f"#{run.record.id} · " if several else ""
        for event in run.timeline:
            kind = compile_kind(event.kind)
            phase = f" ({event.phase})" if event.phase != "train" else ""
            marks.append(StepMark(event.step, event.kind, kind.colour,
                                  f"{who}step {event.step:,}{phase} · {kind.name}: {event.title}"))
    order = list(KIND_STYLE)
    return sorted(marks, key=lambda m: order.index(m.kind) if m.kind in order else len(order))


def kind_legend(kinds: list[str]) -> str:
    if not kinds:
        return ""
    items = []
    for key in kinds:
        kind = compile_kind(key)
        items.append(f"<span title='{esc(kind.meaning)}'><span class=swatch "
                     f"style='background:{kind.colour}'></span>{esc(kind.name)}</span>")
    return "<div class=marklegend>" + "".join(items) + "</div>"


def section_compile(runs: list[RunFacts], base: Path | None = None) -> str:
    return section("compile", "".join(_compile_html(run, base) for run in runs))


def _compile_html(run: RunFacts, base: Path | None = None) -> str:
    """One run's compile report: its facts, then (where the run recorded them) whether compiling paid off, the
    compile timeline, the recompile forecast against what happened, a fix-it card per graph-break type, and the
    link to the full compile trace. Runs recorded before these existed show the facts alone."""
    title = f"<h3>{run_cell(run)}</h3>"
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
        *_launch_facts(report),
    ]
    table = "<table class=facts>" + "".join(f"<tr><th>{k}</th><td>{esc(v)}</td></tr>" for k, v in facts) + "</table>"
    return (title + table + timing + stages_html(report.graph_times) + insight + _breaks_html(run, report)
            + _list_html("Recompiles", report.recompiles) + _list_html("Warnings", report.warnings) + trace)


def _timing_sentence(run: RunFacts) -> str:
    compile_s, step_s = run.figures.compile_seconds, run.figures.steady_step_seconds
    steady = int(steady_mask(run.block).sum())
    if step_s is None:
        return "<p>No steady-state steps were recorded.</p>"
    text = f"Steady-state step: {duration(step_s)} (median of {steady:,} steps)"
    # compile_seconds counts every phase (first step, first validation, CUDA-graph recording); the step's own is
    # its "train" phase. Runs recorded before phases were counted have only that one.
    phases = {e.phase: e.seconds for e in run.record.events if isinstance(e, CompileFinished)}
    first = phases.pop("train", compile_s)
    if first:
        text += (f" · compile (first step): {duration(first)}, the time of about "
                 f"{first / step_s:,.0f} steady steps")
    if phases and compile_s:
        words = {"eval": "eval graph (first validation)", "cudagraph recording": "CUDA-graph recording"}
        text += (" · then " + ", ".join(f"{words.get(phase, phase)} {duration(s)}" for phase, s in phases.items())
                 + f": {duration(compile_s)} compiling in all")
    return f"<p>{text}.</p>"


def stages_html(times: Sequence[GraphCompileTime]) -> str:
    """Each compiled graph's compile time by stage (ground.compile_stages): a bar per graph, on one scale, and the
    seconds in a table. Runs recorded before stages were timed (or without a compiled graph) show nothing."""
    if not times:
        return ""
    longest = max(t.total for t in times) or 1.0
    legend = "<div class=marklegend>" + "".join(
        f"<span title='{esc(stage.meaning)}'><span class=swatch style='background:{stage.colour}'></span>"
        f"{esc(stage.name)}</span>" for stage in STAGES.values()) + "</div>"
    rows = [[f"<code>{esc(t.label)}</code>", _stage_bar(t, longest),
             *(duration(s) if s else "—" for s in t.seconds().values()), f"<b>{duration(t.total)}</b>"]
            for t in times]
    note = ("<p class=muted>Where each compiled graph's compile time went, as PyTorch timed it (its compilation "
            "metrics); a backward compiled when it first ran has a row of its own. The bars share one scale.</p>")
    head = ["Graph", "", *(stage.name for stage in STAGES.values()), "Total"]
    return "<h4>Compile time by stage</h4>" + note + legend + _table(head, rows)


def _stage_bar(time: GraphCompileTime, longest: float) -> str:
    """A graph's stages as one bar of coloured segments, its length its share of the longest graph's compile."""
    total = time.total
    segments = "".join(
        f"<span style='width:{100 * s / total:.2f}%;background:{STAGES[key].colour}' "
        f"title='{esc(STAGES[key].name)}: {esc(duration(s))} ({100 * s / total:.0f}%)'></span>"
        for key, s in time.seconds().items() if s > 0) if total > 0 else ""
    return (f"<div style='width:16em;height:12px;background:#f2f2f2'><div style='width:{100 * total / longest:.1f}%;"
            f"height:100%;display:flex'>{segments}</div></div>")


def _breaks_html(run: RunFacts, report: CompileReport) -> str:
    """A fix-it card per type of graph break (ground.fixit): what it is, how to fix it, where in the user's code."""
    if not report.breaks:
        return "<p>No graph breaks.</p>" if report.compiled else ""
    cards = fixit_cards(report.breaks)
    count = sum(card.count for card in cards)
    head = (f"<h4>Graph breaks</h4><p>{count:,} graph break{'s' if count != 1 else ''} of "
            f"{len(cards)} type{'s' if len(cards) != 1 else ''}; each card says what the break is and how to "
            f"remove it.</p>")
    return head + "".join(_card_html(card, run) for card in cards)


def _card_html(card: FixItCard, run: RunFacts) -> str:
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


def _payback_html(run: RunFacts) -> str:
    payback, problem = run.results.payback, run.results.payback_problem
    if payback is None:
        return f"<h4>Did compiling pay off?</h4><p class=muted>{esc(_sentence(problem))}.</p>" if problem else ""
    facts = [
        ("Eager step", f"{payback.eager_step_s * 1e3:.2f} ms"),
        ("Compiled step", f"{payback.compiled_step_s * 1e3:.2f} ms"),
        ("Compiled vs eager (step time, side by side)", f"{payback.speedup:.2f}×" if math.isfinite(payback.speedup)
         else "—"),
        ("Compile time", duration(payback.compile_s)),
        ("Break-even step", payback.short()),
    ]
    table = "<table class=facts>" + "".join(f"<tr><th>{k}</th><td>{esc(v)}</td></tr>" for k, v in facts) + "</table>"
    verdict = "ok" if payback.paid_off else "bad" if payback.break_even_step is None else "warn"
    method = f"<p class=muted>Method: {esc(payback.method)}.</p>" if payback.method else ""
    launches = "<ul>" + "".join(f"<li>{esc(_sentence(line))}.</li>" for line in payback.launch_lines()) + "</ul>"
    return (f"<h4>Did compiling pay off?</h4><p class='verdict {verdict}'>{esc(_sentence(payback.verdict()))}.</p>"
            + launches + table + method)


def _launch_facts(report: CompileReport) -> list[tuple[str, str]]:
    """A training run's launch: warm (whose compile cache it loaded, and what a cold launch cost) or cold."""
    if report.source != "run" or not report.compiled:
        return []
    if report.warm_from is None:
        return [("Launch", "cold: compiled from scratch (no compile cache loaded)")]
    cold = (f"; a cold launch compiled for {duration(report.cold_compile_seconds)} in run #{report.cold_run}"
            if report.cold_compile_seconds is not None and report.cold_run is not None else "")
    return [("Launch", f"warm: run #{report.warm_from}'s compile cache loaded before the first compile{cold}")]


def _sentence(text: str) -> str:
    text = text.strip().rstrip(".")
    return text[:1].upper() + text[1:]


def _timeline_html(run: RunFacts) -> str:
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


def _kind_cell(key: str) -> str:
    kind = compile_kind(key)
    return f"<span class=swatch style='background:{kind.colour}'></span>{esc(kind.name)}"


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


VERDICT_CLASS = {CONFIRMED: "ok", DID_NOT_HAPPEN: "warn", NOT_PREDICTED: "bad"}


def _forecast_html(run: RunFacts) -> str:
    """The recompiles forecast from the run's config, each with what really happened."""
    checks = run.results.recompile_forecast
    if checks is None:
        return ""
    head = "<h4>Recompile forecast vs reality</h4>"
    if not checks:
        return head + "<p>No recompile was forecast, and none happened.</p>"
    rows = []
    for check in checks:
        forecast = check.forecast
        what = esc(forecast.text) if forecast else "—"
        if forecast and forecast.expected:
            what += " <span class=muted>(by design)</span>"
        if forecast and forecast.count > 1:
            what += f" <span class=muted>({forecast.count:,} recompiles)</span>"
        seen = "".join(f"<pre>{esc(o)}</pre>" for o in check.observed) or "—"
        rows.append([f"<span class='verdict {VERDICT_CLASS.get(check.verdict, '')}'>{esc(check.verdict)}</span>",
                     esc(forecast.when) if forecast else "—", what, esc(forecast.fix) if forecast else "—", seen])
    note = ("<p class=muted>Forecast from the run's settings and data sizes before it ran, held against the "
            "recompiles Dynamo reported (“observed”, in its own words).</p>")
    return head + note + _table(["Verdict", "When", "What", "Fix", "Observed"], rows)


def _trace_html(run: RunFacts, base: Path | None) -> str:
    """The link to the full compile trace (tlparse's index.html), or why there is none to follow."""
    trace = run.results.compile_trace
    if trace is None or not trace.path:
        return f"<p class=missing>Compile trace: {esc(trace.problem)}.</p>" if trace and trace.problem else ""
    href = esc(file_href(trace.path, base))
    if not trace.problem:
        return f"<p><a href='{href}'>Full compile trace (tlparse)</a> <span class=muted>({esc(trace.path)})</span></p>"
    return (f"<p class=missing>The compile trace was recorded in <a href='{href}'><code>{esc(trace.path)}</code></a> "
            f"but not rendered: {esc(trace.problem)}.</p>")


def _list_html(title: str, items: Iterable[str]) -> str:
    items = list(items)
    if not items:
        return ""
    return f"<h4>{title}</h4><ul>" + "".join(f"<li><pre>{esc(i)}</pre></li>" for i in items) + "</ul>"
