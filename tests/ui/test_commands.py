"""Every action by keyboard: the command palette (Ctrl+K), Help → Keyboard shortcuts, and a shortcut per dock."""

import pytest
from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QApplication

from workbench.ui.commands import CommandPalette, ShortcutsDialog, command_actions, plain, shortcut_text


def _when_open(qtbot, kind, act):
    """Run `act(dialog)` on the dialog of `kind` once it is shown (exec() blocks the test until it closes)."""
    def check():
        dialog = QApplication.activeModalWidget()
        if isinstance(dialog, kind):
            act(dialog)
        else:
            QTimer.singleShot(20, check)
    QTimer.singleShot(0, check)


def _shown(palette) -> list[str]:
    return [palette.list.item(r).text().split("    ")[0] for r in range(palette.list.count())
            if not palette.list.item(r).isHidden()]


def test_the_palette_lists_every_command_once_with_its_shortcut(waiting_window):
    palette = CommandPalette(waiting_window)
    texts = [palette.list.item(row).text() for row in range(palette.list.count())]
    assert len(texts) == len(command_actions(waiting_window)) >= 30
    names = [text.split("    ")[0] for text in texts]
    assert len(names) == len(set(names)), [n for n in names if names.count(n) > 1]  # each command once
    train = next(text for text in texts if text.startswith("Train "))
    assert "Run" in train and "Ctrl+R" in train
    # the Runs dock's own commands, with the keys that work in its table
    for command, keys in (("Rename", "F2"), ("Edit tags", "Ctrl+T"), ("Diff…", "Ctrl+D"), ("Delete…", "Del"),
                          ("New run from this…", "Ctrl+Shift+N"), ("Repeat with seeds…", "Ctrl+Shift+R")):
        line = next(text for text in texts if text.startswith(command + "    "))
        assert "Runs dock" in line and keys in line, line


@pytest.mark.parametrize("query, found", [
    ("settings", "Open settings…"), ("config", "Open settings…"), ("load", "Open settings…"),
    ("diff", "Diff…"), ("seed", "Repeat with seeds…"),
])
def test_the_palette_finds_a_command_by_its_words(waiting_window, query, found):
    palette = CommandPalette(waiting_window)
    palette.query.setText(query)
    assert found in _shown(palette) and not palette.none_found.isVisible()


def test_a_query_that_matches_nothing_says_so(waiting_window):
    palette = CommandPalette(waiting_window)
    palette.query.setText("zebra")
    assert _shown(palette) == [] and palette.none_found.text() == "No command matches “zebra”"
    assert not palette.none_found.isHidden()
    palette.query.setText("train")
    assert palette.none_found.isHidden()


def test_the_shortcut_sheet_lists_every_command_with_a_shortcut_once(waiting_window):
    sheet = ShortcutsDialog(waiting_window)
    rows = [(sheet.table.item(r, 0).text(), sheet.table.item(r, 1).text()) for r in range(sheet.table.rowCount())]
    expected = {(plain(action.text()), shortcut_text(action)) for _, action in command_actions(waiting_window)
                if shortcut_text(action)}
    assert expected <= set(rows) and len(rows) == len(set(rows))
    assert [name for name, _ in rows].count("Command palette…") == 1
    assert ("Keyboard shortcuts", "Ctrl+/") in rows and ("Rename", "F2") in rows


def test_going_to_the_runs_dock_puts_the_focus_in_its_table(window, qtbot):
    """With a run's details open, the dock's first focusable field was the details' name box, where the dock's keys
    (F2, Ctrl+Shift+N, …) do nothing: Alt+8 lands in the table."""
    from workbench.core.history.runs import RunStore

    from ..support.runs_history import record

    with RunStore(window.runs.db) as store:
        run_id = record(store)
    window.runs.refresh()
    qtbot.waitUntil(lambda: window.runs.model.total == 1)
    window.runs.select_ids([run_id])
    window.runs.details_button.setChecked(True)
    qtbot.waitUntil(lambda: window.runs.details.isVisible())
    qtbot.keyClick(window, Qt.Key_8, Qt.AltModifier)
    qtbot.waitUntil(lambda: QApplication.focusWidget() is window.runs.table)


def test_typing_filters_the_palette_and_enter_runs_the_command(window, qtbot):
    window.setup.set_config(window.setup.valid_config().replace(epochs=7))
    seen = []
    window.named_actions["lr_finder"].triggered.disconnect()
    window.named_actions["lr_finder"].triggered.connect(lambda: seen.append("lr finder"))

    def act(palette):
        qtbot.keyClicks(palette.query, "find learn")
        shown = [palette.list.item(r) for r in range(palette.list.count()) if not palette.list.item(r).isHidden()]
        assert [item.text().split("    ")[0] for item in shown] == ["Find learning rate…"]
        qtbot.keyClick(palette.query, Qt.Key_Return)

    _when_open(qtbot, CommandPalette, act)
    qtbot.keyClick(window, Qt.Key_K, Qt.ControlModifier)
    qtbot.waitUntil(lambda: seen == ["lr finder"])


def test_a_disabled_command_is_listed_but_does_not_run(window):
    palette = CommandPalette(window)
    palette.query.setText("stop")  # nothing trains: Stop is disabled
    item = palette.list.currentItem()
    assert item is None  # the only match cannot run, so nothing is chosen for Enter
    palette.run_current()
    assert palette.result() == 0 and not window.runner.training


def test_help_lists_the_keyboard_shortcuts(window, qtbot):
    rows = []

    def act(dialog):
        table = dialog.table
        rows.extend((table.item(r, 0).text(), table.item(r, 1).text()) for r in range(table.rowCount()))
        dialog.accept()

    _when_open(qtbot, ShortcutsDialog, act)
    qtbot.keyClick(window, Qt.Key_Slash, Qt.ControlModifier)
    qtbot.waitUntil(lambda: bool(rows))
    assert ("Train", "Ctrl+R") in rows and ("Command palette…", "Ctrl+K") in rows
    assert ("Go to Predict", next(keys for name, keys in rows if name == "Go to Predict")) in rows


def test_each_dock_is_reached_by_a_shortcut_that_raises_it_and_takes_the_focus(window, qtbot):
    docks = list(window.docks.values())
    for number, dock in enumerate(docks[:9], start=1):
        qtbot.keyClick(window, getattr(Qt, f"Key_{number}"), Qt.AltModifier)
        qtbot.waitUntil(lambda d=dock: not d.visibleRegion().isEmpty())
        focus = QApplication.focusWidget()
        assert focus is not None and (focus is dock.widget() or dock.widget().isAncestorOf(focus)), dock.windowTitle()


def test_ticking_a_hidden_dock_in_view_brings_it_in_front(window, qtbot):
    tabbed = [dock for dock in window.docks.values() if window.tabifiedDockWidgets(dock)]
    dock = tabbed[0]
    other = window.tabifiedDockWidgets(dock)[0]
    other.raise_()
    qtbot.waitUntil(lambda: dock.visibleRegion().isEmpty())
    dock.toggleViewAction().trigger()  # hide
    dock.toggleViewAction().trigger()  # show again: in front
    qtbot.waitUntil(lambda: not dock.visibleRegion().isEmpty())
