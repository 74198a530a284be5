"""Every view that shows "the current run" lets it go when it goes away, as a class: a deleted run leaves no curves,
headline, panels or Predict model behind; a failure banner does not stay over another run opened after it; a run
that fails before its first step neither waits for it for ever nor keeps the last run's statistics."""

from __future__ import annotations

import pytest
from PySide6.QtWidgets import QMessageBox

from workbench.core.ground.answers import CheckpointInfo
from workbench.core.ground.config import TrainConfig
from workbench.core.ground.events import RunFailed
from workbench.core.ground.results import RunResults
from workbench.core.history.runs import RunStore

from ..support.layers_history import layered_events, record


@pytest.fixture
def yes(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))  # the test's own trash
    monkeypatch.setattr(QMessageBox, "question", lambda *_args: QMessageBox.Yes)


def _finished_run(db) -> int:
    """A finished run with steps, per-layer statistics and alerts in the history."""
    run_id = record(db, layered_events())
    with RunStore(db) as store:
        store.db.execute("UPDATE runs SET status = 'finished' WHERE id = ?", (run_id,))
    return run_id


def _open_recorded(window, qtbot, tmp_path) -> int:
    """A recorded run with steps and statistics, opened from the Runs dock, its checkpoint the model for Predict."""
    run_id = _finished_run(window.runs.db)
    checkpoint = tmp_path / "run" / "checkpoint.pt"
    checkpoint.parent.mkdir()
    checkpoint.write_bytes(b"weights")
    with RunStore(window.runs.db) as store:
        store.db.execute("UPDATE runs SET checkpoint = ?, out_dir = ? WHERE id = ?",
                         (str(checkpoint), str(checkpoint.parent), run_id))
    window.runs.refresh()
    qtbot.waitUntil(lambda: window.runs.model.total == 1)
    window.runs.select_ids([run_id])
    window.runs.open_selected()
    qtbot.waitUntil(lambda: window.state.shown_run == run_id)
    # the kernel's answer for its checkpoint, as Checkpoints.load hears it
    window.checkpoints._loaded(CheckpointInfo(str(checkpoint.resolve()), TrainConfig(), RunResults(val_accuracy=0.9),
                                              tuple("0123456789"), {}), f"run #{run_id}", False)
    assert window.state.model is not None and window.plots.headline.figures()["samples_per_s"] != "—"
    return run_id


def test_deleting_the_run_on_show_clears_every_view_of_it(waiting_window, qtbot, tmp_path, yes):
    window = waiting_window
    run_id = _open_recorded(window, qtbot, tmp_path)
    assert window.layers_panel.summary is not None
    window.runs.select_ids([run_id])
    window.runs.delete_selected()
    qtbot.waitUntil(lambda: window.state.shown_run is None)
    assert f"#{run_id} was deleted" in window.plots.empty_text.toPlainText()
    assert set(window.plots.headline.figures().values()) <= {"—", ""}
    assert window.layers_panel.summary is None
    assert window.state.model is None and window.predict.source.text().startswith("No model yet")


def test_deleting_an_overlaid_run_takes_the_overlay_away(waiting_window, qtbot, tmp_path, yes):
    window = waiting_window
    first, second = _finished_run(window.runs.db), _finished_run(window.runs.db)
    window.runs.refresh()
    qtbot.waitUntil(lambda: window.runs.model.total == 2)
    window.runs.select_ids([first, second])
    window.runs.compare_selected()
    qtbot.waitUntil(lambda: set(window.state.compared) == {first, second} and bool(window.plots.overlays))
    window.runs.select_ids([second])
    window.runs.delete_selected()
    qtbot.waitUntil(lambda: window.state.compared == ())
    assert window.plots.overlays == []


def test_a_failure_banner_does_not_stay_over_another_run_opened_after_it(waiting_window, qtbot, tmp_path):
    window = waiting_window
    window.feedback.show("error", "Run failed (model): boom")
    _open_recorded(window, qtbot, tmp_path)
    assert window.banner.isHidden()


def test_a_run_failing_before_its_first_step_says_so_and_keeps_nothing_of_the_last(waiting_window, qtbot, tmp_path):
    window = waiting_window
    _open_recorded(window, qtbot, tmp_path)
    window.training._begun(None, "Starting…")  # Train pressed: the last run's views go at once
    assert window.layers_panel.summary is None and "Starting" in window.plots.empty_text.toPlainText()
    window.plots.add_events([RunFailed(kind="data", message="no such folder: /nope", hint="choose a folder")])
    assert "failed before its first step" in window.plots.empty_text.toPlainText()
    assert "Waiting" not in window.plots.empty_text.toPlainText()
