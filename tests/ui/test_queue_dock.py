"""The Queue dock and the window working the queue (ui/panels/queue.py, ui/features/queue.py): runs lined up from the
form (what each changes from the form shown), reordered, trained by the window one after another when the queue
goes on; then, the window closing with work queued and "Keep working in the background" chosen, a runner of its own
trains the rest (a bad entry failing alone), and the host's entry is handed over to the host, which trains it on its
own; the window opened again later takes the host's run back, and the dock shows how each ended."""

from __future__ import annotations

import time

import pytest

from PySide6.QtGui import QAction

from workbench.core.history.queue import FAILED, FINISHED, QUEUED, RUNNING, RunQueue
from workbench.core.history.runs import RunStore

from ..helpers import set_config


def _rows(panel) -> list[list[str]]:
    table = panel.table
    return [[table.item(row, column).text() for column in range(table.columnCount())]
            for row in range(table.rowCount())]


@pytest.mark.slow  # four real runs, two of them in a runner of its own
def test_runs_queued_from_the_form_train_in_order_and_go_on_without_the_window(window, qtbot, tmp_path, kernel,
                                                                               loopback_hosts, monkeypatch):
    monkeypatch.setenv("WORKBENCH_SSH", loopback_hosts[0].ssh_command)  # (the background runners' too)
    told = []  # the desktop's notifications, while the user is elsewhere
    monkeypatch.setattr(window, "isActiveWindow", lambda: False)
    monkeypatch.setattr(window.notifier, "backend", lambda title, text, level: told.append((title, text, level)))
    try:
        there = _queue_and_work(window, qtbot, tmp_path, loopback_hosts[0], told)
    finally:  # whatever failed: the window closes without asking what to do with queued work
        window.queue.close_with("cancel")
    _reopened(window, qtbot, tmp_path, kernel, there, loopback_hosts[0])


def _reopened(window, qtbot, tmp_path, kernel, there: int, host) -> None:
    """The window opened again later: what the host trained on its own is taken back into this history."""
    from workbench.ui.main_window import MainWindow

    again = MainWindow(runs_dir=tmp_path / "runs", db=window.db, prestart=False, kernel=kernel)
    qtbot.addWidget(again)
    try:
        qtbot.waitUntil(lambda: again.queue.queue.entry(there).state == FINISHED, timeout=120_000)
        entry = again.queue.queue.entry(there)
        with RunStore(window.db) as store:
            run = store.get(entry.run_id)
        assert run.host == host.address and run.status == "finished" and run.config["seed"] == 6
        again.queue.show_queue()
        assert [(row[1], row[2]) for row in _rows(again.queue.panel)] == [(FINISHED, "this computer")] * 3 + [
            (FAILED, "this computer"), (FINISHED, host.address)]
    finally:
        again.close()


def _queue_and_work(window, qtbot, tmp_path, host, told: list) -> None:
    feature, panel = window.queue, window.queue.panel
    panel.pause.click()  # nothing starts while the entries are lined up
    tiny = {"epochs": 1, "max_steps": 20, "hidden_dim": 16, "device": "cpu"}
    set_config(window, **tiny, lr=0.01)
    queue_action = window.findChild(QAction, "queueAction")
    assert queue_action.shortcut().toString() == "Ctrl+Shift+Q"
    queue_action.trigger()
    set_config(window, **tiny, lr=0.002)
    queue_action.trigger()
    first, second = (entry.id for entry in feature.queue.entries())
    assert [(row[0], row[1], row[2], row[3]) for row in _rows(panel)] == [
        (str(first), QUEUED, "this computer", "lr=0.01"), (str(second), QUEUED, "this computer", "as the form")]
    panel.table.selectRow(1)
    panel.buttons["up"].click()
    assert [entry.id for entry in feature.queue.entries()] == [second, first]
    panel.table.selectRow(1)
    panel.buttons["edit"].click()  # its settings into the form; Add to queue saves the form into it
    assert window.setup.config().lr == 0.01 and _rows(panel)[1][1] == "queued (editing)"
    set_config(window, **tiny, lr=0.005)
    queue_action.trigger()
    assert [(entry.id, entry.config.lr) for entry in feature.queue.entries()] == [(second, 0.002), (first, 0.005)]
    assert panel.summary.text() == "2 queued · 0 running · paused: nothing starts"
    panel.pause.click()  # go on: the window trains them, one after the other
    feature.tick()
    qtbot.waitUntil(lambda: all(e.state == FINISHED for e in feature.queue.entries()), timeout=120_000)
    runs = [entry.run_id for entry in feature.queue.entries()]
    [(title, text, level)] = [note for note in told if note[0] == "Queue done"]
    assert text.startswith("2 finished; best val accuracy ") and level == "info"
    assert None not in runs and len(set(runs)) == 2 and _rows(panel)[0][4] == f"#{runs[0]}"

    panel.pause.click()  # more, lined up while paused; then the window "closes" keeping the queue working
    good = feature.queue.add(window.setup.config().replace(seed=5))
    bad = feature.queue.add(window.setup.config().replace(model=str(tmp_path / "gone.py:Net")), label="gone")
    there = feature.queue.add(window.setup.config().replace(seed=6), place=host.address, python=host.remote_python)
    feature.show_queue()
    ends = [row[6] for row in _rows(panel)[2:4]]  # from the two runs just measured: the same settings
    assert all(text.startswith("≈ ") for text in ends), ends  # (tiny runs: "≈ 0:00"; the sums: the test below)
    assert feature.close_with("keep")
    feature.timer.stop()  # (as closing does: this window works no more)
    deadline = time.monotonic() + 180
    with RunQueue(window.db) as queue:  # another reader: the background runner writes it
        while {e.state for e in queue.entries() if e.id in (good, bad)} & {QUEUED, RUNNING} and (
                time.monotonic() < deadline):
            time.sleep(0.5)
        states = {entry.id: (entry.state, entry.error) for entry in queue.entries()}
    assert states[good] == (FINISHED, "") and states[bad][0] == FAILED and "does not exist" in states[bad][1]
    with RunQueue(window.db) as queue:  # handed over to the host: it trains it with no connection to this computer
        assert queue.entry(there).state == RUNNING and queue.entry(there).handed
    return there


def test_each_entry_ends_after_those_before_it_and_an_unmeasured_one_makes_the_rest_a_lower_bound():
    from workbench.core.ground.config import TrainConfig
    from workbench.core.history.queue import QueueEntry
    from workbench.core.history.queue_eta import ends_in

    def entry(entry_id: int, state: str, started: float | None = None) -> QueueEntry:
        return QueueEntry(id=entry_id, position=entry_id, state=state, place="", config=TrainConfig(),
                          started=started)

    entries = [entry(1, "finished"), entry(2, RUNNING, started=1000.0), entry(3, QUEUED), entry(4, QUEUED),
               entry(5, QUEUED)]
    texts = ends_in(entries, {2: 100.0, 3: 60.0, 4: None, 5: 30.0}, now=1040.0)
    assert texts == {2: "≈ 1:00", 3: "≈ 2:00", 4: "—", 5: "≥ 2:30"}  # 60 s left of the running one, then each


def test_dragging_a_queued_row_onto_another_moves_it_there_and_nothing_else_moves(qtbot, monkeypatch):
    from PySide6.QtCore import QMimeData, QPoint, Qt
    from PySide6.QtGui import QDropEvent

    from workbench.core.ground.config import TrainConfig
    from workbench.core.history.queue import QueueEntry
    from workbench.ui.panels.queue import QueuePanel

    def entry(entry_id: int, state: str = QUEUED) -> QueueEntry:
        return QueueEntry(id=entry_id, position=float(entry_id), state=state, place="",
                          config=TrainConfig(seed=entry_id))

    panel = QueuePanel()
    qtbot.addWidget(panel)
    panel.resize(900, 400)
    panel.show()
    panel.show_entries([entry(1, FINISHED), entry(2), entry(3), entry(4)], paused=False, form=TrainConfig())
    moves = []
    panel.moveRequested.connect(lambda entry_id, index: moves.append((entry_id, index)))

    def drag(row: int, onto: int, lower_half: bool) -> None:
        panel.table.selectRow(row)
        rect = panel.table.visualRect(panel.table.model().index(onto, 0))
        point = QPoint(rect.center().x(), rect.bottom() - 1 if lower_half else rect.top() + 1)
        drop = QDropEvent(point, Qt.MoveAction, QMimeData(), Qt.LeftButton, Qt.NoModifier)
        drop.setDropAction(Qt.MoveAction)
        panel.table.dropEvent(drop)  # as Qt delivers a drag's drop from the table itself
        assert drop.dropAction() == Qt.IgnoreAction or not drop.isAccepted()  # the table moves no row itself

    drag(1, onto=2, lower_half=False)  # a drop with no drag of the table's own behind it is not a move
    assert moves == []
    monkeypatch.setattr(panel.table, "dragged_here", lambda event: True)  # (a made-up drop has no drag behind it)
    drag(3, onto=1, lower_half=False)  # entry 4 above entry 2: first among the queued
    drag(1, onto=3, lower_half=True)  # entry 2 below entry 4: last
    drag(2, onto=3, lower_half=False)  # entry 3 above entry 4: after entry 2, so second
    drag(0, onto=2, lower_half=False)  # a finished entry stays where it is
    assert moves == [(4, 0), (2, 2), (3, 1)]
    assert [panel.table.item(row, 0).text() for row in range(4)] == ["1", "2", "3", "4"]  # until the queue is read


def test_resume_is_offered_for_an_interrupted_or_cancelled_entry_whose_run_started(qtbot):
    from workbench.core.ground.config import TrainConfig
    from workbench.core.history.queue import CANCELLED, INTERRUPTED, QueueEntry
    from workbench.ui.panels.queue import QueuePanel

    entries = [QueueEntry(id=1, position=1.0, state=INTERRUPTED, place="", config=TrainConfig(), run_id=7),
               QueueEntry(id=2, position=2.0, state=CANCELLED, place="", config=TrainConfig()),  # never started
               QueueEntry(id=3, position=3.0, state=FAILED, place="", config=TrainConfig(), run_id=8),
               QueueEntry(id=4, position=4.0, state=INTERRUPTED, place="", config=TrainConfig(), run_id=9,
                          sweep="s")]  # a trial: its study asks new settings
    panel = QueuePanel()
    qtbot.addWidget(panel)
    panel.show_entries(entries, paused=False, form=TrainConfig())
    offered = []
    for row in range(4):
        panel.table.selectRow(row)
        offered.append(panel.buttons["resume"].isEnabled())
    assert offered == [True, False, False, False]
    panel.table.selectRow(0)
    with qtbot.waitSignal(panel.resumeRequested) as asked:
        panel.buttons["resume"].click()
    assert asked.args == [1]


def test_the_window_loads_no_optuna_until_a_sweep_needs_it():
    """The queue works a sweep's trials, but Optuna (half a second to import) is loaded by the first trial or the
    Sweep dialog, never with the window."""
    import subprocess
    import sys

    code = ("import sys; import workbench.ui.main_window, workbench.ui.features.registry, "
            "workbench.core.run.queue_handover; print('optuna' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
