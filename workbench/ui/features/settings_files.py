"""Settings from a file: File → Open settings… (or a .json dropped anywhere on the window) fills the form, each value
checked as `workbench train --config` checks it — a settings file a colleague sent, or one of the planted examples,
is one step from the form instead of retyped."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QEvent, QObject

from ...core.ground.config import TrainConfig, read_config_file
from ...core.ground.errors import WorkbenchError
from ..actions import ActionSpec
from ..support import file_dialogs
from ..support.form_errors import form_text
from .parts import WindowParts

SUFFIX = ".json"


class SettingsFiles(QObject):
    def __init__(self, parts: WindowParts):
        super().__init__(parts.window)
        self.window, self.setup, self.feedback, self.busy = parts.window, parts.panels.setup, parts.feedback, \
            parts.busy
        parts.window.setAcceptDrops(True)  # a drop over a panel that takes none of its own comes to the window
        parts.window.installEventFilter(self)

    def actions(self) -> tuple[ActionSpec, ...]:
        return (ActionSpec("open_settings", "Open settings…", self.choose, "File", 15, "Ctrl+Shift+O",
                           enabled=lambda: not self.busy(), name="openSettingsAction",
                           keywords="load config configuration json file"),)

    def choose(self) -> None:
        path = file_dialogs.open_file(self.window, "settings", "Open settings",
                                      "Workbench settings (*.json);;All files (*)")
        if path:
            self.open(path)

    def open(self, path: str | Path) -> TrainConfig | None:
        """The file's settings over the defaults, in the form; None, with the reason said, when it cannot be used
        (not readable, not JSON, a setting Workbench does not know, a value outside its range)."""
        name = Path(path).name
        if self.busy():
            self.feedback.show("error", f"Cannot open settings {name} while a run trains: the form waits for it "
                                        "(stop the run, or wait for it to end)")
            return None
        try:
            config = TrainConfig.from_dict(read_config_file(path))
        except WorkbenchError as exc:
            self.feedback.show("error", f"Cannot open settings {name}: {form_text(exc)}")
            return None
        self.setup.set_config(config)
        self.feedback.note("info", f"Settings from {path} are in the form")
        return config

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        """One .json file dragged over the window is taken; a drop opens it. Anything else is left to others."""
        if watched is self.window and event.type() in (QEvent.DragEnter, QEvent.Drop):
            path = _one_settings_file(event.mimeData())
            if path is not None:
                event.acceptProposedAction()
                if event.type() == QEvent.Drop:
                    self.open(path)
                return True
        return super().eventFilter(watched, event)


def _one_settings_file(mime) -> str | None:
    urls = mime.urls() if mime.hasUrls() else []
    if len(urls) == 1 and urls[0].isLocalFile() and urls[0].toLocalFile().lower().endswith(SUFFIX):
        return urls[0].toLocalFile()
    return None
