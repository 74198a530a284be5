"""A run of several processes that stops stepping (ui/features/stacks.py, ui/dialogs/stacks.py): the Ranks tab says
so and offers Collect stacks; the ranks' answers are shown a column a rank, the first that differs marked and the
row where it parts from the others highlighted; steps coming again, or the run's end, take the notice away. The
ranks here are stand-ins (what the runner would collect); collecting from real ranks on two hosts is
tests/e2e/test_across_hosts.py's."""

from __future__ import annotations

from PySide6.QtGui import QAction, QGuiApplication

from workbench.core.ground.events import MemorySample, RunFinished, Step
from workbench.core.ground.hang import StepWatch
from workbench.core.ground.stacks import Collective, RankStack

from ..core.test_stacks import IN_BACKWARD, STUCK


def _step(n: int) -> Step:
    return Step(step=n, epoch=1, loss=1.0, samples_per_s=10.0, step_seconds=0.1, memory=MemorySample(rss=1.0))


def test_a_silent_run_offers_its_ranks_stacks_side_by_side(waiting_window, qtbot, monkeypatch):
    window = waiting_window
    stacks = [RankStack(rank=0, host="a", pid=10, dump=IN_BACKWARD, collectives=(
                  Collective(32, "gloo:all_reduce", "scheduled", "12730"),)),
              RankStack(rank=1, host="b", pid=11, dump=STUCK, collectives=(
                  Collective(31, "gloo:all_reduce", "scheduled", "12730"),))]
    monkeypatch.setattr(type(window.runner), "stackable", property(lambda runner: True))
    monkeypatch.setattr(window.runner, "collect_stacks", lambda: stacks)
    now = [0.0]
    feature = window.stacks
    feature.watch = StepWatch(after_s=30, clock=lambda: now[0])
    ranks = window.plots.ranks
    window.runner.events.emit([_step(20)])
    assert feature.timer.isActive() and ranks.collect.isHidden()
    now[0] = 31
    feature.check()  # the timer's tick
    assert not ranks.collect.isHidden() and ranks.hang.text().startswith("No step for 31 s: a rank may be stuck")
    assert window.plots.machine_tabs.currentWidget() is ranks  # in front, though no RankTimes had come yet
    assert window.findChild(QAction, "collectStacksAction").shortcut().toString() == "Ctrl+Shift+T"
    ranks.collect.click()
    qtbot.waitUntil(lambda: feature.dialog is not None, timeout=10_000)
    dialog = feature.dialog
    assert dialog.summary.text().startswith("rank 1 on b is the first that differs: it is in wait_for_release")
    table = dialog.stacks
    assert [table.horizontalHeaderItem(c).text() for c in range(2)] == ["rank 0@a", "⚠ rank 1@b"]
    row = next(r for r in range(table.rowCount()) if table.item(r, 1).text().startswith("forward"))
    assert table.item(row, 0).text().startswith("_engine_run_backward")  # where they part, side by side
    highlighted = [table.item(r, 1).background().color().name() == "#ffe0b2" for r in range(table.rowCount())]
    assert highlighted.index(True) == row and highlighted.count(True) == 1
    assert dialog.collectives.item(0, 1).text() == "#31 gloo:all_reduce 12730 scheduled"
    dialog.copy()
    assert QGuiApplication.clipboard().text() == dialog.text() and "│" in dialog.text()
    window.runner.events.emit([_step(30)])  # it stepped again
    assert ranks.collect.isHidden()
    now[0] = 70
    feature.check()
    assert not ranks.collect.isHidden()
    window.training.runFinished.emit(RunFinished(steps=30, epochs=1, seconds=70.0, stopped=False))
    assert ranks.collect.isHidden() and not feature.timer.isActive()


def test_steps_the_throttle_held_back_are_shown_when_the_run_goes_silent():
    """A read-back hands over a block of steps at once; the throttle sends the first and holds the rest until the
    next event. A run that hangs right after has no next event: its last steps still go out."""
    import threading

    from workbench.ui.features.run_control import EventForwarder

    batches, sent = [], threading.Event()
    forward = EventForwarder(lambda batch: (batches.append(batch), sent.set()))
    try:
        forward(_step(9))
        sent.clear()
        forward(_step(10))  # within the throttle's interval of step 9: held
        assert sent.wait(10)  # no other event comes: the ticker sends it
        assert [[event.step for event in batch] for batch in batches] == [[9], [10]]
    finally:
        forward.close()
