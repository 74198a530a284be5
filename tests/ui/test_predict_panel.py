"""Drag-and-drop prediction: the right class for bundled digits, a clear message for every bad file."""

from __future__ import annotations

from pathlib import Path

import pytest
from PIL import Image
from PySide6.QtWidgets import QMessageBox

from ..support.window_files import drop_files, load

SAMPLES = Path(__file__).resolve().parents[2] / "resources" / "samples"


@pytest.fixture
def panel(window, qtbot, trained_checkpoint):
    assert not isinstance(load(window, qtbot, trained_checkpoint), Exception)
    return window.predict


def wait_done(qtbot, panel):
    qtbot.waitUntil(lambda: not panel.busy and not panel.queue, timeout=30_000)


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
@pytest.mark.slow
def test_each_bad_file_gets_a_clear_message(panel, qtbot, tmp_path, kind, words):
    drop_files(panel.drop, [_bad_files(tmp_path)[kind]])
    wait_done(qtbot, panel)
    message = panel.findChild(object, "predictMessage").text()
    assert words in message, message
    assert panel.prediction_label.text() == "—"


@pytest.mark.slow
def test_two_hundred_files_at_once_stay_responsive_and_all_get_an_answer(panel, qtbot, tmp_path):
    bad = _bad_files(tmp_path)
    files = [SAMPLES / f"digit_{i % 10}.png" for i in range(195)] + [bad[k] for k in sorted(bad)]
    drop_files(panel.drop, files)
    assert panel.busy and panel.entries == []  # decoding happens off the GUI thread, not inside the drop
    wait_done(qtbot, panel)
    assert panel.gallery.count() == 200
    failed = [e for e in panel.entries if e.error]
    assert len(failed) == 5
    assert "5 of 200 files could not be read" in panel.message.text()


def test_dropping_without_a_model_explains_what_to_do(window, qtbot):
    drop_files(window.predict.drop, [SAMPLES / "digit_1.png"])
    assert "No model" in window.predict.message.text()


def test_a_corrupted_or_foreign_checkpoint_is_refused_with_a_message(window, qtbot, tmp_path):
    import torch

    corrupted = tmp_path / "corrupted.pt"
    corrupted.write_bytes(b"\x00garbage" * 100)
    assert isinstance(load(window, qtbot, corrupted, "corrupted"), Exception)
    assert "not a readable PyTorch file" in window.banner.label.text()
    foreign = tmp_path / "foreign.pt"
    torch.save({"weights": torch.zeros(3)}, foreign)
    assert isinstance(load(window, qtbot, foreign, "foreign"), Exception)
    assert "not a Workbench checkpoint" in window.banner.label.text()
    assert window.predict.model is None and not window.named_actions["export_checkpoint"].isEnabled()


def test_export_checkpoint(window, qtbot, trained_checkpoint, tmp_path):
    from workbench.core.domain import checkpoint
    from workbench.core.ground.answers import Written

    assert not window.exports.export_checkpoint(tmp_path / "nothing.pt")  # no model yet: nothing to do
    assert not isinstance(load(window, qtbot, trained_checkpoint, "test"), Exception)
    assert window.named_actions["export_checkpoint"].isEnabled()
    with qtbot.waitSignal(window.exports.exportFinished, timeout=30_000) as written:  # saved by the kernel
        assert window.exports.export_checkpoint(tmp_path / "out" / "exported.pt")
        assert window.state_label.text() == "Exporting the checkpoint…"
    assert isinstance(written.args[0], Written) and Path(written.args[0].paths[0]) == tmp_path / "out" / "exported.pt"
    confirmation = window.findChild(QMessageBox, "writtenMessage")  # where it went, with Open / Show in folder
    assert confirmation.isVisible() and str(tmp_path / "out" / "exported.pt") in confirmation.text()
    confirmation.close()
    assert checkpoint.load(tmp_path / "out" / "exported.pt").classes == tuple(str(d) for d in range(10))
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with qtbot.waitSignal(window.exports.exportFinished, timeout=30_000) as failed:
        window.exports.export_checkpoint(blocker / "exported.pt")  # a path under a file cannot be written
    assert isinstance(failed.args[0], Exception)
    assert f"could not write the checkpoint {blocker / 'exported.pt'}" in window.banner.label.text()


def test_a_new_model_rescores_the_shown_images_without_reading_them_again(panel, qtbot, monkeypatch):
    import torch

    from workbench.ui.panels import predict

    drop_files(panel.drop, [SAMPLES / f"digit_{d}.png" for d in range(3)])
    wait_done(qtbot, panel)
    decoded = []
    monkeypatch.setattr(predict, "load_digit", lambda path: decoded.append(path))

    scored = []

    def always_nine(pixels):
        scored.extend(pixels)
        return [tuple(torch.arange(10, dtype=torch.float32).softmax(0).tolist())] * len(pixels)

    panel.set_model(always_nine, tuple(str(d) for d in range(10)), "always nine")
    qtbot.waitUntil(lambda: len(scored) == 3 and not panel.busy, timeout=30_000)
    assert decoded == []  # the stored 28×28 inputs were scored again; no file was read or decoded
    assert [e.prediction.label for e in panel.entries] == [9, 9, 9]
    assert panel.gallery.count() == 3 and panel.prediction_label.text().startswith("9 · ")


def test_a_new_drop_replaces_one_still_being_decoded(panel, qtbot):
    drop_files(panel.drop, [SAMPLES / f"digit_{i % 10}.png" for i in range(50)])
    drop_files(panel.drop, [SAMPLES / "digit_4.png"])
    wait_done(qtbot, panel)
    assert [Path(e.path).name for e in panel.entries] == ["digit_4.png"]


def test_an_untrusted_model_file_is_opened_only_after_the_user_agrees(window, qtbot, tmp_path, planted_break_spec,
                                                                        monkeypatch):
    """A checkpoint of a user-defined network names a Python file: the kernel refuses to import it until the window
    has asked the user, and asks again with the user's consent."""
    from workbench.core.ground.config import TrainConfig
    from workbench.core.kernel.launch import start_run
    from workbench.core.run.run_request import Launch, RunRequest

    config = TrainConfig(model=planted_break_spec, epochs=1, max_steps=5)
    start_run(RunRequest(config, out_dir=str(tmp_path / "run"), record=False, launch=Launch(where="here")),
              lambda event: None)
    asked = []
    monkeypatch.setattr(window.checkpoints, "confirm_model_code", lambda spec: asked.append(spec) or False)
    answer = load(window, qtbot, tmp_path / "run" / "checkpoint.pt", "user model")
    assert getattr(answer, "kind", None) == "untrusted_code" and asked == [planted_break_spec]
    assert window.predict.model is None and "not opened" in window.banner.label.text()
    monkeypatch.setattr(window.checkpoints, "confirm_model_code", lambda spec: True)
    with qtbot.waitSignal(window.checkpoints.checkpointLoaded, timeout=60_000,
                          check_params_cb=lambda a: not isinstance(a, Exception)):
        window.checkpoints.load(tmp_path / "run" / "checkpoint.pt", "user model")
    assert window.predict.model is not None


@pytest.mark.slow
def test_the_window_process_imports_no_torch_for_predicting(tmp_path, samples_dir):
    """In a fresh interpreter (this test process has torch already): open the window, train, let it load the
    run's checkpoint in the kernel, predict a dropped digit — and torch never enters the window's process."""
    import subprocess
    import sys

    script = f"""
import os, sys
os.environ["QT_QPA_PLATFORM"] = "offscreen"
from PySide6.QtCore import QTimer
from workbench.ui.app import create_app
from workbench.ui.main_window import MainWindow
app = create_app([])
window = MainWindow(runs_dir={str(tmp_path / "runs")!r}, db={str(tmp_path / "db.sqlite")!r}, prestart=False)
window.show()
from workbench.core.ground.config import TrainConfig
window.setup.set_config(TrainConfig(epochs=1, max_steps=40))
digit = {str(samples_dir / "digit_3.png")!r}
window.checkpoints.checkpointLoaded.connect(lambda answer: window.predict.add_files([digit]))
def check():
    if window.predict.entries and not window.predict.busy:
        entry = window.predict.entries[0]
        print("PREDICTED", entry.prediction is not None, "torch" in sys.modules, flush=True)
        window.close(); app.quit()
timer = QTimer(); timer.timeout.connect(check); timer.start(50)
QTimer.singleShot(0, window.training.train)
QTimer.singleShot(240_000, app.quit)
app.exec()
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                         env={**__import__("os").environ, "WORKBENCH_CONFIG_DIR": str(tmp_path / "config")})
    assert "PREDICTED True False" in out.stdout, out.stdout + out.stderr[-2000:]


def test_the_empty_panel_says_what_to_drop_and_where_the_model_comes_from(window):
    drop_area = window.predict.findChild(object, "predictDropArea")
    assert "one digit" in drop_area.text() and "28×28" in drop_area.text()
    assert "train one" in window.predict.source.text() and "Open checkpoint" in window.predict.source.text()
