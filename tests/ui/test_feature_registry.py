"""A feature declares itself: one entry in features/registry.py puts it on the window (window.<name>), its actions in
their menu, on the toolbar and in the command palette, enabled as it says — main_window.py is not touched."""

import pytest
from PySide6.QtCore import QObject
from PySide6.QtWidgets import QToolBar

from workbench.ui.actions import ActionSpec
from workbench.ui.commands import menu_actions
from workbench.ui.features import registry


class Counting(QObject):
    """A feature of the test's own: one action, enabled while nothing is busy."""

    def __init__(self, parts, checkpoints):
        super().__init__(parts.window)
        self.checkpoints, self.busy, self.pressed = checkpoints, parts.busy, 0

    def actions(self):
        return (ActionSpec("count", "Count presses", self.press, "Run", 95, "Ctrl+Alt+9", toolbar=990,
                           enabled=lambda: not self.busy(), name="countAction"),)

    def press(self):
        self.pressed += 1


@pytest.fixture
def counting_registered(monkeypatch):
    """The registry with one more entry, before the window is built (fixtures are made in the order asked)."""
    entry = registry.FeatureEntry("counting", lambda parts, built: Counting(parts, built.checkpoints))
    monkeypatch.setattr(registry, "FEATURES", (*registry.FEATURES, entry))


def test_one_entry_puts_a_new_feature_on_the_window_with_its_actions(counting_registered, waiting_window):
    window = waiting_window
    assert isinstance(window.counting, Counting) and window.counting.checkpoints is window.checkpoints
    action = window.named_actions["count"]
    toolbar = window.findChild(QToolBar, "runToolbar")
    assert ("Run", action) in menu_actions(window) and action in toolbar.actions()
    action.trigger()
    assert window.counting.pressed == 1
    assert set(window.features) == {e.name for e in registry.FEATURES}


def test_every_registered_feature_is_built_once_in_order(waiting_window):
    assert list(waiting_window.features) == [entry.name for entry in registry.FEATURES]
    assert all(getattr(waiting_window, name) is feature for name, feature in waiting_window.features.items())
