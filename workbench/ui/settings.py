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


RECENT_HOSTS = "recent_hosts"  # an array of (host, python), most recent first: Kernel → Connect to…'s choices
MAX_RECENT_HOSTS = 10
RECENT_HOST_SETS = "recent_host_sets"  # the sets of hosts checked before, most recent first: Kernel → Hosts of a run…


def recent_hosts(settings: QSettings) -> list[tuple[str, str]]:
    """The hosts connected to before, most recent first, each with the remote Python that worked there (a
    hand-edited entry without a host is skipped)."""
    hosts = []
    for index in range(settings.beginReadArray(RECENT_HOSTS)):
        settings.setArrayIndex(index)
        host, python = str(settings.value("host", "") or ""), str(settings.value("python", "") or "")
        if host.strip():
            hosts.append((host.strip(), python.strip() or "python3"))
    settings.endArray()
    return hosts


def remember_host(settings: QSettings, host: str, python: str) -> None:
    """`host` becomes the most recent (once: an earlier entry of it goes), with the Python that reached it."""
    if written_by_newer(settings):
        return
    hosts = [(host, python)] + [entry for entry in recent_hosts(settings) if entry[0] != host]
    settings.remove(RECENT_HOSTS)  # a shorter array must not keep the longer one's tail
    settings.beginWriteArray(RECENT_HOSTS, min(len(hosts), MAX_RECENT_HOSTS))
    for index, (name, remote_python) in enumerate(hosts[:MAX_RECENT_HOSTS]):
        settings.setArrayIndex(index)
        settings.setValue("host", name)
        settings.setValue("python", remote_python)
    settings.endArray()
    settings.sync()


def recent_host_sets(settings: QSettings) -> list[str]:
    """The sets of hosts checked before for a run across them ("gpu-a, gpu-b"), most recent first."""
    return [str(text) for text in settings.value(RECENT_HOST_SETS, []) or [] if str(text).strip()]


def remember_host_set(settings: QSettings, text: str) -> None:
    """`text` becomes the most recent set (once: an earlier entry of it goes)."""
    if written_by_newer(settings):
        return
    sets = [text] + [entry for entry in recent_host_sets(settings) if entry != text]
    settings.setValue(RECENT_HOST_SETS, sets[:MAX_RECENT_HOSTS])
    settings.sync()
