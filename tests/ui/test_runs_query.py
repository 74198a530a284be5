"""The Runs dock's query box: the history's query language filtering as the user types, a count of what is shown,
completion of the word under the cursor, and a malformed query's message under the box."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from workbench.core.history.runs import RunStore

from ..support.runs_history import listed, open_panel, record, shown


@pytest.fixture
def panel(qtbot, tmp_path):
    with RunStore(tmp_path / "runs.sqlite") as store:
        record(store, backend="eager", tags=("baseline",))
        record(store, backend="aot_eager", tags=("baseline",), notes="tried a warm-up")
        record(store, backend="aot_eager", amp="bf16")
    for widget in open_panel(qtbot, tmp_path):
        listed(widget, qtbot)
        yield widget


def test_typing_a_query_filters_the_runs_and_counts_them(panel, qtbot):
    box = panel.query_bar.box
    assert "backend=inductor acc>0.95 tag:baseline" in box.placeholderText()
    assert panel.query_bar.count.text() == "3 runs"
    qtbot.keyClicks(box, "backend=aot_eager tag:baseline")
    qtbot.waitUntil(lambda: shown(panel, "Run") == ["#2"])  # once typing pauses (no filter per key)
    assert panel.query_bar.count.text() == "1 of 3 runs"
    assert panel.query_text == "backend=aot_eager tag:baseline"
    panel.set_query_text("warm-up")  # words in names and notes; at once (a query kept from the last launch)
    assert shown(panel, "Run") == ["#2"]
    panel.set_query_text("")
    assert shown(panel, "Run") == ["#3", "#2", "#1"] and panel.query_bar.count.text() == "3 runs"


def test_a_malformed_query_says_what_and_where_and_keeps_the_last_filter(panel, qtbot):
    panel.set_query_text("backend=eager")
    assert shown(panel, "Run") == ["#1"]
    error = panel.query_bar.error
    assert error.isHidden()
    panel.set_query_text("backend=eager acc>")
    assert not error.isHidden()
    assert error.text().startswith("no value after '>' in term 2 'acc>' at column 15 — write one, e.g. acc>0.95")
    assert "a term is FIELD OP VALUE" in error.text()  # the hint: what a term may be
    assert shown(panel, "Run") == ["#1"]  # filtered by the last query that could be read
    box = panel.query_bar.box
    box.setFocus()
    qtbot.keyClick(box, Qt.Key_Return)  # Enter selects the term at fault: typing replaces it
    assert box.selectedText() == "acc>" and box.selectionStart() == 14
    qtbot.keyClicks(box, "acc=none")
    qtbot.waitUntil(error.isHidden)
    assert shown(panel, "Run") == ["#1"]


def test_the_word_under_the_cursor_is_completed(panel, qtbot):
    box = panel.query_bar.box
    panel.show()
    qtbot.waitExposed(panel)
    box.setFocus()
    qtbot.keyClicks(box, "amp=bf16 backe")
    completer = box.completer
    assert completer.popup().isVisible()
    offered = [completer.completionModel().index(row, 0).data() for row in range(completer.completionCount())]
    assert offered == ["backend", "backend_used"]
    completer.activated.emit("backend")
    assert box.text() == "amp=bf16 backend"
    box.setText("tag:")
    box.textEdited.emit(box.text())
    assert box.words.stringList() == ["tag:", "tag:baseline"]  # the tags the runs carry


def test_the_completion_list_never_covers_the_message(panel, qtbot):
    """'backend=' is both a term that cannot be read yet and a word with completions: both are seen."""
    from PySide6.QtCore import QRect

    box = panel.query_bar.box
    panel.show()
    qtbot.waitExposed(panel)
    box.setFocus()
    qtbot.keyClicks(box, "backend=")
    error, popup = panel.query_bar.error, box.completer.popup()
    qtbot.waitUntil(lambda: not error.isHidden() and popup.isVisible())

    def clear() -> bool:
        return not popup.geometry().intersects(QRect(error.mapToGlobal(error.rect().topLeft()), error.size()))

    qtbot.waitUntil(clear)  # once the message has been laid out, the list moves under it
