"""Kernel → Connect to…: the window's kernels and runs on another machine over SSH (a real sshd on 127.0.0.1, see
tests/support/sshd.py), as a user meets it: the dialog, the status bar, a run trained there, a run attached to, coming
back, and closing while a run trains there.

One connected window is shared by the module's tests (a remote kernel takes seconds to start); each test asks for
it connected and connects it again if an earlier test left it elsewhere. The closing test ends it: it runs last."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QApplication, QLabel, QMessageBox

from workbench.core.ground import appinfo
from workbench.core.ground.answers import Written
from workbench.core.ground.events import RunFinished, Step
from workbench.core.history.naming import run_name
from workbench.core.history.runs import RunStore
from workbench.core.run.remote.kernels import RemoteSpare, host_runs
from workbench.core.run.remote.service import RemoteService
from workbench.core.run.remote.ssh import Remote
from workbench.ui.dialogs.connect import CONNECT_SLOT
from workbench.ui.features.kernel import Kernel
from workbench.ui.panels.runs.runs import COLUMNS
from workbench.ui.features.run_control import RunControl
from workbench.ui.settings import open_settings, recent_hosts

from ..helpers import set_config

REMOTE_S = 120_000  # a remote kernel or run on a loaded 2-core machine: seconds, with room


@pytest.fixture(scope="module")
def host(ssh_server):
    """The sshd's host for the whole module (the `remote` fixture's, kept while the shared window lives)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("WORKBENCH_SSH", ssh_server.ssh_command)
        yield Remote.parse(ssh_server.address, ssh_server.remote_python)


@pytest.fixture(scope="module")
def shared(host, kernel, tmp_path_factory, qapp):
    """The module's window, built on first use (see `connected`), closed at the end if a test has not."""
    holder: dict = {"folder": tmp_path_factory.mktemp("remote-window")}
    yield holder
    window = holder.get("window")
    if window is not None:
        window.runner.shutdown()
        window.close()


@pytest.fixture
def connected(shared, host, kernel, qtbot):
    """The shared window, connected to the host with its kernel ready there. Built the way `workbench --host`
    opens it: connecting at once."""
    from workbench.ui.main_window import MainWindow

    window = shared.get("window")
    if window is None:
        folder = shared["folder"]
        window = shared["window"] = MainWindow(runs_dir=folder / "runs", db=folder / "runs.sqlite", prestart=True,
                                               kernel=kernel, remote=host)
        window.resize(1400, 880)
        window.show()
    elif window.hosts.remote is None:
        window.hosts.open_connect(host)
    qtbot.waitUntil(lambda: window.hosts.remote == host and window.kernel.capabilities.known, timeout=REMOTE_S)
    return window


def _ssh_kernel(window) -> bool:
    """Whether the window's service kernel is reached through ssh (its client's process is the ssh command)."""
    pid = window.kernel.client.pid
    return pid is not None and b"ssh" in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0]


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]  # free once closed: nothing listens there


def _steps_in_host_log(ssh_server, key: str) -> int:
    log = ssh_server.host_data / "remote-runs" / key / "events.jsonl"
    return sum(json.loads(line)["type"] == "Step" for line in log.read_text().splitlines())


# -- the dialog ---------------------------------------------------------------------------------------------------
def test_the_kernel_menu_is_in_the_palette_and_the_shortcuts(waiting_window):
    from workbench.ui.commands import CommandPalette, ShortcutsDialog

    window = waiting_window
    titles = [action.text() for action in window.menuBar().actions()]
    assert titles[titles.index("&Run") + 1] == "&Kernel"
    palette = CommandPalette(window)
    items = {palette.list.item(row).text(): palette.list.item(row) for row in range(palette.list.count())}
    assert "Connect to…    Kernel    Ctrl+Shift+K" in items
    assert not items["This computer    Kernel"].flags() & Qt.ItemIsEnabled  # not connected: here already
    assert not items["Runs on this host…    Kernel"].flags() & Qt.ItemIsEnabled
    table = ShortcutsDialog(window).table
    assert ["Connect to…", "Ctrl+Shift+K", "Kernel"] in [[table.item(row, column).text() for column in range(3)]
                                                         for row in range(table.rowCount())]
    keys = [action.shortcut().toString() for action in window.actions() if not action.shortcut().isEmpty()]
    assert keys.count("Ctrl+Shift+K") == 1


def test_the_dialog_refuses_a_bad_address_at_once_and_escape_cancels(waiting_window, qtbot):
    window = waiting_window
    window.show()
    qtbot.waitUntil(window.isActiveWindow)  # a shortcut goes to the active window
    qtbot.keyClick(window, Qt.Key_K, Qt.ControlModifier | Qt.ShiftModifier)  # Ctrl+Shift+K: Kernel → Connect to…
    dialog = window.hosts.connect_dialog
    qtbot.waitExposed(dialog)
    assert dialog.host.accessibleName() == "Host" and dialog.python.accessibleName() == "Remote Python"
    assert dialog.python.text() == "python3"
    dialog.host.setEditText("me@bad host")
    qtbot.keyClick(dialog.host.lineEdit(), Qt.Key_Return)  # Enter connects
    assert dialog.status.text() == "Could not connect (address failed):\n'me@bad host' is not a host\n" \
                                   "What to do: write it as host, user@host or user@host:port"
    assert not window.tasks.busy(CONNECT_SLOT)  # said without starting ssh
    assert dialog.isVisible() and dialog.host.isEnabled() and dialog.host.currentText() == "me@bad host"
    qtbot.keyClick(dialog, Qt.Key_Escape)
    assert not dialog.isVisible() and window.hosts.remote is None


def _connect_dialog(window, address: str, python: str):
    window.named_actions["connect"].trigger()
    dialog = window.hosts.connect_dialog
    dialog.host.setEditText(address)
    dialog.python.setText(python)
    return dialog


def test_a_failed_connection_says_the_step_and_the_message_and_stays_open(waiting_window, qtbot, remote):
    window = waiting_window
    closed = f"{remote.user}@127.0.0.1:{_closed_port()}"
    dialog = _connect_dialog(window, closed, remote.python)
    qtbot.mouseClick(dialog.connect_button, Qt.LeftButton)
    qtbot.keyClick(dialog, Qt.Key_Escape)  # cancelled while connecting: the answer, when it comes, is dropped
    assert not dialog.isVisible()
    qtbot.waitUntil(window.tasks.idle, timeout=30_000)
    dialog = _connect_dialog(window, closed, remote.python)
    qtbot.mouseClick(dialog.connect_button, Qt.LeftButton)
    assert dialog.status.text().startswith(f"Connecting to {remote.user}@127.0.0.1:")
    assert dialog.busy.isVisible() and not dialog.connect_button.isEnabled()
    qtbot.waitUntil(lambda: dialog.connect_button.isEnabled(), timeout=30_000)
    text = dialog.status.text()
    assert text.startswith("Could not connect (connection failed):\ncannot reach "), text
    assert "Connection refused" in text and "What to do: check the host and port" in text
    assert "Traceback" not in text and not dialog.busy.isVisible()
    label = dialog.status  # every line shown: the dialog grew for them
    assert label.height() >= label.heightForWidth(label.width()) and label.geometry().bottom() < dialog.height()
    assert dialog.isVisible() and window.hosts.remote is None and window.windowTitle() == appinfo.DISPLAY_NAME


# -- moving, without a host that answers -------------------------------------------------------------------------
def test_an_answer_of_the_kernel_left_behind_is_not_taken_for_the_new_ones(qtbot, kernel, remote):
    from workbench.ui.support.tasks import Tasks

    qtbot.waitUntil(lambda: kernel.ready, timeout=REMOTE_S)
    tasks = Tasks()
    moving = Kernel(tasks, kernel)  # ready: its capabilities are asked at once, and answered after the move
    moving.move_to(Remote.parse(f"{remote.user}@127.0.0.1:{_closed_port()}", remote.python))
    try:
        qtbot.waitUntil(tasks.idle, timeout=30_000)
        assert not moving.capabilities.known  # this computer's capabilities are not the host's
    finally:
        moving.close()


def test_the_spare_run_kernel_moves_with_the_runs(qtbot, host):
    """Runs start warm wherever they train: the spare kernel started ahead is here, then on the host (held by an
    SSH session), then here again; the one left behind is closed."""
    from workbench.core.run.process import ChildProcess
    from workbench.ui.support.tasks import Tasks

    runner = RunControl(Tasks(), prestart=True)
    qtbot.waitUntil(lambda: isinstance(runner.spare, ChildProcess))
    here = runner.spare
    try:
        assert runner.set_remote(host)
        qtbot.waitUntil(lambda: isinstance(runner.spare, RemoteSpare), timeout=REMOTE_S)
        assert here.stderr.closed  # closed
        there = runner.spare
        assert runner.set_remote(None) and isinstance(runner.spare, ChildProcess)  # the next run here starts warm
        assert there.session.stderr.closed  # its session closed: the host ends the unclaimed spare
    finally:
        runner.shutdown()


# -- connected ----------------------------------------------------------------------------------------------------
def test_connecting_moves_the_kernel_to_the_host(connected, host):
    window = connected
    assert _ssh_kernel(window)
    where = f"{host} ({socket.gethostname()})"
    status = window.findChild(object, "statusHost")
    assert status.isVisible() and status.text() == f"on {where}"
    assert window.windowTitle() == f"{appinfo.DISPLAY_NAME} — {where}"
    assert window.device_label.text() == window.kernel.capabilities.device_label()  # the host's devices
    log = [window.log.item(row).text() for row in range(window.log.count())]
    assert any(f"of {where}" in line for line in log), log
    assert window.named_actions["host_runs"].isEnabled() and window.named_actions["this_computer"].isEnabled()
    assert window.named_actions["sweep"].isEnabled()
    assert window.search.open_sweep().queue.place == str(host)  # its trials are queued to train there
    window.search.sweep_dialog.close()
    # the host reads its own data folders: a path missing here is not the form's to refuse
    window.setup.set_value("dataset", "imagefolder")
    window.setup.set_value("data_root", "/only/on/the/host")
    assert not window.setup.local_files and "does not exist" not in window.setup.problem_text()
    set_config(window)  # the form as the next test expects it


def test_a_run_trains_on_the_host_and_is_recorded_here(connected, qtbot, host, ssh_server, tmp_path, monkeypatch):
    window = connected
    set_config(window, epochs=1, profile_steps=3)
    qtbot.waitUntil(lambda: isinstance(window.runner.spare, RemoteSpare), timeout=REMOTE_S)
    spare = window.runner.spare.key
    with qtbot.waitSignal(window.training.runFinished, timeout=REMOTE_S) as finished:
        window.named_actions["train"].trigger()
    result = finished.args[0]
    assert isinstance(result, RunFinished) and not result.stopped, result
    [key] = [run.key for run in host_runs(host) if run.out_dir == str(Path(result.results.checkpoint).parent)]
    assert key == spare  # it trained in the kernel started ahead there
    assert Path(result.results.checkpoint).is_relative_to(ssh_server.host_data)  # its files are on the host
    window.plots.redraw()
    assert window.plots.point_counts()["loss"] == result.steps
    with RunStore(window.db) as store:
        [record] = [run for run in store.list() if run.out_dir == str(Path(result.results.checkpoint).parent)]
    assert record.host == str(host) and record.status == "finished"
    assert window.plots.run_name == run_name(record.id)  # named as the Runs dock names it
    window.runs.refresh()
    status = COLUMNS.index("Status")
    qtbot.waitUntil(lambda: f"finished on {host}" in [window.runs.model.index(row, status).data()
                                                      for row in range(window.runs.model.rowCount())])
    qtbot.waitUntil(lambda: window.predict.model is not None, timeout=REMOTE_S)  # opened by the host's kernel
    # Exported to a file chosen here: written on the host, copied back (the window's jobs go through RemoteService).
    assert isinstance(window.kernel.service, RemoteService)
    target = tmp_path / "here" / "exported.pt"
    copying: list[tuple[str, bool]] = []
    window.kernel.copying.connect(lambda text, whole: copying.append((text, whole)))
    with qtbot.waitSignal(window.exports.exportFinished, timeout=REMOTE_S) as written:
        assert window.exports.export_checkpoint(target)
    assert copying and copying[-1][1] and copying[-1][0].endswith("(100 %)")  # said in the status line as it came
    assert isinstance(written.args[0], Written) and Path(written.args[0].paths[0]) == target, written.args[0]
    assert target.stat().st_size > 0 and target.with_suffix(".safetensors").is_file()
    window.findChild(QMessageBox, "writtenMessage").close()
    # Its profile's trace is on the host: Open trace folder copies it here first, then shows that folder.
    trace = Path(window.profile.report.trace)
    assert trace.is_relative_to(ssh_server.host_data)
    opened: list = []
    monkeypatch.setattr("workbench.ui.panels.profile.profile.QDesktopServices.openUrl", opened.append)
    window.profile.open_trace.click()
    qtbot.waitUntil(lambda: bool(opened), timeout=REMOTE_S)
    here = window.runs_dir / "hosts" / host.name / trace.parent.name / trace.name
    assert Path(opened[0].toLocalFile()) == here.parent and here.read_bytes() == trace.read_bytes()


def test_attaching_to_a_finished_host_run_replays_each_step_once(connected, qtbot, host, ssh_server):
    window = connected
    finished = [run for run in host_runs(host) if run.status == "finished"]
    if not finished:  # this test alone: a run of its own first
        set_config(window, epochs=1)
        with qtbot.waitSignal(window.training.runFinished, timeout=REMOTE_S):
            window.named_actions["train"].trigger()
        finished = [run for run in host_runs(host) if run.status == "finished"]
    key = finished[-1].key
    steps_there = _steps_in_host_log(ssh_server, key)
    heard: list[Step] = []
    window.runner.events.connect(lambda batch: heard.extend(e for e in batch if isinstance(e, Step)))
    if window.hosts.runs_dialog is not None and window.hosts.runs_dialog.isVisible():
        window.hosts.runs_dialog.reject()  # the one that opened by itself on connecting: it lists older runs
    window.hosts.runs_dialog = None
    window.named_actions["host_runs"].trigger()
    qtbot.waitUntil(lambda: window.hosts.runs_dialog is not None and window.hosts.runs_dialog.isVisible(),
                    timeout=REMOTE_S)
    dialog = window.hosts.runs_dialog
    assert dialog.table.item(0, 0).text() == finished[-1].key and dialog.table.item(0, 1).text() == "finished"
    assert "Attach follows one in this window" in dialog.findChild(QLabel, "hostRunsIntro").text()
    with qtbot.waitSignal(window.training.runFinished, timeout=REMOTE_S) as ended:
        qtbot.keyClick(dialog.table, Qt.Key_Return)  # Enter attaches to the selected (newest) run
    assert isinstance(ended.args[0], RunFinished)
    assert len(heard) == steps_there > 0 and len({step.step for step in heard}) == steps_there  # each once
    window.plots.redraw()
    assert window.plots.point_counts()["loss"] == steps_there  # the replayed curve, complete
    with RunStore(window.db) as store:  # attached again: this computer's record is written afresh, not twice
        assert sum(run.out_dir == finished[-1].out_dir for run in store.list()) == 1


def test_this_computer_brings_the_kernels_back_and_connect_remembers_the_host(connected, qtbot, host, kernel):
    window = connected
    window.named_actions["this_computer"].trigger()
    assert window.hosts.remote is None and window.runner.remote is None
    assert window.kernel.client is kernel and not _ssh_kernel(window)
    qtbot.waitUntil(lambda: window.kernel.capabilities.known, timeout=REMOTE_S)
    assert not window.findChild(object, "statusHost").isVisible() and window.windowTitle() == appinfo.DISPLAY_NAME
    assert not window.named_actions["this_computer"].isEnabled() and not window.named_actions["host_runs"].isEnabled()
    assert window.setup.local_files  # back here: this computer's folders are checked again
    assert window.queue.place == ""  # the queued runs (a sweep's trials too) train here again
    assert window.state.model is None and window.predict.model is None  # the host's model is not here
    # Back again, by keyboard, and the host is then the dialog's first choice, with its Python.
    window.activateWindow()  # the offscreen platform leaves no window active once a dialog has closed
    qtbot.waitUntil(window.isActiveWindow)
    qtbot.keyClick(window, Qt.Key_K, Qt.ControlModifier | Qt.ShiftModifier)
    dialog = window.hosts.connect_dialog
    dialog.host.setEditText(str(host))
    dialog.python.setText(host.python)
    qtbot.keyClick(dialog.host.lineEdit(), Qt.Key_Return)
    qtbot.waitUntil(lambda: window.hosts.remote == host and window.kernel.capabilities.known, timeout=REMOTE_S)
    assert _ssh_kernel(window)
    assert recent_hosts(open_settings()) == [(str(host), host.python)]
    window.named_actions["connect"].trigger()
    again = window.hosts.connect_dialog
    assert again.host.currentText() == str(host) and again.python.text() == host.python
    again.reject()


def _answer(window, button_text: str) -> None:
    """Click `button_text` in the question the window is about to ask (modal: it is answered from its own loop)."""
    def click():
        box = QApplication.activeModalWidget()
        if not isinstance(box, QMessageBox):
            QTimer.singleShot(20, click)
            return
        next(button for button in box.buttons() if button.text() == button_text).click()

    QTimer.singleShot(0, click)


def test_closing_while_a_run_trains_there_can_leave_it_running(connected, qtbot, host, ssh_server, shared):
    window = connected
    set_config(window, epochs=2)
    heard: list[Step] = []
    window.runner.events.connect(lambda batch: heard.extend(e for e in batch if isinstance(e, Step)))
    window.training.train()
    qtbot.waitUntil(lambda: bool(heard), timeout=REMOTE_S)  # training there
    key = window.runner.process.started.key
    window.named_actions["this_computer"].trigger()  # nothing moves while a run trains
    assert window.hosts.remote == host and "while a run is training" in window.banner.label.text()
    _answer(window, "Cancel")
    window.close()
    assert window.isVisible() and window.runner.training  # cancelled: the window and the run go on
    _answer(window, f"Leave it running on {host.name}")
    window.close()
    shared.pop("window")
    assert not window.isVisible() and not window.runner.training
    qtbot.waitUntil(lambda: {run.key: run.status for run in host_runs(host)}[key] != "running", timeout=REMOTE_S)
    assert {run.key: run.status for run in host_runs(host)}[key] == "finished"  # trained to its end, not stopped
    assert not (ssh_server.host_data / "remote-runs" / key / "control.jsonl").exists()  # no cancel was sent


def test_a_checkpoint_still_opening_when_the_kernels_move_stays_closed(window, qtbot, trained_checkpoint, monkeypatch):
    """A run that ends on a host opens its checkpoint there; kernels that move before the answer comes must not get
    the gone kernel's model back (it happened: the answer landed after This computer had forgotten the model)."""
    from concurrent.futures import Future

    info = window.kernel.service.load_checkpoint(str(trained_checkpoint)).result(timeout=60)
    pending: Future = Future()
    monkeypatch.setattr(window.kernel.service, "load_checkpoint", lambda *args, **kwargs: pending)
    window.checkpoints.load(trained_checkpoint, "last run (#2)", own_run=True)
    window.hosts._forget_model("on lab")  # what moving the kernels does with the model
    pending.set_result(info)
    qtbot.waitUntil(window.tasks.idle, timeout=10_000)
    assert window.state.model is None and window.predict.model is None
