"""Whether a process is alive, asked by its pid: the history asks it of the run that holds a row "running", a host
of the window that holds a spare kernel there. Torch-free."""

from __future__ import annotations

import os


def process_alive(pid: int) -> bool:
    """Whether a process with this pid exists (it may belong to another user: it still exists)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by someone else
    except OSError:
        return False
    return True
