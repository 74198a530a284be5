"""A run of several processes that stopped stepping (torch-free): no step for HANG_AFTER_S once steps have come.

Rank 0 streams the steps, and every rank waits for the others at each step's collectives, so one stuck rank stops
the steps of all: silence on rank 0 is the symptom of a hang anywhere. Before the first step (starting, compiling)
nothing is watched; an epoch's end counts as progress (its evaluation has no steps)."""

from __future__ import annotations

import time
from typing import Callable

from .events import EpochEnd, Event, Step

HANG_AFTER_S = 120.0  # longer than a step, an evaluation or a checkpoint takes on the runs this tool trains


class StepWatch:
    def __init__(self, after_s: float = HANG_AFTER_S, clock: Callable[[], float] = time.monotonic):
        self.after_s, self.clock = after_s, clock
        self.last: float | None = None  # when the last step came; None before the first
        self.said = False  # this silence has been reported

    def saw(self, event: Event) -> None:
        if isinstance(event, (Step, EpochEnd)):
            self.last, self.said = self.clock(), False

    def silent_for(self) -> float:
        """Seconds since the last step (0 before the first)."""
        return 0.0 if self.last is None else self.clock() - self.last

    def hung(self) -> float | None:
        """The seconds without a step, the first time they pass `after_s`; then None until steps come again."""
        silent = self.silent_for()
        if self.said or self.after_s <= 0 or silent < self.after_s:
            return None
        self.said = True
        return silent
