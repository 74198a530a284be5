"""The window's persistent settings (an INI file in the config folder) and their migration between versions."""

from __future__ import annotations

from PySide6.QtCore import QSettings

from ..core.ground import paths

SETTINGS_VERSION = 2  # 2: the in-process runner is gone (no torch in the window); the process count is kept


def open_settings() -> QSettings:
    return QSettings(str(paths.config_dir() / "settings.ini"), QSettings.IniFormat)


def written_by_newer(settings: QSettings) -> bool:
    """Settings of a newer Workbench: read what still makes sense, never write over them."""
    return int(settings.value("settings_version", 0) or 0) > SETTINGS_VERSION


def migrate_settings(settings: QSettings) -> None:
    """Bring settings written by an older Workbench up to SETTINGS_VERSION."""
    if written_by_newer(settings):
        return
    if int(settings.value("settings_version", 0) or 0) < 2:
        settings.remove("in_process")  # version 1 could train in the window's own process
    settings.setValue("settings_version", SETTINGS_VERSION)
