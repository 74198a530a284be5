"""Drag-and-drop prediction: the right class for bundled digits, a clear message for every bad file."""

from __future__ import annotations

from pathlib import Path

import pytest
from PIL import Image
from PySide6.QtCore import QMimeData, QPoint, Qt, QUrl
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import QApplication

SAMPLES = Path(__file__).resolve().parents[2] / "workbench" / "resources" / "samples"


def drop_files(widget, paths) -> None:
    """What a file manager delivers: a drag-enter, then a drop, with file:// URLs in the mime data."""
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(p)) for p in paths])
    pos = widget.rect().center()
    enter = QDragEnterEvent(pos, Qt.CopyAction, mime, Qt.LeftButton, Qt.NoModifier)  # noqa: the QPoint overload
    QApplication.sendEvent(widget, enter)
    assert enter.isAccepted()
    drop = QDropEvent(QPoint(pos).toPointF(), Qt.CopyAction, mime, Qt.LeftButton, Qt.NoModifier)
    QApplication.sendEvent(widget, drop)


@pytest.fixture
def panel(window, qtbot, trained_checkpoint):
    assert window.load_checkpoint(trained_checkpoint, "test checkpoint")
    return window.predict


def wait_done(qtbot, panel):
    qtbot.waitUntil(lambda: not panel.timer.isActive() and not panel.queue, timeout=30_000)


def test_dropping_a_bundled_digit_shows_the_right_class(panel, qtbot):
    drop_area = panel.findChild(object, "predictDropArea")
    drop_files(drop_area, [SAMPLES / "digit_7.png"])
    wait_done(qtbot, panel)
    label = panel.findChild(object, "predictionLabel").text()
    assert label.startswith("7 · "), label
    assert panel.input_view.pixmap() is not None and not panel.input_view.pixmap().isNull()
    heights = panel.bars.opts["height"]
    assert len(heights) == 10 and abs(sum(heights) - 1) < 1e-3 and max(heights) == heights[7]


def test_several_files_make_a_gallery_with_a_prediction_each(panel, qtbot):
    files = [SAMPLES / f"digit_{d}.png" for d in range(10)]
    drop_files(panel.drop, files)
    wait_done(qtbot, panel)
    assert panel.gallery.count() == 10 and panel.gallery.isVisible()
    predicted = [e.prediction.label for e in panel.entries]
    assert sum(p == d for d, p in enumerate(predicted)) >= 9  # a 3-epoch model on its most typical digits
    panel.gallery.setCurrentRow(3)
    assert panel.prediction_label.text().startswith(f"{predicted[3]} · ")


def _bad_files(tmp_path: Path) -> dict[str, Path]:
    text = tmp_path / "notes.txt"
    text.write_text("not an image")
    empty = tmp_path / "empty.png"
    empty.write_bytes(b"")
    good = (SAMPLES / "digit_3.png").read_bytes()
    truncated = tmp_path / "truncated.png"
    truncated.write_bytes(good[: len(good) // 2])
    huge = tmp_path / "huge.png"
    Image.new("1", (20_000, 20_000)).save(huge)  # tiny file, 400 megapixels once decoded
    folder = tmp_path / "a-folder"
    folder.mkdir()
    return {"text": text, "empty": empty, "truncated": truncated, "huge": huge, "folder": folder}


@pytest.mark.parametrize("kind, words", [
    ("text", "not an image"), ("empty", "empty"), ("truncated", "truncated"), ("huge", "megapixels"),
    ("folder", "folder"),
])
def test_each_bad_file_gets_a_clear_message(panel, qtbot, tmp_path, kind, words):
    drop_files(panel.drop, [_bad_files(tmp_path)[kind]])
    wait_done(qtbot, panel)
    message = panel.findChild(object, "predictMessage").text()
    assert words in message, message
    assert panel.prediction_label.text() == "—"


def test_two_hundred_files_at_once_stay_responsive_and_all_get_an_answer(panel, qtbot, tmp_path):
    bad = _bad_files(tmp_path)
    files = [SAMPLES / f"digit_{i % 10}.png" for i in range(195)] + [bad[k] for k in sorted(bad)]
    drop_files(panel.drop, files)
    assert panel.timer.isActive()  # processing is spread over event-loop ticks, not done inside the drop
    wait_done(qtbot, panel)
    assert panel.gallery.count() == 200
    failed = [e for e in panel.entries if e.error]
    assert len(failed) == 5
    assert "5 of 200 files could not be read" in panel.message.text()


def test_dropping_without_a_model_explains_what_to_do(window, qtbot):
    drop_files(window.predict.drop, [SAMPLES / "digit_1.png"])
    assert "No model" in window.predict.message.text()


def test_a_corrupted_or_foreign_checkpoint_is_refused_with_a_message(window, tmp_path):
    import torch

    corrupted = tmp_path / "corrupted.pt"
    corrupted.write_bytes(b"\x00garbage" * 100)
    assert not window.load_checkpoint(corrupted, "corrupted")
    assert "not a readable PyTorch file" in window.banner.label.text()
    foreign = tmp_path / "foreign.pt"
    torch.save({"weights": torch.zeros(3)}, foreign)
    assert not window.load_checkpoint(foreign, "foreign")
    assert "not a Workbench checkpoint" in window.banner.label.text()
    assert window.predict.model is None and not window.export_action.isEnabled()


def test_export_checkpoint(window, trained_checkpoint, tmp_path):
    from workbench.core import checkpoint

    assert window.load_checkpoint(trained_checkpoint, "test")
    assert window.export_action.isEnabled()
    assert window.export_checkpoint(tmp_path / "out" / "exported.pt")
    assert checkpoint.load(tmp_path / "out" / "exported.pt").classes == tuple(str(d) for d in range(10))
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert not window.export_checkpoint(blocker / "exported.pt")  # a path under a file cannot be written
    assert "Could not export" in window.banner.label.text()
