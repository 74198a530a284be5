"""File dialogs that start where the user keeps such files and remember where they last went, per kind of file.

A dialog's starting folder is never the folder the app was started from (a source checkout, a launcher's cwd): the
first time it is the user's Documents or Pictures folder (or the runs folder, for checkpoints), then the folder the
user last chose a file of that kind in. Folders are remembered in the settings, so they survive a restart.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QStandardPaths
from PySide6.QtWidgets import QFileDialog, QWidget

from ...core.ground import paths
from ..settings import open_settings, written_by_newer

# kind → where its first dialog starts
FIRST_FOLDER = {"checkpoint": "runs", "export": "documents", "report": "documents", "images": "pictures",
                "model": "documents", "data": "documents",
                "settings": "documents"}


def _standard(location: str) -> Path:
    if location == "runs":
        return paths.runs_dir()
    kind = {"documents": QStandardPaths.DocumentsLocation, "pictures": QStandardPaths.PicturesLocation}[location]
    found = QStandardPaths.writableLocation(kind)
    return Path(found) if found else Path.home()


def start_folder(kind: str) -> Path:
    """The folder last used for `kind` if it still exists, else the kind's standard folder (else home)."""
    remembered = open_settings().value(f"dialogs/{kind}")
    for folder in (remembered, _standard(FIRST_FOLDER[kind])):
        if folder and Path(str(folder)).is_dir():
            return Path(str(folder))
    return Path.home()


def remember(kind: str, chosen: str) -> None:
    """The folder of what the user chose (or the chosen folder itself) is where the next dialog of `kind` starts."""
    if not chosen:
        return
    folder = Path(chosen) if Path(chosen).is_dir() else Path(chosen).parent
    settings = open_settings()
    if not written_by_newer(settings):
        settings.setValue(f"dialogs/{kind}", str(folder))


def open_file(parent: QWidget, kind: str, title: str, file_filter: str) -> str:
    path, _ = QFileDialog.getOpenFileName(parent, title, str(start_folder(kind)), file_filter)
    remember(kind, path)
    return path


def open_files(parent: QWidget, kind: str, title: str, file_filter: str) -> list[str]:
    chosen, _ = QFileDialog.getOpenFileNames(parent, title, str(start_folder(kind)), file_filter)
    if chosen:
        remember(kind, chosen[0])
    return chosen


def save_file(parent: QWidget, kind: str, title: str, name: str, file_filter: str) -> str:
    """A save dialog proposing `name` in the kind's start folder."""
    path, _ = QFileDialog.getSaveFileName(parent, title, str(start_folder(kind) / name), file_filter)
    remember(kind, path)
    return path


def choose_folder(parent: QWidget, kind: str, title: str, current: str = "") -> str:
    """A folder dialog at `current` (the field's value) when it exists, else where `kind` starts."""
    start = current if current and Path(current).is_dir() else str(start_folder(kind))
    folder = QFileDialog.getExistingDirectory(parent, title, start)
    remember(kind, folder)
    return folder
