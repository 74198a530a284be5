"""Where the window's PyTorch runs: this computer, or another machine reached over SSH (Kernel → Connect to…).

Connected, the service kernel (Explain, Predict, Evaluate, the finders, exports) and every run move to the host:
the Setup form offers the host's devices, a run trains there under a supervisor of its own and streams its events
here (recorded in this computer's history with the host's name), and it trains on if the connection drops or the
window closes and leaves it running. The host's runs can be followed again (Runs on this host…, shown by itself
after connecting to a host that has some). Nothing moves while a run trains: a run stays where it started.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import Callable

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QMessageBox

from ...core.ground import paths
from ...core.ground.errors import with_hint
from ...core.ground.progress import CopyProgress
from ...core.run.remote.kernels import fetch, host_runs
from ...core.run.remote.wire import Hello, RunInfo
from ...core.run.remote.ssh import Remote
from ..actions import ActionSpec
from ..dialogs.connect import ConnectDialog
from ..dialogs.host_runs import HostRunsDialog
from ..dialogs.host_set import HostSetDialog
from .checkpoints import OPENING
from .parts import WindowParts
from .training import Training

HOST_RUNS_SLOT = "listing a host's runs"
COPY_SLOT = "copying a file from a host"


class Hosts(QObject):
    queueAcrossRequested = Signal(object, int, int)  # Hosts of a run → Queue on these hosts: Remotes, processes, port

    def __init__(self, parts: WindowParts, training: Training):
        super().__init__(parts.window)
        self.kernel, self.runner, self.training, self.tasks = parts.kernel, parts.runner, training, parts.tasks
        self.state, self.feedback, self.predict = parts.state, parts.feedback, parts.panels.predict
        self.setup = parts.panels.setup
        self.window, self.moved = parts.window, parts.kernel_moved
        self.runs_dir = parts.runs_dir or paths.runs_dir()  # where a file of a run on a host is copied to
        self.remote: Remote | None = None
        self.hello: Hello | None = None
        self.connect_dialog: ConnectDialog | None = None  # the latest, for tests and scripts
        self.runs_dialog: HostRunsDialog | None = None
        self.host_set_dialog: HostSetDialog | None = None
        parts.panels.profile.locate = self.local_copy  # a profile's trace file, where a run on a host wrote it

    def actions(self) -> tuple[ActionSpec, ...]:
        return (ActionSpec("connect", "Connect to…", lambda: self.open_connect(), "Kernel", 10, "Ctrl+Shift+K",
                           name="connectAction"),
                ActionSpec("host_runs", "Runs on this host…", lambda: self.list_runs(), "Kernel", 20,
                           enabled=self.connected, name="hostRunsAction"),
                ActionSpec("this_computer", "This computer", self.go_local, "Kernel", 30, enabled=self.connected,
                           name="thisComputerAction"),
                ActionSpec("host_set", "Hosts of a run…", lambda: self.open_host_set(), "Kernel", 40,
                           name="hostSetAction"))

    def open_host_set(self) -> HostSetDialog:
        """Kernel → Hosts of a run…: check a set of hosts for a run across them (the preflight matrix)."""
        self.host_set_dialog = dialog = HostSetDialog(self.tasks, self.window)
        dialog.trainRequested.connect(lambda checked, hosts, slots: self.training.train_across(checked, hosts, slots)
                                      and dialog.accept())

        def queue_across(hosts: list[Remote], slots: int, port: int) -> None:
            self.queueAcrossRequested.emit(hosts, slots, port)
            dialog.accept()

        dialog.queueRequested.connect(queue_across)
        dialog.open()
        return dialog

    def connected(self) -> bool:
        return self.remote is not None

    def host_text(self) -> str:
        """The host the kernels run on, as the user named it and as it names itself ("" for this computer)."""
        return f"{self.remote} ({self.hello.hostname})" if self.remote is not None else ""

    # -- moving -------------------------------------------------------------------------------------------------
    def open_connect(self, remote: Remote | None = None) -> ConnectDialog | None:
        """Kernel → Connect to…: the dialog (with `remote` filled in and connecting at once: `workbench --host`)."""
        if not self._may_move("connect to another host"):
            return None
        dialog = ConnectDialog(self.tasks, self.window)
        dialog.connected.connect(self.use_host)
        if remote is not None:
            dialog.set_remote(remote)
            dialog.start()
        dialog.open()
        self.connect_dialog = dialog
        return dialog

    def use_host(self, remote: Remote, hello: Hello) -> bool:
        """The host answered: the kernels move there; then its runs are listed, if it has any."""
        if not self._may_move("connect to another host"):
            return False
        self._move(remote, hello)
        self.feedback.note("info", f"connected to {remote} ({hello.hostname}): workbench {hello.workbench}, "
                                   f"Python {hello.python_version}; its runs and files are in {hello.data_dir}")
        self.list_runs(when_none=False)
        return True

    def go_local(self) -> bool:
        """Kernel → This computer: the kernels come back here."""
        if self.remote is None or not self._may_move("come back to this computer"):
            return False
        left = self.remote
        self._move(None, None)
        self.feedback.note("info", f"back on this computer (from {left})")
        return True

    def _may_move(self, action: str) -> bool:
        if not self.runner.training:  # (a sweep's trials and the seeds train as the window's runs: queued)
            return True
        self.feedback.show("warning", f"Cannot {action} while a run is training: it stays where it started. "
                                      "Stop it, or wait until it has ended.")
        return False

    def _move(self, remote: Remote | None, hello: Hello | None) -> None:
        was = f"on {self.host_text()}" if self.remote is not None else "on this computer"
        self.runner.set_remote(remote)
        self.kernel.move_to(remote)
        self.remote, self.hello = remote, hello
        self.setup.local_files = remote is None  # the data folder is checked where the run will read it
        self._forget_model(was)
        self.moved()

    def _forget_model(self, was: str) -> None:
        """The model open for Predict is a file where it was opened, and the kernel that read it has gone. So is a
        checkpoint still being opened there (a run that just finished opens its own): its late answer is dropped,
        or the gone kernel's model came back after the move."""
        self.tasks.drop(OPENING)
        self.training.checkpoints.forget(f"was opened {was}")

    # -- the host's runs ----------------------------------------------------------------------------------------
    def list_runs(self, *, when_none: bool = True) -> None:
        """Kernel → Runs on this host…: the host's runs, read off the GUI thread; `when_none`: the dialog opens
        even when it has none (asked for, rather than after connecting)."""
        remote = self.remote
        if remote is None:
            return

        def show(runs: list[RunInfo]) -> None:
            if self.remote == remote and (runs or when_none):
                self.show_runs(runs)

        self.tasks.submit(HOST_RUNS_SLOT, lambda: host_runs(remote), show,
                          lambda error: self.feedback.show("warning", f"Cannot list the runs on {remote}: {error}"))

    def show_runs(self, runs: list[RunInfo]) -> HostRunsDialog:
        dialog = HostRunsDialog(str(self.remote), runs, self.window)
        dialog.attachRequested.connect(self.attach)
        dialog.open()
        self.runs_dialog = dialog
        return dialog

    def attach(self, info: RunInfo) -> bool:
        """Follow the host's run in the window: its curves from the first step, then live."""
        if self.training.attach(info.key):
            self.feedback.note("info", f"following run {info.key} on {self.remote} ({info.status}, "
                                       f"{info.events:,} events so far)")
            return True
        self.feedback.show("warning", f"Cannot attach to {info.key} while a run is training.")
        return False

    # -- files of a run there ---------------------------------------------------------------------------------------
    def local_copy(self, path: str, then: Callable[[str], None]) -> None:
        """`then(path here)` for a file the latest run wrote (a profile's trace or memory snapshot): a run on a
        host wrote it there, so it is copied first, into this computer's runs folder (hosts/HOST/FOLDER/NAME)."""
        remote = self.runner.run_remote
        if remote is None:
            then(path)
            return
        there = PurePosixPath(path)
        target = self.runs_dir / "hosts" / remote.name / there.parent.name / there.name

        def copied(here: Path) -> None:
            self.feedback.settled()
            self.feedback.note("info", f"copied {there.name} from {remote} to {here}")
            then(str(here))

        def failed(error: BaseException) -> None:
            self.feedback.settled()
            self.feedback.show("error", f"Could not copy {there.name} from {remote}: {with_hint(error)}")

        self.feedback.busy(f"Copying {there.name} from {remote}…")
        progress = CopyProgress(self.kernel.copying.emit)
        self.tasks.submit(COPY_SLOT, lambda: fetch(remote, path, target, progress), copied, failed)

    # -- closing ------------------------------------------------------------------------------------------------
    def ask_to_close(self) -> bool | None:
        """Closing the window while a run trains on the host: whether to leave it running there (True) or stop it
        (False); None: cancel, the window stays open."""
        name = self.remote.name
        box = QMessageBox(QMessageBox.Question, "A run is training", f"A run is training on {self.remote}.\n\n"
                          "Left running, it trains on there to its end: follow it again from Kernel → Runs on this "
                          "host… once connected.", QMessageBox.Cancel, self.window)
        box.setObjectName("closeRemoteRunQuestion")
        leave = box.addButton(f"Leave it running on {name}", QMessageBox.AcceptRole)
        stop = box.addButton("Stop it", QMessageBox.DestructiveRole)
        box.setDefaultButton(leave)
        box.exec()
        clicked = box.clickedButton()
        return True if clicked is leave else False if clicked is stop else None
