"""A run shown while another process records it goes on drawing, read by cursor (panels/runs/following.py): each
read brings only what was recorded since the last one, and following ends with the run."""

from __future__ import annotations

from workbench.core.ground.config import TrainConfig
from workbench.core.ground.events import EpochEnd, MemorySample, RunFinished, Step
from workbench.core.history.runs import RunStore


def _steps(first: int, last: int) -> list[Step]:
    return [Step(step=n, epoch=1, loss=1.0 / n, samples_per_s=100.0, step_seconds=0.01, memory=MemorySample(rss=1.0))
            for n in range(first, last + 1)]


def test_a_run_training_elsewhere_goes_on_drawing_from_its_new_steps_only(waiting_window, qtbot):
    window = waiting_window
    with RunStore(window.runs.db) as store:  # "another process": this test's, alive, so never marked interrupted
        run_id = store.start_run(TrainConfig().to_dict())
        store.append_events(run_id, 0, _steps(1, 50))
    window.runs.refresh()
    qtbot.waitUntil(lambda: window.runs.model.total == 1)
    window.runs.select_ids([run_id])
    window.runs.open_selected()
    qtbot.waitUntil(lambda: window.state.shown_run == run_id)
    follower = window.recorded_runs.follower
    assert follower.following and follower.cursor == 49
    assert window.plots.step_loss.buffer.size == 50
    with RunStore(window.runs.db) as store:
        store.append_events(run_id, 50, _steps(51, 80))
        store.append_events(run_id, 80, [EpochEnd(epoch=1, train_loss=0.1, val_loss=0.2, val_accuracy=0.9,
                                                  seconds=1.0)])
    qtbot.waitUntil(lambda: window.plots.step_loss.buffer.size == 80, timeout=10_000)
    assert window.plots.val_accuracy.buffer.size == 1
    with RunStore(window.runs.db) as store:
        store.append_events(run_id, 81, [RunFinished(steps=80, epochs=1, seconds=2.0, stopped=False)],
                            {"status": "finished"})
    qtbot.waitUntil(lambda: not follower.following, timeout=10_000)
    assert sum(follower.read_counts) == 32  # 30 steps, an epoch and the end: nothing was read twice
    assert window.plots.step_loss.buffer.size == 80
