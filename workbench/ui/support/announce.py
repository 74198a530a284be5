"""Telling a screen reader what happened without moving the focus (Qt's accessibility announcements)."""

from __future__ import annotations

from PySide6.QtGui import QAccessible, QAccessibleAnnouncementEvent
from PySide6.QtWidgets import QWidget


def announce(widget: QWidget, text: str, assertive: bool = False) -> None:
    """Say `text` to a screen reader without moving the focus (Qt's accessibility announcements): a run's start,
    end and failure are heard, not only seen. `assertive`: interrupt what is being read (a failure)."""
    event = QAccessibleAnnouncementEvent(widget, text)
    politeness = QAccessible.AnnouncementPoliteness
    event.setPoliteness(politeness.Assertive if assertive else politeness.Polite)
    QAccessible.updateAccessibility(event)
