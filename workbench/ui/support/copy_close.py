"""The Copy and Close buttons of a dialog that shows a table (the runs' Diff, Compare numerics): Copy also on
Ctrl+C anywhere in the dialog, both named for screen readers."""

from __future__ import annotations

from typing import Callable

from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import QDialog, QPushButton


def copy_close_buttons(dialog: QDialog, name: str, what: str, tip: str,
                       copy: Callable[[], None]) -> tuple[QPushButton, QPushButton]:
    """(Copy, Close) for `dialog`; objectNames "<name>CopyButton" / "<name>CloseButton"; `what`: what Copy copies
    and Close closes, in words ("the diff")."""
    copy_button = QPushButton("Copy")
    copy_button.setObjectName(f"{name}CopyButton")
    copy_button.setAccessibleName(f"Copy {what}")
    copy_button.setToolTip(f"{tip} (Ctrl+C)")
    copy_button.clicked.connect(copy)
    QShortcut(QKeySequence.Copy, dialog, copy)
    close_button = QPushButton("Close")
    close_button.setObjectName(f"{name}CloseButton")
    close_button.setAccessibleName(f"Close {what}")
    close_button.clicked.connect(dialog.close)
    return copy_button, close_button
