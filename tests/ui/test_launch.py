"""Starting the app where it cannot open a window gives one clear line, not a Qt abort."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys

import pytest

from workbench import gui_launch


def test_no_display_is_one_line_pointing_to_headless_commands():
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    proc = subprocess.run([sys.executable, "-m", "workbench"], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "no display" in lines[0] and "workbench train" in lines[0] and "xvfb-run" in lines[0]


def test_unreachable_x_display_is_reported_before_qt_aborts():
    env = {k: v for k, v in os.environ.items() if k not in ("WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    env["DISPLAY"] = ":987"  # nothing listens there
    proc = subprocess.run([sys.executable, "-m", "workbench"], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "cannot connect to the X display ':987'" in proc.stderr and "Traceback" not in proc.stderr


def test_missing_xcb_library_names_the_debian_package(monkeypatch, tmp_path):
    plugin = tmp_path / "libqxcb.so"
    plugin.write_bytes(b"")

    def refuse(path, *args, **kwargs):
        raise OSError("libxcb-cursor.so.0: cannot open shared object file: No such file or directory")

    monkeypatch.setattr(gui_launch.ctypes, "CDLL", refuse)
    monkeypatch.setenv("QT_QPA_PLATFORM", "xcb")
    message = gui_launch.xcb_problem(plugin)
    assert "libxcb-cursor.so.0 is missing" in message and "sudo apt install libxcb-cursor0" in message


@pytest.mark.parametrize("session", [{"XDG_SESSION_TYPE": "wayland"}, {"WAYLAND_DISPLAY": "wayland-0"}])
def test_a_missing_xcb_library_does_not_block_a_wayland_session(monkeypatch, tmp_path, session):
    plugin = tmp_path / "libqxcb.so"
    plugin.write_bytes(b"")

    def refuse(path, *args, **kwargs):
        raise OSError("libxcb-cursor.so.0: cannot open shared object file: No such file or directory")

    monkeypatch.setattr(gui_launch.ctypes, "CDLL", refuse)
    for name in ("QT_QPA_PLATFORM", "XDG_SESSION_TYPE", "WAYLAND_DISPLAY"):
        monkeypatch.delenv(name, raising=False)
    assert gui_launch.xcb_problem(plugin) is not None  # an X11 session: Qt loads xcb
    for name, value in session.items():
        monkeypatch.setenv(name, value)
    assert gui_launch.xcb_problem(plugin) is None  # Qt tries its wayland plugin first


def test_workbench_host_opens_the_window_connecting_to_that_host(monkeypatch, capsys):
    from workbench.cli import main
    from workbench.core.run.remote.ssh import Remote

    opened: list = []
    monkeypatch.setattr("workbench.ui.app.run_app", lambda remote=None: opened.append(remote) or 0)
    monkeypatch.setenv("QT_QPA_PLATFORM", "offscreen")
    assert main([]) == 0 and opened == [None]  # `workbench`: the window, on this computer
    assert main(["--host", "me@gpu-box:2222", "--remote-python", "/opt/py/bin/python"]) == 0
    assert opened[-1] == Remote.parse("me@gpu-box:2222", "/opt/py/bin/python")
    assert main(["--host", "not a host!"]) == 2  # refused before any window opens
    assert len(opened) == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert "'not a host!' is not a host" in line


def test_offscreen_needs_no_display(monkeypatch):
    monkeypatch.setenv("QT_QPA_PLATFORM", "offscreen")
    monkeypatch.delenv("DISPLAY", raising=False)
    assert gui_launch.display_problem() is None


def test_window_icon_title_and_about_come_from_the_package_metadata(window, qtbot):
    import torch
    from PySide6.QtCore import qVersion

    from workbench.core.ground import appinfo

    assert window.windowTitle() == appinfo.DISPLAY_NAME
    assert not window.windowIcon().isNull()
    from PySide6.QtGui import QAction

    from workbench.ui.dialogs.about import about_text

    text = about_text(window.kernel.capabilities)
    assert f"{appinfo.DISPLAY_NAME} {appinfo.version()}" in text
    assert torch.__version__ in text and qVersion() in text and "CUDA" in text
    window.findChild(QAction, "aboutAction").trigger()  # Help → About Workbench
    dialog = window.findChild(object, "aboutDialog")
    assert dialog is not None and dialog.isVisible()
    with qtbot.waitSignal(dialog.destroyed):  # freed when closed, not kept until the window goes
        dialog.close()


@pytest.mark.slow
def test_ctrl_c_closes_the_app_cleanly_and_leaves_no_process(tmp_path):
    import signal
    import time
    import uuid

    from ..helpers import alive, descendants, processes_with_env

    mark = uuid.uuid4().hex
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "WORKBENCH_TEST_MARK": mark,
           "WORKBENCH_CONFIG_DIR": str(tmp_path / "config"), "WORKBENCH_DATA_DIR": str(tmp_path / "data")}
    app = subprocess.Popen([sys.executable, "-m", "workbench"], env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    started = time.monotonic()
    try:
        # The app starts its fork server, which forks the service kernel and a spare training kernel as soon as
        # the window exists: those three appearing means "up".
        while len(kernels := descendants(app.pid)) < 3:
            assert app.poll() is None, app.stderr.read()
            assert time.monotonic() - started < 60, "the app did not come up"
            time.sleep(0.1)  # polling /proc for the children to appear: there is no event to wait on
        app.send_signal(signal.SIGINT)
        _, err = app.communicate(timeout=60)
    finally:  # a failure above must not leave the app running (nothing would ever close it)
        if app.poll() is None:
            for pid in [*descendants(app.pid), app.pid]:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            app.wait()
    assert app.returncode == 0 and "Traceback" not in err, err
    assert [pid for pid in kernels if alive(pid)] == []
    assert processes_with_env("WORKBENCH_TEST_MARK", mark) == []

