"""The data behind the live curves: numpy buffers that grow by doubling (events only append), a curve's buffer
with its dirty flag, and a per-step series with its smoothed line that catches up a batch at a time."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg

from ...core.history.curves import Smoother


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
    """A buffer bound to a plot item; redrawn only when it has new points."""

    def __init__(self, item: pg.PlotDataItem):
        self.item = item
        self.buffer = SeriesBuffer()
        self.dirty = False

    def append(self, x: float, y: float) -> None:
        self.buffer.append(x, y)
        self.dirty = True

    def extend(self, x: np.ndarray, y: np.ndarray) -> None:
        self.buffer.extend(x, y)
        self.dirty = True

    def set(self, x: np.ndarray, y: np.ndarray) -> None:
        self.buffer.set(x, y)
        self.dirty = True

    def redraw(self) -> None:
        if self.dirty:
            self.item.setData(*self.buffer.view())
            self.dirty = False

    def clear(self) -> None:
        self.buffer.clear()
        self.item.setData([], [])
        self.dirty = False


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
