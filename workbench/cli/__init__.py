"""Command line: `workbench` opens the app; subcommands run the same Qt-free core headless.

Every failure a user can cause ends in one line on stderr and a non-zero exit code, never a traceback. The
parser is parser.py; the commands are grouped by what they work on: train.py (train, profile), search.py (the
finders and sweeps), models.py (evaluate, predict, export, explain), numerics.py (eager against compiled),
history.py (runs and reports), bench.py.
"""

from __future__ import annotations

import sys
from typing import Sequence

from ..core.run.forkserver import SERVER_FLAG
from ..core.run.process import CHILD_FLAG, TORCHRUN_FLAG
from .common import EXIT_INTERRUPTED, EXIT_PIPE_CLOSED, EXIT_RUN_FAILED, EXIT_USAGE, fail
from .options import config_from_args
from .parser import build_parser

__all__ = ["main", "build_parser", "config_from_args", "EXIT_USAGE", "EXIT_RUN_FAILED", "EXIT_INTERRUPTED"]


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == [CHILD_FLAG]:  # a frozen (PyInstaller) app has no `python -m`: it re-runs itself
        from ..core.kernel.main import kernel_main

        return kernel_main()
    if argv[:1] == [SERVER_FLAG]:  # the frozen app's fork server (see core/run/forkserver.py)
        from ..core.kernel.forkserver_main import server_main

        return server_main(argv[1:])
    if argv[:1] == [TORCHRUN_FLAG]:  # the frozen app's torchrun: loopback-only stores, its own temp folder
        from ..core.kernel.torchrun import torchrun_main

        torchrun_main(argv[1:])
        return 0
    args = build_parser().parse_args(argv)
    from ..core.ground.errors import WorkbenchError
    from ..core.run.protocol import NeedsConsent

    try:
        if args.command is None:  # `workbench`, or options only (`workbench --host HOST`): the window
            return _open_window(args)
        return int(args.handler(args) or 0)
    except NeedsConsent as exc:  # a job's words are the window's ("open it again…"); here it is a flag
        return fail(str(exc), "if you trust that file, pass --trust-model-code")
    except WorkbenchError as exc:
        return fail(str(exc), exc.hint)
    except KeyboardInterrupt:
        print("\nworkbench: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `workbench runs show 3 | head -1`: the reader has all it wanted
        return _reader_gone()
    except UnicodeError as exc:  # an argument in another encoding than UTF-8 reached text that must be UTF-8
        bad = exc.object[exc.start:exc.end] if isinstance(exc.object, str) else ""
        shown = "".join(f"0x{ord(c) - 0xDC00:02x}" if 0xDC80 <= ord(c) <= 0xDCFF else c for c in bad)
        return fail(f"text that is not UTF-8 ({shown or exc.reason}) in an argument cannot be written",
                    "give names and paths in UTF-8 (a terminal set to UTF-8)")


def _reader_gone() -> int:
    """The process that read our output (`head`) has gone: stop quietly, as a command killed by SIGPIPE does, and
    leave nothing for the interpreter to flush into the closed pipe at exit (that would print a traceback)."""
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return EXIT_PIPE_CLOSED


def _open_window(args) -> int:
    """The app's window; with --host, connecting to that host at once (an address that cannot be one is refused
    here, before the window opens)."""
    from ..gui_launch import launch_gui

    if args.host is None:
        return launch_gui()
    from ..core.run.remote.ssh import Remote

    return launch_gui(Remote.parse(args.host, args.remote_python))
