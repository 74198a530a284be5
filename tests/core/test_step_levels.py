"""A long run's steps at coarser levels (history/step_levels.py): each level keeps every bin's extremes and each
epoch's end, a view reads about as many rows as asked, a zoom reads the finer rows of its range, and levels are
built when a run's steps stop coming (its end, an interruption, an upgrade, an Undo) and never needed to read it."""

from __future__ import annotations

import math
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from workbench.core.ground.config import TrainConfig
from workbench.core.ground.events import EpochEnd, MemorySample, Step, to_json
from workbench.core.history import step_levels
from workbench.core.history.runs import RunStore
from workbench.core.history.step_columns import block_of
from workbench.core.history.step_levels import FIRST_LEVEL, kept_rows, merged, read_view

V3 = Path(__file__).resolve().parent.parent / "data" / "previous-release" / "history-v3.sqlite"
STEPS = 6000
PER_EPOCH = 700


def _steps(n: int = STEPS, seed: int = 0) -> list[Step]:
    rng = np.random.default_rng(seed)
    loss = 2.0 * np.exp(-np.arange(n) / 2000) + rng.normal(0, 0.05, n)
    loss[1234] = 9.0  # a spike
    loss[n - 1679] = math.nan  # a diverged step
    rate = 1000 + rng.normal(0, 20, n)
    return [Step(step=i + 1, epoch=i // PER_EPOCH + 1, loss=float(loss[i]), samples_per_s=float(rate[i]),
                 step_seconds=0.01, memory=MemorySample(rss=500.0 + i % 97), accuracy=float(rng.random()),
                 wall=1.7e9 + i / 10, compiling=i == 0)
            for i in range(n)]


def _block(n: int = STEPS):
    steps = _steps(n)
    return block_of(list(range(len(steps))), steps)


@pytest.mark.parametrize("level", [FIRST_LEVEL, FIRST_LEVEL + 3])
def test_a_level_keeps_each_bins_extremes_and_each_epochs_end(level):
    block = _block()
    kept = block.take(kept_rows(block, level))
    assert len(kept) < len(block) / 4
    size = 2 ** level
    for name in ("loss", "samples_per_s", "accuracy", "rss"):
        values = block.values[name]
        for start in range(0, len(block), size):
            every = values[start:start + size]
            mine = kept.values[name][(kept.step > start) & (kept.step <= start + size)]
            finite = every[~np.isnan(every)]
            assert np.nanmax(mine) == finite.max() and np.nanmin(mine) == finite.min(), (name, start)
    assert 9.0 in kept.values["loss"] and np.isnan(kept.values["loss"]).any()  # the spike and the gap stay
    ends = [int(block.step[block.epoch == epoch][-1]) for epoch in np.unique(block.epoch)]
    assert set(ends) <= set(kept.step.tolist())  # each validation point sits on a step the level has
    assert kept.step[0] == 1 and kept.step[-1] == STEPS and np.all(np.diff(kept.step) > 0)


def _store(tmp_path, steps: list[Step], status: str = "finished") -> tuple[RunStore, int]:
    store = RunStore(tmp_path / "runs.sqlite")
    run_id = store.start_run(TrainConfig().to_dict())
    store.append_events(run_id, 0, steps, {"status": status} if status != "running" else None)
    return store, run_id


def test_a_view_reads_about_the_rows_asked_and_a_zoom_the_finer_rows_of_its_range(tmp_path):
    store, run_id = _store(tmp_path, _steps())
    whole = store.step_view(run_id, rows=500)
    assert whole.level > FIRST_LEVEL and 100 < len(whole.block) <= 500
    assert whole.stride == pytest.approx(STEPS / len(whole.block))
    near = store.step_view(run_id, rows=500, steps=(2001, 4000))
    assert FIRST_LEVEL <= near.level < whole.level
    assert near.block.step[0] >= 2001 and near.block.step[-1] <= 4000 and len(near.block) > len(whole.block) / 3
    close = store.step_view(run_id, rows=500, steps=(3001, 3400))
    assert close.level == 0 and close.block.step.tolist() == list(range(3001, 3401))  # every step of the range
    zoomed = merged(whole.block, close.block)
    assert set(range(3001, 3401)) <= set(zoomed.step.tolist()) and np.all(np.diff(zoomed.step) > 0)
    assert zoomed.step[0] == 1 and zoomed.step[-1] == STEPS  # the rest stays as it was


def test_levels_are_built_when_the_steps_stop_coming_and_never_needed(tmp_path):
    store, running = _store(tmp_path, _steps(), status="running")
    assert store.db.execute("SELECT COUNT(*) FROM step_levels").fetchone()[0] == 0
    view = store.step_view(running, rows=500)
    assert view.level == 0 and len(view.block) == STEPS  # a run still training is read from its columns
    short = store.start_run(TrainConfig().to_dict())
    store.append_events(short, 0, _steps(step_levels.LEAST_STEPS - 1), {"status": "finished"})
    store.append_events(running, STEPS + 1, [EpochEnd(epoch=9, train_loss=1, val_loss=1, val_accuracy=0.5,
                                                      seconds=1)], {"status": "finished"})
    levels = dict(store.db.execute("SELECT run_id, COUNT(DISTINCT level) FROM step_levels GROUP BY run_id"))
    assert levels.get(running, 0) >= 2 and short not in levels  # a short run's columns are its only view
    stored = store.forget(running)
    store.put_back(stored)  # Undo
    assert store.step_view(running, rows=500).level > 0
    store.db.execute("UPDATE runs SET status = 'running', pid = 999999999 WHERE id = ?", (running,))
    store.db.execute("DELETE FROM step_levels")
    assert store.mark_interrupted() == [running]  # killed: its steps have stopped
    assert store.step_view(running, rows=500).level > 0


def test_a_schema_3_history_gains_levels_on_upgrade_losing_no_event(tmp_path):
    copy = tmp_path / "history.sqlite"
    shutil.copy(V3, copy)
    with RunStore(copy, reading=True) as before:  # only reading: read as it is
        assert before.read_only and "step_levels" not in before.tables
        expected = {r.id: [to_json(e) for e in before.get(r.id, with_events=True).events] for r in before.list()}
        assert before.step_view(4, rows=500).level == 0
    with RunStore(copy) as after:
        assert {r.id: [to_json(e) for e in after.get(r.id, with_events=True).events]
                for r in after.list()} == expected
        assert after.step_view(4, rows=500).level > 0
        assert [r[0] for r in after.db.execute("SELECT DISTINCT run_id FROM step_levels")] == [4]
    assert sqlite3.connect(copy).execute("PRAGMA user_version").fetchone()[0] == 4


def test_a_history_without_levels_read_by_an_older_reader_is_the_columns(tmp_path):
    store, run_id = _store(tmp_path, _steps())
    store.db.execute("DROP TABLE step_levels")
    store._tables = None
    view = store.step_view(run_id, rows=500, steps=(10, 19))
    assert view.level == 0 and view.block.step.tolist() == list(range(10, 20))
    assert read_view(sqlite3.connect(tmp_path / "none.sqlite").execute("CREATE TABLE step_blocks (run_id, first_step,"
                     " last_step, count, data, first_seq)").connection, 1, 10).block.step.tolist() == []
