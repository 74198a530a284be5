"""How long a queued run will take, from what this history has measured (torch-free): its steps (the entry's
max_steps, or its epochs × the steps an epoch of its dataset took at its batch size) at the samples/s of the latest
finished run like it (its dataset, backend, device, hidden size and batch size). None when the history has not
measured such a run yet: an estimate is said only where a measurement stands behind it."""

from __future__ import annotations

import math
import sqlite3
from typing import Protocol, Sequence

from ..ground.config import TrainConfig
from ..ground.progress import format_duration

SPEED = """SELECT samples_per_s FROM runs WHERE status = 'finished' AND samples_per_s > 0 AND dataset = ?
    AND backend = ? AND json_extract(config, '$.device') = ? AND json_extract(config, '$.hidden_dim') = ?
    AND json_extract(config, '$.batch_size') = ? ORDER BY id DESC LIMIT 1"""
# A finished run that trained every epoch (no max_steps) says how many samples an epoch of its dataset has.
EPOCH = """SELECT steps, epochs, json_extract(config, '$.batch_size') FROM runs WHERE status = 'finished'
    AND dataset = ? AND json_extract(config, '$.max_steps') IS NULL AND steps > 0 AND epochs > 0
    AND json_extract(config, '$.resume') IS NULL ORDER BY id DESC LIMIT 1"""


def estimate_seconds(db: sqlite3.Connection, config: TrainConfig) -> float | None:
    """The seconds `config` will train for, or None without a measured run like it."""
    try:
        speed = db.execute(SPEED, (config.dataset, config.backend, config.device, config.hidden_dim,
                                   config.batch_size)).fetchone()
        epoch = db.execute(EPOCH, (config.dataset,)).fetchone()
    except sqlite3.OperationalError:  # no runs table yet: nothing measured
        return None
    if speed is None:
        return None
    steps = None
    if epoch is not None:
        samples = epoch[0] / epoch[1] * epoch[2]  # an epoch's training samples, as that run saw them
        steps = config.epochs * math.ceil(samples / config.batch_size)
    if config.max_steps is not None:
        steps = min(steps, config.max_steps) if steps is not None else config.max_steps
    return None if steps is None else steps * config.batch_size / speed[0]


class Queued(Protocol):
    """What ends_in reads of a QueueEntry (queue.py imports this module: no import back)."""

    id: int
    state: str
    started: float | None


def ends_in(entries: Sequence[Queued], estimates: dict[int, float | None], now: float) -> dict[int, str]:
    """When each queued or running entry will have ended, from now, in queue order: the running ones' time left and
    every queued one's before it, each from its measured estimate. "—" for an entry without one; the ones after it
    say "≥": their wait is at least that."""
    texts, total, unknown = {}, 0.0, False
    for entry in entries:
        if entry.state not in ("queued", "running"):
            continue
        left = estimates.get(entry.id)
        if left is not None and entry.state == "running" and entry.started is not None:
            left = max(left - (now - entry.started), 0.0)
        if left is None:
            texts[entry.id], unknown = "—", True
            continue
        total += left
        texts[entry.id] = ("≥ " if unknown else "≈ ") + format_duration(total)
    return texts
