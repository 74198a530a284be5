"""The Profile panel in the window: a run's profile and AMP arrive there, Profile now asks a running run for one,
and a re-opened run brings them back."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from workbench.core.ground.events import RunFinished

from ..helpers import set_config


@pytest.mark.slow
def test_a_profiled_fp16_run_fills_the_profile_panel(window, qtbot):
    set_config(window, epochs=1, profile_steps=5, amp="fp16", loss_scale=2.0 ** 40)
    with qtbot.waitSignal(window.training.runFinished, timeout=120_000) as finished:
        window.training.train()
    assert isinstance(finished.args[0], RunFinished)
    panel = window.profile
    panel.redraw()
    assert panel.report is not None and panel.header.text().startswith("Steps 4–8 profiled (cpu)")
    assert panel.ops_model.rowCount() > 0 and panel.open_trace.isEnabled()
    assert panel.amp is not None and panel.skipped_model.rowCount() > 0  # the planted overflow's skipped steps
    assert not panel.profile_now.isEnabled()  # nothing running to ask
    # Re-opened from the history: the same profile and skipped steps, and the scale's curve from its changes.
    skipped = panel.skipped_model.rowCount()
    window.profile.clear()
    run_id = window.runs.id_for_out_dir(window.state.last_run_dir)
    window.runs.load_runs([run_id], lambda runs: window.recorded_runs.show(runs[0]))
    qtbot.waitUntil(lambda: window.profile.report is not None, timeout=30_000)
    window.profile.redraw()
    assert window.profile.skipped_model.rowCount() == skipped


def test_profile_now_profiles_the_running_runs_next_steps(window, qtbot):
    # Polled, not waitSignal on runner.events twice: a blocker whose wait has ended can still be the target of
    # batches queued from the run's thread (PySide then calls a freed object).
    set_config(window, epochs=10_000)
    window.training.train()
    qtbot.waitUntil(lambda: window.progress.step > 0, timeout=60_000)
    panel = window.profile
    assert panel.profile_now.isEnabled()
    panel.request_steps.setValue(3)
    asked_at = window.progress.step
    qtbot.mouseClick(panel.profile_now, Qt.LeftButton)
    qtbot.waitUntil(lambda: panel.report is not None, timeout=60_000)
    assert panel.report.last_step - panel.report.first_step == 2 and panel.report.first_step > asked_at
    with qtbot.waitSignal(window.training.runFinished, timeout=10_000):
        window.training.stop()
    assert not panel.profile_now.isEnabled()
