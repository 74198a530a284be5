"""Run → Find learning rate… and Find batch size…: the measurement runs in the kernel, is drawn as it comes back,
and *Use* writes the suggestion into the Setup form."""

from __future__ import annotations

import math

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QPushButton

from .conftest import set_config


def test_the_range_test_draws_its_loss_live_and_the_suggestion_goes_into_the_form(window, qtbot):
    set_config(window, hidden_dim=16)
    qtbot.mouseClick(window.setup.findChild(QPushButton, "findLrButton"), Qt.LeftButton)
    dialog = window.finder_dialogs["lr"]
    assert dialog is not None and dialog.isVisible()
    assert "adamw, batch 32, lr 0.004, eager · off" in dialog.intro.text()
    drawn = []
    dialog.raw.sigPlotChanged.connect(lambda item: drawn.append(len(item.getData()[0] if item.xData is not None
                                                                     else ())))
    with qtbot.waitSignal(window.finderDone, timeout=120_000) as found:
        qtbot.mouseClick(dialog.start_button, Qt.LeftButton)
        assert not dialog.start_button.isEnabled()  # one test at a time
    assert found.args[0] == "lr"
    finding = found.args[1]
    assert isinstance(finding, dict) and finding["suggestion"] is not None
    assert len(drawn) >= len(finding["points"]) > 20 and drawn[-1] == len(finding["points"])  # point by point
    assert list(dialog.line.yData) == [point["smoothed"] for point in finding["points"]]
    assert dialog.marker.isVisible() and dialog.marker.value() == math.log10(finding["suggestion"])
    assert f"{finding['suggestion']:.2e}" in dialog.status.text() and "eager" in dialog.status.text()
    qtbot.mouseClick(dialog.use_button, Qt.LeftButton)
    assert window.setup.config().lr == float(f"{finding['suggestion']:.2g}")
    assert not dialog.isVisible()


def test_the_batch_finder_draws_each_batch_size_and_the_suggestion_goes_into_the_form(window, qtbot):
    set_config(window, hidden_dim=16)
    window.batch_finder_action.trigger()
    dialog = window.finder_dialogs["batch"]
    assert dialog.isVisible() and window.findChild(QPushButton, "findBatchButton") is not None
    with qtbot.waitSignal(window.finderDone, timeout=180_000) as found:
        qtbot.mouseClick(dialog.start_button, Qt.LeftButton)
    kind, finding = found.args
    assert kind == "batch" and finding["device"] == "cpu" and finding["suggestion"] is not None
    assert list(dialog.line.xData) == [16, 32, 64, 128, 256, 512, 1024, 2048]  # as given (drawn on a log axis)
    assert list(dialog.line.yData) == [point["samples_per_s"] for point in finding["points"]]
    assert f"Suggested batch size {finding['suggestion']}:" in dialog.status.text()
    assert "(process RSS)" in dialog.status.text()  # on the CPU the memory is the process's
    qtbot.mouseClick(dialog.use_button, Qt.LeftButton)
    assert window.setup.config().batch_size == finding["suggestion"]


def test_a_test_that_cannot_suggest_says_so_and_offers_nothing_to_use(qtbot):
    from workbench.ui.finder_dialogs import LrFinderDialog
    from workbench.ui.panels.plots import LIGHT

    dialog = LrFinderDialog(LIGHT)
    qtbot.addWidget(dialog)
    dialog.show_finding({"suggestion": None, "points": [{}] * 12, "ended": "the loss diverged at LR 0.001",
                         "compiled": False})
    assert not dialog.use_button.isEnabled() and not dialog.marker.isVisible()
    assert dialog.status.text().startswith("No suggestion") and "diverged at LR 0.001" in dialog.status.text()
    dialog.show_error("the range test failed: no data")
    assert dialog.start_button.isEnabled() and "no data" in dialog.status.text()
