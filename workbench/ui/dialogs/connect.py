"""Kernel → Connect to…: which host the window's kernels and runs move to, and the first contact with it.

The first contact (`Remote.hello`: ssh, log in, start the remote Python, compare versions) takes up to ~30 s on a
bad network, so it runs in a task slot, never on the GUI thread; the dialog says it is connecting meanwhile. A
failure is said in the dialog, in the words the core found for it (which step failed, what happened, what to do),
and the fields stay editable for another try. An address that cannot be one is said at once, without ssh.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (QComboBox, QDialog, QDialogButtonBox, QFormLayout, QLabel, QLineEdit, QProgressBar,
                               QVBoxLayout, QWidget)

from ...core.run.remote.wire import Hello
from ...core.run.remote.ssh import Remote, RemoteError
from ..support.announce import announce
from ..settings import open_settings, recent_hosts, remember_host
from ..support.tasks import Tasks

CONNECT_SLOT = "connecting to a host"
DEFAULT_PYTHON = "python3"


def failure_text(error: BaseException) -> str:
    """A failed connection as the dialog says it: the step that failed, the core's message and what to do, as the
    core wrote them."""
    if not isinstance(error, RemoteError):  # a bug rather than the network: still words, never a traceback
        return f"Could not connect: {type(error).__name__}: {error}"
    return f"Could not connect ({error.step} failed):\n{error}" + (f"\nWhat to do: {error.hint}" if error.hint else "")


class ConnectDialog(QDialog):
    """Host and remote Python, Connect and Cancel; `connected(remote, hello)` once the host has answered."""

    connected = Signal(object, object)  # the Remote, its Hello

    def __init__(self, tasks: Tasks, parent: QWidget | None = None):
        super().__init__(parent)
        self.tasks = tasks
        self.setWindowTitle("Connect to a host")
        self.setObjectName("connectDialog")
        self.setAttribute(Qt.WA_DeleteOnClose)
        self.recent = dict(recent_hosts(open_settings()))  # host → the Python that reached it; ordered, newest first
        self.host = QComboBox()
        self.host.setObjectName("connectHost")
        self.host.setAccessibleName("Host")
        self.host.setEditable(True)
        self.host.setInsertPolicy(QComboBox.NoInsert)  # a host joins the list once it has answered, not when typed
        self.host.addItems(list(self.recent))
        self.host.lineEdit().setPlaceholderText("user@host:port, or a name from ~/.ssh/config")
        self.host.setMinimumWidth(320)
        self.python = QLineEdit(next(iter(self.recent.values()), DEFAULT_PYTHON))
        self.python.setObjectName("connectPython")
        self.python.setAccessibleName("Remote Python")
        self.python.setToolTip("The command that runs the Python with Workbench installed on the host")
        self.host.currentTextChanged.connect(self._host_chosen)
        form = QFormLayout()
        form.addRow("&Host:", self.host)
        form.addRow("Remote &Python:", self.python)
        self.busy = QProgressBar()
        self.busy.setObjectName("connectBusy")
        self.busy.setRange(0, 0)  # no measure of how far: it moves while ssh works
        self.busy.setTextVisible(False)
        self.busy.setAccessibleName("Connecting")
        self.status = QLabel()
        self.status.setObjectName("connectStatus")
        self.status.setTextFormat(Qt.PlainText)  # quotes what the user typed and what ssh said
        self.status.setWordWrap(True)
        self.status.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.buttons = QDialogButtonBox(QDialogButtonBox.Cancel)
        # Enter connects (the box makes its first accept button the default when shown), Esc cancels
        self.connect_button = self.buttons.addButton("&Connect", QDialogButtonBox.AcceptRole)
        self.connect_button.setObjectName("connectButton")
        self.buttons.accepted.connect(self.start)
        self.buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.busy)
        layout.addWidget(self.status)
        layout.addWidget(self.buttons)
        self._show("", connecting=False)
        self.resize(520, self.sizeHint().height())

    def set_remote(self, remote: Remote) -> None:
        """Fill the fields with `remote` (the window opened with --host)."""
        self.host.setEditText(str(remote))
        self.python.setText(remote.python)

    def _host_chosen(self, host: str) -> None:
        """A host connected to before brings back the Python that reached it."""
        if host.strip() in self.recent:
            self.python.setText(self.recent[host.strip()])

    def start(self) -> None:
        """Connect: an address that is not one is said at once; else the first contact, off the GUI thread."""
        try:
            remote = Remote.parse(self.host.currentText(), self.python.text())
        except RemoteError as exc:
            self._failed(exc)
            return
        self._show(f"Connecting to {remote}…", connecting=True)
        self.tasks.submit(CONNECT_SLOT, remote.hello, lambda hello: self._answered(remote, hello), self._failed)

    def _answered(self, remote: Remote, hello: Hello) -> None:
        remember_host(open_settings(), str(remote), remote.python)
        self._show("", connecting=False)
        self.accept()
        self.connected.emit(remote, hello)

    def _failed(self, error: BaseException) -> None:
        self._show(failure_text(error), connecting=False, failed=True)
        announce(self.status, self.status.text(), assertive=True)  # heard, though the focus stays on the host
        self.host.setFocus()

    def _show(self, text: str, *, connecting: bool, failed: bool = False) -> None:
        self.status.setText(text)
        self.status.setStyleSheet("color: #b00020;" if failed else "")
        self.status.setVisible(bool(text))
        self.busy.setVisible(connecting)
        for widget in (self.host, self.python, self.connect_button):
            widget.setEnabled(not connecting)
        self._fit()

    def _fit(self) -> None:
        """Taller when a failure's lines need it: a shown dialog keeps its size, and wrapped text was cut off."""
        layout = self.layout()
        layout.activate()
        self.resize(self.width(), max(self.height(), layout.totalHeightForWidth(self.width())))

    def reject(self) -> None:
        """Cancel (or Esc), also while connecting: the first contact's answer, when it comes, is dropped."""
        self.tasks.drop(CONNECT_SLOT)
        super().reject()
