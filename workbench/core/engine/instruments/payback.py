"""The payback instrument: after a compiled run, compiled against eager step time measured side by side in this
process (METHOD in ground.payback), with the run's compile seconds: whether compiling paid for itself. The
calibration's steps train copies of nothing: the weights, optimizer, schedule, scaler and random state are put back
after it, and none of it reaches the run's own figures."""

from __future__ import annotations

import contextlib
import itertools
import statistics
import time
from typing import Any

import torch

from ...ground.payback import METHOD, Payback
from .. import steps
from .base import Instrument
from ..state import RunState

ROUNDS = 5  # rounds of a compiled and an eager block of steps
# Each block about this long (and within these step counts): long enough to average a read-back's sync, short next
# to any real run.
BLOCK_SECONDS = 0.05
BLOCK_STEPS = (3, 50)


class PaybackCalibration(Instrument):
    def __init__(self) -> None:
        self.result: Payback | str | None = None  # a string: why it was not measured

    def ending(self, run: RunState) -> None:
        if run.report is not None:  # a compiled run (explained): measure, or say why not
            self.result = self._measure(run)

    def _measure(self, run: RunState) -> Payback | str:
        if not run.session.compiled:
            return "not measured: the run fell back to eager"
        if run.dist.active:
            return "not measured: a multi-process run (measure it with one process)"
        if run.stopped:
            return "not measured: the run was stopped"
        step_s = run.steady_step_seconds()
        if step_s is None or run.steady_steps() < 1:
            return "not measured: the run took no steady steps"
        low, high = BLOCK_STEPS
        block = min(high, max(low, round(BLOCK_SECONDS / step_s)))
        batches = list(itertools.islice(itertools.cycle(run.batches.epoch(0)), block))
        session, state = run.session, steps.training_state(run.session)
        health, session.health = session.health, None  # the calibration's steps are no steps of the run
        session.model.train()
        times: dict[str, list[float]] = {"compiled": [], "eager": []}
        try:
            with torch.random.fork_rng(devices=[run.device] if run.device.type == "cuda" else []):
                _timed_block(run, batches, eager=True)  # eager's own first-call costs stay out of its figure
                for round_ in range(ROUNDS):
                    for eager in ((False, True) if round_ % 2 == 0 else (True, False)):
                        times["eager" if eager else "compiled"].append(_timed_block(run, batches, eager))
        finally:
            steps.restore_training_state(session, state)
            session.health = health
        warm = run.warm  # a warm launch: the cold one its cache descends from, as that run measured it
        return Payback(eager_step_s=statistics.median(times["eager"]),
                       compiled_step_s=statistics.median(times["compiled"]), compile_s=run.totals.compile_seconds,
                       steps=run.totals.steps, method=METHOD.format(rounds=ROUNDS, block=block),
                       warm_from=warm.run_id if warm else None, cold_run=warm.cold_run if warm else None,
                       cold_compile_s=warm.cold_compile_seconds if warm else None)

    def section(self, run: RunState) -> dict[str, Any]:
        if isinstance(self.result, Payback):
            return {"payback": self.result}
        return {"payback_problem": self.result} if self.result else {}


def _timed_block(run: RunState, batches: list, eager: bool) -> float:
    """Seconds per step of `batches` trained compiled or (force_eager: Dynamo steps aside) eagerly, to a sync."""
    stance = torch.compiler.set_stance("force_eager") if eager else contextlib.nullcontext()
    with stance:
        start = time.perf_counter()
        loss = None
        for x, y in batches:
            loss, _ = steps.train_step(run.session, x, y, run.config, run.device)
        if loss is not None:
            loss.item()  # the device's queue done: asynchronous CUDA steps are timed whole
        return (time.perf_counter() - start) / len(batches)
