"""What the per-step plots can put on their x axis, and where a run's steps fall on each.

The optimizer step is what a run counts; the other axes answer other questions (TensorBoard's STEP, RELATIVE and
WALL, and the epoch): the epoch puts runs of different batch sizes side by side, the time since start compares
runs by what they cost, the wall time lines runs up with the day they ran.

A run's `Clock` holds when each of its steps ended, and maps any of its steps to an axis: the live plots build one
as steps arrive, a recorded run's comes from its curves (`clock_of`). Runs recorded before steps carried their wall
time have no wall axis; their time since start is the sum of their steps' own seconds, which leaves out
everything between the steps (compiling before the first, validations), and the axis says so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..ground.errors import WorkbenchError
from .curves import Curves


@dataclass(frozen=True)
class XAxis:
    kind: str  # what set_x_axis takes and the window keeps
    name: str  # in words: the choice's text
    meaning: str  # what it is, in a sentence (the choice's tooltip)
    label: str  # the axis's label, a table's first column: the name, with its unit if it has one


X_AXES = (
    XAxis("step", "step", "the optimizer step", "step"),
    XAxis("epoch", "epoch", "passes over the training set, fractional (step ÷ steps per epoch): runs with other "
                            "batch sizes line up", "epoch"),
    XAxis("wall", "wall time", "the date and time each step ended", "wall time"),
    XAxis("elapsed", "time since start", "seconds since the run started; for runs recorded before steps kept "
                                         "their time, the sum of the steps' own times", "seconds since start"),
)
AXES = {axis.kind: axis for axis in X_AXES}
FROM_STEP_TIMES = "from step times"  # what a time since start adds up when a run has no wall times


def x_axis(kind: str) -> XAxis:
    """The axis called `kind`; any other name (a setting from another version, a typo) is refused, saying which
    there are."""
    axis = AXES.get(kind)
    if axis is None:
        raise WorkbenchError(f"no x axis called {kind!r}", "one of " + ", ".join(AXES))
    return axis


def has_wall(wall: np.ndarray) -> bool:
    """Whether a run's steps (their wall times, history.curves.Curves.wall) carry wall times: every step does
    from the version that recorded them, none before."""
    return len(wall) > 0 and math.isfinite(wall[0])


@dataclass(frozen=True)
class Clock:
    """When each step of one run ended, to place its points on any axis (`x`)."""

    steps: np.ndarray  # increasing
    wall: np.ndarray  # Unix time each step ended; NaN where not recorded
    step_time: np.ndarray  # the steps' own seconds added up, step by step: a time since start without wall times
    started: float | None = None  # Unix time the run started; None: not recorded (the first step's end stands in)
    steps_per_epoch: int = 0  # 0: not known (no epoch axis)
    shift: float = 0.0  # seconds added to the time since start: a continued run goes on from its parent's

    @property
    def has_wall(self) -> bool:
        return has_wall(self.wall)

    def knows(self, kind: str) -> bool:
        """Whether this run has `kind`'s x at all: runs recorded without wall times have no wall axis, hand-built
        curves without steps per epoch no epoch axis."""
        return {"epoch": self.steps_per_epoch > 0, "wall": self.has_wall}.get(kind, True)

    def x(self, kind: str, at: np.ndarray) -> np.ndarray:
        """The x of each step in `at` (all of them this run's, or NaN) on the `kind` axis."""
        at = np.asarray(at, dtype=np.float64)
        if kind == "step":
            return at
        if kind == "epoch":
            return at / self.steps_per_epoch if self.steps_per_epoch else np.full(len(at), np.nan)
        if not len(self.steps):
            return np.full(len(at), np.nan)
        index = np.minimum(np.searchsorted(self.steps, at), len(self.steps) - 1)
        if kind == "wall":
            times = self.wall[index]
        elif self.has_wall:
            times = self.wall[index] - (self.wall[0] if self.started is None else self.started) + self.shift
        else:
            times = self.step_time[index] + self.shift
        return np.where(self.steps[index] == at, times, np.nan)

    def place(self, kind: str, steps: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Points (this run's steps, their values) on the `kind` axis: (x, values), those it has no x for left
        out (every point of a run without wall times, on the wall axis)."""
        x = self.x(kind, steps)
        if kind == "step":
            return x, values
        somewhere = np.isfinite(x)
        return x[somewhere], np.asarray(values)[somewhere]

    def last(self, kind: str) -> float:
        """The x of this run's last step (NaN without steps): where a continuation of it starts."""
        return float(self.x(kind, self.steps[-1:])[0]) if len(self.steps) else math.nan


def mean_x(clocks: Sequence[Clock], kind: str, steps: np.ndarray) -> np.ndarray:
    """Where several runs' `steps` fall on the `kind` axis together: the mean of their x for each step, over the
    runs that have one (NaN where none has). A seed group's members share their steps and epochs; on a time axis
    each ran at its own time, and their mean line is drawn at their mean time."""
    if not clocks:
        return np.full(len(steps), np.nan)
    xs = np.stack([clock.x(kind, steps) for clock in clocks])
    placed = np.isfinite(xs)
    count = placed.sum(axis=0)
    total = np.where(placed, xs, 0.0).sum(axis=0)
    return np.divide(total, count, out=np.full(len(steps), np.nan), where=count > 0)


def clock_of(curves: Curves) -> Clock:
    return Clock(steps=curves.step, wall=curves.wall, step_time=np.cumsum(curves.step_seconds),
                 started=curves.started, steps_per_epoch=curves.steps_per_epoch)


def axis_label(kind: str, from_step_times: bool = False) -> str:
    """The axis's label, and for a time since start that adds up step times, that it does."""
    label = x_axis(kind).label
    return f"{label} ({FROM_STEP_TIMES})" if from_step_times else label
