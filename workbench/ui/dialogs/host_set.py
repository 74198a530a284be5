"""Kernel → Hosts of a run…: the machines of a run across several hosts, checked before anything starts (the
preflight: core/run/hosts/preflight.py). A row a host, a column a check, each cell green or red, with what it found
and what to do on hover and, for every red cell, under the matrix; the sets checked before are offered again, newest
first. The check runs in a task slot (a host that does not answer takes up to its bound) while the window stays
usable. A green set trains the Setup form's settings (Train on these hosts), or the command shown does from a
terminal (`workbench train --hosts …`)."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (QComboBox, QDialog, QDialogButtonBox, QFormLayout, QLabel, QLineEdit, QPushButton,
                               QSpinBox, QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget)

from ...core.ground.errors import WorkbenchError, with_hint
from ...core.run.hosts.host_set import parse_hosts
from ...core.run.hosts.preflight import CHECKS, TITLES, Preflight, preflight
from ...core.run.remote.ssh import Remote
from ..settings import open_settings, recent_host_sets, remember_host_set
from ..support.tasks import Tasks

CHECK_SLOT = "checking a set of hosts"
GREEN, RED = QColor("#d9f2d9"), QColor("#f8d7d7")


class HostSetDialog(QDialog):
    checked = Signal(object)  # the Preflight, once shown
    trainRequested = Signal(object, object, int)  # a green Preflight, its hosts (Remotes), processes a host
    queueRequested = Signal(object, int, int)  # the green set's hosts (Remotes), processes a host, rendezvous port

    def __init__(self, tasks: Tasks, parent: QWidget | None = None):
        super().__init__(parent)
        self.tasks = tasks
        self.setWindowTitle("Hosts of a run")
        self.setObjectName("hostSetDialog")
        self.setAttribute(Qt.WA_DeleteOnClose)
        self.hosts = QComboBox()
        self.hosts.setObjectName("hostSetHosts")
        self.hosts.setAccessibleName("Hosts")
        self.hosts.setEditable(True)
        self.hosts.setInsertPolicy(QComboBox.NoInsert)
        self.hosts.addItems(recent_host_sets(open_settings()))
        self.hosts.lineEdit().setPlaceholderText("gpu-a, gpu-b, … (the first holds the rendezvous)")
        self.hosts.setMinimumWidth(420)
        self.python = QLineEdit("python3")
        self.python.setAccessibleName("Remote Python")
        self.python.setToolTip("The command that runs the Python with Workbench installed on every host")
        self.processes = QSpinBox()
        self.processes.setRange(1, 64)
        self.processes.setAccessibleName("Processes a host")
        self.port = QSpinBox()
        self.port.setRange(1, 65535)
        self.port.setValue(29500)
        self.port.setAccessibleName("Rendezvous port")
        form = QFormLayout()
        form.addRow("&Hosts:", self.hosts)
        form.addRow("Remote &Python:", self.python)
        form.addRow("Processes a &host:", self.processes)
        form.addRow("Rendezvous p&ort:", self.port)
        self.check_button = QPushButton("&Check")
        self.check_button.setObjectName("hostSetCheck")
        self.check_button.clicked.connect(self.check)
        self.matrix = QTableWidget(0, len(CHECKS))
        self.matrix.setObjectName("preflightMatrix")
        self.matrix.setAccessibleName("Preflight: a row a host, a column a check")
        self.matrix.setHorizontalHeaderLabels([TITLES[check] for check in CHECKS])
        self.matrix.setEditTriggers(QTableWidget.NoEditTriggers)
        self.matrix.resizeColumnsToContents()  # each check's whole name before any result
        self.status = QLabel("Name the hosts, then Check: nothing starts until every cell is green.")
        self.status.setWordWrap(True)
        self.command = QLineEdit()
        self.command.setReadOnly(True)
        self.command.setAccessibleName("The command that trains on these hosts")
        self.command.hide()
        self.result: tuple[Preflight, list[Remote], int] | None = None  # the last check, when green
        self._remotes: list[Remote] = []  # the hosts being checked
        buttons = QDialogButtonBox(QDialogButtonBox.Close)
        self.train_button = buttons.addButton("&Train on these hosts", QDialogButtonBox.AcceptRole)
        self.train_button.setObjectName("hostSetTrain")
        self.train_button.setToolTip("Train the Setup form's settings on these hosts, one torchrun each")
        self.train_button.setEnabled(False)
        self.train_button.clicked.connect(self._train)
        self.queue_button = buttons.addButton("&Queue on these hosts", QDialogButtonBox.ActionRole)
        self.queue_button.setObjectName("hostSetQueue")
        self.queue_button.setToolTip("Queue the Setup form's settings to train across these hosts: checked again "
                                     "when its turn comes (the Queue dock shows it)")
        self.queue_button.setEnabled(False)
        self.queue_button.clicked.connect(self._queue)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.check_button, 0, Qt.AlignLeft)
        layout.addWidget(self.matrix, 1)
        layout.addWidget(self.status)
        layout.addWidget(self.command)
        layout.addWidget(buttons)
        self.resize(900, 420)

    def check(self) -> None:
        """Preflight the hosts typed, off the GUI thread; a list that names no host is said at once."""
        text = self.hosts.currentText()
        try:
            specs = parse_hosts(text, "the Hosts field")
            remotes = [Remote.parse(spec.address, self.python.text().strip() or "python3") for spec in specs]
        except WorkbenchError as exc:
            self.status.setText(with_hint(exc))
            return
        slots, port = [self.processes.value()] * len(specs), self.port.value()
        self.check_button.setEnabled(False)
        self.train_button.setEnabled(False)
        self.queue_button.setEnabled(False)
        self.result = None
        self._remotes = remotes
        self.command.hide()
        self.status.setText(f"Checking {len(specs)} host(s): login, versions, devices, interface, rendezvous port, "
                            "clock…")
        self.tasks.submit(CHECK_SLOT, lambda: preflight(remotes, port, slots=slots), self._show, self._failed)
        remember_host_set(open_settings(), ", ".join(spec.address for spec in specs))

    def _show(self, result: Preflight) -> None:
        self.check_button.setEnabled(True)
        self.matrix.setRowCount(len(result.hosts))
        self.matrix.setVerticalHeaderLabels(list(result.hosts))
        for row, host in enumerate(result.hosts):
            for column, name in enumerate(CHECKS):
                cell = result.cell(host, name)
                item = QTableWidgetItem("✓" if cell.ok else "✗")
                item.setTextAlignment(Qt.AlignCenter)
                item.setBackground(GREEN if cell.ok else RED)
                item.setToolTip(cell.detail + (f"\nWhat to do: {cell.fix}" if cell.fix else ""))
                self.matrix.setItem(row, column, item)
        self.matrix.resizeColumnsToContents()
        if result.ok:
            self.status.setText(f"Every check passed: these {len(result.hosts)} hosts can train together, meeting at "
                                f"{result.rendezvous}. Train on them from a terminal:")
            self.command.setText(f"workbench train --hosts {','.join(result.hosts)} --nproc-per-node "
                                 f"{self.processes.value()} --rdzv-port {self.port.value()}")
            self.command.show()
            self.result = (result, self._remotes, self.processes.value())
            self.train_button.setEnabled(True)
            self.queue_button.setEnabled(True)
        else:
            self.status.setText(f"{len(result.red)} check(s) failed: nothing was started.\n" + "\n".join(
                f"✗ {cell.said}" + (f" — {cell.fix}" if cell.fix else "")
                for cell in result.red))
        self.checked.emit(result)

    def _train(self) -> None:
        if self.result is not None:
            self.trainRequested.emit(*self.result)

    def _queue(self) -> None:
        if self.result is not None:
            _checked, hosts, processes = self.result
            self.queueRequested.emit(hosts, processes, self.port.value())

    def _failed(self, error: BaseException) -> None:
        self.check_button.setEnabled(True)
        self.status.setText(f"Could not check the hosts: {with_hint(error)}")
