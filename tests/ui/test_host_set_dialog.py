"""Kernel → Hosts of a run… (ui/dialogs/host_set.py): the preflight matrix in the window, on "hosts" that are
OpenSSH servers on loopback addresses: a green set says the command that trains on it, a red cell says what to do
on hover, a list that names no host is said at once, and the sets checked are offered again."""

from __future__ import annotations

import socket

import pytest
from PySide6.QtGui import QAction

from ..helpers import set_config

pytestmark = pytest.mark.slow  # several SSH sessions to each host


def _port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.2", 0))
        return probe.getsockname()[1]


def test_the_matrix_is_green_for_a_healthy_set_trains_on_it_and_is_red_where_a_check_fails(
        waiting_window, qtbot, loopback_hosts, monkeypatch):
    a, b, _old = loopback_hosts
    monkeypatch.setenv("WORKBENCH_SSH", a.ssh_command)
    window = waiting_window
    action = window.findChild(QAction, "hostSetAction")
    assert action.text() == "Hosts of a run…"
    action.trigger()  # Kernel → Hosts of a run…
    dialog = window.hosts.host_set_dialog
    dialog.hosts.setCurrentText("")
    dialog.check()
    assert dialog.status.text().startswith("the Hosts field names no host")  # said at once, in the window's words
    dialog.hosts.setCurrentText(f"{a.address}, {b.address}")
    dialog.python.setText(a.remote_python)  # one remote Python for every host (a's: the test's own code)
    dialog.port.setValue(_port())
    with qtbot.waitSignal(dialog.checked, timeout=60_000) as shown:
        dialog.check()
    assert shown.args[0].ok and dialog.matrix.rowCount() == 2
    assert all(dialog.matrix.item(row, column).text() == "✓" for row in range(2) for column in range(6))
    assert "Workbench 0.1.0" in dialog.matrix.item(0, 0).toolTip()  # what each check found, on hover
    assert dialog.command.isVisible() and dialog.command.text().startswith(f"workbench train --hosts {a.address},")
    set_config(window, epochs=1, max_steps=30, hidden_dim=16, device="cpu")
    started = []  # what the window's runner is asked (the run itself: tests/e2e/test_across_hosts.py)
    monkeypatch.setattr(window.runner, "start_across", lambda *call: started.append(call) and False)
    dialog.train_button.click()  # Train on these hosts: the form's settings, one torchrun on each host
    [(request, hosts, checked, slots)] = started
    assert [str(host) for host in hosts] == [a.address, b.address] and checked is shown.args[0] and slots == 1
    assert (request.config.max_steps, request.config.hidden_dim, request.out_dir) == (30, 16, "")
    assert dialog.isVisible()  # refused (here, by the stand-in runner): the dialog stays for another try
    dialog.hosts.setCurrentText(f"{b.address}, {a.address}")  # the other way round: b holds the rendezvous
    with socket.socket() as taken:  # … on a port something else holds there
        taken.bind(("127.0.0.3", 0))
        taken.listen()
        dialog.port.setValue(taken.getsockname()[1])
        with qtbot.waitSignal(dialog.checked, timeout=60_000) as shown:
            dialog.check()
    assert not shown.args[0].ok and not dialog.command.isVisible()
    port = dialog.matrix.item(0, 4)
    assert port.text() == "✗" and port.toolTip().startswith("port") and "What to do: choose another port" in (
        port.toolTip())
    assert dialog.status.text().startswith(f"{len(shown.args[0].red)} check(s) failed: nothing was started.")
    assert f"✗ {b.address} · rendezvous port: port " in dialog.status.text()  # each red cell under the matrix
    again = window.hosts.open_host_set()  # the sets checked are offered again
    assert [again.hosts.itemText(i) for i in range(2)] == [f"{b.address}, {a.address}", f"{a.address}, {b.address}"]
    # A green set can be queued instead: the form's settings, to train across it when its turn comes.
    again.hosts.setCurrentText(f"{a.address}, {b.address}")
    again.python.setText(a.remote_python)
    again.port.setValue(_port())
    with qtbot.waitSignal(again.checked, timeout=60_000) as shown:
        again.check()
    assert shown.args[0].ok and again.queue_button.isEnabled()
    try:
        again.queue_button.click()  # Queue on these hosts
        [entry] = window.queue.queue.entries()
        assert entry.place == f"{a.address},{b.address}" and entry.python == a.remote_python
        assert (entry.across.processes, entry.across.port) == (1, again.port.value())
        assert entry.config.max_steps == 30 and entry.where in window.queue.panel.table.item(0, 2).text()
    finally:
        window.queue.close_with("cancel")  # the window then closes without asking what to do with it
