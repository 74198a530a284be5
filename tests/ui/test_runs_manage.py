"""The Runs dock's columns and what a user says about runs: Name, Tags, Group and Disk columns, names and tags edited
in place, the details pane's note, archiving, and the header's menu of columns."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QLineEdit

from workbench.core.history.runs import RunStore
from workbench.core.history.trash import size_text
from workbench.ui.panels.runs.runs import COLUMNS

from ..support.runs_history import listed, open_panel, record, shown, stored


@pytest.fixture
def panel(qtbot, tmp_path):
    yield from open_panel(qtbot, tmp_path)


def _select(panel, qtbot, run_id: int) -> None:
    """Select one run, as a click does (its row current too), with the focus in the table."""
    panel.show()
    qtbot.waitExposed(panel)
    panel.table.setFocus()
    qtbot.waitUntil(panel.table.hasFocus)
    panel.table.setCurrentIndex(panel.model.index(panel.model.row_of(run_id), 0))


def test_name_tags_and_group_columns(panel, qtbot, tmp_path):
    with RunStore(tmp_path / "runs.sqlite") as store:
        record(store, name="baseline", tags=("paper", "amp"), seed=0)
        record(store, seed=1)  # the same settings but the seed: a group with #1
        record(store, lr=0.01)
    listed(panel, qtbot)
    panel.table.sortByColumn(0, Qt.AscendingOrder)
    assert shown(panel, "Name") == ["baseline", "#2", "#3"]  # the user's name, else the run's number
    assert shown(panel, "Tags") == ["paper, amp", "", ""]
    assert shown(panel, "Group") == ["#1 ×2", "#1 ×2", ""]
    tip = panel.proxy.index(1, 0).data(Qt.ToolTipRole)
    assert tip.startswith("Seed group: ") and "#1, #2" in tip
    assert panel.proxy.index(2, 0).data(Qt.ToolTipRole) is None


def test_the_disk_column_is_measured_off_the_gui_thread_and_sorts_by_size(panel, qtbot, tmp_path):
    folders = {}
    for name, size in (("small", 10), ("large", 5_000), ("middle", 700)):
        folders[name] = tmp_path / name
        folders[name].mkdir()
        (folders[name] / "checkpoint.pt").write_bytes(b"x" * size)
    with RunStore(tmp_path / "runs.sqlite") as store:
        ids = {name: record(store, out_dir=str(folder)) for name, folder in folders.items()}
        record(store, out_dir=str(tmp_path / "gone"))  # its folder is no longer there
        record(store)  # no folder
        remote = record(store, out_dir="/home/them/run")
        store.db.execute("UPDATE runs SET host = 'gpu-box' WHERE id = ?", (remote,))  # its files are there
    listed(panel, qtbot)
    qtbot.waitUntil(lambda: "…" not in shown(panel, "Disk"))
    panel.table.sortByColumn(COLUMNS.index("Disk"), Qt.DescendingOrder)  # largest first
    assert shown(panel, "Disk") == ["5.0 kB", "700 bytes", "10 bytes", "—", "—", "—"]
    assert shown(panel, "Run")[:3] == [f"#{ids[name]}" for name in ("large", "middle", "small")]
    assert stored(tmp_path, ids["large"]).disk_bytes == 5_000  # kept: the next launch measures nothing again
    assert size_text(5_000) == "5.0 kB"


def test_a_name_edited_in_place_is_kept_and_esc_leaves_it(panel, qtbot, tmp_path):
    with RunStore(tmp_path / "runs.sqlite") as store:
        record(store)
    listed(panel, qtbot)
    _select(panel, qtbot, 1)
    qtbot.keyClick(panel.table, Qt.Key_F2)  # Rename: the Name cell opens for typing
    editor = QApplication.focusWidget()
    assert isinstance(editor, QLineEdit) and editor.text() == ""
    qtbot.keyClicks(editor, "lr warm-up")
    qtbot.keyClick(editor, Qt.Key_Escape)  # leaves it as it was
    assert shown(panel, "Name") == ["#1"]
    qtbot.keyClick(panel.table, Qt.Key_F2)
    editor = QApplication.focusWidget()
    qtbot.keyClicks(editor, "lr warm-up")
    qtbot.keyClick(editor, Qt.Key_Return)  # kept (Qt commits an edit once the key is handled)
    qtbot.waitUntil(lambda: shown(panel, "Name") == ["lr warm-up"])
    qtbot.waitUntil(lambda: stored(tmp_path, 1).name == "lr warm-up")  # written off the GUI thread
    assert panel.details.name.text() == "lr warm-up"


def test_tags_edited_in_place_and_bad_tags_refused_with_a_message(panel, qtbot, tmp_path):
    with RunStore(tmp_path / "runs.sqlite") as store:
        record(store, tags=("old",))
    listed(panel, qtbot)
    _select(panel, qtbot, 1)
    qtbot.keyClick(panel.table, Qt.Key_T, Qt.ControlModifier)  # Edit tags
    editor = QApplication.focusWidget()
    assert isinstance(editor, QLineEdit) and editor.text() == "old"
    editor.setText("two words, fine")
    qtbot.keyClick(editor, Qt.Key_Return)
    qtbot.waitUntil(lambda: "not changed" in panel.message.text())
    message = panel.message.text()
    assert message.startswith("Tags of #1 not changed: the tag 'two words' has a space in it")
    assert "join its words with - or _" in message and "commas" in message  # what to do instead
    assert shown(panel, "Tags") == ["old"]
    qtbot.keyClick(panel.table, Qt.Key_T, Qt.ControlModifier)
    editor = QApplication.focusWidget()
    editor.setText("baseline, amp,")  # a trailing comma is no empty tag
    qtbot.keyClick(editor, Qt.Key_Return)
    qtbot.waitUntil(lambda: shown(panel, "Tags") == ["baseline, amp"])
    qtbot.waitUntil(lambda: stored(tmp_path, 1).tags == ("baseline", "amp"))
    assert panel.message.text() == "Tags of #1: baseline, amp."  # the refusal's words do not stay


def test_the_details_keep_a_note_on_flush_and_ctrl_s_and_render_it(panel, qtbot, tmp_path):
    with RunStore(tmp_path / "runs.sqlite") as store:
        record(store)
        record(store, notes="already *noted*")
    listed(panel, qtbot)
    _select(panel, qtbot, 2)
    assert not panel.details.isVisible()  # until asked for: the table keeps the dock's width
    qtbot.mouseClick(panel.details_button, Qt.LeftButton)
    assert panel.details.isVisible()
    assert panel.details.note.toPlainText() == "already *noted*"
    assert "already noted" in panel.details.preview.toPlainText()  # rendered: no asterisks
    _select(panel, qtbot, 1)
    panel.details.note.setFocus()
    qtbot.keyClicks(panel.details.note, "# Warm-up")
    qtbot.keyClick(panel.details.note, Qt.Key_S, Qt.ControlModifier)  # the note's, not the window's Ctrl+S
    qtbot.waitUntil(lambda: stored(tmp_path, 1).notes == "# Warm-up")
    assert panel.details.preview.toPlainText().strip() == "Warm-up"
    qtbot.keyClicks(panel.details.note, " helps")
    panel.flush_edits()  # the window closing: what is typed is written before it goes
    assert stored(tmp_path, 1).notes == "# Warm-up helps"
    panel.details.name.setText("named in the details")
    panel.details.name.setModified(True)
    panel.flush_edits()
    assert stored(tmp_path, 1).name == "named in the details"


def test_archived_runs_are_hidden_unless_shown_and_then_greyed(panel, qtbot, tmp_path):
    with RunStore(tmp_path / "runs.sqlite") as store:
        for _ in range(3):
            record(store)
    listed(panel, qtbot)
    panel.select_ids([2, 3])
    archive = panel.run_actions["archive"]
    assert archive.text() == "Archive" and archive.isEnabled()
    archive.trigger()
    assert shown(panel, "Run") == ["#1"]
    assert panel.query_bar.count.text() == "1 of 3 runs (2 archived not shown)"
    qtbot.waitUntil(lambda: stored(tmp_path, 2).archived and stored(tmp_path, 3).archived)
    panel.query_bar.archived.setChecked(True)  # Show archived
    assert shown(panel, "Run") == ["#3", "#2", "#1"]
    fonts = shown(panel, "Run", Qt.FontRole)
    assert fonts[0].italic() and fonts[1].italic() and fonts[2] is None
    panel.select_ids([2, 3])
    assert archive.text() == "Unarchive"
    archive.trigger()
    qtbot.waitUntil(lambda: not stored(tmp_path, 2).archived)
    panel.query_bar.archived.setChecked(False)
    assert shown(panel, "Run") == ["#3", "#2", "#1"]


def test_columns_are_shown_and_hidden_from_the_header_menu(panel):
    assert panel.hidden_columns() == ["Dataset", "Epochs"]  # by default: the rest fits a 1366-px window
    menu = panel.run_actions.columns_menu()
    checks = {action.text(): action for action in menu.actions()}
    assert "Run" not in checks and not checks["Dataset"].isChecked() and checks["Disk"].isChecked()
    checks["Dataset"].setChecked(True)
    checks["Disk"].setChecked(False)
    assert panel.hidden_columns() == ["Epochs", "Disk"]
    panel.set_hidden_columns(["Run", "Status"])  # the Run column names the rows: it is never hidden
    assert panel.hidden_columns() == ["Status"] and not panel.table.isColumnHidden(COLUMNS.index("Run"))


def test_esc_and_ctrl_s_in_the_dock_are_the_editors_not_the_windows(waiting_window, qtbot, tmp_path, monkeypatch):
    """Esc is the window's Stop and Ctrl+S its Export checkpoint: in a name being edited Esc cancels the edit, and
    in a note Ctrl+S keeps the note, whatever those actions would do."""
    window = waiting_window  # its history: tmp_path/runs.sqlite
    with RunStore(window.db) as store:
        record(store)
    window.show()
    qtbot.waitExposed(window)
    window.docks["runs"].raise_()
    panel = window.runs
    listed(panel, qtbot)
    triggered = []
    for action in (window.named_actions["stop"], window.named_actions["export_checkpoint"]):
        action.triggered.connect(lambda _checked=False, action=action: triggered.append(action.text()))
    _select(panel, qtbot, 1)
    qtbot.keyClick(panel.table, Qt.Key_F2)
    editor = QApplication.focusWidget()
    qtbot.keyClicks(editor, "not kept")
    # as while a run trains (the window enables it when a selection changes)
    window.named_actions["stop"].setEnabled(True)
    qtbot.keyClick(editor, Qt.Key_Escape)
    assert triggered == [] and not editor.isVisible() and shown(panel, "Name") == ["#1"]
    panel.details_button.click()
    panel.details.note.setFocus()
    qtbot.keyClicks(panel.details.note, "kept")
    window.named_actions["export_checkpoint"].setEnabled(True)  # as with a checkpoint open
    monkeypatch.setattr("workbench.ui.support.file_dialogs.save_file", lambda *args: None)  # its dialog, cancelled
    qtbot.keyClick(panel.details.note, Qt.Key_S, Qt.ControlModifier)
    qtbot.waitUntil(lambda: stored(tmp_path, 1).notes == "kept")
    assert triggered == []


def test_tags_refused_in_the_details_are_put_back(panel, qtbot, tmp_path):
    with RunStore(tmp_path / "runs.sqlite") as store:
        record(store, tags=("old",))
    listed(panel, qtbot)
    panel.select_ids([1])
    tags = panel.details.tags
    assert tags.text() == "old"
    tags.setText("old, " + "x" * 41)
    tags.setModified(True)
    tags.editingFinished.emit()
    assert "is 41 characters long" in panel.message.text()
    assert tags.text() == "old" and shown(panel, "Tags") == ["old"]


def test_the_selection_survives_a_listing_and_a_sort_and_a_filter_drops_what_it_hides(panel, qtbot, tmp_path):
    with RunStore(tmp_path / "runs.sqlite") as store:
        for lr in (0.1, 0.2, 0.3):
            record(store, lr=lr)
    listed(panel, qtbot)
    with qtbot.waitSignal(panel.compareRequested, timeout=30_000) as compared:
        panel.select_ids([1, 2])
    assert [run.record.id for run in compared.args[0]] == [1, 2]
    with qtbot.assertNotEmitted(panel.compareRequested):  # the same runs: not compared again
        panel.table.sortByColumn(COLUMNS.index("Run"), Qt.AscendingOrder)
        listed(panel, qtbot)
    assert panel.selected_ids() == [1, 2]
    with qtbot.waitSignal(panel.compareRequested) as compared:
        panel.set_query_text("lr<0.15")  # #2 is no longer listed: no longer selected, nor compared
    assert compared.args[0] == [] and panel.selected_ids() == [1]
