"""Compared long runs are read as views of their steps (a level's rows: history/step_levels.py) and drawn at once;
a zoom reads the visible steps of each again, finer, into the same curves (ui/panels/plots/compared.py)."""

from __future__ import annotations

import numpy as np

from workbench.core.ground.config import TrainConfig
from workbench.core.ground.events import MemorySample, Step
from workbench.core.history.runs import RunStore

STEPS = 8000


def _long_run(db, seed: int) -> int:
    rng = np.random.default_rng(seed)
    with RunStore(db) as store:
        run_id = store.start_run({**TrainConfig().to_dict(), "lr": 0.01 * (seed + 1)})
        steps = [Step(step=n, epoch=1 + n // 1000, loss=float(1 + rng.normal(0, 0.1)), samples_per_s=1000.0,
                      step_seconds=0.01, memory=MemorySample(rss=500.0)) for n in range(1, STEPS + 1)]
        store.append_events(run_id, 0, steps, {"status": "finished", "steps": STEPS})
    return run_id


def _loss_items(window):
    return [items[0] for _i, items in sorted(window.plots._run_items.items())]


def test_compared_long_runs_draw_from_a_level_and_a_zoom_reads_its_steps_finer(waiting_window, qtbot):
    window = waiting_window
    ids = [_long_run(window.runs.db, seed) for seed in (0, 1)]
    window.runs.refresh()
    qtbot.waitUntil(lambda: window.runs.model.total == 2)
    window.runs.select_ids(ids)
    window.runs.compare_selected()
    qtbot.waitUntil(lambda: len(window.plots._run_items) == 2)
    coarse = [item.recorded[0] for item in _loss_items(window)]
    assert all(len(x) < STEPS / 4 and x[0] == 1 and x[-1] == STEPS for x in coarse)  # a level: the whole run
    assert all(curves.stride > 4 for _label, curves in window.plots._overlaid)
    window.plots.steps.setXRange(4001, 4300, padding=0)  # the user zooms to 300 steps
    qtbot.waitUntil(lambda: all(np.isin(np.arange(4001, 4301), item.recorded[0]).all()
                                for item in _loss_items(window)), timeout=10_000)
    fine = [item.recorded[0] for item in _loss_items(window)]
    assert all(x[0] == 1 and x[-1] == STEPS and len(x) < STEPS / 2 for x in fine)  # the rest stays coarse
    assert window.plots.steps.viewRange()[0] == [4001, 4300]  # the zoom holds
