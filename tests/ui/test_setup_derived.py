"""New run from this…: a run's settings in the Setup form, which says above them that they derive from that run and
which settings have been edited since, until the form gets its settings from anywhere else."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from workbench.core.ground.config import TrainConfig

RUN = TrainConfig(lr=0.004, epochs=5, batch_size=64, seed=3, backend="inductor", amp="bf16", dropout=0.35,
                  hidden_dim=128)


@pytest.fixture
def panel(qtbot):
    from workbench.ui.panels.setup import SetupPanel

    widget = SetupPanel()
    qtbot.addWidget(widget)
    widget.show()
    return widget


def note(panel) -> str:
    return panel.derived_note.text() if panel.derived_note.isVisible() else ""


def test_a_runs_settings_are_in_the_form_and_the_note_says_where_from(panel):
    assert note(panel) == "" and panel.derived_from is None  # a fresh form derives from nothing
    panel.set_derived(RUN, "#12")
    assert panel.config() == RUN  # every setting, those the form does not show (dropout) too
    assert note(panel) == "Derived from #12" and panel.derived_from == "#12"
    assert panel.edited_settings() == []  # nothing edited yet: each shown setting reads back as the run had it
    assert panel.derived_note.accessibleName() == "Derived from #12"
    layout = panel.layout()
    assert layout.indexOf(panel.derived_note) == 0  # above the form
    assert panel.derived_note.textFormat() == Qt.PlainText  # the label is the user's text: never rendered


def test_the_note_lists_the_settings_edited_since_by_the_forms_words_and_forgets_edits_undone(panel, qtbot):
    panel.set_derived(RUN, "#12")
    panel.set_value("epochs", 8)
    panel.fields["lr"].setValue(0.01)
    assert note(panel) == "Derived from #12 (edited: Epochs, Learning rate)"  # in the form's order
    assert panel.derived_note.accessibleName() == note(panel)
    panel.set_value("epochs", 5)  # back to the run's
    assert note(panel) == "Derived from #12 (edited: Learning rate)" and panel.edited_settings() == ["lr"]
    panel.fields["amp"].setCurrentIndex(panel.fields["amp"].findData("off"))
    assert note(panel) == "Derived from #12 (edited: Learning rate, AMP)"
    assert panel.derived_from == "#12"  # edited, the form still derives from the run


def test_the_note_goes_when_the_form_no_longer_derives_from_the_run(panel):
    panel.set_derived(RUN, "#12")
    panel.set_value("epochs", 8)
    panel.clear_derived()
    assert note(panel) == "" and panel.derived_from is None and panel.edited_settings() == []
    assert panel.config().epochs == 8  # clearing the note keeps the settings
    panel.set_value("epochs", 9)  # a later edit brings no note back
    assert note(panel) == ""
    panel.set_derived(RUN, "baseline (#7)")
    assert note(panel) == "Derived from baseline (#7)"
    panel.set_config(TrainConfig(epochs=2))  # settings from anywhere else (a sweep's best, saved settings)
    assert note(panel) == "" and panel.derived_from is None
