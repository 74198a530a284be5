"""QApplication setup and the main window."""

from __future__ import annotations

import sys


def create_app(argv: list[str] | None = None):
    from PySide6.QtWidgets import QApplication

    from .. import appinfo

    app = QApplication.instance() or QApplication(argv if argv is not None else sys.argv)
    app.setApplicationName(appinfo.DISPLAY_NAME)
    app.setOrganizationName(appinfo.DISPLAY_NAME)
    app.setApplicationVersion(appinfo.version())
    app.setDesktopFileName(appinfo.APP_ID)  # Wayland/X11 match the window to the installed .desktop entry
    return app


def run_app() -> int:
    app = create_app()
    from .main_window import MainWindow

    window = MainWindow()
    window.resize(1400, 880)
    window.show()
    return app.exec()
