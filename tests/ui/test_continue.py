"""Continue training from the Runs dock: the run goes on from its checkpoint, on the same step axis."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QInputDialog, QPushButton

from workbench.core.ground.events import RunFinished

from ..helpers import set_config
from ..support.runs_history import listed


def test_continue_training_goes_on_from_the_selected_runs_checkpoint(window, qtbot, monkeypatch):
    set_config(window, epochs=1, batch_size=250, hidden_dim=16)  # 16 steps an epoch
    with qtbot.waitSignal(window.training.runFinished, timeout=60_000):
        window.training.train()
    run_id = window.runs.id_for_out_dir(window.state.last_run_dir)
    qtbot.waitUntil(lambda: window.runs.model.row_of(run_id) is not None)  # listed off the GUI thread
    window.runs.select_ids([run_id])
    asked = []
    monkeypatch.setattr(QInputDialog, "getInt", lambda *args: asked.append(args[3]) or (2, True))
    with qtbot.waitSignal(window.training.runFinished, timeout=60_000) as finished:
        qtbot.mouseClick(window.runs.findChild(QPushButton, "continueButton"), Qt.LeftButton)
    result = finished.args[0]
    assert asked == [2]  # a finished run of 1 epoch: one more is offered
    assert isinstance(result, RunFinished) and result.steps == 32 and result.epochs == 2
    window.plots.redraw()
    x, _ = window.plots.step_loss.item.getData()
    assert x[0] == 17 and x[-1] == 32  # the steps go on from the checkpoint's
    assert window.setup.config().resume is None  # the form is untouched: the next Train starts afresh
    listed(window.runs, qtbot)
    assert window.runs.proxy.rowCount() == 2
