"""The user's consent to import model files: remembered per file (its absolute path and the sha256 of its content).

A checkpoint of a user-defined network names a Python file (`path/to/file.py:ClassName`); opening it imports and
runs that file. The window asks once per file and remembers the answer here; a file whose content has changed since
is no longer trusted (it is asked about again). Consent is never implied by a run history row. Torch-free.

The store is a small JSON file in the config folder, written atomically; a damaged or unreadable one reads as empty
(nothing trusted), never as an error.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from . import paths
from .atomic import write_text_atomic
from .config import split_model_spec

STORE_NAME = "trusted-models.json"
VERSION = 1


def model_file(spec: str) -> Path | None:
    """The absolute file a `path/to/file.py:ClassName` spec names; None for the built-in network, a malformed spec
    or a relative path (resolved against nothing: which folder it meant is unknown)."""
    parts = split_model_spec(spec)
    if parts is None:
        return None
    path = Path(parts[0]).expanduser()
    return path if path.is_absolute() else None


def file_digest(path: Path) -> str | None:
    """sha256 of the file's current content, or None when it cannot be read."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


class ModelConsent:
    """Which model files the user trusts, by absolute path and content hash."""

    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path is not None else paths.config_dir() / STORE_NAME

    # -- queries ------------------------------------------------------------------------------------------------
    def is_trusted(self, spec: str) -> bool:
        """True only when the spec's file is remembered and its content is still what it was when trusted."""
        file = model_file(spec)
        if file is None:
            return False
        remembered = self._read().get(_key(file))
        return remembered is not None and remembered == file_digest(file)

    def trusted(self) -> list[str]:
        """The remembered files (absolute paths), sorted."""
        return sorted(self._read())

    # -- changes ------------------------------------------------------------------------------------------------
    def trust(self, spec: str) -> bool:
        """Remember the spec's file with its current content hash. False (nothing remembered) for a spec that names
        no absolute, readable file. A store that cannot be written raises OSError."""
        file = model_file(spec)
        digest = file_digest(file) if file is not None else None
        if digest is None:
            return False
        files = self._read()
        files[_key(file)] = digest
        self._write(files)
        return True

    def clear(self) -> None:
        """Forget every file."""
        if self.path.exists():
            self._write({})

    # -- the file -------------------------------------------------------------------------------------------------
    def _read(self) -> dict[str, str]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):  # missing, unreadable or damaged: nothing is trusted
            return {}
        files = data.get("files") if isinstance(data, dict) else None
        if not isinstance(files, dict):
            return {}
        return {k: v for k, v in files.items() if isinstance(k, str) and isinstance(v, str)}

    def _write(self, files: dict[str, str]) -> None:
        write_text_atomic(self.path, json.dumps({"version": VERSION, "files": files}, indent=1, sort_keys=True))


def _key(file: Path) -> str:
    """One entry per file however it was named (symlinks and `..` resolved)."""
    try:
        return str(file.resolve())
    except OSError:
        return str(file)
