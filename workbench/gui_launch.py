"""Start the desktop app — or explain in one line why it cannot start here, instead of letting Qt abort."""

from __future__ import annotations

import os
import sys

HEADLESS_HINT = ("use the headless commands (`workbench train`, `workbench evaluate`, `workbench --help`) or run "
                 "the app on a virtual screen: xvfb-run -a workbench")


def display_problem() -> str | None:
    """Why Qt cannot open a window here, or None. Offscreen/minimal platforms need no display."""
    platform = os.environ.get("QT_QPA_PLATFORM", "")
    if platform.startswith(("offscreen", "minimal", "vnc", "eglfs", "linuxfb")):
        return None
    if sys.platform.startswith("linux") and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        return "no display found (neither DISPLAY nor WAYLAND_DISPLAY is set)"
    return None


def launch_gui() -> int:
    problem = display_problem()
    if problem:
        print(f"workbench: cannot open the window: {problem}; {HEADLESS_HINT}", file=sys.stderr)
        return 2
    try:
        from .ui.app import run_app
    except ImportError as exc:
        print(f"workbench: cannot start the app: {exc}; {HEADLESS_HINT}", file=sys.stderr)
        return 2
    return run_app()
