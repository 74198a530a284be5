"""The learning-rate range test (Smith, "Cyclical Learning Rates", 2017; fastai's `lr_find`, Lightning's LR finder):
train a few hundred steps with the learning rate growing exponentially from `LR_MIN` to `LR_MAX`, watch the loss,
and suggest the learning rate where it fell fastest.

It is a real run of the engine (the same step, data, AMP and compile as training; nothing saved, nothing recorded),
so a compiled configuration finds its learning rate compiled. The learning rate changes every step without
recompiling: torch.compile compiles the model's forward and backward, and the optimizer step, where the learning
rate is read, runs outside the compiled region (engine.train_step). The finding counts the recompiles the test hit,
so that claim is checked on every run rather than assumed.
"""

from __future__ import annotations

import math
import threading
from typing import Callable

from ..engine import StopFlag, Trainer
from .batch_finder import FINDER_INSTRUMENTS
from ..ground.config import TrainConfig
from ..ground.errors import WorkbenchError
from ..ground.events import CompileReport, RunFailed, Step
from ..ground.finder_results import LrFinding, LrPoint

LR_MIN, LR_MAX, STEPS = 1e-6, 1.0, 200
SMOOTHING = 0.9  # the loss's exponential moving average (debiased): one noisy batch does not make a suggestion
SKIP = 0.1  # the first tenth of the test: the average is still settling there
MIN_POINTS = 10  # after the skipped start: fewer, and the steepest slope is noise
DIVERGED = 4.0  # the test ends once the smoothed loss is 4× its lowest: higher learning rates teach nothing
# A test stopped by the user suggests only once its smoothed loss is back at 2× its lowest: before that the fall
# may not be over, and its steepest point so far is no suggestion (a stop on the plateau gave 1.6e-4).
TURNED = DIVERGED / 2
RULE = ("steepest descent: the learning rate where the smoothed loss falls fastest against log(LR), before its "
        "lowest point (Lightning's rule); the first tenth of the test is skipped")
EPOCHS_ENOUGH = 100_000  # the test ends at its step count, not at an epoch count


class LrFinderError(WorkbenchError):
    kind = "config"


def lr_at(step: int, steps: int, lr_min: float = LR_MIN, lr_max: float = LR_MAX) -> float:
    """The learning rate of 0-based step `step` of a `steps`-step test: exponential from lr_min to lr_max."""
    return lr_min * (lr_max / lr_min) ** (step / max(1, steps - 1))


def find_lr(config: TrainConfig, *, steps: int = STEPS, lr_min: float = LR_MIN, lr_max: float = LR_MAX,
            on_point: Callable[[LrPoint], None] = lambda point: None, stop: StopFlag | None = None) -> LrFinding:
    """Run the range test on `config`'s model, data, AMP and compile settings (its learning rate and schedule are
    replaced by the sweep); `on_point` hears every step as it is read back. Ends at `steps`, when the loss
    diverges, or when `stop` is set."""
    if not 0 < lr_min < lr_max:
        raise LrFinderError(f"the range must grow: --lr-min {lr_min:g} must be above 0 and below --lr-max "
                            f"{lr_max:g}")
    if steps < 20:
        raise LrFinderError(f"{steps} steps are too few for a range test", "use 100 or more (default 200)")
    points: list[LrPoint] = []
    recompile_reasons: tuple[str, ...] = ()
    diverged = threading.Event()
    user_stop = stop or threading.Event()
    either = _Either(user_stop, diverged)
    best = math.inf
    average = 0.0

    def emit(event) -> None:
        nonlocal best, average, recompile_reasons
        if isinstance(event, CompileReport):
            recompile_reasons = event.recompiles
        if not isinstance(event, Step) or diverged.is_set():
            return
        index = len(points)
        average = SMOOTHING * average + (1 - SMOOTHING) * event.loss
        smoothed = average / (1 - SMOOTHING ** (index + 1))
        point = LrPoint(event.step, lr_at(event.step - 1, steps, lr_min, lr_max), event.loss, smoothed)
        points.append(point)
        on_point(point)
        best = min(best, smoothed)
        if index >= steps * SKIP and smoothed > DIVERGED * best:
            diverged.set()

    run_config = config.replace(lr=lr_min, max_steps=steps, epochs=EPOCHS_ENOUGH, profile_steps=0,
                                compile_trace=False)
    trainer = Trainer(lr_factor=lambda step: lr_at(step, steps, lr_min, lr_max) / lr_min,
                      instruments=FINDER_INSTRUMENTS)
    result = trainer.run(run_config, emit, either)
    if isinstance(result, RunFailed) and result.kind != "diverged":
        raise LrFinderError(f"the range test failed: {result.message}", result.hint)
    compiled = not isinstance(result, RunFailed) and result.results.backend_used != "eager"
    last = points[-1].lr if points else lr_min
    ended = (f"the loss diverged at LR {last:.2g}" if diverged.is_set() or isinstance(result, RunFailed)
             else "stopped" if user_stop.is_set() else f"reached LR {last:.2g} after {steps} steps")
    return LrFinding(
        points=tuple(points), suggestion=suggest(points) if ended != "stopped" or turned(points) else None,
        ended=ended, compiled=compiled,
        recompiles=sum("(expected:" not in reason for reason in recompile_reasons),
        recompile_reasons=recompile_reasons, rule=RULE, lr_min=lr_min, lr_max=lr_max)


def turned(points: list[LrPoint]) -> bool:
    """Whether the smoothed loss has climbed back to TURNED × its lowest: the fall is over."""
    return bool(points) and points[-1].smoothed >= TURNED * min(point.smoothed for point in points)


def suggest(points: list[LrPoint]) -> float | None:
    """The rule (RULE): where d(smoothed loss)/d(log LR) is most negative, among the points after the skipped
    start and up to the lowest smoothed loss. None when too few points are left to tell a slope from noise."""
    start = math.ceil(len(points) * SKIP)
    if len(points) - start < MIN_POINTS:
        return None
    lowest = min(range(start, len(points)), key=lambda i: points[i].smoothed)
    window = points[start:lowest + 1]
    if len(window) < 3:
        return None
    slopes = [(window[i + 1].smoothed - window[i - 1].smoothed) /
              (math.log(window[i + 1].lr) - math.log(window[i - 1].lr)) for i in range(1, len(window) - 1)]
    steepest = min(range(len(slopes)), key=slopes.__getitem__)
    return window[steepest + 1].lr


class _Either:
    """A stop flag set when either of two is: the user's Stop, or the test's own end (the loss diverged)."""

    def __init__(self, first: StopFlag, second: StopFlag):
        self.first, self.second = first, second

    def is_set(self) -> bool:
        return self.first.is_set() or self.second.is_set()
