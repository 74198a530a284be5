"""Log dock: notices, warnings and errors of runs and of the app, each with a timestamp. Nothing is hidden.

A run's alerts are lines too, saying what to do and where (ground.alerts.alert_line, then '→ Setup: Learning
rate'): clicking one, or Enter on it, leads to the fix (`alertActivated`: the window raises the dock or the
setting it names)."""

from __future__ import annotations

from datetime import datetime

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QListWidget, QListWidgetItem

from ...core.ground.alerts import Alert, alert_line
from ...core.ground.config import setup_label
from ...core.ground.events import EpochEnd, Event, Notice, RunFailed, RunFinished, RunStarted
from ...core.ground.progress import epoch_line, failure_line
from ...core.ground.results_text import finished_lines
from .alert_text import alert_tip, fix_place

COLOURS = {"warning": "#c77700", "error": "#d0203a"}  # readable on light and dark; info keeps the palette's text
ALERT_ROLE = Qt.UserRole + 1  # an alert's line holds the Alert


class LogPanel(QListWidget):
    alertActivated = Signal(object)  # an alert's line was clicked or activated (Enter): the Alert

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("logPanel")
        self.setAccessibleName("Log")
        self.setWordWrap(True)
        self.setAlternatingRowColors(True)
        self.itemClicked.connect(self._activated)
        self.itemActivated.connect(self._activated)

    def add(self, level: str, message: str) -> QListWidgetItem:
        item = QListWidgetItem(f"{datetime.now():%H:%M:%S}  {message}")
        if level in COLOURS:
            item.setForeground(QColor(COLOURS[level]))
        item.setData(Qt.UserRole, level)  # lets tests and filters read the level
        self.addItem(item)
        self.scrollToBottom()
        return item

    def add_alert(self, alert: Alert) -> None:
        place = fix_place(alert.panel)
        item = self.add(alert.severity, alert_line(alert) + (f"  → {place}" if place else ""))
        item.setData(ALERT_ROLE, alert)
        item.setToolTip(alert_tip(alert))

    def _activated(self, item: QListWidgetItem) -> None:
        alert = item.data(ALERT_ROLE)
        if alert is not None:
            self.alertActivated.emit(alert)

    def add_events(self, batch: list[Event]) -> None:
        for event in batch:
            if isinstance(event, Notice):
                self.add(event.level, event.message + (f" — {event.hint}" if event.hint else ""))
            elif isinstance(event, RunStarted):
                cfg = event.config
                self.add("info", f"run started on {event.device_name}: {cfg.dataset} · {setup_label(cfg.to_dict())}"
                                 f" · {event.train_size:,} training / {event.val_size:,} validation images")
            elif isinstance(event, EpochEnd):
                self.add("info", epoch_line(event))
            elif isinstance(event, RunFinished):  # the words `workbench train` ends with
                for line in finished_lines(event):
                    self.add("info", line)
            elif isinstance(event, RunFailed):
                self.add("error", failure_line(event))
            elif isinstance(event, Alert):
                self.add_alert(event)
