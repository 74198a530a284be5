"""Log dock: notices, warnings and errors of runs and of the app, each with a timestamp. Nothing is hidden."""

from __future__ import annotations

from datetime import datetime

from PySide6.QtGui import QColor
from PySide6.QtWidgets import QListWidget, QListWidgetItem

from ...core.ground.config import setup_label
from ...core.ground.events import EpochEnd, Event, Notice, RunFailed, RunFinished, RunStarted
from ...core.ground.progress import epoch_line, failure_line
from ...core.ground.results_text import finished_lines

COLOURS = {"warning": "#c77700", "error": "#d0203a"}  # readable on light and dark; info keeps the palette's text


class LogPanel(QListWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("logPanel")
        self.setAccessibleName("Log")
        self.setWordWrap(True)
        self.setAlternatingRowColors(True)

    def add(self, level: str, message: str) -> None:
        item = QListWidgetItem(f"{datetime.now():%H:%M:%S}  {message}")
        if level in COLOURS:
            item.setForeground(QColor(COLOURS[level]))
        item.setData(256, level)  # Qt.UserRole: lets tests and filters read the level
        self.addItem(item)
        self.scrollToBottom()

    def add_events(self, batch: list[Event]) -> None:
        for event in batch:
            if isinstance(event, Notice):
                self.add(event.level, event.message + (f" — {event.hint}" if event.hint else ""))
            elif isinstance(event, RunStarted):
                cfg = event.config
                self.add("info", f"run started on {event.device_name}: {cfg['dataset']} · {setup_label(cfg)}"
                                 f" · {event.train_size:,} training / {event.val_size:,} validation images")
            elif isinstance(event, EpochEnd):
                self.add("info", epoch_line(event))
            elif isinstance(event, RunFinished):  # the words `workbench train` ends with
                for line in finished_lines(event):
                    self.add("info", line)
            elif isinstance(event, RunFailed):
                self.add("error", failure_line(event))
