"""A long run's steps at coarser levels: a min/max pyramid over its step columns, so that a view reads about as many
rows as it has pixels, at any zoom.

Level k cuts the run's steps into bins of 2**k steps and keeps, of each bin, the rows a plot needs to look as a plot
of every step does: the bin's first and last step, the steps of each series' lowest and highest value (the loss,
the accuracy, the samples/s of steady steps, each memory reading), its first NaN loss (a gap), and each epoch's last
step (where its validation point is drawn). Each level halves the bins of the one below. The rows kept are real
steps with every column (M4 downsampling, Jugel et al., VLDB 2014, with the epochs' ends), so what draws a run —
curves_from_columns, the x axes' clocks — reads a level as it reads the whole run: a level is a StepBlock of fewer
rows. A plot thins a curve to its peaks per stretch of steps (ui items.peaks); the bins' extremes are the same
extremes, so the lines drawn from a level show the same spikes as those drawn from every step.

Levels are stored in chunks of CHUNK rows with their first and last step (`step_levels`, beside `step_blocks`), so a
zoom reads the chunks of the visible range only. They are built once a run's steps stop coming: in the transaction
of its last batch, when it is found interrupted, on upgrade and on import. They are a cache of the columns, never
the only copy: a run without them (still training, or short) is read from its columns.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

import numpy as np

from .step_columns import MEMORY, StepBlock, joined, pack, steady_mask, unpack

FIRST_LEVEL = 6  # bins of 64 steps keep about an eighth of them: a finer level would save little over the columns
LEAST_STEPS = 4096  # a shorter run's columns are read whole in a few ms: it gets no levels
LEAST_ROWS = 256  # the coarsest level kept has at least this many rows
CHUNK = 4096  # rows a stored chunk of a level holds


@dataclass(frozen=True)
class StepView:
    """Some of a run's steps, as a view reads them: `block` holds its rows (every step of the range at level 0,
    else the extremes level `level` kept); `stride`: steps a row stands for on average (1 at level 0)."""

    block: StepBlock
    level: int
    stride: float


def kept_rows(block: StepBlock, level: int) -> np.ndarray:
    """The positions of the rows level `level` keeps of `block` (a whole run's steps), in order."""
    n, size = len(block), 2 ** level
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    bins = -(-n // size)
    starts = np.arange(bins) * size
    keep = np.zeros(n, dtype=bool)
    keep[starts] = True
    keep[np.minimum(starts + size - 1, n - 1)] = True
    keep[np.flatnonzero(np.diff(block.epoch))] = True  # each epoch's last step
    keep[-1] = True
    steady = steady_mask(block)
    loss = block.values["loss"]
    series = [loss, np.where(block.present["accuracy"], block.values["accuracy"], np.nan),
              np.where(steady, block.values["samples_per_s"], np.nan)]
    series += [np.where(block.present[name], block.values[name], np.nan) for name in MEMORY
               if block.present[name].any()]
    for values in series:
        grid = _binned(values, bins, size)
        known = ~np.isnan(grid)
        has = known.any(axis=1)
        keep[(starts + np.where(known, grid, np.inf).argmin(axis=1))[has]] = True
        keep[(starts + np.where(known, grid, -np.inf).argmax(axis=1))[has]] = True
    gaps = np.isnan(_binned(loss, bins, size)) & (np.arange(size) < n - starts[:, None])  # not the padding
    gapped = gaps.any(axis=1)
    keep[(starts + gaps.argmax(axis=1))[gapped]] = True
    return np.flatnonzero(keep)


def _binned(values: np.ndarray, bins: int, size: int) -> np.ndarray:
    """`values` as rows of `size`, the last padded with NaN."""
    padded = np.full(bins * size, np.nan)
    padded[:len(values)] = values
    return padded.reshape(bins, size)


def write_levels(db: sqlite3.Connection, run_id: int, block: StepBlock) -> int:
    """Store the levels of a run's steps (`block`: all of them), replacing any it had; returns how many levels. In
    the caller's transaction."""
    db.execute("DELETE FROM step_levels WHERE run_id = ?", (run_id,))
    if len(block) < LEAST_STEPS:
        return 0
    level = FIRST_LEVEL
    while True:
        rows = block.take(kept_rows(block, level))
        for start in range(0, len(rows), CHUNK):
            chunk = rows.take(np.arange(start, min(start + CHUNK, len(rows))))
            db.execute("INSERT INTO step_levels (run_id, level, first_step, last_step, count, data) "
                       "VALUES (?, ?, ?, ?, ?, ?)",
                       (run_id, level, int(chunk.step[0]), int(chunk.step[-1]), len(chunk), pack(chunk)))
        if len(rows) < 2 * LEAST_ROWS or 2 ** level >= len(block):
            return level - FIRST_LEVEL + 1
        level += 1


def read_view(db: sqlite3.Connection, run_id: int, rows: int, steps: tuple[float, float] | None = None) -> StepView:
    """About `rows` rows (at least that many where the run has more steps) of the run's steps between `steps`
    (first, last; None: all of them): every step when there are no more than `rows` of them in the range, else
    the finest level that holds no more than `rows` there, read from the chunks that cover the range only."""
    span = db.execute("SELECT MIN(first_step), MAX(last_step), COALESCE(SUM(count), 0) FROM step_blocks "
                      "WHERE run_id = ?", (run_id,)).fetchone()
    first, last, total = span
    if not total:
        return StepView(joined([]), 0, 1.0)
    low, high = (first, last) if steps is None else (max(first, steps[0]), min(last, steps[1]))
    share = (high - low + 1) / max(last - first + 1, 1)  # of the run's steps in the range, about
    levels = db.execute("SELECT level, SUM(count) FROM step_levels WHERE run_id = ? GROUP BY level ORDER BY level",
                        (run_id,)).fetchall()
    fitting = [level for level, count in levels if count * share <= rows]
    if total * share <= rows or not levels:
        table, where, level = "step_blocks", "", 0
    else:
        level = fitting[0] if fitting else levels[-1][0]
        table, where = "step_levels", f" AND level = {int(level)}"
    data = db.execute(f"SELECT data FROM {table} WHERE run_id = ?{where} AND last_step >= ? AND first_step <= ? "
                      f"ORDER BY first_step", (run_id, low, high)).fetchall()
    block = joined([unpack(blob) for (blob,) in data])
    inside = np.flatnonzero((block.step >= low) & (block.step <= high))
    block = block.take(inside)
    return StepView(block, level, (high - low + 1) / max(len(block), 1) if level else 1.0)


def merged(coarse: StepBlock, fine: StepBlock) -> StepBlock:
    """A coarse view with a finer one's rows in place of its own over the finer one's steps: a zoomed range read
    finely, the rest as it was."""
    if not len(fine):
        return coarse
    outside = np.flatnonzero((coarse.step < fine.step[0]) | (coarse.step > fine.step[-1]))
    both = joined([coarse.take(outside), fine])
    return both.take(np.argsort(both.step, kind="stable"))
