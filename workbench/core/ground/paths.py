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


def _platform_dir(kind: str) -> Path:
    """The platform's usual per-user folder of `kind` ("cache", "data", "config") for this app."""
    home = Path.home()
    if sys.platform == "win32":
        # Windows has one local app-data folder for all three: the cache and the settings get subfolders of their
        # own (so the cache can be deleted alone); runs stay at the top, where earlier versions kept them.
        app = Path(os.environ.get("LOCALAPPDATA") or home / "AppData" / "Local") / APP
        return app if kind == "data" else app / kind.capitalize()
    if sys.platform == "darwin":
        folder = {"cache": "Caches", "data": "Application Support", "config": "Preferences"}[kind]
        return home / "Library" / folder / APP
    variable, default = {"cache": ("XDG_CACHE_HOME", ".cache"), "data": ("XDG_DATA_HOME", ".local/share"),
                         "config": ("XDG_CONFIG_HOME", ".config")}[kind]
    return Path(os.environ.get(variable) or home / default) / APP


def cache_dir() -> Path:
    """Downloaded datasets (safe to delete)."""
    return Path(os.environ.get("WORKBENCH_CACHE_DIR") or _platform_dir("cache"))


def data_dir() -> Path:
    """Run artefacts and the run database (kept)."""
    return Path(os.environ.get("WORKBENCH_DATA_DIR") or _platform_dir("data"))


def config_dir() -> Path:
    """Settings of the desktop app."""
    return Path(os.environ.get("WORKBENCH_CONFIG_DIR") or _platform_dir("config"))


def runs_dir() -> Path:
    return data_dir() / "runs"
