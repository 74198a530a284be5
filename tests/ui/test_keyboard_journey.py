"""A newcomer's first run with the keyboard alone (QTest key events only, no clicks): change a setting, train,
stop, visit every dock, predict an image, open the recorded run."""

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QImage
from PySide6.QtWidgets import QApplication, QSpinBox


def _focus() -> object:
    return QApplication.focusWidget()


def _key(qtbot, key, modifier=Qt.NoModifier) -> None:
    qtbot.keyClick(_focus() or QApplication.activeWindow(), key, modifier)


def _tab_to(qtbot, name: str, limit: int = 60):
    for _ in range(limit):
        if _focus() is not None and _focus().objectName() == name:
            return _focus()
        _key(qtbot, Qt.Key_Tab)
    raise AssertionError(f"Tab never reached {name}; stopped at {_focus()}")


@pytest.mark.slow
def test_a_first_run_by_keyboard_alone(window, qtbot, tmp_path, monkeypatch):
    window.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is window)
    docks = list(window.docks)

    # a setting: the Setup dock (Alt+1), Tab to Epochs, type over it
    _key(qtbot, Qt.Key_1, Qt.AltModifier)
    epochs = _tab_to(qtbot, "epochsSpin")
    assert isinstance(epochs, QSpinBox)
    _key(qtbot, Qt.Key_A, Qt.ControlModifier)
    qtbot.keyClicks(epochs, "1")
    assert window.setup.config().epochs == 1

    # train (Ctrl+R), and stop (Esc) once it has taken steps
    with qtbot.waitSignal(window.training.runFinished, timeout=120_000) as finished:
        _key(qtbot, Qt.Key_R, Qt.ControlModifier)
        qtbot.waitUntil(lambda: window.plots.point_counts()["loss"] > 0, timeout=60_000)
        _key(qtbot, Qt.Key_Escape)
    assert finished.args[0].stopped

    # every dock Alt+1…9 reach, in front and with the focus in it (the palette reaches the others)
    for number, key in enumerate(docks[:9], start=1):
        _key(qtbot, getattr(Qt, f"Key_{number}"), Qt.AltModifier)
        dock = window.docks[key]
        qtbot.waitUntil(lambda d=dock: not d.visibleRegion().isEmpty() and d.isAncestorOf(_focus()))

    # predict an image: the Predict dock, Tab to Open images…, Space (the file dialog answers for the user)
    image = tmp_path / "digit.png"
    QImage(28, 28, QImage.Format_Grayscale8).save(str(image))
    monkeypatch.setattr("workbench.ui.support.file_dialogs.open_files", lambda *args: [str(image)])
    qtbot.waitUntil(lambda: window.predict.model is not None, timeout=60_000)  # the stopped run's model
    _key(qtbot, getattr(Qt, f"Key_{docks.index('predict') + 1}"), Qt.AltModifier)
    button = _tab_to(qtbot, "predictOpenButton")
    qtbot.keyClick(button, Qt.Key_Space)
    qtbot.waitUntil(lambda: window.predict.gallery.count() == 1, timeout=60_000)

    # open the recorded run: the Runs dock, Down to the run (the current one already, with one run), Enter
    _key(qtbot, getattr(Qt, f"Key_{docks.index('runs') + 1}"), Qt.AltModifier)
    assert _focus() is window.runs.table
    _key(qtbot, Qt.Key_Down)
    with qtbot.waitSignal(window.runs.openRequested, timeout=30_000):
        _key(qtbot, Qt.Key_Return)
    assert window.state_label.text().startswith("Run #1")
