"""Where Workbench keeps things: a cache for downloaded datasets, a data folder for runs and the run database, and
a config folder for the app's settings.

Each can be moved with an environment variable (handy for tests and shared machines); otherwise the platform's
usual per-user folders are used.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

APP = "workbench"


def _platform_base(kind: str) -> Path:
    home = Path.home()
    if sys.platform == "win32":
        return Path(os.environ.get("LOCALAPPDATA", home / "AppData" / "Local"))
    if sys.platform == "darwin":
        return home / "Library" / {"cache": "Caches", "data": "Application Support", "config": "Preferences"}[kind]
    variable, default = {"cache": ("XDG_CACHE_HOME", ".cache"), "data": ("XDG_DATA_HOME", ".local/share"),
                         "config": ("XDG_CONFIG_HOME", ".config")}[kind]
    return Path(os.environ.get(variable) or home / default)


def cache_dir() -> Path:
    """Downloaded datasets (safe to delete)."""
    return Path(os.environ.get("WORKBENCH_CACHE_DIR") or _platform_base("cache") / APP)


def data_dir() -> Path:
    """Run artefacts and the run database (kept)."""
    return Path(os.environ.get("WORKBENCH_DATA_DIR") or _platform_base("data") / APP)


def config_dir() -> Path:
    """Settings of the desktop app."""
    return Path(os.environ.get("WORKBENCH_CONFIG_DIR") or _platform_base("config") / APP)


def runs_dir() -> Path:
    return data_dir() / "runs"
