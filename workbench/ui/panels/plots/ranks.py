"""The Ranks tab beside Memory and System: a run of several processes, rank by rank (RankTimes, about once a
second): where each rank runs, its forward time and how it compares with the other ranks', and a badge naming the
straggler once the rule has named one (its Alert: ground/straggler.py), and when the run stops stepping
(ground/hang.py), a *Collect stacks* button. A run of one process has no such tab."""

from __future__ import annotations

import statistics

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget

from ....core.ground.alerts import Alert
from ....core.ground.events import RankTimes

COLUMNS = ("rank", "host", "forward", "× the others", "between steps", "memory")


class RankTable(QWidget):
    collectRequested = Signal()  # Collect stacks, pressed
    hangShown = Signal()  # the run stopped stepping: the tab is to be seen

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("rankTable")
        self.hang = QLabel("")
        self.hang.setObjectName("hangNotice")
        self.hang.setWordWrap(True)
        self.hang.setStyleSheet("color: #b00020; font-weight: bold")
        self.collect = QPushButton("Collect stacks")
        self.collect.setObjectName("collectStacksButton")
        self.collect.setToolTip("Every rank's Python stack and last collectives, side by side, with the first rank "
                                "that differs (Kernel → Collect stacks)")
        self.collect.clicked.connect(self.collectRequested)
        hang_row = QHBoxLayout()
        hang_row.addWidget(self.hang, 1)
        hang_row.addWidget(self.collect)
        self.badge = QLabel("")
        self.badge.setObjectName("stragglerBadge")
        self.badge.setWordWrap(True)
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.setAccessibleName("Ranks of the run")
        self.table.verticalHeader().hide()
        self.table.setEditTriggers(QTableWidget.NoEditTriggers)
        self.table.horizontalHeaderItem(2).setToolTip("the mean time of each rank's forward since the last update, "
                                                      "on its own clock, before the step's first collective")
        self.table.horizontalHeaderItem(3).setToolTip("its forward over the median of the other ranks': the one "
                                                      "the others wait for is well above 1")
        self.table.horizontalHeaderItem(4).setToolTip("the mean time between its steps: loading data, and waiting "
                                                      "at the read-backs for the slowest rank")
        self.table.horizontalHeaderItem(5).setToolTip("its memory: the CUDA allocator's, or the process's RSS on "
                                                      "the CPU")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addLayout(hang_row)
        layout.addWidget(self.badge)
        layout.addWidget(self.table, 1)
        self.straggler: int | None = None
        self.clear()

    def clear(self) -> None:
        self.table.setRowCount(0)
        self.straggler = None
        self.badge.setText("No straggler: each rank's forward is within the rule's bounds of the others'.")
        self.badge.setStyleSheet("")
        self.stepping()

    def hung(self, seconds: float) -> None:
        """No step for `seconds`: say so, and offer the ranks' stacks."""
        self.hang.setText(f"No step for {seconds:.0f} s: a rank may be stuck, and the others waiting for it.")
        self.hang.show()
        self.collect.show()
        self.hangShown.emit()

    def stepping(self) -> None:
        """Steps come (again), or the run ended: nothing to say about a hang."""
        self.hang.hide()
        self.collect.hide()

    def add(self, times: RankTimes) -> None:
        """Each rank's latest figures."""
        self.table.setRowCount(len(times.forward_seconds))
        for rank, (seconds, host) in enumerate(zip(times.forward_seconds, times.hosts)):
            others = [s for r, s in enumerate(times.forward_seconds) if r != rank]
            ratio = seconds / statistics.median(others) if others and statistics.median(others) > 0 else float("nan")
            between = times.between_seconds[rank] if rank < len(times.between_seconds) else None
            memory = times.memory_mib[rank] if rank < len(times.memory_mib) else None
            cells = (str(rank), host, f"{seconds * 1000:.1f} ms", f"{ratio:.1f}×" if ratio == ratio else "—",
                     f"{between * 1000:.1f} ms" if between is not None else "—",
                     f"{memory:,.0f} MiB" if memory is not None else "—")
            for column, text in enumerate(cells):
                item = QTableWidgetItem(text + (" ⚠" if column == 0 and rank == self.straggler else ""))
                self.table.setItem(rank, column, item)
        self.table.resizeColumnsToContents()

    def named(self, alert: Alert) -> None:
        """The straggler rule named a rank: the badge says which, where and since when."""
        self.straggler = int(alert.title.split()[1])
        self.badge.setText(f"⚠ Straggler since step {alert.step:,}: {alert.title.split(': ', 1)[0]}. "
                           f"{alert.advice[0].upper()}{alert.advice[1:]}.")
        self.badge.setStyleSheet("color: #b35900; font-weight: bold")
