"""Every control has a name a screen reader can say, and no two controls of one dock share one."""

from PySide6.QtWidgets import QDialog

from workbench.ui.commands import CommandPalette, ShortcutsDialog

from ..support.accessibility import audit, spoken_name


def test_every_control_of_the_window_has_a_name_and_none_repeats_in_a_dock(window):
    unnamed, duplicates = audit(window)
    assert unnamed == []
    assert duplicates == []


def test_the_fields_beside_a_button_are_named_by_their_label_not_the_rows(window):
    """A spin box that shares its row with a Find… button used to be read as its group ('Training')."""
    assert spoken_name(window.setup.fields["batch_size"]) == "Batch size"
    assert spoken_name(window.setup.fields["lr"]) == "Learning rate"
    assert spoken_name(window.setup.fields["data_root"]) == "Data folder"
    names = {spoken_name(button) for button in (window.findChild(object, "findLrButton"),
                                                window.findChild(object, "findBatchButton"))}
    assert names == {"Find a learning rate", "Find a batch size"}


def test_the_keyboard_dialogs_name_their_controls(window, qtbot):
    for dialog in (CommandPalette(window), ShortcutsDialog(window)):
        qtbot.addWidget(dialog)
        assert isinstance(dialog, QDialog) and audit(dialog) == ([], [])
