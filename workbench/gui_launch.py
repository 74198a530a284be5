"""Start the desktop app — or explain in one line why it cannot start here, instead of letting Qt abort."""

from __future__ import annotations

import ctypes
import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .core.run.remote.ssh import Remote

HEADLESS_HINT = ("use the headless commands (`workbench train`, `workbench evaluate`, `workbench --help`) or run "
                 "the app on a virtual screen: xvfb-run -a workbench")


def display_problem() -> str | None:
    """Why Qt cannot open a window here, or None. Offscreen/minimal platforms need no display."""
    platform = os.environ.get("QT_QPA_PLATFORM", "")
    if platform.startswith(("offscreen", "minimal", "vnc", "eglfs", "linuxfb")):
        return None
    if sys.platform.startswith("linux") and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        return "no display found (neither DISPLAY nor WAYLAND_DISPLAY is set)"
    if sys.platform.startswith("linux") and os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY") \
            and not x_server_reachable():
        return f"cannot connect to the X display {os.environ['DISPLAY']!r} (is the X server running?)"
    return None


def x_server_reachable() -> bool:
    """Connect to $DISPLAY with libxcb, as Qt will; Qt itself aborts the process when this fails."""
    try:
        xcb = ctypes.CDLL("libxcb.so.1")
    except OSError:
        return True  # cannot tell without libxcb; xcb_problem() names the missing library
    xcb.xcb_connect.restype = ctypes.c_void_p
    xcb.xcb_connect.argtypes = [ctypes.c_char_p, ctypes.c_void_p]
    xcb.xcb_connection_has_error.argtypes = [ctypes.c_void_p]
    xcb.xcb_disconnect.argtypes = [ctypes.c_void_p]
    connection = xcb.xcb_connect(None, None)
    try:
        return connection is not None and xcb.xcb_connection_has_error(connection) == 0
    finally:
        if connection:
            xcb.xcb_disconnect(connection)


# Libraries Qt's xcb plugin needs beyond a bare X client, and the Debian/Ubuntu package that provides each.
XCB_PACKAGES = {
    "libxcb-cursor.so.0": "libxcb-cursor0", "libxkbcommon-x11.so.0": "libxkbcommon-x11-0",
    "libxcb-icccm.so.4": "libxcb-icccm4", "libxcb-keysyms.so.1": "libxcb-keysyms1",
    "libxcb-image.so.0": "libxcb-image0", "libxcb-render-util.so.0": "libxcb-render-util0",
    "libxcb-xinerama.so.0": "libxcb-xinerama0", "libxcb-shape.so.0": "libxcb-shape0", "libEGL.so.1": "libegl1",
    "libGL.so.1": "libgl1", "libfontconfig.so.1": "libfontconfig1", "libdbus-1.so.3": "libdbus-1-3",
    "libxkbcommon.so.0": "libxkbcommon0", "libX11-xcb.so.1": "libx11-xcb1", "libxcb-randr.so.0": "libxcb-randr0",
}


def xcb_problem(plugin: Path | None = None) -> str | None:
    """Load Qt's xcb plugin the way Qt will; if a system library is missing, name it and its package."""
    if not sys.platform.startswith("linux") or os.environ.get("QT_QPA_PLATFORM", "xcb") != "xcb":
        return None
    if "QT_QPA_PLATFORM" not in os.environ and wayland_session():
        return None  # Qt tries its wayland plugin first there, and xcb only if that fails
    if plugin is None:
        try:
            import PySide6
        except ImportError:
            return None
        plugin = Path(PySide6.__file__).parent / "Qt" / "plugins" / "platforms" / "libqxcb.so"
    if not plugin.is_file():
        return None
    try:
        ctypes.CDLL(str(plugin))
    except OSError as exc:
        return missing_library_message(str(exc))
    return None


def wayland_session() -> bool:
    """Qt 6's own rule for trying wayland before xcb when QT_QPA_PLATFORM is unset."""
    return bool(os.environ.get("WAYLAND_DISPLAY")) or os.environ.get("XDG_SESSION_TYPE") == "wayland"


def missing_library_message(error: str) -> str:
    found = re.search(r"(lib[\w.+-]+\.so(?:\.\d+)*)", error)
    library = found.group(1) if found else error
    package = XCB_PACKAGES.get(library)
    hint = f"install it with: sudo apt install {package}" if package else "install the package that provides it"
    return f"Qt's xcb platform plugin cannot load because {library} is missing ({hint})"


def launch_gui(remote: Remote | None = None) -> int:
    """The window (connecting to `remote` once built: `workbench --host`), or one line saying why it cannot open."""
    problem = display_problem() or xcb_problem()
    if problem:
        print(f"workbench: cannot open the window: {problem}; {HEADLESS_HINT}", file=sys.stderr)
        return 2
    try:
        from .ui.app import run_app
    except ImportError as exc:
        print(f"workbench: cannot start the app: {exc}; {HEADLESS_HINT}", file=sys.stderr)
        return 2
    return run_app(remote)
