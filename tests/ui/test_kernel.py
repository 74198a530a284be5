"""The window and its PyTorch kernel: a kernel that dies is a message, not a dead window; it comes back by itself."""

from __future__ import annotations

import os
import signal

from ..helpers import set_config
from ..support.window_files import drop_files, load


def _own_window(qtbot, tmp_path):
    """A window with a kernel of its own (the suite's shared kernel is not ours to kill)."""
    from workbench.ui.main_window import MainWindow

    window = MainWindow(runs_dir=tmp_path / "runs", db=tmp_path / "runs.sqlite", prestart=False)
    qtbot.addWidget(window)
    window.show()
    qtbot.waitUntil(lambda: window.kernel.capabilities.known, timeout=120_000)
    return window


def test_a_kernel_killed_while_idle_is_reported_and_restarted(qtbot, tmp_path, planted_break_spec):
    window = _own_window(qtbot, tmp_path)
    pid = window.kernel.client.pid
    said = {}

    def crashed(state, detail):
        """What the window shows as it hears of the crash (its own slot ran first): a forked kernel is back within
        a tenth of a second, so by the time the wait ends the label may already say it is ready again."""
        if state == "crashed":
            said.update(banner=window.banner.label.text(), label=window.kernel_label.text())
        return state == "crashed"

    # Bound to a name: the states that follow ("starting", "ready") are queued from the client's thread and may
    # still reach this blocker's slot after it has disconnected; freed, it would crash the test process.
    with qtbot.waitSignal(window.kernel.stateChanged, timeout=30_000, check_params_cb=crashed) as _crashed:
        os.kill(pid, signal.SIGKILL)
    assert window.isVisible()
    assert "stopped unexpectedly" in said["banner"] and "signal 9" in said["banner"]
    assert said["label"] == "PyTorch restarting…"
    assert "stopped unexpectedly" in window.banner.label.text()  # the message stays after the restart
    qtbot.waitUntil(lambda: window.kernel.state == "ready" and window.kernel.client.pid != pid, timeout=120_000)
    set_config(window, model=planted_break_spec, backend="aot_eager")
    with qtbot.waitSignal(window.compile_insight.explainFinished, timeout=120_000) as explained:
        window.compile_insight.explain()
    assert explained.args[0].graph_break_count >= 1  # the new kernel serves as the old one did
    window.close()


def test_a_kernel_killed_while_predicting_fails_that_prediction_only(qtbot, tmp_path, trained_checkpoint,
                                                                      samples_dir):
    window = _own_window(qtbot, tmp_path)
    assert not isinstance(load(window, qtbot, trained_checkpoint), Exception)
    # The kernel is frozen, the prediction sent to it, then it is killed: killed first, it could be restarted
    # (forked by the fork server) before the dropped image was decoded, and the prediction rightly succeeded there.
    pid = window.kernel.client.pid
    os.kill(pid, signal.SIGSTOP)
    drop_files(window.predict.drop, [samples_dir / "digit_7.png"])
    qtbot.waitUntil(lambda: bool(window.kernel.client._running), timeout=60_000)  # sent, unanswered
    os.kill(pid, signal.SIGKILL)
    qtbot.waitUntil(lambda: bool(window.predict.entries) and not window.predict.busy, timeout=60_000)
    entry = window.predict.entries[0]
    assert entry.prediction is None and "signal 9" in entry.error
    assert window.isVisible()
    qtbot.waitUntil(lambda: window.kernel.state == "ready", timeout=120_000)
    drop_files(window.predict.drop, [samples_dir / "digit_7.png"])  # the new kernel opens the model again
    qtbot.waitUntil(lambda: bool(window.predict.entries) and not window.predict.busy, timeout=60_000)
    assert window.predict.entries[0].prediction is not None
    assert window.predict.entries[0].prediction.class_name == "7"
    window.close()
