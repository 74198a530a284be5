"""Who the app is: name, version, summary, icon. One source (the installed package's metadata, i.e. pyproject.toml)
for `workbench --version`, the window title and icon, the About dialog and the packaging files (checked by a test).
A source tree run without installing has no metadata: the version and summary are then read from pyproject.toml
beside it, or are "0+unknown" — never a crash of every command.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import metadata
from pathlib import Path

from .resources import resource_path

APP_ID = "io.github.workbench.Workbench"  # reverse-DNS id: desktop entry, AppStream metainfo, icon name
DISPLAY_NAME = "Workbench"


@lru_cache(maxsize=1)
def _meta() -> dict[str, str]:
    try:
        found = metadata.metadata("workbench")
        return {"Version": found["Version"], "Summary": found["Summary"]}
    except metadata.PackageNotFoundError:
        return _from_source_tree()


def _from_source_tree() -> dict[str, str]:
    import tomllib

    pyproject = Path(__file__).resolve().parents[3] / "pyproject.toml"
    try:
        project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
        return {"Version": str(project["version"]), "Summary": str(project.get("description", ""))}
    except (OSError, KeyError, ValueError):
        return {"Version": "0+unknown", "Summary": ""}


def version() -> str:
    return _meta()["Version"]


def summary() -> str:
    return _meta()["Summary"]


def icon_path(size: int | None = None) -> Path:
    """The SVG icon, or the PNG of one of the rendered sizes (16 … 512)."""
    name = f"workbench-{size}.png" if size else "workbench.svg"
    return resource_path("icons", name)
