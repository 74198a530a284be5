"""Files written atomically: a temp file beside the target, renamed over it only when complete.

Readers therefore see the old file or the new one, never half of one — also after a crash mid-write.
"""

from __future__ import annotations

import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator


def temp_beside(target: Path, suffix: str = "") -> tuple[int, Path]:
    """An open descriptor and the path of a new hidden temp file in `target`'s folder (created if needed)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=suffix + ".tmp", dir=target.parent)
    return fd, Path(tmp)


# Read once, at import: reading the umask means setting it, process-wide, and files are written from several
# threads (reports on a pool thread) — one of them could create a file while it is briefly 0.
_UMASK = os.umask(0)
os.umask(_UMASK)


def commit(tmp: Path, target: Path) -> None:
    """Flush `tmp` to disk, give it the user's usual mode (mkstemp makes 0600) and rename it over `target`."""
    with open(tmp, "r+b") as fh:  # fsync needs a writable descriptor on Windows
        os.fsync(fh.fileno())
    os.chmod(tmp, 0o666 & ~_UMASK)
    os.replace(tmp, target)


@contextmanager
def atomic_path(target: str | Path, suffix: str = "") -> Iterator[Path]:
    """Yield a temp path next to `target`; on success it replaces `target` in one rename, on error it vanishes."""
    target = Path(target)
    fd, tmp = temp_beside(target, suffix)
    os.close(fd)
    try:
        yield tmp
        commit(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


def write_text_atomic(target: str | Path, text: str) -> None:
    with atomic_path(target) as tmp:
        tmp.write_text(text, encoding="utf-8")

