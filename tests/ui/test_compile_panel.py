"""The compile panel names graph breaks with their source lines, from Explain and from a run."""

from __future__ import annotations

from PySide6.QtCore import Qt

from workbench.core.ground.events import CompileReport, RunFinished

from .conftest import set_config


def test_explain_lists_the_planted_break_with_file_line_and_source(window, qtbot, planted_break_spec,
                                                                   planted_break_line):
    set_config(window, model=planted_break_spec, backend="aot_eager")
    with qtbot.waitSignal(window.explainFinished, timeout=60_000) as done:
        qtbot.mouseClick(window.findChild(object, "explainButton"), Qt.LeftButton)
    report = done.args[0]
    assert isinstance(report, CompileReport) and report.graph_break_count >= 1
    assert not window.busy  # explain ran in the service kernel and has ended
    table = window.findChild(object, "breakTable")
    assert table.rowCount() >= 1
    where = table.item(0, 1).text()
    assert where.endswith(f"planted_break.py:{planted_break_line}"), where
    assert "print(" in table.item(0, 2).text()
    assert window.compile_panel.fields["breaks"].text() == str(report.graph_break_count)


def test_double_clicking_a_break_shows_its_stack(window, qtbot, planted_break_spec, planted_break_line):
    set_config(window, model=planted_break_spec, backend="aot_eager")
    with qtbot.waitSignal(window.explainFinished, timeout=60_000):
        window.explain()
    window.compile_panel.show_break(0)
    dialog = window.compile_panel.findChild(object, "breakDialog")
    assert dialog is not None and dialog.isVisible()
    text = dialog.text.toPlainText()
    assert f"line {planted_break_line}, in forward" in text and "Why:" in text
    with qtbot.waitSignal(dialog.destroyed):  # freed when closed: double-clicks do not pile up dialogs
        dialog.close()


def test_a_compiled_run_fills_the_panel_with_compile_time_and_recompiles(window, qtbot, planted_break_spec):
    set_config(window, model=planted_break_spec, backend="aot_eager", epochs=1, hidden_dim=32)
    with qtbot.waitSignal(window.runFinished, timeout=120_000) as finished:
        window.train()
    assert isinstance(finished.args[0], RunFinished)
    panel = window.compile_panel
    assert panel.fields["compiled"].text() == "yes"
    assert panel.fields["seconds"].text().endswith("(first step, forward + backward)")
    assert int(panel.fields["breaks"].text()) >= 1 and panel.table.rowCount() >= 1
    assert window.plots.compile_marker is not None  # the compiling step is marked, not plotted
    assert window.plots.point_counts()["throughput"] == finished.args[0].steps - 1
    # Validation switches the model to eval mode under no_grad: Dynamo recompiles, and the panel says why.
    assert int(panel.fields["recompiles"].text()) >= 1
    notes = [panel.notes.item(i).text() for i in range(panel.notes.count())]
    assert any(n.startswith("↻ recompile") for n in notes)


def test_eager_run_says_not_compiled(window, qtbot):
    set_config(window, epochs=1)
    with qtbot.waitSignal(window.runFinished, timeout=60_000):
        window.train()
    assert window.compile_panel.fields["compiled"].text() == "no (eager)"
