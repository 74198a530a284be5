"""Messages in the window quote files, runs and the user's own code: they are shown as the characters they are,
never rendered as rich text (Qt's AutoText would render `<b>…</b><img src=…>` as HTML and fetch the image)."""

from __future__ import annotations

from PySide6.QtCore import Qt

from workbench.core.ground.events import RunFailed
from workbench.core.ground.progress import failure_line

EVIL = "<b>bold</b><img src=x>"


def test_a_run_failure_in_the_banner_is_shown_literally(qtbot):
    from workbench.ui.features.feedback import Banner

    banner = Banner()
    qtbot.addWidget(banner)
    text = failure_line(RunFailed(kind="model", message=EVIL, hint=EVIL), hint_separator="\n")
    banner.show_message("error", text)
    assert banner.label.textFormat() == Qt.PlainText
    assert banner.label.text() == text and EVIL in banner.label.text()


def test_the_setup_problem_is_plain_text(qtbot):
    from workbench.ui.panels.setup import SetupPanel

    panel = SetupPanel()
    qtbot.addWidget(panel)
    assert panel.problem.objectName() == "configProblem"
    assert panel.problem.textFormat() == Qt.PlainText


def test_the_predict_panel_messages_are_plain_text(qtbot):
    from workbench.ui.panels.predict import PredictPanel
    from workbench.ui.support.tasks import Tasks

    panel = PredictPanel(Tasks())
    qtbot.addWidget(panel)
    for label in (panel.message, panel.source, panel.prediction_label):
        assert label.textFormat() == Qt.PlainText, label.objectName()
        label.setText(EVIL)
        assert label.text() == EVIL


def test_the_compile_panel_fields_are_plain_text(qtbot):
    from workbench.ui.panels.compile.compile import CompilePanel

    panel = CompilePanel()
    qtbot.addWidget(panel)
    for key, label in panel.fields.items():
        assert label.textFormat() == Qt.PlainText, key
