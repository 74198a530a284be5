"""Deleting runs from the Runs dock: it asks first (how many, what it frees, what it refuses), moves the runs'
folders to the trash (XDG_DATA_HOME is the test's own, so the real trash is never touched), and Undo brings the rows
and folders back; a running run is refused."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox

from workbench.core.history.runs import RunStore, RunStoreError

from ..support.runs_history import listed, open_panel, record, shown, stored


@pytest.fixture
def panel(qtbot, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path / "data"))
    yield from open_panel(qtbot, tmp_path)


@pytest.fixture
def asked(monkeypatch):
    """The questions asked, answered by the test's answer (Yes unless it sets answer[0])."""
    questions, answer = [], [QMessageBox.Yes]
    monkeypatch.setattr(QMessageBox, "question", lambda _parent, _title, text, *_rest: questions.append(text)
                        or answer[0])
    return questions, answer


def _run_folder(tmp_path, name: str, size: int):
    folder = tmp_path / "runs" / name
    folder.mkdir(parents=True)
    (folder / "checkpoint.pt").write_bytes(b"w" * size)
    (folder / "events.jsonl").write_text("{}\n")
    return folder


def test_delete_asks_moves_the_folder_to_the_trash_and_undo_brings_it_back(panel, qtbot, tmp_path, asked):
    questions, answer = asked
    folder = _run_folder(tmp_path, "first", 2_000)
    neighbour = _run_folder(tmp_path, "second", 10)
    with RunStore(tmp_path / "runs.sqlite") as store:
        record(store, out_dir=str(folder), name="first")
        record(store, out_dir=str(neighbour))
    listed(panel, qtbot)
    panel.select_ids([1])
    answer[0] = QMessageBox.No
    panel.delete_selected()
    qtbot.waitUntil(lambda: len(questions) == 1)
    assert questions[0].startswith("Delete 1 run from the history?\n\nTheir folders (2.0 kB) go to the trash.")
    assert folder.is_dir() and shown(panel, "Run") == ["#2", "#1"]  # No: nothing happens

    answer[0] = QMessageBox.Yes
    panel.delete_selected()
    qtbot.waitUntil(lambda: not panel.undo_bar.isHidden())
    assert panel.undo_bar.label.text() == "1 run deleted (2.0 kB freed) —"
    trashed = tmp_path / "xdg" / "Trash" / "files" / "first"
    assert not folder.exists() and (trashed / "checkpoint.pt").stat().st_size == 2_000
    assert (tmp_path / "xdg" / "Trash" / "info" / "first.trashinfo").is_file()
    assert neighbour.is_dir()  # never another run's folder
    with pytest.raises(RunStoreError):
        stored(tmp_path, 1)
    qtbot.waitUntil(lambda: shown(panel, "Run") == ["#2"])

    with qtbot.waitSignal(panel.refreshed, timeout=30_000):
        qtbot.mouseClick(panel.undo_bar.undo, Qt.LeftButton)
    assert panel.undo_bar.isHidden() and panel.message.text() == "Brought back #1."
    assert (folder / "checkpoint.pt").stat().st_size == 2_000 and not trashed.exists()
    assert stored(tmp_path, 1).name == "first"
    assert shown(panel, "Run") == ["#2", "#1"]


def test_a_running_run_is_refused_and_said_why(panel, qtbot, tmp_path, asked):
    questions, _answer = asked
    with RunStore(tmp_path / "runs.sqlite") as store:
        record(store, status="running")  # this process's: alive
        record(store)
    listed(panel, qtbot)
    panel.select_ids([1])
    panel.delete_selected()
    qtbot.waitUntil(lambda: panel.message.text().startswith("Nothing deleted"))
    assert panel.message.text() == "Nothing deleted: #1: it is still running: stop it first"
    assert questions == []  # nothing to ask about

    panel.select_ids([1, 2])
    panel.delete_selected()
    qtbot.waitUntil(lambda: len(questions) == 1)
    assert questions[0].startswith("Delete 1 run from the history?")
    assert questions[0].endswith("Not deleted:\n  • #1: it is still running: stop it first")
    qtbot.waitUntil(lambda: shown(panel, "Run") == ["#1"])
    assert stored(tmp_path, 1).status == "running"


def test_the_delete_key_deletes_the_selected_runs(panel, qtbot, tmp_path, asked):
    questions, _answer = asked
    with RunStore(tmp_path / "runs.sqlite") as store:
        for _ in range(3):
            record(store)
    listed(panel, qtbot)
    panel.show()
    qtbot.waitExposed(panel)
    panel.table.setFocus()
    qtbot.waitUntil(panel.table.hasFocus)
    panel.select_ids([1, 3])
    qtbot.keyClick(panel.table, Qt.Key_Delete)
    qtbot.waitUntil(lambda: shown(panel, "Run") == ["#2"])
    assert questions[0].startswith("Delete 2 runs from the history?")
    assert panel.undo_bar.label.text() == "2 runs deleted —"  # no folders: nothing freed
