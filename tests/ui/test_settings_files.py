"""File → Open settings… and a .json dropped on the window: the form gets the file's settings, each value checked as
`workbench train --config` checks it; a file that cannot be used says why and leaves the form as it was."""

import json

import pytest
from PySide6.QtCore import QMimeData, QPoint, Qt, QUrl
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import QApplication

from workbench.core.ground.resources import resource_path


def _file(tmp_path, content, name="settings.json"):
    path = tmp_path / name
    path.write_text(content if isinstance(content, str) else json.dumps(content), encoding="utf-8")
    return path


def test_a_planted_example_fills_the_form(waiting_window):
    window = waiting_window
    config = window.settings_files.open(resource_path("examples", "planted_exploding_lr.json"))
    assert config is not None and (config.optimizer, config.lr, config.epochs) == ("sgd", 1.0, 1)
    form = window.setup.config()
    assert (form.optimizer, form.lr, form.epochs) == ("sgd", 1.0, 1)
    assert "planted_exploding_lr.json" in window.log.item(window.log.count() - 1).text()


def test_what_a_file_leaves_out_is_the_default_not_what_the_form_had(waiting_window, tmp_path):
    window = waiting_window
    window.setup.set_value("hidden_dim", 512)
    window.settings_files.open(_file(tmp_path, {"epochs": 2}))
    form = window.setup.config()
    assert form.epochs == 2 and form.hidden_dim == type(form)().hidden_dim


@pytest.mark.parametrize("content, said", [
    ({"lr": -1}, "Learning rate"),  # called by the form's label, with what it allows
    ({"learning_rate": 0.1}, "learning_rate"),  # a setting Workbench does not know
    ("{not json", "not valid JSON"),
    ([1, 2], "expected a JSON object"),
])
def test_a_file_that_cannot_be_used_says_why_and_leaves_the_form(waiting_window, tmp_path, content, said):
    window = waiting_window
    before = window.setup.config()
    assert window.settings_files.open(_file(tmp_path, content)) is None
    assert window.banner.label.text().startswith("Cannot open settings settings.json: ")
    assert said in window.banner.label.text()
    assert window.setup.config() == before


def test_a_missing_file_says_so(waiting_window, tmp_path):
    assert waiting_window.settings_files.open(tmp_path / "gone.json") is None
    assert "cannot read" in waiting_window.banner.label.text()


def _drop(window, path):
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(path))])
    enter = QDragEnterEvent(QPoint(10, 10), Qt.CopyAction, mime, Qt.LeftButton, Qt.NoModifier)
    QApplication.sendEvent(window, enter)
    drop = QDropEvent(QPoint(10, 10), Qt.CopyAction, mime, Qt.LeftButton, Qt.NoModifier)
    QApplication.sendEvent(window, drop)
    return enter.isAccepted(), drop.isAccepted()


def test_dropping_a_settings_file_on_the_window_opens_it(waiting_window, tmp_path):
    window = waiting_window
    assert _drop(window, _file(tmp_path, {"epochs": 3, "lr": 0.01})) == (True, True)
    assert window.setup.config().epochs == 3


def test_a_dropped_file_that_is_not_settings_is_left_alone(waiting_window, tmp_path):
    window = waiting_window
    before = window.setup.config()
    image = tmp_path / "digit.png"
    image.write_bytes(b"\x89PNG")
    assert _drop(window, image) == (False, False)
    assert window.setup.config() == before


def test_open_settings_is_in_the_file_menu_with_its_shortcut(waiting_window):
    action = waiting_window.named_actions["open_settings"]
    assert action.shortcut().toString() == "Ctrl+Shift+O" and action.text() == "Open settings…"
