"""The alerts instrument: the rules of ground.alerts, evaluated in the run's own process. It watches every event the
run emits (it wraps `run.emit` when the run starts) and each read-back's raw losses (before the loop fails a run
whose loss blew up), and emits an Alert event right after whatever tripped a rule."""

from __future__ import annotations

from ...domain import devices
from ...ground.alerts import AlertThresholds, AlertWatch
from ...ground.events import Event
from .base import Instrument
from ..state import ReadBack, RunState


class Alerting(Instrument):
    def __init__(self) -> None:
        self.watch: AlertWatch | None = None

    def started(self, run: RunState) -> None:
        if not run.dist.is_main:  # the others' events never leave them
            return
        limit, where = devices.memory_limit_mib(run.device)
        watch = self.watch = AlertWatch(AlertThresholds.of(run.config), limit, where)
        inner = run.emit

        def emit(event: Event) -> None:
            inner(event)
            for alert in watch.observe(event):
                inner(alert)
        run.emit = emit

    def read_back(self, run: RunState, back: ReadBack, index: int) -> None:
        if self.watch is not None:
            for alert in self.watch.losses(back.first_step, back.losses):
                run.emit(alert)
