"""QApplication and the main window (a placeholder until the GUI issue lands)."""

from __future__ import annotations

import sys


def run_app() -> int:
    from PySide6.QtWidgets import QApplication, QLabel

    app = QApplication.instance() or QApplication(sys.argv)
    label = QLabel("Workbench — the desktop app is being built. Meanwhile: `workbench train --help`.")
    label.setWindowTitle("Workbench")
    label.resize(640, 120)
    label.show()
    return app.exec()
