"""Who the app is: name, version, summary, icon. One source (the installed package's metadata, i.e. pyproject.toml)
for `workbench --version`, the window title and icon, the About dialog and the packaging files (checked by a test).
"""

from __future__ import annotations

from functools import lru_cache
from importlib import metadata, resources
from pathlib import Path

APP_ID = "io.github.workbench.Workbench"  # reverse-DNS id: desktop entry, AppStream metainfo, icon name
DISPLAY_NAME = "Workbench"


@lru_cache(maxsize=1)
def _meta():
    return metadata.metadata("workbench")


def version() -> str:
    return _meta()["Version"]


def summary() -> str:
    return _meta()["Summary"]


def icon_path(size: int | None = None) -> Path:
    """The SVG icon, or the PNG of one of the rendered sizes (16 … 512)."""
    name = f"workbench-{size}.png" if size else "workbench.svg"
    return Path(str(resources.files("workbench").joinpath("resources", "icons", name)))
