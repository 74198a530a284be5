"""Train / Stop / close from the window, as a user would: buttons, the run kernel, the plots."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QToolButton

from workbench.core.ground.events import MemorySample, RunFailed, RunFinished, Step

from ..helpers import set_config


def _announcements(monkeypatch) -> list[tuple[str, bool]]:
    """What the window says to a screen reader: (text, assertive) of each accessibility announcement."""
    from PySide6.QtGui import QAccessible, QAccessibleAnnouncementEvent

    heard: list[tuple[str, bool]] = []
    real = QAccessible.updateAccessibility

    def update(event):
        if isinstance(event, QAccessibleAnnouncementEvent):
            heard.append((event.message(), event.politeness() == QAccessible.AnnouncementPoliteness.Assertive))
        real(event)

    monkeypatch.setattr(QAccessible, "updateAccessibility", update)
    return heard


def _button(window, name: str) -> QToolButton:
    button = window.findChild(QToolButton, name)
    assert button is not None, f"no widget named {name}"
    return button


def test_train_button_runs_one_epoch_and_fills_the_plots(window, qtbot, monkeypatch):
    heard = _announcements(monkeypatch)
    set_config(window, epochs=1)
    with qtbot.waitSignal(window.training.runFinished, timeout=60_000) as finished:
        qtbot.mouseClick(_button(window, "trainButton"), Qt.LeftButton)
    result = finished.args[0]
    assert isinstance(result, RunFinished) and not result.stopped
    assert result.results.val_accuracy > 0.5
    window.plots.redraw()
    counts = window.plots.point_counts()
    assert counts["loss"] == result.steps and counts["throughput"] > 0 and counts["memory"] > 0
    assert counts["val_loss"] == 1
    x, y = window.plots.step_loss.item.getData()
    assert len(x) == result.steps  # the curve on screen holds every step
    assert window.findChild(object, "statusState").text() == "Finished"
    assert [text for text, _ in heard][0].startswith("Training started: ")  # a screen reader hears start and end
    assert any(text.startswith(f"finished: {result.steps} steps") and not assertive for text, assertive in heard)
    assert not window.runner.training  # the run's task ended with the run
    # the finished run's model is opened in the kernel, ready for prediction
    qtbot.waitUntil(lambda: window.predict.model is not None, timeout=60_000)
    assert window.named_actions["export_checkpoint"].isEnabled()


def test_train_is_disabled_while_running_and_stop_returns_within_two_seconds(window, qtbot):
    set_config(window, epochs=10_000)
    qtbot.keyClick(window, Qt.Key_R, Qt.ControlModifier)  # Ctrl+R
    # Polled: a waitSignal on runner.events (emitted on the run's thread) can still be delivered a queued batch after
    # its blocker has gone, and PySide6 then calls a freed object (a segfault seen under load).
    qtbot.waitUntil(lambda: window.progress.step > 0, timeout=60_000)
    assert not window.named_actions["train"].isEnabled() and window.named_actions["stop"].isEnabled()
    assert not window.runner.start(window.training.run_request())  # one run at a time
    assert not window.training.train()
    with qtbot.waitSignal(window.training.runFinished, timeout=2_000) as finished:
        qtbot.mouseClick(_button(window, "stopButton"), Qt.LeftButton)
    assert isinstance(finished.args[0], RunFinished) and finished.args[0].stopped
    assert not window.runner.training
    assert window.named_actions["train"].isEnabled() and not window.named_actions["stop"].isEnabled()


def test_escape_stops_a_run(window, qtbot):
    set_config(window, epochs=10_000)
    window.training.train()
    qtbot.waitUntil(lambda: window.progress.step > 0, timeout=60_000)
    with qtbot.waitSignal(window.training.runFinished, timeout=2_000) as finished:
        qtbot.keyClick(window, Qt.Key_Escape)
    assert finished.args[0].stopped


def test_closing_the_window_mid_run_stops_it_cleanly(window, qtbot, tmp_path):
    set_config(window, epochs=10_000)
    window.training.train()
    qtbot.waitUntil(lambda: window.progress.step > 0, timeout=60_000)
    process = window.runner.process
    assert process is not None and process.process.poll() is None
    assert window.close()
    assert not window.runner.training and process.process.poll() is not None
    # What was trained is kept: the stopped run still wrote its checkpoint and its full event log.
    run_dirs = list((tmp_path / "runs").iterdir())
    assert len(run_dirs) == 1
    assert (run_dirs[0] / "checkpoint.pt").is_file() and (run_dirs[0] / "events.jsonl").is_file()


def test_a_diverging_run_shows_a_clear_message_and_the_app_keeps_working(window, qtbot, monkeypatch):
    heard = _announcements(monkeypatch)
    set_config(window, epochs=1, lr=10.0)
    with qtbot.waitSignal(window.training.runFinished, timeout=60_000) as finished:
        window.training.train()
    assert isinstance(finished.args[0], RunFailed) and finished.args[0].kind == "diverged"
    assert window.banner.isVisible()
    assert "diverged" in window.banner.label.text() and "learning rate" in window.banner.label.text()
    assert window.state_label.text() == "Failed"
    assert (window.banner.label.text(), True) in heard  # the failure interrupts the screen reader
    set_config(window, epochs=1)
    with qtbot.waitSignal(window.training.runFinished, timeout=60_000) as finished:
        window.training.train()
    assert isinstance(finished.args[0], RunFinished)


@pytest.mark.slow
def test_a_failing_compile_backend_is_reported_not_hidden(window, qtbot, monkeypatch):
    # A real failure, in the training process: Inductor on the CPU with no C++ compiler to be found.
    monkeypatch.setenv("CXX", "/nonexistent/g++")
    set_config(window, epochs=1, backend="inductor")
    with qtbot.waitSignal(window.training.runFinished, timeout=60_000) as finished:
        window.training.train()
    assert isinstance(finished.args[0], RunFailed) and finished.args[0].kind == "compile"
    assert "C++ compiler" in window.banner.label.text()


def test_eager_fallback_is_visible_in_the_log_and_compile_panel(window, qtbot, monkeypatch):
    monkeypatch.setenv("CXX", "/nonexistent/g++")
    set_config(window, epochs=1, backend="inductor", allow_eager_fallback=True)
    with qtbot.waitSignal(window.training.runFinished, timeout=60_000) as finished:
        window.training.train()
    assert isinstance(finished.args[0], RunFinished)
    assert finished.args[0].results.backend_used == "eager"
    warnings = [window.log.item(i).text() for i in range(window.log.count())
                if window.log.item(i).data(256) == "warning"]
    assert any("continuing in eager mode" in w for w in warnings)
    notes = [window.compile_panel.notes.item(i).text() for i in range(window.compile_panel.notes.count())]
    assert any("C++ compiler" in n for n in notes)


@pytest.mark.slow
def test_train_before_pytorch_is_ready_waits_for_it_and_then_runs(qtbot, tmp_path, one_torch_thread, cold_kernels):
    """The window is up before the kernel has imported torch: Train is queued (and can be called off), not
    refused, and starts by itself when the kernel says what the machine can do."""
    from workbench.ui.main_window import MainWindow

    # Its own kernel; and, as in the app, a pre-started run kernel that imports torch alongside it (not after).
    window = MainWindow(runs_dir=tmp_path / "runs", db=tmp_path / "runs.sqlite", prestart=True)
    qtbot.addWidget(window)
    assert not window.kernel.capabilities.known and window.kernel_label.text() == "Starting PyTorch…"
    set_config(window, epochs=1, max_steps=20, hidden_dim=16)
    assert window.training.train()
    assert window.state_label.text() == "Train starts when PyTorch is ready…"
    assert window.named_actions["stop"].isEnabled() and not window.named_actions["train"].isEnabled()
    with qtbot.waitSignal(window.training.runFinished, timeout=120_000) as finished:
        pass
    assert isinstance(finished.args[0], RunFinished) and finished.args[0].steps == 20
    assert window.kernel_label.text().startswith("torch ")
    window.close()
    assert window.kernel.state == "closed"


@pytest.mark.slow
def test_a_queued_train_can_be_called_off_before_pytorch_is_ready(qtbot, tmp_path, cold_kernels):
    from workbench.ui.main_window import MainWindow

    window = MainWindow(runs_dir=tmp_path / "runs", db=tmp_path / "runs.sqlite", prestart=False)
    qtbot.addWidget(window)
    assert window.training.train() and window.state.train_waiting
    window.training.stop()
    assert not window.state.train_waiting and window.named_actions["train"].isEnabled()
    qtbot.waitUntil(lambda: window.kernel.capabilities.known, timeout=120_000)
    assert not window.runner.training  # nothing started when PyTorch became ready
    window.close()


@pytest.mark.slow
def test_two_processes_from_the_app_fill_the_plots_and_stop_cleanly(window, qtbot):
    """One launch (two processes cost seconds to start): it trains an epoch, fills the plots, and Stop ends it with
    identical replicas and no process left."""
    from PySide6.QtWidgets import QSpinBox

    spin = window.findChild(QSpinBox, "processesSpin")
    spin.setValue(2)
    assert window.setup.processes() == 2
    set_config(window, epochs=10_000, batch_size=64)
    window.training.train()
    steps_per_epoch = 4000 // 64
    qtbot.waitUntil(lambda: window.progress.step > steps_per_epoch, timeout=180_000)  # past the first validation
    assert len(_processes_of_this_test()) >= 3  # torchrun and its two ranks
    with qtbot.waitSignal(window.training.runFinished, timeout=30_000) as stopped:
        window.training.stop()
    result = stopped.args[0]
    assert isinstance(result, RunFinished) and result.stopped and not window.runner.training
    assert len(result.results.replica_checksums) == 2 and len(set(result.results.replica_checksums)) == 1
    assert window.plots.point_counts()["loss"] == result.steps
    assert result.results.val_accuracy is not None  # its epoch was validated across both processes
    assert _processes_of_this_test() == []  # Stop ended the whole process group


def _processes_of_this_test() -> list[tuple[int, str]]:
    """Live processes that inherited this test's own WORKBENCH_CONFIG_DIR (see tests/ui/conftest.py)."""
    import os

    from ..helpers import processes_with_env

    return processes_with_env("WORKBENCH_CONFIG_DIR", os.environ["WORKBENCH_CONFIG_DIR"])


def test_an_uneven_batch_for_two_processes_is_explained_before_training(window):
    from PySide6.QtWidgets import QSpinBox

    set_config(window, batch_size=33)
    window.findChild(QSpinBox, "processesSpin").setValue(2)
    assert "split evenly over 2 processes" in window.setup.problem.text()
    assert not window.named_actions["train"].isEnabled()


def test_a_spare_process_that_cannot_start_is_a_notice_and_runs_still_end(qtbot, tmp_path, monkeypatch, kernel):
    """Starting a kernel can fail with an OSError (no socket, no temp file): the window logs it, and a run that
    cannot start its own kernel ends as a failure instead of leaving the window busy."""
    from workbench.core.run.process import ChildError
    from workbench.ui.features import run_control
    from workbench.ui.main_window import MainWindow

    def no_process(*args, **kwargs):
        raise ChildError("cannot start the training process: Too many open files")

    monkeypatch.setattr(run_control, "ChildProcess", no_process)
    window = MainWindow(runs_dir=tmp_path / "runs", db=tmp_path / "runs.sqlite", kernel=kernel)
    qtbot.addWidget(window)

    def logged() -> bool:
        return any("could not pre-start" in window.log.item(i).text() for i in range(window.log.count()))

    qtbot.waitUntil(logged, timeout=10_000)
    qtbot.waitUntil(lambda: window.kernel.capabilities.known, timeout=120_000)
    set_config(window, epochs=1)
    with qtbot.waitSignal(window.training.runFinished, timeout=60_000) as finished:
        window.training.train()
    assert isinstance(finished.args[0], RunFailed) and "Too many open files" in finished.args[0].message
    actions = window.named_actions
    assert not window.busy and actions["train"].isEnabled() and not actions["stop"].isEnabled()
    window.close()


def test_settings_of_version_1_lose_the_in_process_runner_and_keep_the_process_count(qtbot, tmp_path, kernel):
    from workbench.ui.main_window import MainWindow
    from workbench.ui.settings import open_settings

    settings = open_settings()
    settings.setValue("settings_version", 1)
    settings.setValue("in_process", True)
    settings.sync()
    window = MainWindow(runs_dir=tmp_path / "runs", db=tmp_path / "runs.sqlite", prestart=False, kernel=kernel)
    qtbot.addWidget(window)
    settings = open_settings()
    assert settings.value("in_process") is None and int(settings.value("settings_version")) == 2
    window.setup.set_processes(2)
    window.close()
    window = MainWindow(runs_dir=tmp_path / "runs", db=tmp_path / "runs.sqlite", prestart=False, kernel=kernel)
    qtbot.addWidget(window)
    assert window.setup.processes() == 2  # persisted with the other settings
    window.close()


def test_closing_right_after_train_leaves_no_process(qtbot, tmp_path, one_torch_thread, kernel):
    """Shutdown can come while the run's kernel is still starting: neither it nor the spare outlives the window."""
    from workbench.ui.main_window import MainWindow

    window = MainWindow(runs_dir=tmp_path / "runs", db=tmp_path / "runs.sqlite", kernel=kernel)
    qtbot.addWidget(window)
    qtbot.waitUntil(lambda: window.runner.spare is not None and window.kernel.capabilities.known, timeout=120_000)
    set_config(window, epochs=10_000)
    assert window.training.train()
    assert window.runner.shutdown()
    assert _processes_of_this_test() == []
    window.close()


def test_stop_is_offered_for_runs_only_and_stopping_shows_until_the_run_ends(window, qtbot, planted_break_spec):
    set_config(window, model=planted_break_spec, backend="aot_eager")
    with qtbot.waitSignal(window.compile_insight.explainFinished, timeout=60_000):
        window.compile_insight.explain()
        assert window.busy and not window.named_actions["stop"].isEnabled()  # Explain cannot be interrupted
    set_config(window, epochs=10_000)
    window.training.train()
    qtbot.waitUntil(lambda: window.progress.step > 0, timeout=60_000)
    step = Step(step=window.progress.step + 1, epoch=1, loss=1.0, samples_per_s=1.0, step_seconds=0.01,
                memory=MemorySample())
    with qtbot.waitSignal(window.training.runFinished, timeout=2_000):
        window.training.stop()
        window.training.on_events([step])  # a batch already on its way when Stop was pressed
        assert window.state_label.text() == "Stopping after this step…"
    assert window.state_label.text() == "Stopped"


def test_settling_the_spare_waits_until_it_has_imported_torch(qtbot, tmp_path, one_torch_thread, kernel):
    """What `bench --gui` does before each headless run, so that no import is timed against it."""
    from workbench.ui.main_window import MainWindow

    window = MainWindow(runs_dir=tmp_path / "runs", db=tmp_path / "runs.sqlite", kernel=kernel)
    qtbot.addWidget(window)
    qtbot.waitUntil(lambda: window.runner.spare is not None, timeout=10_000)
    window.runner.settle_spare()
    assert window.runner.spare.ready  # connected and past its imports: the next run starts at once
    window.close()
    assert _processes_of_this_test() == []
