"""QApplication setup and the main window."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..core.run.remote.ssh import Remote


def create_app(argv: list[str] | None = None):
    from PySide6.QtWidgets import QApplication

    from ..core.ground import appinfo

    app = QApplication.instance() or QApplication(argv if argv is not None else sys.argv)
    app.setApplicationName(appinfo.DISPLAY_NAME)
    app.setOrganizationName(appinfo.DISPLAY_NAME)
    app.setApplicationVersion(appinfo.version())
    app.setDesktopFileName(appinfo.APP_ID)  # Wayland/X11 match the window to the installed .desktop entry
    from .support.focus_style import install
    install(app)  # the desktop's style, with a focus ring every Tab stop shows (and no stylesheet)
    return app


def run_app(remote: Remote | None = None) -> int:
    """The app's window, until it closes. `remote` (`workbench --host HOST [--remote-python P]`): the window opens
    connecting to that host (its kernels and runs move there once it answers; a failure is said in the Connect
    dialog, where the address can be corrected)."""
    app = create_app()
    interrupted = _close_on_interrupt()
    from ..core.run import forkserver
    from .main_window import MainWindow

    window = MainWindow(staged=True, remote=remote)  # paints at once, then builds; sized to the screen, then as left
    window.show()
    interrupted.window = window
    if interrupted.requested:  # Ctrl+C while the window was being built
        window.close()
        return 0
    try:
        return app.exec()
    finally:
        forkserver.close_all()  # its fork server ends with the window, even mid-import


class _Interrupt:
    """Ctrl+C / SIGTERM close the window the normal way (a running run is stopped and kept) instead of raising
    KeyboardInterrupt inside whatever slot or constructor happens to run."""

    def __init__(self):
        self.window = None
        self.requested = False

    def __call__(self, *_args) -> None:
        self.requested = True
        if self.window is not None:
            self.window.close()


def _close_on_interrupt() -> _Interrupt:
    """Install the handler before the window exists. Python only sees a signal when it runs bytecode, so a light
    timer gives it the chance while Qt waits for events."""
    import signal

    from PySide6.QtCore import QCoreApplication, QTimer

    handler = _Interrupt()
    signal.signal(signal.SIGINT, handler)
    signal.signal(signal.SIGTERM, handler)
    timer = QTimer(QCoreApplication.instance())
    timer.timeout.connect(lambda: None)
    timer.start(200)
    return handler
