"""The system sampler's instrument: CPU, memory and GPU readings taken off the run's thread on the main process,
emitted at the read-backs (SystemSample), and their means and peaks in the run's results."""

from __future__ import annotations

from typing import Any

from ...domain.system import SystemSampler, summary
from ...ground.events import SystemSample
from .base import Instrument
from ..state import RunState


class SystemMetrics(Instrument):
    def __init__(self) -> None:
        self.sampler: SystemSampler | None = None
        self.samples: list[SystemSample] = []

    def started(self, run: RunState) -> None:
        if run.dist.is_main:  # one sampler a machine's run, not one a process
            self.sampler = SystemSampler(run.device, run.started).start()

    def drain(self, run: RunState) -> None:
        if self.sampler is None:
            return
        for sample in self.sampler.drain():
            self.samples.append(sample)
            run.emit(sample)

    def ending(self, run: RunState) -> None:
        if self.sampler is not None:
            self.sampler.finish()

    def section(self, run: RunState) -> dict[str, Any]:
        fields: dict[str, Any] = {}
        if self.samples:
            fields["system"] = summary(self.samples)
        if self.sampler is not None and self.sampler.gpu_problem:
            fields["system_gpu_problem"] = self.sampler.gpu_problem
        return fields

    def close(self, run: RunState) -> None:
        if self.sampler is not None:
            self.sampler.stop()
