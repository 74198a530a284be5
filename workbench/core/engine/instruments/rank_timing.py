"""Each rank's own time, in a run of several processes: how long its forward takes (before any collective of the
step, so the rank the others wait for shows as the slow one), the time between its steps (loading data, the
read-backs) and its memory, gathered on the block's read-back at no extra sync, sent as RankTimes about once a
second, and read by the straggler rule (ground/straggler.py), whose Alert names the rank and its host.

The gather rides the read-back's all-reduce: each rank writes its figure into its own slot of a world-size vector
(zeros elsewhere), and the mean over the ranks times their number is every rank's figure. Forward times come from
hooks on the outermost module: on the CPU its own clock; on CUDA a pair of events each forward, read one block
late (they have completed by the next read-back's sync), so nothing waits for the device.
"""

from __future__ import annotations

import contextlib
import socket
import time

import torch

from ...domain import devices

from ...ground.events import RankTimes
from ...ground.straggler import StragglerWatch
from ..state import ReadBack, RunState
from .base import Instrument

SEND_EVERY_S = 1.0  # RankTimes at most this often: a history keeps steps, not a second stream of them
FIGURES = 3  # a rank's slots on the ride: forward seconds, seconds between steps, memory MiB


class RankTiming(Instrument):
    def __init__(self):
        self.hosts: tuple[str, ...] = ()
        self.watch: StragglerWatch | None = None
        self.model = None
        self.handles: list = []
        self.started_at: float | object | None = None
        self.block: list = []  # this block's forward times (seconds), or CUDA event pairs
        self.pending: list = []  # the last block's CUDA event pairs, read at this read-back
        self.sum = None  # RankTimes to send: each rank's figures summed over `steps`
        self.steps = 0
        self.sent = time.monotonic()
        self.left_step: float | None = None  # when the last step ended (perf_counter)
        self.between: list[float] = []  # this block's times between steps

    def prepared(self, run: RunState) -> None:
        if not run.dist.active:
            return
        self.hosts = tuple(run.dist.gather(socket.gethostname()))
        self.watch = StragglerWatch(self.hosts)
        self._hook(run)

    def _hook(self, run: RunState) -> None:
        """Time the forward of the session's model (again after a fallback to eager replaced it)."""
        model = run.session.model
        if model is self.model:
            return
        for handle in self.handles:
            handle.remove()
        cuda = run.device.type == "cuda"

        def before(_module, _inputs) -> None:
            if run.phase != "train":
                return
            if cuda:
                self.started_at = torch.cuda.Event(enable_timing=True)
                self.started_at.record()
            else:
                self.started_at = time.perf_counter()

        def after(_module, _inputs, _output) -> None:
            if run.phase != "train" or self.started_at is None:
                return
            if cuda:
                end = torch.cuda.Event(enable_timing=True)
                end.record()
                self.block.append((self.started_at, end))
            else:
                self.block.append(time.perf_counter() - self.started_at)
            self.started_at = None

        self.model = model
        self.handles = [model.register_forward_pre_hook(before), model.register_forward_hook(after)]

    @contextlib.contextmanager
    def _timed_step(self):
        if self.left_step is not None:
            self.between.append(time.perf_counter() - self.left_step)
        try:
            yield
        finally:
            self.left_step = time.perf_counter()

    def step_context(self, run: RunState, kind: str):
        return self._timed_step() if self.watch is not None else None

    def riders(self, run: RunState, steps: int) -> torch.Tensor | None:
        if self.watch is None or not steps:
            return None
        self._hook(run)
        if run.device.type == "cuda":  # the last block's pairs: complete since its read-back synced
            times = [start.elapsed_time(end) / 1000 for start, end in self.pending]
            self.pending, self.block = self.block, []
        else:
            times, self.block = self.block, []
        between, self.between = self.between, []
        memory = devices.memory_mib(run.device)
        slots = torch.zeros(run.dist.world_size * FIGURES, device=run.device)
        at = run.dist.rank * FIGURES
        slots[at] = sum(times) / len(times) if times else 0.0
        slots[at + 1] = sum(between) / len(between) if between else 0.0
        slots[at + 2] = (memory.allocated if memory.allocated is not None else memory.rss) or 0.0
        return slots

    def read_back(self, run: RunState, back: ReadBack, index: int) -> None:
        if self.watch is None or index not in back.riders:
            return
        values = [value * run.dist.world_size for value in back.riders[index]]
        forward = values[0::FIGURES]
        if not any(forward):  # CUDA's first block: its times are read at the next
            return
        steps, last = len(back.losses), back.first_step + len(back.losses) - 1
        if run.dist.is_main:
            alert = self.watch.add(last, forward, steps)
            if alert is not None:
                run.emit(alert)
        self.sum = [a + b * steps for a, b in zip(self.sum or [0.0] * len(values), values)]
        self.steps += steps
        if run.dist.is_main and time.monotonic() - self.sent >= SEND_EVERY_S:
            means = [total / self.steps for total in self.sum]
            run.emit(RankTimes(step=last, forward_seconds=tuple(means[0::FIGURES]), hosts=self.hosts,
                               between_seconds=tuple(means[1::FIGURES]), memory_mib=tuple(means[2::FIGURES])))
            self.sum, self.steps, self.sent = None, 0, time.monotonic()

    def close(self, run: RunState) -> None:
        for handle in self.handles:
            handle.remove()
        self.handles = []
