"""What every command shares: exit codes, the one-line failure, quiet torch logs, files written atomically."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


EXIT_USAGE = 2  # bad input: config, data, files
EXIT_RUN_FAILED = 3  # the run itself failed (diverged, compile failure, out of memory)
EXIT_INTERRUPTED = 130
EXIT_PIPE_CLOSED = 141  # what a shell reports for a command ended by SIGPIPE (128 + 13), as `git log | head` gives


def quiet_torch_logs() -> None:
    """For the commands that load PyTorch (train, evaluate, predict, explain, bench): the kernel's own rule.
    `workbench runs`, `report` and `--help` never import torch. Loading it takes seconds: a terminal is told so
    meanwhile (a line wiped once it has loaded), so a command never sits silent."""
    told = sys.stderr.isatty()
    if told:
        print("loading PyTorch…", end="", file=sys.stderr, flush=True)
    from ..core.kernel.job_handlers import quiet_torch_logs as quiet

    if told:
        print("\r\033[K", end="", file=sys.stderr, flush=True)
    quiet()


def fail(message: str, hint: str = "", code: int = EXIT_USAGE) -> int:
    print(f"workbench: error: {message}" + (f" — {hint}" if hint else ""), file=sys.stderr)
    return code


def _check_writable(target: Path) -> None:
    """Create and remove the temp file the final atomic write will use: the same folder, the same permissions."""
    import os

    from ..core.ground.atomic import temp_beside

    if target.is_dir():
        raise _unwritable(target, "it is a folder")
    try:
        fd, tmp = temp_beside(target)
    except OSError as exc:
        raise _unwritable(target, exc.strerror or str(exc)) from None
    os.close(fd)
    tmp.unlink()


def _write_json(path: str | None, data) -> None:
    """--json, when given: the results as JSON, written atomically."""
    from ..core.ground.atomic import write_text_atomic

    if not path:
        return
    try:
        write_text_atomic(path, json.dumps(data, indent=2))
    except OSError as exc:
        raise _unwritable(Path(path), exc.strerror or str(exc)) from None
    print(f"wrote {path}")


def _unwritable(target: Path, why: str):
    from ..core.ground.errors import WorkbenchError

    return WorkbenchError(f"cannot write {target}: {why}", "choose a file in a folder you can write to with --json")


def _csv(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


# -- run history and reports ---------------------------------------------------------------------------------
def _store(args: argparse.Namespace):
    from ..core.history.runs import RunStore

    return RunStore(args.db)
