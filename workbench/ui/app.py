"""QApplication setup and the main window."""

from __future__ import annotations

import sys


def create_app(argv: list[str] | None = None):
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance() or QApplication(argv if argv is not None else sys.argv)
    app.setApplicationName("Workbench")
    app.setOrganizationName("Workbench")
    app.setApplicationDisplayName("Workbench")
    return app


def run_app() -> int:
    app = create_app()
    from .main_window import MainWindow

    window = MainWindow()
    window.resize(1400, 880)
    window.show()
    return app.exec()
