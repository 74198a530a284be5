"""The data behind the live curves: numpy buffers that grow by doubling (events only append), a curve's buffer
with its dirty flag, a per-step series with its smoothed line that catches up a batch at a time, and the live
run's step times, which place its steps on an x axis other than the step (history.x_axis).

A curve's buffer keeps its steps whatever the x axis: on another axis the curve draws its points placed there, a
second buffer that catches up with the first a batch at a time as the smoothed line does, and is rebuilt whole
(one vectorised call) when the axis changes. On the step axis nothing is placed: the buffer is drawn as it is.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import pyqtgraph as pg

from ....core.ground.events import RunStarted, Step
from ....core.history.curves import Curves, Smoother
from ....core.history.x_axis import Clock, clock_of

Place = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]  # Clock.place on the chosen axis


class SeriesBuffer:
    """x/y float arrays that grow by doubling; `view()` returns the filled part without copying."""

    def __init__(self, capacity: int = 1024):
        self.x = np.empty(capacity, dtype=np.float64)
        self.y = np.empty(capacity, dtype=np.float64)
        self.size = 0

    def append(self, x: float, y: float) -> None:
        self._room_for(self.size + 1)
        self.x[self.size] = x
        self.y[self.size] = y
        self.size += 1

    def extend(self, x: np.ndarray, y: np.ndarray) -> None:
        end = self.size + len(x)
        self._room_for(end)
        self.x[self.size:end] = x
        self.y[self.size:end] = y
        self.size = end

    def _room_for(self, size: int) -> None:
        if size > len(self.x):
            capacity = max(size, 2 * len(self.x))
            self.x, self.y = np.resize(self.x, capacity), np.resize(self.y, capacity)

    def set(self, x: np.ndarray, y: np.ndarray) -> None:
        """Replace the contents with whole arrays (a recorded run), keeping room to grow."""
        self.clear()
        self.extend(x, y)

    def view(self) -> tuple[np.ndarray, np.ndarray]:
        return self.x[: self.size], self.y[: self.size]

    def clear(self) -> None:
        self.size = 0


class CurveSeries:
    """A buffer bound to a plot item; redrawn only when it has new points. With `place` (another x axis than the
    buffer's), the item draws the points placed by it, those it places nowhere left out."""

    def __init__(self, item: pg.PlotDataItem):
        self.item = item
        self.buffer = SeriesBuffer()
        self.dirty = False
        self.place: Place | None = None
        self.placed = SeriesBuffer(0)  # the points as drawn on the place's axis
        self.placed_upto = 0  # the buffer's points placed so far

    def append(self, x: float, y: float) -> None:
        self.buffer.append(x, y)
        self.dirty = True

    def extend(self, x: np.ndarray, y: np.ndarray) -> None:
        self.buffer.extend(x, y)
        self.dirty = True

    def set(self, x: np.ndarray, y: np.ndarray) -> None:
        self.buffer.set(x, y)
        self._unplace()
        self.dirty = True

    def set_place(self, place: Place | None) -> None:
        """Draw the points on another axis (None: the buffer's own x): all of them placed again at the next draw."""
        self.place = place
        self._unplace()
        self.dirty = True

    def view(self) -> tuple[np.ndarray, np.ndarray]:
        """The points as drawn: the buffer's, or the placed ones, caught up with the buffer."""
        if self.place is None:
            return self.buffer.view()
        x, y = self.buffer.view()
        if self.placed_upto < len(x):
            self.placed.extend(*self.place(x[self.placed_upto:], y[self.placed_upto:]))
            self.placed_upto = len(x)
        return self.placed.view()

    def redraw(self) -> None:
        if self.dirty:
            self.item.setData(*self.view())
            self.dirty = False

    def clear(self) -> None:
        self.buffer.clear()
        self._unplace()
        self.item.setData([], [])
        self.dirty = False

    def _unplace(self) -> None:
        self.placed.clear()
        self.placed_upto = 0


class SmoothedSeries:
    """Per-step values and their smoothed line. The line catches up with the raw points a batch at a time (one
    vectorised call per batch, however many steps it holds) and is rebuilt whole when the weight changes."""

    def __init__(self, raw: CurveSeries, line: CurveSeries, weight: float):
        self.raw, self.line = raw, line
        self.smoother = Smoother(weight)

    def catch_up(self) -> None:
        x, y = self.raw.buffer.view()
        done = self.line.buffer.size
        if done < len(y):
            self.line.extend(x[done:], self.smoother.extend(y[done:]))

    def restart(self, weight: float) -> None:
        """Smooth the whole buffer again (a new weight, or new contents)."""
        self.smoother = Smoother(weight)
        self.line.clear()
        self.catch_up()


class StepTimes:
    """When each of the shown run's steps ended (a live run's as its steps arrive, a recorded one's from its
    curves), with what places them on the epoch and time axes: `clock()`."""

    def __init__(self):
        self.wall = SeriesBuffer()  # step → Unix time (NaN: not recorded)
        self.step_time = SeriesBuffer()  # step → its step seconds added up
        self.started: float | None = None
        self.steps_per_epoch = 0
        self.shift = 0.0  # a continued run's time since start goes on from its parent's

    def start(self, event: RunStarted) -> None:
        self.clear()
        self.started, self.steps_per_epoch = event.wall, event.steps_per_epoch

    def add(self, step: Step) -> None:
        so_far = self.step_time.y[self.step_time.size - 1] if self.step_time.size else 0.0
        self.wall.append(step.step, np.nan if step.wall is None else step.wall)
        self.step_time.append(step.step, so_far + step.step_seconds)

    def set(self, curves: Curves) -> None:
        self.clear()
        clock = clock_of(curves)
        self.wall.set(clock.steps, clock.wall)
        self.step_time.set(clock.steps, clock.step_time)
        self.started, self.steps_per_epoch = clock.started, clock.steps_per_epoch

    def clear(self) -> None:
        self.wall.clear()
        self.step_time.clear()
        self.started, self.steps_per_epoch, self.shift = None, 0, 0.0

    def clock(self) -> Clock:
        """The steps so far as a Clock: views of the buffers, valid until the next step arrives."""
        steps, wall = self.wall.view()
        return Clock(steps=steps, wall=wall, step_time=self.step_time.view()[1], started=self.started,
                     steps_per_epoch=self.steps_per_epoch, shift=self.shift)
