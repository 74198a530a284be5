"""A run's folder moved to the desktop's trash, and put back (Undo); and what a folder holds on disk.

Deleting a run must never be the end of its files: they go to the trash, where the file manager lists them and can
restore them, and the window's Undo puts them back while it is open. On Linux and the other freedesktop.org
desktops that is the home trash of the Trash specification ($XDG_DATA_HOME/Trash): the folder is renamed into
Trash/files/NAME and Trash/info/NAME.trashinfo says where it came from (Path=, URL-encoded) and when
(DeletionDate=, local time). A rename is instant; a folder on another device than the home trash would have to be
copied across, which the specification leaves to a trash on that device, so it goes to the Workbench trash instead:
the same layout in Workbench's data folder (a rename there when the runs live there, as they do by default). So does
everything on Windows and macOS, whose trashes are not of this kind.
"""

from __future__ import annotations

import errno
import os
import shutil
import sys
import urllib.parse
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from ..ground import paths
from ..ground.errors import WorkbenchError

INFO_SUFFIX = ".trashinfo"


class TrashError(WorkbenchError):
    kind = "io"


@dataclass(frozen=True)
class Trashed:
    """A folder in a trash: where it was, where it is now, its .trashinfo file and its size."""

    original: str
    trashed: str
    info: str  # its .trashinfo file
    bytes: int


def folder_bytes(folder: str | Path) -> int:
    """The bytes the files in `folder` hold, every level down; links are counted as links, never followed (a link
    to a dataset is not the run's). What cannot be read (vanished meanwhile, no permission) counts as nothing."""
    total, pending = 0, [os.fspath(folder)]
    while pending:
        try:
            with os.scandir(pending.pop()) as entries:
                for entry in entries:
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            pending.append(entry.path)
                        else:
                            total += entry.stat(follow_symlinks=False).st_size
                    except OSError:
                        continue
        except OSError:
            continue
    return total


def size_text(n: int) -> str:
    """'1.2 GB', '340 MB', '12 kB', '512 bytes': a size as people read it (powers of 1000, as file managers say)."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}" if n < 10 * scale else f"{n / scale:.0f} {unit}"
    return f"{n} bytes"


def home_trash() -> Path:
    """The freedesktop.org home trash: $XDG_DATA_HOME/Trash (an absolute $XDG_DATA_HOME only, as the XDG base
    directory specification says), else ~/.local/share/Trash."""
    data_home = os.environ.get("XDG_DATA_HOME", "")
    return (Path(data_home) if os.path.isabs(data_home) else Path.home() / ".local" / "share") / "Trash"


def workbench_trash() -> Path:
    """Where what cannot go to the desktop's trash goes, in the same layout."""
    return paths.data_dir() / "trash"


def trash_for(folder: Path) -> Path:
    """The trash `folder` goes to: the home trash when it is on the same device (a rename), else Workbench's."""
    if sys.platform in ("win32", "darwin"):
        return workbench_trash()
    home = home_trash()
    return home if _device(folder) == _device(home) else workbench_trash()


def _device(path: Path) -> int:
    """The device `path` is on, or would be on once created (that of its nearest existing folder)."""
    for candidate in (path, *path.parents):
        try:
            return os.stat(candidate).st_dev
        except OSError:
            continue
    return -1


def move_to_trash(folder: str | Path) -> Trashed:
    """Move `folder` (or a file) to the trash; a name the trash already holds gets a number ("run.2")."""
    original = Path(os.path.abspath(folder))
    if not os.path.lexists(original):
        raise TrashError(f"cannot move {original} to the trash: it is not there")
    size = folder_bytes(original) if original.is_dir() and not original.is_symlink() else original.lstat().st_size
    trash = trash_for(original)
    try:
        for place in (trash, trash / "files", trash / "info"):  # private, as the specification asks
            place.mkdir(mode=0o700, parents=True, exist_ok=True)
        info, target = _reserve(trash, original)
    except OSError as exc:
        raise TrashError(f"cannot move {original} to the trash {trash}: {exc.strerror or exc}",
                         "check that folder's permissions and free space") from None
    try:
        _move(original, target)
    except OSError as exc:
        info.unlink(missing_ok=True)
        raise TrashError(f"cannot move {original} to the trash {trash}: {exc.strerror or exc}",
                         "check the folder's permissions, or whether a program still has it open") from None
    return Trashed(original=str(original), trashed=str(target), info=str(info), bytes=size)


def _reserve(trash: Path, original: Path) -> tuple[Path, Path]:
    """Claim a name in `trash` by creating its .trashinfo exclusively (so two programs trashing at once never
    take the same one, as the specification requires), and write it. Returns (the info file, the target)."""
    text = (f"[Trash Info]\nPath={urllib.parse.quote(str(original))}\n"
            f"DeletionDate={datetime.now().strftime('%Y-%m-%dT%H:%M:%S')}\n")
    n = 1
    while True:
        name = original.name if n == 1 else f"{original.name}.{n}"
        target, info = trash / "files" / name, trash / "info" / (name + INFO_SUFFIX)
        n += 1
        if os.path.lexists(target):
            continue
        try:
            fd = os.open(info, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            continue
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        return info, target


def _move(source: Path, target: Path) -> None:
    """A rename on one device; across devices (the Workbench trash for a folder elsewhere, or back) a copy, then
    the original removed; a copy cut short is removed again."""
    try:
        os.rename(source, target)
        return
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
    try:
        shutil.move(os.fspath(source), os.fspath(target))
    except OSError:
        if os.path.lexists(source):  # the copy was cut short: the original is whole, the copy goes
            _remove(target)
        raise


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def restore(item: Trashed) -> None:
    """Put a trashed folder back where it was (Undo), and forget its .trashinfo."""
    original, trashed = Path(item.original), Path(item.trashed)
    if os.path.lexists(original):
        raise TrashError(f"cannot put {original} back from the trash: something else is there now",
                         f"move that aside, then move {trashed} back yourself")
    if not os.path.lexists(trashed):
        raise TrashError(f"cannot put {original} back: {trashed} is no longer in the trash",
                         "the trash was emptied, or the folder was restored already")
    try:
        original.parent.mkdir(parents=True, exist_ok=True)
        _move(trashed, original)
    except OSError as exc:
        raise TrashError(f"cannot put {original} back from the trash: {exc.strerror or exc}",
                         f"move {trashed} back yourself") from None
    Path(item.info).unlink(missing_ok=True)
