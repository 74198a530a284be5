"""File dialogs start in the user's folders, never the app's working folder, and remember the last one per kind."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from PySide6.QtWidgets import QFileDialog, QWidget

from workbench.ui.support import file_dialogs


@pytest.fixture
def dialogs(monkeypatch, tmp_path):
    """QFileDialog's static functions, answered by `answers` and recording the folder each one opened in."""
    opened, answers = [], []

    def answer(_parent, _title, start, *_rest):
        opened.append(start)
        return answers.pop(0), ""

    def answer_many(*args):
        path, _ = answer(*args)
        return ([path] if path else []), ""

    monkeypatch.setattr(QFileDialog, "getSaveFileName", answer)
    monkeypatch.setattr(QFileDialog, "getOpenFileName", answer)
    monkeypatch.setattr(QFileDialog, "getOpenFileNames", answer_many)
    documents, pictures = tmp_path / "Documents", tmp_path / "Pictures"
    documents.mkdir()
    pictures.mkdir()
    monkeypatch.setattr(file_dialogs, "_standard",
                        lambda location: {"documents": documents, "pictures": pictures}.get(location, tmp_path))
    monkeypatch.chdir(tmp_path)
    return opened, answers, documents, pictures


@pytest.fixture
def parent(qtbot):
    widget = QWidget()
    qtbot.addWidget(widget)
    return widget


def test_a_first_save_starts_in_documents_then_in_the_folder_chosen_last(parent, dialogs, tmp_path):
    opened, answers, documents, _ = dialogs
    elsewhere = tmp_path / "reports"
    elsewhere.mkdir()
    answers += [str(elsewhere / "report-1.html"), ""]
    assert file_dialogs.save_file(parent, "report", "Export report", "report-1.html", "*.html")
    assert Path(opened[0]) == documents / "report-1.html"
    assert not file_dialogs.save_file(parent, "report", "Export report", "report-2.html", "*.html")  # cancelled
    assert Path(opened[1]) == elsewhere / "report-2.html"  # remembered; a cancel forgets nothing
    assert Path(os.getcwd()) not in {Path(p).parent for p in opened[:1]}


def test_each_kind_of_file_remembers_its_own_folder(parent, dialogs, tmp_path):
    opened, answers, documents, pictures = dialogs
    digits = tmp_path / "digits"
    digits.mkdir()
    answers += [str(digits / "seven.png"), str(documents / "x.html")]
    file_dialogs.open_files(parent, "images", "Open images", "*.png")
    assert Path(opened[0]) == pictures
    file_dialogs.save_file(parent, "report", "Export report", "x.html", "*.html")
    assert Path(opened[1]) == documents / "x.html"  # not the images' folder
    answers.append("")
    file_dialogs.open_files(parent, "images", "Open images", "*.png")
    assert Path(opened[2]) == digits


def test_a_remembered_folder_that_is_gone_falls_back_to_the_standard_one(qtbot, dialogs, tmp_path):
    opened, answers, _, pictures = dialogs
    gone = tmp_path / "gone"
    gone.mkdir()
    file_dialogs.remember("images", str(gone / "a.png"))
    gone.rmdir()
    assert file_dialogs.start_folder("images") == pictures
