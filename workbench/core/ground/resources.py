"""The app's bundled resources (icons, the MNIST sample, sample digits, the example model), wherever they live.

The repository keeps them in the top-level `resources/` folder, installed as the package `workbench.resources`
(pyproject.toml maps it; the PyInstaller spec copies it to the same place). Everything reads them through
`importlib.resources`, so the same call works in an editable install, from a wheel and in the frozen app.
"""

from __future__ import annotations

import atexit
from contextlib import ExitStack
from importlib import resources
from pathlib import Path

PACKAGE = "workbench.resources"

_FILES = ExitStack()  # keeps any extracted resource alive for the life of the process
atexit.register(_FILES.close)


def resource_path(*parts: str) -> Path:
    """A real filesystem path to a packaged resource (or the resource folder itself, with no parts)."""
    ref = resources.files(PACKAGE).joinpath(*parts)
    return Path(_FILES.enter_context(resources.as_file(ref)))


def guide_index() -> Path | None:
    """The user guide's first page, shipped with the app (a wheel and the bundle build it in; a checkout after `make
    docs`); None where it was not built."""
    index = resource_path("guide", "index.html")
    return index if index.is_file() else None
