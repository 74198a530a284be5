"""A continued run's plots: its parent's curves before its own steps, and the runs named as the Runs dock names
them."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QInputDialog, QPushButton

from ..helpers import set_config
from ..support.runs_history import listed


def test_a_continued_run_plots_its_parents_curves_before_its_own_steps(window, qtbot, monkeypatch):
    """Before: the continuation's events hold only its own steps (17 … 32 here), and the plots showed those alone,
    from step 17, as if the run had started there."""
    set_config(window, epochs=1, batch_size=250, hidden_dim=16)  # 16 steps an epoch
    with qtbot.waitSignal(window.training.runFinished, timeout=60_000):
        window.training.train()
    assert window.plots.run_name == "#1"
    run_id = window.runs.id_for_out_dir(window.state.last_run_dir)
    qtbot.waitUntil(lambda: window.runs.model.row_of(run_id) is not None)  # listed off the GUI thread
    window.runs.select_ids([run_id])
    monkeypatch.setattr(QInputDialog, "getInt", lambda *args: (2, True))
    with qtbot.waitSignal(window.training.runFinished, timeout=60_000):
        qtbot.mouseClick(window.runs.findChild(QPushButton, "continueButton"), Qt.LeftButton)
    qtbot.waitUntil(lambda: bool(window.plots.parent_items), timeout=30_000)  # read off the GUI thread
    plots = window.plots
    assert plots.run_name == "#2"
    parent = {plot: item for plot, item in plots.parent_items}
    x, _ = parent[plots.loss_plot].getOriginalDataset()
    assert list(x) == list(range(1, 17)) and parent[plots.loss_plot].name() == "#1 (continued from)"
    assert plots.accuracy_plot in parent
    plots.redraw()
    own, _ = plots.step_loss.item.getData()
    assert own[0] == 17 and own[-1] == 32  # the continuation's own steps go on after its parent's
    low, high = plots.loss_plot.getViewBox().viewRange()[0]
    assert low < 1 and high >= 32
    assert "#1 (continued from)" in plots.loss_plot.accessibleDescription()

    # Opened again from the history (another run shown first): named, with its parent's curves again.
    child_id = window.runs.id_for_out_dir(window.state.last_run_dir)
    listed(window.runs, qtbot)
    assert window.runs.parent_of(child_id) == run_id
    with qtbot.waitSignal(window.runs.openRequested, timeout=30_000):
        window.runs.load_runs([run_id], lambda runs: window.runs.openRequested.emit(runs[0]))
    assert plots.run_name == "#1" and not plots.parent_items  # a run that continues none
    window.runs.load_runs([child_id], lambda runs: window.runs.openRequested.emit(runs[0]))
    qtbot.waitUntil(lambda: bool(plots.parent_items), timeout=30_000)
    assert plots.run_name == "#2"
    x, _ = dict(plots.parent_items)[plots.loss_plot].getOriginalDataset()
    assert list(x) == list(range(1, 17))
