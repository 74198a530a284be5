"""Naming the straggler of a run of several processes (torch-free).

In data-parallel training every rank waits for the slowest at each step's gradient all-reduce, so every rank's
step takes as long as the slowest rank's: the step time cannot say which one it is. What it can say is the time
each rank spends on its own before the first collective of the step: its forward (RankTimes.forward_seconds). The
rule: over each window of WINDOW steps, a rank whose median forward exceeds RATIO × the median of the other ranks'
medians, and by at least GAP_S, is slow in that window; slow in WINDOWS windows running, it is named, once a run,
as an Alert (rule "straggler"). A single slow step (a page fault, a garbage collection) moves no median."""

from __future__ import annotations

import statistics
from collections import deque
from typing import Sequence

from .alerts import PANEL_SYSTEM, Alert

WINDOW = 20  # steps
RATIO = 1.5
GAP_S = 0.005  # a rank 1.5× slower by less than this is noise, not a straggler
WINDOWS = 2  # consecutive slow windows before it is named


class StragglerWatch:
    def __init__(self, hosts: Sequence[str], window: int = WINDOW, ratio: float = RATIO, gap_s: float = GAP_S,
                 windows: int = WINDOWS):
        self.hosts, self.window, self.ratio, self.gap_s, self.windows = tuple(hosts), window, ratio, gap_s, windows
        self.times = [deque(maxlen=window) for _ in self.hosts]
        self.seen = 0  # steps since the last window was judged
        self.slow_windows = [0] * len(self.hosts)
        self.named: set[int] = set()

    def add(self, step: int, forward_seconds: Sequence[float], steps: int = 1) -> Alert | None:
        """Each rank's mean forward over the last `steps` steps (a read-back block), the last being `step`; an Alert
        the first time a rank is named."""
        for times, seconds in zip(self.times, forward_seconds):
            times.extend([seconds] * steps)
        self.seen += steps
        if self.seen < self.window or len(self.hosts) < 2:
            return None
        self.seen = 0
        medians = [statistics.median(times) for times in self.times]
        alert = None
        for rank, mine in enumerate(medians):
            others = statistics.median(medians[:rank] + medians[rank + 1:])
            slow = mine > self.ratio * others and mine - others >= self.gap_s
            self.slow_windows[rank] = self.slow_windows[rank] + 1 if slow else 0
            if self.slow_windows[rank] >= self.windows and rank not in self.named and alert is None:
                self.named.add(rank)
                alert = Alert(step=step, rule="straggler", severity="warning",
                              title=f"rank {rank} on {self.hosts[rank]} is a straggler: its forward takes "
                                    f"{_ms(mine)} a step against {_ms(others)} on the other ranks "
                                    f"(medians of the last {self.window} steps, {self.windows} windows running)",
                              advice=f"every rank waits for it at each step: look at {self.hosts[rank]} (other jobs "
                                     "on it, its device, its data), or leave it out of the run",
                              panel=PANEL_SYSTEM)
        return alert


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms" if seconds < 0.01 else f"{seconds * 1000:.0f} ms"
