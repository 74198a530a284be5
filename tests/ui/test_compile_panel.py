"""The compile panel names graph breaks with their source lines, from Explain and from a run."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from workbench.core.ground.events import CompileReport, RunFinished

from ..helpers import VERSIONS, set_config


def test_explain_shows_a_fix_it_card_for_the_planted_break_with_file_line_and_source(window, qtbot,
                                                                                     planted_break_spec,
                                                                                     planted_break_line):
    set_config(window, model=planted_break_spec, backend="aot_eager")
    with qtbot.waitSignal(window.compile_insight.explainFinished, timeout=60_000) as done:
        qtbot.mouseClick(window.findChild(object, "explainButton"), Qt.LeftButton)
    report = done.args[0]
    assert isinstance(report, CompileReport) and report.graph_break_count >= 1
    assert not window.busy  # explain ran in the service kernel and has ended
    cards = window.compile_panel.cards.cards
    assert cards and window.compile_panel.tabs.tabText(0) == f"Fix-it ({len(cards)})"
    sources = [label.text() for card in cards for label in card.findChildren(object, "cardSource")]
    assert any(text.startswith(f"planted_break.py:{planted_break_line}") and "print(" in text for text in sources)
    assert any(card.findChild(object, "cardRecipe") is not None for card in cards)  # what to write instead
    assert window.compile_panel.fields["breaks"].text() == str(report.graph_break_count)


def test_a_cards_full_stack_button_shows_its_stack(window, qtbot, planted_break_spec, planted_break_line):
    set_config(window, model=planted_break_spec, backend="aot_eager")
    with qtbot.waitSignal(window.compile_insight.explainFinished, timeout=60_000):
        window.compile_insight.explain()
    card = window.compile_panel.cards.cards[0]
    qtbot.mouseClick(card.findChild(object, "cardStack"), Qt.LeftButton)
    dialog = window.compile_panel.findChild(object, "breakDialog")
    assert dialog is not None and dialog.isVisible()
    text = dialog.text.toPlainText()
    assert f"line {planted_break_line}, in forward" in text and "Why:" in text
    with qtbot.waitSignal(dialog.destroyed):  # freed when closed: double-clicks do not pile up dialogs
        dialog.close()


@pytest.mark.slow
def test_a_compiled_run_fills_the_panel_with_compile_time_and_recompiles(window, qtbot, planted_break_spec):
    set_config(window, model=planted_break_spec, backend="aot_eager", epochs=1, hidden_dim=32)
    with qtbot.waitSignal(window.training.runFinished, timeout=120_000) as finished:
        window.training.train()
    assert isinstance(finished.args[0], RunFinished)
    panel = window.compile_panel
    assert panel.fields["compiled"].text() == "yes"
    assert panel.fields["seconds"].text().endswith("(first step, forward + backward)")
    assert int(panel.fields["breaks"].text()) >= 1 and panel.cards.cards
    assert window.plots.compile_marker is not None  # the compiling step is marked, not plotted
    assert window.plots.point_counts()["throughput"] == finished.args[0].steps - 1
    # Validation switches the model to eval mode under no_grad: Dynamo recompiles, and the panel says why.
    assert int(panel.fields["recompiles"].text()) >= 1
    notes = [panel.notes.item(i).text() for i in range(panel.notes.count())]
    assert any(n.startswith("↻ recompile") for n in notes)


def test_eager_run_says_not_compiled(window, qtbot):
    set_config(window, epochs=1)
    with qtbot.waitSignal(window.training.runFinished, timeout=60_000):
        window.training.train()
    assert window.compile_panel.fields["compiled"].text() == "no (eager)"


def _run_started(backend="inductor", mode="default"):
    from workbench.core.ground.config import TrainConfig
    from workbench.core.ground.events import RunStarted

    return RunStarted(config=TrainConfig(backend=backend, mode=mode), device="cpu", device_name="CPU",
                      versions=VERSIONS, train_size=100, val_size=10, steps_per_epoch=4, total_steps=4)


def test_while_a_run_compiles_the_panel_says_so_with_the_seconds_so_far(qtbot):
    """The run's own trace before compiling (source "explain") is neither "compiled" nor the user's Explain."""
    from workbench.core.ground.events import CompileFinished, CompileStarted
    from workbench.ui.panels.compile.compile import CompilePanel

    panel = CompilePanel()
    qtbot.addWidget(panel)
    now = [100.0]
    panel.clock = lambda: now[0]
    trace = CompileReport(compiled=True, backend="inductor", mode="default", graph_count=2, graph_break_count=1,
                          compile_seconds=0.32, source="explain")
    panel.add_events([_run_started(), trace])  # the run's own trace comes first, before the first step compiles
    assert panel.fields["compiled"].text() == "not yet" and panel.fields["seconds"].text() == "—"
    panel.add_events([CompileStarted("inductor", "default")])
    now[0] = 112.4
    panel.ticker.timeout.emit()
    for key in ("compiled", "seconds"):
        text = panel.fields[key].text()
        assert text == "compiling… 12 s so far", (key, text)
    assert panel.fields["graphs"].text() == "2" and panel.fields["breaks"].text() == "1"  # the trace's findings
    assert (panel.count_words["graphs"].text(), panel.count_words["breaks"].text()) == ("graphs", "break")
    panel.add_events([CompileFinished("inductor", "default", 48.9, phase="train")])
    assert panel.fields["compiled"].text() == "yes" and not panel.ticker.isActive()
    assert panel.fields["seconds"].text() == "48.90 s (first step, forward + backward)"
    final = CompileReport(compiled=True, backend="inductor", mode="default", graph_count=3, compile_seconds=48.9)
    panel.add_events([final, RunFinished(steps=4, epochs=1, seconds=50.0, stopped=False)])
    assert panel.fields["graphs"].text() == "3" and "48.90 s" in panel.fields["seconds"].text()


def test_a_run_that_ends_while_compiling_says_it_never_compiled(qtbot):
    from workbench.core.ground.events import CompileStarted, RunFailed
    from workbench.ui.panels.compile.compile import CompilePanel

    panel = CompilePanel()
    qtbot.addWidget(panel)
    panel.add_events([_run_started(), CompileStarted("inductor", "default"), RunFailed("compile", "boom")])
    assert panel.fields["compiled"].text() == "no (the run ended while compiling)"
    assert not panel.ticker.isActive()


def test_an_explain_report_names_its_backend_and_mode(qtbot):
    from workbench.ui.panels.compile.compile import CompilePanel

    panel = CompilePanel()
    qtbot.addWidget(panel)
    panel.show_report(CompileReport(compiled=True, backend="inductor", mode="max-autotune", source="explain"))
    assert panel.fields["backend"].text() == "inductor · max-autotune"
    assert panel.fields["compiled"].text() == "yes (traced by Explain, not trained)"
