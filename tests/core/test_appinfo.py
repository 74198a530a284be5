"""One source of truth for the app's identity: pyproject.toml → package metadata → everything that shows it."""

from __future__ import annotations

import configparser
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import workbench
from workbench.core.ground import appinfo
from workbench.core.ground.resources import resource_path

REPO = Path(__file__).resolve().parents[2]
PACKAGING = REPO / "packaging"


def _pyproject() -> dict:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    return tomllib.loads((REPO / "pyproject.toml").read_text())["project"]


def test_version_and_summary_come_from_pyproject():
    project = _pyproject()
    assert appinfo.version() == project["version"]
    assert appinfo.summary() == project["description"]


def test_desktop_entry_matches_the_app():
    entry = configparser.ConfigParser(interpolation=None)
    entry.optionxform = str
    entry.read(PACKAGING / f"{appinfo.APP_ID}.desktop")
    section = entry["Desktop Entry"]
    assert section["Name"] == appinfo.DISPLAY_NAME
    assert section["Icon"] == appinfo.APP_ID
    assert section["Comment"] == appinfo.summary()
    assert section["Exec"].split()[0] == "workbench" == next(iter(_pyproject()["scripts"]))


def test_appstream_metainfo_matches_the_app():
    root = ET.parse(PACKAGING / f"{appinfo.APP_ID}.metainfo.xml").getroot()
    assert root.findtext("id") == appinfo.APP_ID
    assert root.findtext("name") == appinfo.DISPLAY_NAME
    assert root.findtext("summary") == appinfo.summary()
    assert root.find("releases/release").get("version") == appinfo.version()
    assert root.find("launchable").text == f"{appinfo.APP_ID}.desktop"


def test_icons_exist_in_every_size():
    assert appinfo.icon_path().read_text().lstrip().startswith("<svg")
    for size in (16, 24, 32, 48, 64, 128, 256, 512):
        data = appinfo.icon_path(size).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n"
        width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
        assert (width, height) == (size, size)


def test_resources_come_from_the_top_level_folder():
    """In a checkout (the editable install), the package workbench.resources is the top-level resources/ folder."""
    assert appinfo.icon_path(256) == resource_path("icons", "workbench-256.png")
    if Path(workbench.__file__).resolve().parent == REPO / "workbench":
        assert resource_path() == REPO / "resources"
        assert appinfo.icon_path().parent == REPO / "resources" / "icons"


def test_a_source_tree_without_package_metadata_still_has_a_version(monkeypatch):
    """Run from a checkout that was never installed: the version comes from pyproject.toml, not a crash."""
    from importlib import metadata

    def not_installed(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "metadata", not_installed)
    appinfo._meta.cache_clear()
    try:
        assert appinfo.version() == _pyproject()["version"]
        assert appinfo.summary() == _pyproject()["description"]
    finally:
        appinfo._meta.cache_clear()
