"""A run's steps as columns (history/step_columns.py) and in the history: each step reads back as it was recorded
(NaN, infinities and None kept apart), in its place among the other events, in about a tenth of its JSON's bytes."""

from __future__ import annotations

import math
import sqlite3

import numpy as np
import pytest

from workbench.core.ground.config import TrainConfig
from workbench.core.ground.events import EpochEnd, MemorySample, Step, to_json
from workbench.core.history.curves import curves_from_columns, curves_from_events
from workbench.core.history.runs import RunStore, RunStoreError
from workbench.core.history.step_columns import block_of, pack, unpack


def _step(n: int, **fields) -> Step:
    values = dict(step=n, epoch=(n - 1) // 10 + 1, loss=2.0 / n, samples_per_s=1000.0 + n, step_seconds=0.01,
                  memory=MemorySample(rss=500.0 + n), accuracy=n / 100, wall=1.7e9 + n / 3)
    return Step(**{**values, **fields})


ODD = [_step(1, compiling=True, memory=MemorySample(allocated=1.5, reserved=2.0, peak=3.25)),
       _step(2, loss=math.nan, accuracy=None, wall=None),  # a diverged loss is NaN; a missing accuracy is None
       _step(3, loss=math.inf, loss_scale=65536.0, warmup=True),
       _step(4, accuracy=math.nan, profiled=True, memory=MemorySample()),
       _step(5, loss=-0.0, samples_per_s=1e-300, step_seconds=1e300)]


def test_a_block_reads_back_every_step_as_it_was_recorded():
    steps = ODD + [_step(n) for n in range(6, 300)]
    seqs = list(range(3, 3 + 2 * len(steps), 2))  # every other event of the stream is a step
    block = unpack(pack(block_of(seqs, steps)))
    assert block.seq.tolist() == seqs
    assert [to_json(step) for step in block.steps()] == [to_json(step) for step in steps]
    assert block.steps()[1].accuracy is None and math.isnan(block.steps()[3].accuracy)  # None is not NaN


def test_a_block_is_a_tenth_of_its_json():
    rng = np.random.default_rng(0)
    steps = [_step(n, loss=float(rng.normal(1, 0.1)), accuracy=float(rng.random()),
                   memory=MemorySample(rss=float(500 + rng.random()))) for n in range(1, 2001)]
    packed = len(pack(block_of(list(range(2000)), steps)))
    assert packed < sum(len(to_json(step)) for step in steps) / 8 and packed / 2000 < 40  # bytes a step


@pytest.mark.parametrize("damage", [b"", b"\x09abc", b"\x01not zlib", b"\x01" + __import__("zlib").compress(b"\x05")])
def test_a_damaged_or_unknown_block_is_refused(damage):
    with pytest.raises(ValueError):
        unpack(damage)


def test_curves_from_columns_are_the_curves_from_events():
    events = [*ODD[:3], EpochEnd(epoch=1, train_loss=1.0, val_loss=0.9, val_accuracy=0.8, seconds=1.0), *ODD[3:]]
    steps = [(seq, e) for seq, e in enumerate(events) if isinstance(e, Step)]
    from_columns = curves_from_columns(block_of([seq for seq, _ in steps], [s for _, s in steps]),
                                       [e for e in events if not isinstance(e, Step)])
    expected = curves_from_events(events)
    for name in ("step", "loss", "throughput_step", "throughput", "accuracy", "wall", "step_seconds", "val_step"):
        assert np.array_equal(getattr(from_columns, name), getattr(expected, name), equal_nan=True), name
    assert sorted(from_columns.memory) == sorted(expected.memory) == ["allocated", "peak", "reserved", "rss"]


@pytest.fixture
def store(tmp_path):
    with RunStore(tmp_path / "runs.sqlite") as store:
        yield store


def test_the_history_keeps_a_batchs_steps_as_one_block_in_their_places(store):
    run_id = store.start_run(TrainConfig().to_dict())
    epoch = EpochEnd(epoch=1, train_loss=1.0, val_loss=0.9, val_accuracy=0.8, seconds=1.0)
    store.append_events(run_id, 0, [_step(1), _step(2), epoch, _step(3)])
    store.append_events(run_id, 4, [_step(4), _step(5)])
    raw = store.db
    assert raw.execute("SELECT COUNT(*) FROM events WHERE type = 'Step'").fetchone()[0] == 0
    assert [tuple(row) for row in raw.execute("SELECT first_seq, first_step, last_step, count FROM step_blocks "
                                              "ORDER BY first_seq")] == [(0, 1, 3, 3), (4, 4, 5, 2)]
    stream = store.get(run_id, with_events=True).events
    assert [to_json(e) for e in stream] == [to_json(e) for e in [_step(1), _step(2), epoch, *map(_step, (3, 4, 5))]]
    assert store.get(run_id, with_events=True, steps=False).events == [epoch]
    assert store.get(run_id, with_events=True, kinds=(EpochEnd,)).events == [epoch]  # what a comparison reads
    assert store.get(run_id, with_events=True, kinds=(Step,)).events == []  # kinds never holds the steps
    assert store.step_block(run_id, after_seq=3).step.tolist() == [4, 5]  # only what came after: a cursor
    stored = store.forget(run_id)  # Undo keeps the blocks too
    assert store.step_block(run_id).step.tolist() == []
    store.put_back(stored)
    assert store.step_block(run_id).step.tolist() == [1, 2, 3, 4, 5]


def test_a_damaged_block_names_its_run(store):
    run_id = store.start_run(TrainConfig().to_dict())
    store.append_events(run_id, 0, [_step(1)])
    store.db.execute("UPDATE step_blocks SET data = ?", (sqlite3.Binary(b"\x01garbage"),))
    with pytest.raises(RunStoreError, match=f"run #{run_id} .* holds data this Workbench cannot read"):
        store.get(run_id, with_events=True)
