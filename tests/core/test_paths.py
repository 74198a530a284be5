"""Where Workbench keeps its files: cache, data and settings never share one folder."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from workbench.core.ground import paths


@pytest.fixture
def no_overrides(monkeypatch, tmp_path):
    for variable in ("WORKBENCH_CACHE_DIR", "WORKBENCH_DATA_DIR", "WORKBENCH_CONFIG_DIR",
                     "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setattr(Path, "home", lambda: tmp_path)
    return tmp_path


@pytest.mark.parametrize("platform", ["win32", "darwin", "linux"])
def test_cache_data_and_config_are_separate_folders(no_overrides, monkeypatch, platform):
    monkeypatch.setattr(sys, "platform", platform)
    monkeypatch.setenv("LOCALAPPDATA", str(no_overrides / "Local"))
    folders = {paths.cache_dir(), paths.data_dir(), paths.config_dir()}
    assert len(folders) == 3
    assert all(no_overrides in folder.parents and "workbench" in folder.parts for folder in folders)


def test_windows_keeps_runs_where_they_were(no_overrides, monkeypatch):
    monkeypatch.setattr(sys, "platform", "win32")
    monkeypatch.setenv("LOCALAPPDATA", str(no_overrides / "Local"))
    assert paths.data_dir() == no_overrides / "Local" / "workbench"
    assert paths.cache_dir() == no_overrides / "Local" / "workbench" / "Cache"
    assert paths.config_dir() == no_overrides / "Local" / "workbench" / "Config"


def test_environment_overrides_win(no_overrides, monkeypatch):
    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(no_overrides / "c"))
    assert paths.cache_dir() == no_overrides / "c"
