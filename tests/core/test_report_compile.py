"""The run report's compile insight: the compile timeline (marks on the loss chart, a table), whether compiling
paid off, the recompile forecast against what happened, a fix-it card per graph-break type and the link to the
compile trace; in HTML and in the JSON twin, for one run and for a comparison, and absent for runs recorded before.

The runs are recorded through the run history's own recorder (events serialised to the database and read back),
from synthetic event streams: no training, no torch, so the whole module takes well under a second."""

from __future__ import annotations

import dataclasses
import html
import json
import re
from pathlib import Path

import pytest

from workbench.core.ground.config import TrainConfig
from workbench.core.ground.events import (CompileEvent, CompileFinished, CompileReport, CompileStarted, EpochEnd,
                                          Frame, GraphBreak, MemorySample, RunFinished, RunStarted, Step)
from workbench.core.ground.fixit import fixit_cards
from workbench.core.ground.forecast import EVAL_MODE, PARTIAL_VAL_BATCH, Forecast, ForecastCheck, check_forecast
from workbench.core.ground.payback import Payback
from workbench.core.ground.results import CompileTrace, RunResults
from workbench.core.history.report.build import build_report, write_report_files
from workbench.core.history.report.compile_section import KIND_STYLE, cache_summary
from workbench.core.history.report.page import SECTIONS
from workbench.core.history.recording import RunRecorder
from workbench.core.history.runs import RunStore
from workbench.core.history.report.svgchart import (CHART_H, CHART_W, MARGIN_B, MARGIN_L, MARGIN_R, Series, StepMark,
                                             line_chart)

from ..helpers import VERSIONS

STEPS = 30
EVIL = "<script>alert(1)</script>"
MODEL = "/src/model.py"
TLPARSE_HINT = "install tlparse (pip install tlparse) to render the compile trace as HTML"

# Dynamo's texts, as GraphBreak.reason records them (torch 2.14; see tests/core/test_fixit.py for the full ones).
PRINT = ("Failed to trace builtin operator\n"
         "  Explanation: Dynamo does not know how to trace builtin operator `print` with argument types "
         "['str', 'Tensor'] (has_kwargs False)\n"
         "  Hint: If you are attempting to call a logging function (e.g. `print`), you can try adding it to "
         "`torch._dynamo.config.reorderable_logging_functions`.\n"
         "\n For more details about this graph break, please visit: "
         "https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0059.html")
ITEM = ("Unsupported Tensor.item() call with capture_scalar_outputs=False\n"
        "  Explanation: Dynamo does not support tracing `Tensor.item()` with config.capture_scalar_outputs=False.\n"
        "  Hint: Set `torch._dynamo.config.capture_scalar_outputs = True` or `export "
        "TORCHDYNAMO_CAPTURE_SCALAR_OUTPUTS=1` to include these operations in the captured graph.\n"
        "\n For more details about this graph break, please visit: "
        "https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0124.html")
INTERNAL = ("Observed exception inside a torch internal\n"
            "  Explanation: something Dynamo could not trace inside PyTorch.\n"
            "  Hint: Please report an issue to PyTorch.")

PRINT_LINE = Frame(MODEL, 17, "forward", 'print("mean input:", h.mean().item())')
ITEM_LINE = Frame(MODEL, 21, "forward", "scale = h.abs().max().item()")
ITEM_LINE_2 = Frame(MODEL, 25, "head", "n = int(h.sum())")
BREAKS = (GraphBreak(PRINT, (Frame(MODEL, 40, "train_step", "out = model(x)"), PRINT_LINE)),
          GraphBreak(ITEM, (ITEM_LINE,)), GraphBreak(ITEM, (ITEM_LINE_2,)), GraphBreak(INTERNAL))


def _event(step: int, kind: str, title: str, **fields) -> CompileEvent:
    return CompileEvent(step=step, kind=kind, title=title, **fields)


# Every kind of compile event, by the step it happened in (they follow that step's Step event).
TIMELINE = {
    1: [_event(1, "graph_break", "graph break: Failed to trace builtin operator", detail=PRINT,
               frames=BREAKS[0].frames, compile_id="0/0"),
        _event(1, "graph", "forward graph compiled (frame 1/0)", compile_id="1/0"),
        _event(1, "cache_miss", "FX-graph cache miss: compiled from scratch", detail="cache key fx1"),
        _event(1, "graph", "backward graph compiled (frame 1/0)", compile_id="1/0"),
        _event(1, "cache_miss", "FX-graph cache miss: compiled from scratch", detail="cache key fx2"),
        _event(1, "cache_miss", "AOTAutograd cache miss: compiled from scratch", detail="cache key aot1")],
    10: [_event(10, "cudagraph_skip", "CUDA graphs skipped: an input is changed in place (mutated)",
                detail="skipping cudagraphs due to mutated inputs (1 instances)", frames=(ITEM_LINE,))],
    STEPS: [_event(STEPS, "recompile", "forward recompiled: gradients were switched off (validation runs under "
                   "no_grad)", detail="0/1: GLOBAL_STATE changed: grad_mode", phase="eval",
                   frames=(Frame(MODEL, 15, "forward", "def forward(self, x):"),), compile_id="0/1"),
            _event(STEPS, "graph", "inference graph (no gradients needed) compiled (frame 0/1)", phase="eval",
                   compile_id="0/1"),
            _event(STEPS, "cache_hit", "FX-graph cache hit", phase="eval")],
}
FALLBACK = _event(5, "fallback", "compile failed: the run went on in eager mode", detail="BackendCompilerFailed: x")
PAYBACK = Payback(eager_step_s=0.010, compiled_step_s=0.008, compile_s=0.05, steps=STEPS, method="paired test")
# 0.05 s of compile come back at 2 ms a step: at step 25, within the run's 30.
FORECASTS = (
    Forecast(cause=EVAL_MODE, phase="eval", when=f"at the first validation (after step {STEPS})", expected=True,
             text="forward recompiles for validation: an eval graph is compiled", fix="expected: no fix needed"),
    Forecast(cause=PARTIAL_VAL_BATCH, phase="eval", when="at the first validation's last batch (76 images)",
             expected=False, batch=76, text="forward recompiles for the last validation batch of 76 images",
             fix="dynamic=True, or a validation split whose size is a multiple of 1,024"),
)
RECOMPILES = ("forward: 0/1: GLOBAL_STATE changed: grad_mode", "forward: 0/2: ___check_obj_id(self.mystery, 77)")


def _config(**changes) -> TrainConfig:
    return TrainConfig(epochs=1, max_steps=STEPS, **changes)


def _events(config: TrainConfig, timeline: dict[int, list[CompileEvent]], results: dict,
            report: CompileReport | None) -> list:
    """A run's events; `results`: the RunResults fields it ends with beyond the figures every run has."""
    events: list = [RunStarted(config=config, device="cpu", device_name="test CPU", versions=VERSIONS,
                               train_size=960, val_size=100, steps_per_epoch=STEPS, total_steps=STEPS)]
    if report is not None:
        events.append(CompileStarted(config.backend, config.mode))
    for step in range(1, STEPS + 1):
        events.append(Step(step=step, epoch=1, loss=2.0 / step, samples_per_s=1000.0, step_seconds=0.01,
                           memory=MemorySample(rss=500.0), compiling=step == 1 and report is not None))
        if step == 1 and report is not None:
            events.append(CompileFinished(config.backend, config.mode, 0.04))
        events += timeline.get(step, [])
    events.append(EpochEnd(epoch=1, train_loss=0.5, val_loss=0.4, val_accuracy=0.9, seconds=1.0))
    if report is not None:
        events.append(report)
    base = {"best_val_accuracy": 0.9, "samples_per_s": 1000.0, "compile_seconds": 0.05, "peak_memory_mib": 500.0,
            "backend_used": config.backend, "epochs_completed": 1}
    events.append(RunFinished(steps=STEPS, epochs=1, seconds=1.0, stopped=False,
                              results=RunResults(**{**base, **results})))
    return events


def _record(store: RunStore, out_dir: Path, events: list) -> int:
    """One run recorded the way a run process records it: through RunRecorder into the history database."""
    recorder = RunRecorder(store, out_dir=str(out_dir), interval=0)
    for event in events:
        recorder(event)
    return recorder.run_id


def _report_of(breaks=BREAKS, **changes) -> CompileReport:
    report = CompileReport(compiled=True, backend="aot_eager", mode="default", graph_count=3,
                           graph_break_count=len(breaks), breaks=breaks, recompiles=RECOMPILES)
    return dataclasses.replace(report, **changes)


@dataclasses.dataclass
class Recorded:
    root: Path
    store: RunStore
    full: int  # every kind but fallback, a payback, a forecast, graph breaks, a rendered trace
    fell_back: int  # a fallback, no payback (a reason), a trace that could not be rendered
    old: int  # recorded before any of it: no compile events, none of the newer results

    def records(self, *ids: int):
        return [self.store.get(i, with_events=True) for i in ids]

    def report(self, *ids: int, name: str = "report.html") -> tuple[str, dict]:
        html_path, json_path = write_report_files(self.records(*ids), {}, self.root / name)
        return html_path.read_text(encoding="utf-8"), json.loads(json_path.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Recorded:
    root = tmp_path_factory.mktemp("compile-report")
    store = RunStore(root / "runs.sqlite")
    full_dir, fallback_dir = root / "runs" / "full", root / "runs" / "fell-back"
    full = _record(store, full_dir, _events(
        _config(backend="aot_eager"), TIMELINE, {
            "payback": PAYBACK, "recompile_forecast": check_forecast(FORECASTS, RECOMPILES),
            "compile_trace": CompileTrace(str(full_dir / "compile-trace" / "html" / "index.html"))}, _report_of()))
    fell_back = _record(store, fallback_dir, _events(
        _config(backend="inductor", allow_eager_fallback=True),
        {1: [_event(1, "graph", "forward graph compiled (frame 0/0)")], 5: [FALLBACK]}, {
            "payback_problem": "not measured: the run fell back to eager", "recompile_forecast": (),
            "compile_trace": CompileTrace(str(fallback_dir / "compile-trace"), TLPARSE_HINT)},
        _report_of((), backend="inductor", compiled=False, graph_count=0, recompiles=())))
    old = _record(store, root / "runs" / "old", _events(_config(), {}, {}, None))
    yield Recorded(root=root, store=store, full=full, fell_back=fell_back, old=old)
    store.close()


@pytest.fixture(scope="module")
def full_report(recorded) -> tuple[str, dict]:
    return recorded.report(recorded.full, name="full.html")


@pytest.fixture(scope="module")
def comparison(recorded) -> tuple[str, dict]:
    return recorded.report(recorded.full, recorded.fell_back, recorded.old, name="comparison.html")


def _section(text: str, anchor: str) -> str:
    start = text.index(f"<section id={anchor}>")
    return text[start:text.index("</section>", start)]


def _loss_chart(text: str) -> str:
    start = text.index("<h3>Loss</h3><svg")
    return text[start:text.index("</svg>", start)]


def _marks(svg: str) -> list[dict]:
    found = re.findall(r"<g class='stepmark' data-kind='(\w+)' data-step='(\d+)'><title>(.*?)</title>"
                       r"<rect x='([\d.]+)' y='([\d.]+)' width='(\d+)' height='\d+' fill='(#\w+)'/></g>", svg, re.S)
    return [{"kind": k, "step": int(s), "tip": html.unescape(t), "x": float(x), "y": float(y), "w": int(w),
             "fill": f} for k, s, t, x, y, w, f in found]


def _x(step: float) -> float:
    """Where a step lies on the loss chart of a run of steps 1..STEPS: the axis runs from the first to the last."""
    return MARGIN_L + (step - 1) / (STEPS - 1) * (CHART_W - MARGIN_L - MARGIN_R)


def _table_after(text: str, heading: str) -> list[list[str]]:
    """The rows (cells as HTML) of the first table after `heading`."""
    start = text.index(heading)
    table = text[text.index("<table>", start):text.index("</table>", start)]
    return [re.findall(r"<td>(.*?)</td>", row, re.S) for row in re.findall(r"<tr>(.*?)</tr>", table, re.S)][1:]


def _plain(cell: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", cell)).strip()


# -- the timeline on the loss chart --------------------------------------------------------------------------------
def test_the_loss_chart_marks_each_kind_at_its_step(full_report):
    text, _ = full_report
    marks = _marks(_loss_chart(text))
    assert {(m["kind"], m["step"]) for m in marks} == {
        ("graph_break", 1), ("graph", 1), ("cache_miss", 1), ("cudagraph_skip", 10),
        ("recompile", STEPS), ("graph", STEPS), ("cache_hit", STEPS)}
    assert len(marks) == 7  # two graphs and three cache misses at step 1: one mark per kind
    for mark in marks:
        assert mark["x"] + mark["w"] / 2 == pytest.approx(_x(mark["step"]), abs=0.06), mark
        assert mark["fill"] == KIND_STYLE[mark["kind"]][0]
    lanes = {}
    for mark in marks:  # each kind keeps to its own lane along the bottom of the plot area
        lanes.setdefault(mark["kind"], set()).add(mark["y"])
    assert all(len(ys) == 1 for ys in lanes.values()) and len({min(ys) for ys in lanes.values()}) == len(lanes)
    assert all(CHART_H - MARGIN_B - 60 < m["y"] < CHART_H - MARGIN_B for m in marks)
    assert "stepmark" not in text.replace(_loss_chart(text), "")  # only the loss chart carries them


def test_a_marks_tooltip_gives_every_title_at_its_step(full_report):
    marks = {(m["kind"], m["step"]): m["tip"] for m in _marks(_loss_chart(full_report[0]))}
    graphs = marks[("graph", 1)]
    assert "forward graph compiled (frame 1/0)" in graphs and "backward graph compiled (frame 1/0)" in graphs
    assert "step 1" in graphs and "eval graph" not in graphs
    assert "FX-graph cache miss" in marks[("cache_miss", 1)] and "AOTAutograd cache miss" in marks[("cache_miss", 1)]
    assert "gradients were switched off" in marks[("recompile", STEPS)] and "(eval)" in marks[("recompile", STEPS)]
    assert "mutated" in marks[("cudagraph_skip", 10)]


def test_the_chart_legend_names_the_kinds_it_shows(full_report):
    text = full_report[0]
    legend = re.search(r"<div class=marklegend>(.*?)</div>", text, re.S).group(1)
    shown = [html.unescape(w) for w in re.findall(r"</span>([^<]+)</span>", legend)]
    kinds = ["graph", "recompile", "graph_break", "cache_miss", "cache_hit", "cudagraph_skip"]
    assert shown == [KIND_STYLE[k][1] for k in KIND_STYLE if k in kinds]


def test_marks_merge_per_kind_and_step_and_stay_inside_the_plot():
    series = [Series("#000", [10, 20, 30], [1.0, 0.5, 0.2])]
    marks = [StepMark(20, "a", "#111", f"event {i}") for i in range(12)] + [
        StepMark(20, "b", "#222", "other kind"), StepMark(0, "a", "#111", "before the first step"),
        StepMark(99, "b", "#222", "after the last step")]
    found = _marks(line_chart("Loss", "loss", series, marks=marks))
    by_place = {(m["kind"], m["step"]): m for m in found}
    assert len(found) == 4 and set(by_place) == {("a", 20), ("a", 0), ("b", 20), ("b", 99)}
    left, right = MARGIN_L, CHART_W - MARGIN_R
    assert by_place[("a", 0)]["x"] + 2 == pytest.approx(left) and by_place[("b", 99)]["x"] + 2 == pytest.approx(right)
    assert by_place[("a", 20)]["y"] > by_place[("b", 20)]["y"]  # lanes stack up from the bottom, first kind lowest
    tip = by_place[("a", 20)]["tip"].split("\n")
    assert len(tip) == 8 and tip[0] == "event 0" and tip[-1] == "… and 5 more"  # capped, and says how many
    assert "stepmark" not in line_chart("Loss", "loss", series)


# -- the timeline as a table ---------------------------------------------------------------------------------------
def test_the_timeline_table_has_a_row_per_event_and_one_per_steps_caches(full_report):
    rows = _table_after(_section(full_report[0], "compile"), "<h4>Compile timeline</h4>")
    plain = [[_plain(c) for c in row[:5]] for row in rows]
    assert [(r[0], r[1], r[2]) for r in plain] == [
        ("1", "train", "graph break"), ("1", "train", "graph compiled"), ("1", "train", "cache miss"),
        ("1", "train", "graph compiled"), ("10", "train", "CUDA graphs skipped"), ("30", "eval", "recompile"),
        ("30", "eval", "graph compiled"), ("30", "eval", "cache hit")]
    assert plain[2][3] == "FX-graph cache: 2 misses, AOTAutograd cache: 1 miss"
    assert plain[7][3] == "FX-graph cache: 1 hit"
    assert plain[0][3] == "graph break: Failed to trace builtin operator"
    # where: the innermost user frame and its source line (escaped)
    assert plain[0][4] == f'{MODEL}:17print("mean input:", h.mean().item())'
    assert 'print(&quot;mean input:&quot;, h.mean().item())' in rows[0][4]
    assert plain[1][4] == "—"
    # details: Dynamo's words, the whole user stack, the compile id; the cache row lists its events
    assert rows[0][5].startswith("<details>") and "Explanation: Dynamo does not know how" in rows[0][5]
    assert f"{MODEL}:40 in train_step" in rows[0][5] and "compile id 0/0" in rows[0][5]
    assert "cache key fx2" in rows[2][5] and "3 events" in rows[2][5]
    assert "0/1: GLOBAL_STATE changed: grad_mode" in rows[5][5]


def test_cache_summary_counts_per_cache_in_the_order_seen():
    events = [_event(1, kind, title) for kind, title in (
        ("cache_hit", "AOTAutograd cache hit"), ("cache_miss", "FX-graph cache miss: compiled from scratch"),
        ("cache_miss", "FX-graph cache miss: compiled from scratch"), ("cache_hit", "AOTAutograd cache hit"),
        ("cache_miss", "AOTAutograd cache miss: compiled from scratch"), ("cache_hit", "FX-graph cache hit"))]
    assert cache_summary(events) == "AOTAutograd cache: 2 hits, 1 miss, FX-graph cache: 2 misses, 1 hit"


# -- payback, forecast ---------------------------------------------------------------------------------------------
def test_the_payback_paragraph_gives_the_verdict_and_the_figures(full_report):
    section = _section(full_report[0], "compile")
    paragraph = section[section.index("<h4>Did compiling pay off?</h4>"):section.index("<h4>Compile timeline</h4>")]
    assert PAYBACK.verdict() == "paid for itself at step 25 (compiled steps are 1.25× as fast as eager)"
    assert ("<p class='verdict ok'>Paid for itself at step 25 (compiled steps are 1.25× as fast as eager).</p>"
            in paragraph)
    facts = dict(re.findall(r"<tr><th>(.*?)</th><td>(.*?)</td></tr>", paragraph))
    assert facts == {"Eager step": "10.00 ms", "Compiled step": "8.00 ms",
                     "Compiled vs eager (step time, side by side)": "1.25×",
                     "Compile time": "50.00 ms", "Break-even step": "25 steps"}
    assert "Method: paired test." in paragraph


def test_a_payback_that_was_not_measured_says_why(comparison, recorded):
    section = _section(comparison[0], "compile")
    run = section[section.index(f"</span>#{recorded.fell_back} "):]
    assert "<h4>Did compiling pay off?</h4><p class=muted>Not measured: the run fell back to eager.</p>" in run


def test_the_forecast_table_holds_each_forecast_against_what_happened(full_report):
    rows = _table_after(_section(full_report[0], "compile"), "<h4>Recompile forecast vs reality</h4>")
    plain = [[_plain(c) for c in row] for row in rows]
    assert [r[0] for r in plain] == ["confirmed", "did not happen", "not predicted"]
    assert plain[0][1:4] == [FORECASTS[0].when, FORECASTS[0].text + " (by design)", FORECASTS[0].fix]
    assert plain[0][4] == RECOMPILES[0]
    assert plain[1][1:] == [FORECASTS[1].when, FORECASTS[1].text, FORECASTS[1].fix, "—"]
    assert plain[2] == ["not predicted", "—", "—", "—", RECOMPILES[1]]
    assert "class='verdict ok'>confirmed" in rows[0][0] and "class='verdict bad'>not predicted" in rows[2][0]


def test_an_empty_forecast_says_nothing_was_forecast(comparison, recorded):
    section = _section(comparison[0], "compile")
    run = section[section.index(f"</span>#{recorded.fell_back} "):]
    assert "<h4>Recompile forecast vs reality</h4><p>No recompile was forecast, and none happened.</p>" in run


# -- fix-it cards --------------------------------------------------------------------------------------------------
def test_graph_breaks_are_fixit_cards_one_per_type(full_report):
    section = _section(full_report[0], "compile")
    breaks = section[section.index("<h4>Graph breaks</h4>"):]
    cards = re.findall(r"<div class=card>(.*?)</div>", breaks, re.S)
    expected = fixit_cards(BREAKS)
    assert [html.unescape(re.search(r"<h5>(.*?)</h5>", c).group(1)) for c in cards] == [c.type for c in expected]
    assert [c.type for c in expected][:1] == ["Unsupported Tensor.item() call with capture_scalar_outputs=False"]
    assert "4 graph breaks of 3 types" in breaks
    for card, text in zip(expected, cards):
        assert f"{card.count} break{'s' if card.count != 1 else ''}" in text
        assert html.escape(card.explanation) in text
        assert f"<pre class=recipe>{html.escape(card.recipe)}</pre>" in text
        assert all(f"<li>{html.escape(h)}</li>" in text for h in card.hints)
        if card.link:
            assert f"<code class=url>{card.link}</code>" in text
    item, printed, internal = cards
    # the user's source lines, escaped, with file:line
    assert f"{MODEL}:21" in item and f"{MODEL}:25" in item and "scale = h.abs().max().item()" in item
    assert f"{MODEL}:17" in printed and "print(&quot;mean input:&quot;, h.mean().item())" in printed
    assert "print(&quot;mean input:&quot;" in printed.split("<pre class=recipe>")[1]  # the print recipe's snippet
    assert "gb0059.html" in printed
    # a break with no user frame: inside PyTorch, with a bug report to copy
    assert "inside PyTorch" in internal and "# torch.compile graph break: Observed exception" in internal
    assert "inside PyTorch" not in item + printed
    assert "<th>Reason</th>" not in breaks  # the old list is gone


def test_old_style_breaks_still_make_cards():
    """A break recorded by an older version: a one-line reason, no link, no frames."""
    record = _synthetic_record(events_extra=[_report_of((GraphBreak("call_function BuiltinVariable(print)"),))])
    text, data = build_report([record], {})
    section = _section(text, "compile")
    assert "<h5>call_function BuiltinVariable(print)</h5>" in section and "class=url" not in section
    assert data["runs"][0]["fixit_cards"][0]["type"] == "call_function BuiltinVariable(print)"


# -- the compile trace ---------------------------------------------------------------------------------------------
def test_the_trace_link_is_relative_when_the_report_sits_next_to_the_runs(full_report, recorded):
    section = _section(full_report[0], "compile")
    assert "<a href='runs/full/compile-trace/html/index.html'>Full compile trace (tlparse)</a>" in section
    assert (recorded.root / "full.html").parent / "runs/full/compile-trace/html/index.html" == Path(
        recorded.store.get(recorded.full).out_dir) / "compile-trace" / "html" / "index.html"


def test_the_trace_link_is_absolute_elsewhere(recorded, tmp_path):
    html_path, _ = write_report_files(recorded.records(recorded.full), {}, tmp_path / "elsewhere.html")
    index = Path(recorded.store.get(recorded.full).out_dir) / "compile-trace" / "html" / "index.html"
    text = html_path.read_text(encoding="utf-8")
    assert f"<a href='{index.as_uri()}'>Full compile trace (tlparse)</a>" in text
    text, _ = build_report(recorded.records(recorded.full), {})  # no report folder known: absolute
    assert f"<a href='{index.as_uri()}'>" in text


def test_a_trace_that_was_not_rendered_says_why(comparison, recorded):
    section = _section(comparison[0], "compile")
    run = section[section.index(f"</span>#{recorded.fell_back} "):section.index(f"</span>#{recorded.old} ")]
    assert "Full compile trace" not in run
    assert ("<p class=missing>The compile trace was recorded in <a href='runs/fell-back/compile-trace'>"
            in run) and f"but not rendered: {TLPARSE_HINT}.</p>" in run


# -- several runs ----------------------------------------------------------------------------------------------
def test_a_comparison_gives_each_run_its_own_timeline_and_a_break_even_column(comparison, recorded):
    text, data = comparison
    no_layers = SECTIONS["layers"]  # these runs are made up of compile events: no per-layer statistics
    assert re.findall(r"<h2>(.*?)</h2>", text) == [h for h in SECTIONS.values() if h != no_layers]
    section = _section(text, "compile")
    starts = [section.index(f"</span>#{i} ") for i in (recorded.full, recorded.fell_back, recorded.old)]
    parts = [section[a:b] for a, b in zip(starts, starts[1:] + [len(section)])]
    assert [p.count("<h4>Compile timeline</h4>") for p in parts] == [1, 1, 0]
    fallback_rows = _table_after(parts[1], "<h4>Compile timeline</h4>")
    assert [(_plain(r[0]), _plain(r[2]), _plain(r[3])) for r in fallback_rows] == [
        ("1", "graph compiled", "forward graph compiled (frame 0/0)"),
        ("5", "fallback to eager", "compile failed: the run went on in eager mode")]
    # marks of every run on the one loss chart; the tooltip names the run
    marks = _marks(_loss_chart(text))
    assert ("fallback", 5) in {(m["kind"], m["step"]) for m in marks}
    graph_1 = next(m for m in marks if (m["kind"], m["step"]) == ("graph", 1))["tip"]
    assert f"#{recorded.full} · step 1" in graph_1 and f"#{recorded.fell_back} · step 1" in graph_1
    # the summary table: a break-even column
    head = re.findall(r"<th>(.*?)</th>", _section(text, "comparison"))
    assert head[-1] == "Compile paid off at"
    rows = {_plain(r[0]).split(" ")[0]: r for r in _table_after(_section(text, "comparison"), "<table>")}
    assert _plain(rows[f"#{recorded.full}"][-1]) == "25 steps"
    assert PAYBACK.verdict() in html.unescape(rows[f"#{recorded.full}"][-1])
    assert _plain(rows[f"#{recorded.fell_back}"][-1]) == "not measured"
    assert _plain(rows[f"#{recorded.old}"][-1]) == "—"
    by_id = {r["id"]: r for r in data["comparison"]["runs"]}
    assert by_id[recorded.full]["payback"]["break_even_step"] == 25
    assert by_id[recorded.fell_back]["payback_problem"] == "not measured: the run fell back to eager"


# -- JSON ------------------------------------------------------------------------------------------------------
def test_the_json_twin_carries_the_compile_insight(full_report, recorded):
    run = full_report[1]["runs"][0]
    timeline = run["compile_timeline"]
    assert [(e["step"], e["kind"]) for e in timeline] == [(e.step, e.kind) for s in sorted(TIMELINE)
                                                          for e in TIMELINE[s]]
    assert timeline[0]["where"] == f"{MODEL}:17" and timeline[0]["frames"][-1]["source"] == PRINT_LINE.source
    assert timeline[0]["detail"] == PRINT and timeline[0]["compile_id"] == "0/0"
    assert run["payback"]["verdict"] == PAYBACK.verdict() and run["payback"]["break_even_step"] == 25
    assert run["payback_problem"] is None
    assert [c["verdict"] for c in run["recompile_forecast"]] == ["confirmed", "did not happen", "not predicted"]
    assert run["recompile_forecast"][0]["observed"] == [RECOMPILES[0]]
    cards = run["fixit_cards"]
    assert [c["type"] for c in cards] == [c.type for c in fixit_cards(BREAKS)]
    assert cards[0]["frames"][0] == dataclasses.asdict(ITEM_LINE) and cards[0]["recipe"]
    assert run["compile_trace"].endswith("compile-trace/html/index.html") and run["compile_trace_problem"] is None


def test_json_of_the_runs_without_it(comparison, recorded):
    runs = {r["id"]: r for r in comparison[1]["runs"]}
    fell_back, old = runs[recorded.fell_back], runs[recorded.old]
    assert fell_back["payback"] is None and fell_back["payback_problem"].startswith("not measured")
    assert fell_back["recompile_forecast"] == [] and fell_back["compile_trace_problem"] == TLPARSE_HINT
    assert [e["kind"] for e in fell_back["compile_timeline"]] == ["graph", "fallback"]
    assert old == {**old, "compile_timeline": [], "payback": None, "payback_problem": None,
                   "recompile_forecast": None, "fixit_cards": [], "compile_trace": None,
                   "compile_trace_problem": None}


# -- runs recorded before ------------------------------------------------------------------------------------------
def test_an_old_run_renders_without_the_new_sections(recorded):
    text, data = recorded.report(recorded.old, name="old.html")
    for absent in ("stepmark", "<div class=marklegend>", "Compile timeline", "Did compiling pay off?",
                   "Recompile forecast vs reality", "compile trace", "Compile paid off at", "marks along the bottom"):
        assert absent not in text, absent
    assert "This run ran eagerly: nothing was compiled." in text
    assert "dots: validation loss at the end of each epoch.</p>" in text
    assert data["runs"][0]["compile_timeline"] == []


def _synthetic_record(events_extra: list):
    """A record as an older version stored it: steps, no RunFinished, no compile events."""
    from workbench.core.history.runs import RunRecord

    steps = [Step(step=i, epoch=1, loss=1.0 / i, samples_per_s=1000.0, step_seconds=0.01, memory=MemorySample(rss=1.0))
             for i in range(1, 11)]
    return RunRecord(id=9, created="2025-01-01T00:00:00+00:00", status="finished",
                     config={"backend": "aot_eager", "amp": "off"}, environment={}, steps=10, best_val_accuracy=None,
                     samples_per_s=None, compile_seconds=None, peak_memory_mib=None, backend_used="aot_eager",
                     failure=None, out_dir=None, checkpoint=None, events=steps + events_extra)


def test_a_comparison_of_old_runs_has_no_break_even_column():
    records = [_synthetic_record([]), dataclasses.replace(_synthetic_record([]), id=10)]
    text, data = build_report(records, {})
    assert "Compile paid off at" not in text and "stepmark" not in text
    assert data["comparison"]["runs"][0]["payback"] is None


# -- escaping --------------------------------------------------------------------------------------------------
def test_compiler_text_is_escaped_everywhere(recorded):
    frame = Frame(f"/x/{EVIL}.py", 3, "forward", f"y = '{EVIL}'")
    evil_events = [_event(2, "graph_break", f"graph break: {EVIL}", detail=f"why {EVIL}", frames=(frame,)),
                   _event(2, "cache_miss", f"FX-graph cache miss {EVIL}", detail=EVIL),
                   _event(3, f"new_kind{EVIL}", f"title {EVIL}")]
    checks = (ForecastCheck(Forecast(cause=EVIL, phase="eval", when=EVIL, text=EVIL, fix=EVIL, expected=False),
                            observed=(EVIL,), verdict=EVIL),)
    results = {"payback": dataclasses.replace(PAYBACK, method=EVIL), "recompile_forecast": checks,
               "compile_trace": CompileTrace(f"/tmp/{EVIL}/index.html", EVIL)}
    events = _events(_config(backend="aot_eager"), {2: evil_events}, results,
                     _report_of((GraphBreak(f"{EVIL}\n  Explanation: {EVIL}\n  Hint: {EVIL}", (frame,)),)))
    run_id = _record(recorded.store, recorded.root / "runs" / "evil", events)
    text, data = recorded.report(run_id, name="evil.html")
    assert "<script" not in text.lower()
    escaped = "&lt;script&gt;alert(1)&lt;/script&gt;"
    assert escaped in _loss_chart(text)  # the tooltips
    section = _section(text, "compile")
    for heading in ("<h4>Did compiling pay off?</h4>", "<h4>Compile timeline</h4>",
                    "<h4>Recompile forecast vs reality</h4>", "<h4>Graph breaks</h4>", "The compile trace"):
        part = section[section.index(heading) + len(heading):]
        assert escaped in part[:part.index("<h4>") if "<h4>" in part else None], heading
    assert data["runs"][0]["compile_timeline"][0]["title"] == f"graph break: {EVIL}"  # the JSON keeps the raw text
