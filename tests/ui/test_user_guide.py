"""Help → User guide (F1): the guide shipped with the app opens in the browser from its own files, offline; where it
was not built (a checkout before `make docs`), the window says how to build it. The wheel carrying the guide, opened
from outside the source tree, is tests/e2e/test_wheel.py's."""

from __future__ import annotations

from PySide6.QtCore import QUrl
from PySide6.QtGui import QDesktopServices, QKeySequence

from workbench.core.ground import resources


def test_help_user_guide_opens_the_local_copy_and_says_how_to_build_a_missing_one(waiting_window, monkeypatch,
                                                                                    tmp_path):
    window = waiting_window
    action = window.named_actions["user_guide"]
    help_menu = next(m.menu() for m in window.menuBar().actions() if m.text().replace("&", "") == "Help")
    assert action in help_menu.actions() and action.shortcut() == QKeySequence(QKeySequence.HelpContents)
    index = tmp_path / "guide" / "index.html"
    index.parent.mkdir()
    index.write_text("<html>the guide</html>")
    opened = []
    monkeypatch.setattr(QDesktopServices, "openUrl", lambda url: opened.append(url) or True)
    monkeypatch.setattr(resources, "guide_index", lambda: index)
    action.trigger()
    assert opened == [QUrl.fromLocalFile(str(index))] and opened[0].isLocalFile()  # a file, never a web address
    monkeypatch.setattr(resources, "guide_index", lambda: None)
    action.trigger()
    assert len(opened) == 1 and "`make docs` builds it" in window.banner.label.text()
