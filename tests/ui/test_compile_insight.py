"""The compile insight in the window: timeline markers on the loss plot, fix-it cards, the payback, the What-if
forecast with its fix, Check with fullgraph and the compile trace."""

from __future__ import annotations

from PySide6.QtCore import QPointF, Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtTest import QTest

from workbench.core.ground.events import CompileEvent, CompileReport, Frame, MemorySample, RunFinished, Step
from workbench.core.ground.forecast import EVAL_MODE, Forecast, ForecastCheck
from workbench.core.ground.payback import Payback
from workbench.core.ground.results import CompileTrace, RunResults
from workbench.ui.panels.compile.compile import CompilePanel
from workbench.ui.panels.step_markers import CLOSE_PIXELS

from ..helpers import set_config
from ..support.compile_events import ITEM_BREAK, TORCH_BREAK, started


def step(n: int) -> Step:
    return Step(step=n, epoch=1, loss=2.0 / n, samples_per_s=1000.0, step_seconds=0.01,
                memory=MemorySample(rss=100.0))


def events_of_a_compiled_run() -> list:
    recompile = CompileEvent(step=125, kind="recompile", phase="eval", compile_id="0/1",
                             title="forward recompiled: gradients were switched off (validation runs under no_grad)",
                             detail="0/0: GLOBAL_STATE changed: grad_mode",
                             frames=(Frame("/home/u/model.py", 30, "forward", "x = x.flatten(1)"),))
    return [started(), step(1),
            CompileEvent(step=1, kind="cache_miss", title="FX-graph cache miss: compiled from scratch"),
            CompileEvent(step=1, kind="graph", title="forward graph compiled (frame 0/0)", compile_id="0/0"),
            CompileEvent(step=1, kind="graph", title="backward graph compiled (frame 0/0)", compile_id="0/0"),
            *[step(n) for n in range(2, 126)], recompile]


def test_each_step_the_compiler_acted_on_is_one_marker_and_clicking_it_shows_its_events(window, qtbot):
    window.training.on_events(events_of_a_compiled_run())
    markers = window.plots.timeline.lines
    assert sorted(markers) == [1, 125]
    assert "2 graphs compiled" in markers[1].toolTip() and "1 cache miss" in markers[1].toolTip()
    assert markers[125].label.toPlainText() == "↻"  # the most telling kind at the step marks it
    window.docks["evaluate"].raise_()
    window.plots.redraw()
    view = window.plots.loss_plot
    box = view.getPlotItem().getViewBox()
    at = view.mapFromScene(box.mapViewToScene(QPointF(125, box.viewRect().center().y())))
    QTest.mouseClick(view.viewport(), Qt.LeftButton, pos=at)
    panel = window.compile_panel
    assert window.docks["compile"].isVisible() and panel.tabs.currentWidget() is panel.timeline
    [selected] = panel.timeline.selected()
    assert selected.kind == "recompile" and selected.step == 125
    detail = panel.timeline.detail.toPlainText()
    assert "grad_mode" in detail and 'File "/home/u/model.py", line 30' in detail and "x = x.flatten(1)" in detail


def test_the_timeline_lists_every_event_with_its_step_and_a_new_run_clears_it(qtbot):
    panel = CompilePanel()
    qtbot.addWidget(panel)
    panel.add_events(events_of_a_compiled_run())
    rows = [panel.timeline.list.topLevelItem(i) for i in range(panel.timeline.list.topLevelItemCount())]
    assert [r.text(0) for r in rows] == ["1", "1", "1", "125 (eval)"]
    assert rows[3].text(1).endswith("recompiled: gradients were switched off (validation runs under no_grad) — "
                                    "model.py:30")
    panel.select_steps((1,))
    assert [e.kind for e in panel.timeline.selected()] == ["graph", "graph", "cache_miss"]  # the telling first
    assert panel.timeline.detail.toPlainText().startswith("Step 1 (train) · graph compiled")
    panel.add_events([started()])
    assert panel.timeline.list.topLevelItemCount() == 0


def test_a_fix_it_card_per_break_type_and_a_bug_report_for_a_break_inside_pytorch(qtbot):
    panel = CompilePanel()
    qtbot.addWidget(panel)
    panel.add_events([started()])
    panel.show_report(CompileReport(compiled=True, backend="aot_eager", mode="default", graph_count=3,
                                    graph_break_count=3, breaks=(ITEM_BREAK, ITEM_BREAK, TORCH_BREAK)))
    cards = panel.cards.cards
    assert [card.heading.text() for card in cards] == [
        "Unsupported Tensor.item() call with capture_scalar_outputs=False  ×2", "Failed to trace builtin operator"]
    item = cards[0]
    assert "capture_scalar_outputs" in item.findChild(object, "cardHint").text()
    assert ".item()" in item.findChild(object, "cardRecipe").toPlainText()
    assert item.findChild(object, "cardSource").text() == "model.py:15   scale = h.abs().max().item()"
    assert item.findChild(object, "cardBugReport") is None  # the user's own line: theirs to fix
    qtbot.mouseClick(cards[1].findChild(object, "cardBugReport"), Qt.LeftButton)
    report = QGuiApplication.clipboard().text()
    assert "2.14.1" in report and "Failed to trace builtin operator" in report


def test_a_runs_payback_and_its_trace_are_shown_when_it_ends(qtbot, monkeypatch, tmp_path):
    opened = []
    monkeypatch.setattr("workbench.ui.panels.compile.compile.QDesktopServices.openUrl", opened.append)
    panel = CompilePanel()
    qtbot.addWidget(panel)
    payback = Payback(eager_step_s=0.010, compiled_step_s=0.008, compile_s=6.2, steps=625, method="paired")
    index = tmp_path / "html" / "index.html"
    panel.add_events([started(), RunFinished(steps=625, epochs=5, seconds=20.0, stopped=False, results=RunResults(
        payback=payback, compile_trace=CompileTrace(str(index))))])
    assert panel.fields["payback"].text() == (
        "pays off after 3,100 steps (this run has 625; compiled steps are 1.25× as fast as eager)\n"
        "next launch (warm): not measured yet: the next run with these settings starts warm from this run's compile "
        "cache and measures it")
    assert "eager 10.00 ms/step, compiled 8.00 ms/step" in panel.fields["payback"].toolTip()
    assert not panel.trace_button.isHidden()
    qtbot.mouseClick(panel.trace_button, Qt.LeftButton)
    assert [url.toLocalFile() for url in opened] == [str(index)]
    panel.add_events([started(), RunFinished(steps=3, epochs=0, seconds=2.0, stopped=True, results=RunResults(
        payback_problem="not measured: the run was stopped"))])
    assert panel.fields["payback"].text() == "not measured: the run was stopped" and panel.trace_button.isHidden()


def test_the_what_if_tab_forecasts_the_forms_recompiles_and_its_fix_sets_the_setting(window, qtbot):
    set_config(window, backend="aot_eager", dynamic=False)
    panel = window.compile_panel
    panel.tabs.setCurrentWidget(panel.forecast)  # on show: the sample's split sizes are read once, then forecast
    qtbot.waitUntil(lambda: len(panel.forecast.entries) >= 1, timeout=60_000)
    texts = [entry.title() for entry in panel.forecast.entries]
    assert texts[0].startswith("at the first validation")
    # The bundled sample's 1,000 validation images are one batch: only the eval graph's (expected) recompile.
    assert len(texts) == 1 and panel.forecast.findChild(object, "forecastApply") is None
    window.compile_panel.show_forecast(window.setup.config(), 4000, 1100)  # a partial last batch of 76
    apply = panel.forecast.findChild(object, "forecastApply")
    assert apply is not None and apply.text() == "Use dynamic shapes: on"
    qtbot.mouseClick(apply, Qt.LeftButton)
    assert window.setup.value("dynamic") is True


def test_after_a_run_the_forecast_says_what_really_happened(qtbot):
    panel = CompilePanel()
    qtbot.addWidget(panel)
    panel.add_events([started()])
    assert panel.forecast.heading.text().startswith("1 recompile(s) predicted for this run")
    eval_graph = Forecast(cause=EVAL_MODE, phase="eval", when="at the first validation (after step 125)",
                          text="eval graph", fix="none", expected=True)
    checks = (ForecastCheck(eval_graph, observed=("forward: 0/0: GLOBAL_STATE changed",), verdict="confirmed"),
              ForecastCheck(None, observed=("forward: 0/1: ___stack0 == 3.4",), verdict="not predicted"))
    panel.add_events([RunFinished(steps=250, epochs=2, seconds=9.0, stopped=False,
                                  results=RunResults(recompile_forecast=checks))])
    titles = [entry.title() for entry in panel.forecast.entries]
    assert titles == ["✓ happened as predicted — at the first validation (after step 125)",
                      "! not predicted — a recompile"]
    assert panel.forecast.heading.text().endswith("see below.")


def test_check_with_fullgraph_names_the_planted_break_and_its_line(window, qtbot, planted_break_spec,
                                                                   planted_break_line):
    set_config(window, model=planted_break_spec, backend="aot_eager")
    with qtbot.waitSignal(window.compile_insight.explainFinished, timeout=60_000):
        window.compile_insight.explain()
    card = window.compile_panel.cards.cards[0]
    result = window.compile_panel.cards.fullgraph_result
    qtbot.mouseClick(card.findChild(object, "cardFullgraph"), Qt.LeftButton)
    qtbot.waitUntil(lambda: result.isVisibleTo(window.compile_panel), timeout=60_000)
    assert result.text().startswith("✗ fullgraph fails")
    assert f"planted_break.py:{planted_break_line}" in result.text()


def test_markers_a_pixel_apart_are_one_marker_that_names_and_selects_both_steps(window, qtbot):
    """Steps 1 and 2 of a 2,000-step run share a pixel column: one glyph pair, one tooltip, one click for both;
    zoomed in, each is its own marker again."""
    recompile = CompileEvent(step=2, kind="recompile", title="forward recompiled: a size changed")
    window.training.on_events([started(), step(1), CompileEvent(step=1, kind="graph", title="forward graph compiled"),
                               step(2), recompile, *[step(n) for n in range(3, 2001)]])
    window.plots.redraw()
    timeline = window.plots.timeline
    timeline.regroup()
    first, second = timeline.lines[1], timeline.lines[2]
    assert first.label.toPlainText() == "◆↻" and not second.label.isVisibleTo(second)
    for line in (first, second):
        assert "step 1:" in line.toolTip() and "step 2:" in line.toolTip()
    window.docks["evaluate"].raise_()
    view = window.plots.loss_plot
    box = view.getPlotItem().getViewBox()
    at = view.mapFromScene(box.mapViewToScene(QPointF(2, box.viewRect().center().y())))
    QTest.mouseClick(view.viewport(), Qt.LeftButton, pos=at)
    assert {event.step for event in window.compile_panel.timeline.selected()} == {1, 2}

    box.setXRange(0, box.width() / (3 * CLOSE_PIXELS), padding=0)  # three markers' room a step
    timeline.regroup()
    assert first.label.toPlainText() == "◆" and second.label.isVisibleTo(second)
    assert second.label.toPlainText() == "↻" and "step 1:" not in second.toolTip()
