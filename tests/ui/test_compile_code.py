"""The code view: a run's compiled graphs in tabs beside the model's source; a model line highlights what it became,
a kernel the lines it came from; kernel times from the run's profile. On the recorded trace
(tests/support/recorded_inductor.py): no compile here."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPoint, Qt

from workbench.ui.panels.compile.code import (COMPILED_MARK, MISSING_FILE, NO_GRAPHS, NO_PROFILE, NO_PROVENANCE,
                                              CompiledCodeDialog, CompiledCodeView)

from ..support.recorded_inductor import recorded_profile, recorded_trace, strip_provenance

FC_LINE = "return self.fc2(self.dropout(F.relu(self.fc1(x))))"


@pytest.fixture
def view(qtbot, tmp_path):
    """The recorded run's code, with its profile: (the view, the model file, the fc line's number)."""
    folder, model = recorded_trace(tmp_path / "compile-trace")
    view = CompiledCodeView()
    qtbot.addWidget(view)
    view.resize(1280, 720)
    view.load(str(folder / "html" / "index.html"), recorded_profile())  # as a rendered run's path says
    view.show()
    line = next(i for i, text in enumerate(model.read_text().splitlines(), 1) if text.strip() == FC_LINE)
    return view, model, line


def _tab(view, title: str) -> int:
    return next(i for i in range(view.tabs.count()) if view.tabs.tabText(i).startswith(title))


def _click_line(qtbot, text, line: int) -> None:
    block = text.document().findBlockByNumber(line - 1)
    text.scroll_to(line)
    rect = text.blockBoundingGeometry(block).translated(text.contentOffset())
    qtbot.mouseClick(text.viewport(), Qt.LeftButton, pos=QPoint(20, int(rect.center().y())))


def test_the_graphs_and_their_listings_are_listed(view):
    view, model, _ = view
    assert [view.graphs.item(i).text() for i in range(view.graphs.count())] == [
        "forward 0/0 · forward + backward", "forward 0/1 · inference"]
    assert [view.tabs.tabText(i) for i in range(view.tabs.count())] == [
        "Dynamo graph", "AOT forward", "AOT backward", "Output code: forward", "Output code: backward"]
    view.graphs.setCurrentRow(1)
    assert [view.tabs.tabText(i) for i in range(view.tabs.count())] == [
        "Dynamo graph", "AOT inference", "Output code: inference"]
    assert view.source.files.currentData() == str(model)


def test_clicking_a_model_line_highlights_what_it_became(view, qtbot):
    view, model, line = view
    _click_line(qtbot, view.source.text, line)
    dynamo = view.texts["dynamo"]
    assert dynamo.marked and f"{model}:{line}" in dynamo.document().findBlockByNumber(dynamo.marked[0] - 1).text()
    for title in ("Dynamo graph", "AOT forward", "AOT backward", "Output code: forward", "Output code: backward"):
        assert view.tabs.tabText(_tab(view, title)).endswith(COMPILED_MARK)
    table = view.tables["code_forward"]
    chosen = [table.topLevelItem(i).text(0) for i in range(table.topLevelItemCount())
              if table.topLevelItem(i).isSelected()]
    assert "extern_kernels.addmm" in chosen and any(name.startswith("cpp_fused") for name in chosen)
    assert view.status.text().startswith(f"model.py:{line} `{FC_LINE}` became: Dynamo graph:")
    assert view.source.text.marked == (line,)
    # A line that compiled into nothing says so.
    _click_line(qtbot, view.source.text, 1)
    assert view.status.text().startswith("Nothing in forward 0/0 came from model.py:1")
    assert not view.texts["dynamo"].marked
    assert not view.tabs.tabText(0).endswith(COMPILED_MARK)


def test_clicking_a_kernel_shows_its_lines_its_nodes_and_where_it_came_from(view, qtbot):
    view, _, line = view
    view.tabs.setCurrentIndex(_tab(view, "Output code: forward"))
    table = view.tables["code_forward"]
    item = next(table.topLevelItem(i) for i in range(table.topLevelItemCount())
                if "relu" in table.topLevelItem(i).text(0))
    qtbot.mouseClick(table.viewport(), Qt.LeftButton, pos=table.visualItemRect(item).center())
    kernel = next(k for k in view.graph.listing("code_forward").kernels if k.key == item.data(0, Qt.UserRole))
    assert view.texts["code_forward"].marked == tuple(sorted(set(kernel.lines)))
    assert view.texts["aot_forward"].marked  # its FX nodes
    assert line in view.source.text.marked
    assert view.status.text().startswith(f"{kernel.name} came from ") and FC_LINE in view.status.text()
    # A click on the code finds the kernel too.
    view.source.text.mark((), view.source.text.palette().base().color())
    _click_line(qtbot, view.texts["code_forward"], kernel.lines[-1])
    assert line in view.source.text.marked and table.selected_keys() == [kernel.key]


def test_each_kernel_has_its_profiled_time_beside_its_name(view):
    view, _, _ = view
    table = view.tables["code_forward"]
    assert not table.isColumnHidden(1)
    cells = {table.topLevelItem(i).text(0): table.topLevelItem(i).text(1) for i in range(table.topLevelItemCount())}
    fused = [name for name in cells if name.startswith("cpp_fused")]
    assert fused and all(cells[name].endswith("µs") for name in fused)
    assert cells["extern_kernels.addmm"].endswith("(all 2 aten::addmm calls)")


def test_without_a_profile_the_time_column_says_how_to_get_one(qtbot, tmp_path):
    folder, _ = recorded_trace(tmp_path / "t")
    view = CompiledCodeView()
    qtbot.addWidget(view)
    view.load(str(folder))
    table = view.tables["code_forward"]
    assert table.isColumnHidden(1) and table.headerItem().toolTip(1) == NO_PROFILE


def test_a_model_file_no_longer_there_shows_the_lines_the_trace_quotes(qtbot, tmp_path):
    folder, model = recorded_trace(tmp_path / "t", model=tmp_path / "elsewhere" / "model.py")
    view = CompiledCodeView()
    qtbot.addWidget(view)
    view.load(str(folder))
    view.show()
    lines = view.source.text.toPlainText().splitlines()
    assert lines[0] == MISSING_FILE and any(FC_LINE in text for text in lines)
    fc = next(i for i, text in enumerate(lines, 1) if FC_LINE in text)
    _click_line(qtbot, view.source.text, fc)
    assert view.texts["dynamo"].marked and "became" in view.status.text()


def test_code_without_provenance_says_so(qtbot, tmp_path):
    folder, _ = recorded_trace(tmp_path / "t")
    strip_provenance(folder)
    view = CompiledCodeView()
    qtbot.addWidget(view)
    view.load(str(folder))
    assert NO_PROVENANCE in view.status.text()
    table = view.tables["code_forward"]
    rows = [table.topLevelItem(i) for i in range(table.topLevelItemCount())]
    assert rows and not any(row.text(2) for row in rows)  # no "From your code"


def test_a_run_without_a_trace_or_a_graph_says_why(qtbot, tmp_path):
    folder, _ = recorded_trace(tmp_path / "t")
    view = CompiledCodeView()
    qtbot.addWidget(view)
    view.load(str(folder))
    view.load(str(tmp_path / "none"))  # another run's, without a trace: nothing of the first stays
    assert "cannot read the compile trace" in view.status.text() and "record compile trace" in view.status.text()
    assert view.tabs.count() == 0 and view.graphs.count() == 0 and view.source.files.count() == 0
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "dedicated_log_torch_trace_rank_0.log").write_text("")
    view.load(str(tmp_path / "empty"))
    assert view.status.text() == NO_GRAPHS and view.graphs.count() == 0


def test_the_dialog_holds_the_view(qtbot, tmp_path):
    folder, _ = recorded_trace(tmp_path / "t")
    dialog = CompiledCodeDialog()
    qtbot.addWidget(dialog)
    dialog.view.load(str(folder), recorded_profile())
    assert dialog.view.graphs.count() == 2 and dialog.windowTitle() == "The code torch.compile wrote"
