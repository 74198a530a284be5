"""The ✕ that dismisses a message strip (the window's banner, the Runs dock's Undo line): one look, one size, a
name a screen reader says and a tooltip that says what dismissing keeps."""

from __future__ import annotations

from typing import Callable

from PySide6.QtWidgets import QPushButton


def dismiss_button(name: str, spoken: str, tip: str, dismiss: Callable[[], object]) -> QPushButton:
    button = QPushButton("✕")
    button.setObjectName(name)
    button.setAccessibleName(spoken)
    button.setToolTip(tip)
    button.setFlat(True)
    button.setFixedWidth(28)
    button.clicked.connect(dismiss)
    return button
