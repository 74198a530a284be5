"""What the Runs dock does to selected runs besides editing them: the rows' context menu with its shortcuts, Compare
bringing a seed group whole, New run from this… and Repeat with seeds…, and the diff of two runs in its dialog."""

from __future__ import annotations

import pytest
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import QApplication

from workbench.core.history.runs import RunStore

from ..support.accessibility import audit
from ..support.runs_history import listed, open_panel, record


@pytest.fixture
def panel(qtbot, tmp_path):
    yield from open_panel(qtbot, tmp_path)


def test_the_context_menu_has_every_action_each_with_its_shortcut(panel, qtbot, tmp_path):
    with RunStore(tmp_path / "runs.sqlite") as store:
        record(store)
        record(store, seed=3)
    listed(panel, qtbot)
    menu = panel.run_actions.menu()
    texts = [action.text().split("\t")[0] for action in menu.actions() if not action.isSeparator()]
    assert texts == ["Open", "Compare", "Continue training…", "Diff…", "Rename", "Edit tags", "Archive", "Delete…",
                     "New run from this…", "Warm start from this…", "Repeat with seeds…"]
    keys = {action.text(): action.shortcut().toString() for action in menu.actions() if not action.isSeparator()}
    assert keys["Delete…"] == QKeySequence(QKeySequence.Delete).toString() and keys["Rename"] == "F2"
    assert keys["Diff…"] == "Ctrl+D" and keys["Repeat with seeds…"] == "Ctrl+Shift+R"
    panel.select_ids([1])  # one run: Diff needs two
    enabled = {action.text(): action.isEnabled() for action in menu.actions() if not action.isSeparator()}
    assert not enabled["Diff…"] and enabled["New run from this…"] and enabled["Delete…"]
    panel.select_ids([1, 2])  # two: Open, Rename and the one-run actions are off
    enabled = {action.text(): action.isEnabled() for action in menu.actions() if not action.isSeparator()}
    assert enabled["Diff…"] and enabled["Compare"] and not enabled["Rename"] and not enabled["Repeat with seeds…"]
    assert not enabled["Warm start from this…"]
    assert audit(panel) == ([], [])  # every control named, no two alike (the details and the Undo bar too)


def test_new_run_from_this_and_repeat_with_seeds_hand_over_the_run(panel, qtbot, tmp_path):
    with RunStore(tmp_path / "runs.sqlite") as store:
        record(store, lr=0.02)
    listed(panel, qtbot)
    panel.select_ids([1])
    with qtbot.waitSignal(panel.cloneRequested) as cloned:
        panel.run_actions["clone"].trigger()
    assert cloned.args[0].id == 1 and cloned.args[0].config["lr"] == 0.02
    with qtbot.waitSignal(panel.repeatRequested) as repeated:
        panel.run_actions["repeat"].trigger()
    assert repeated.args[0].id == 1


def test_compare_on_a_run_of_a_seed_group_overlays_the_whole_group(panel, qtbot, tmp_path):
    with RunStore(tmp_path / "runs.sqlite") as store:
        for seed in (0, 1, 2):
            record(store, seed=seed)
        record(store, lr=0.01)  # another configuration
    listed(panel, qtbot)
    panel.select_ids([2])
    with qtbot.waitSignal(panel.compareRequested, timeout=30_000) as compared:
        panel.run_actions["compare"].trigger()
    assert [run.record.id for run in compared.args[0]] == [1, 2, 3]
    panel.select_ids([4])  # alone in its configuration: nothing to compare
    panel.compare_selected()
    assert panel.message.text().startswith("Select two or more runs")


def test_the_diff_of_two_runs_shows_only_what_differs_by_section(panel, qtbot, tmp_path):
    with RunStore(tmp_path / "runs.sqlite") as store:
        record(store, backend="eager", amp="off", name="baseline")
        record(store, backend="aot_eager", amp="bf16")
    listed(panel, qtbot)
    panel.select_ids([1, 2])
    panel.run_actions["diff"].trigger()  # read with the runs' events off the GUI thread
    qtbot.waitUntil(lambda: panel.diff_dialog is not None and panel.diff_dialog.isVisible(), timeout=30_000)
    dialog = panel.diff_dialog
    table = dialog.table
    header = [table.horizontalHeaderItem(column).text() for column in range(table.columnCount())]
    assert header == ["", "baseline", "#2", "Note"]  # each run named as the list names it
    rows = [[table.item(row, column).text() for column in range(table.columnCount())
             if table.item(row, column) is not None] for row in range(table.rowCount())]
    assert rows[0] == ["Settings"]
    settings = {row[0]: row[1:3] for row in rows[1:] if len(row) > 1}
    assert settings == {"Backend": ["eager", "aot_eager"], "AMP": ["off (fp32)", "bf16"]}
    dialog.copy()
    text = QApplication.clipboard().text()
    assert text.splitlines()[:2] == ["\tbaseline\t#2\tNote", "Settings"]
    assert "Backend\teager\taot_eager\t" in text


def test_runs_that_share_a_name_are_told_apart_by_their_numbers(tmp_path):
    from workbench.ui.panels.runs.rows import distinct_names

    with RunStore(tmp_path / "runs.sqlite") as store:
        for name in ("lr sweep", "lr sweep", ""):
            record(store, name=name)
        records = store.list()
    assert distinct_names(records) == ["lr sweep (#1)", "lr sweep (#2)", "#3"]
