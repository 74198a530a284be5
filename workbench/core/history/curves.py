"""A run's curves (loss, accuracy, throughput, memory, validation) as arrays, rebuilt from its event stream.

The live plots append events as they come; everything that looks at a finished run — the run comparison overlay
and the report — rebuilds the same curves here, once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..ground.events import CompileFinished, EpochEnd, Event, RunFinished, RunStarted, Step
from ..ground.figures import steady_rate
from .step_columns import MEMORY, StepBlock, block_of, steady_mask

SMOOTHING = 0.6  # TensorBoard's default weight of the smoothed lines


@dataclass
class Curves:
    step: np.ndarray  # every optimizer step
    loss: np.ndarray
    throughput_step: np.ndarray  # steps that did not compile (nor warm CUDA up)
    throughput: np.ndarray
    memory: dict[str, np.ndarray] = field(default_factory=dict)  # by name, aligned with `step`
    val_step: np.ndarray = field(default_factory=lambda: np.empty(0))  # the last step of each epoch
    val_loss: np.ndarray = field(default_factory=lambda: np.empty(0))
    accuracy: np.ndarray | None = None  # training accuracy, aligned with `step`; NaN where a step has none
    val_accuracy: np.ndarray = field(default_factory=lambda: np.empty(0))  # aligned with `val_step`
    compile_seconds: float | None = None  # every compile phase together; None: nothing was compiled
    samples_per_s: float | None = None  # figures.SAMPLES_PER_S: the run's own, else from its steady steps
    # When each step ended, for the time axes (history.x_axis): Unix time (NaN where not recorded: runs from before
    # steps carried it) and the step's own seconds (what "time since start" adds up when there is no wall time).
    wall: np.ndarray | None = None  # aligned with `step`
    step_seconds: np.ndarray | None = None  # aligned with `step`
    started: float | None = None  # Unix time the run started (RunStarted.wall); None: not recorded
    steps_per_epoch: int = 0  # RunStarted's, for the epoch axis; 0: not known
    stride: float = 1.0  # steps a point stands for: 1 when every step is there, more for a level's rows (step_levels)

    def __post_init__(self):
        # Runs recorded before steps carried accuracy or their wall time, and hand-built curves: NaN, "not known".
        for name in ("accuracy", "wall", "step_seconds"):
            if getattr(self, name) is None:
                setattr(self, name, np.full(len(self.step), np.nan))


def curves_from_events(events: list[Event]) -> Curves:
    """The curves of a stream of events (a live run's so far, a run's JSON lines)."""
    steps = [(seq, e) for seq, e in enumerate(events) if isinstance(e, Step)]
    return curves_from_columns(block_of([seq for seq, _s in steps], [s for _seq, s in steps]),
                               [e for e in events if not isinstance(e, Step)])


def curves_from_columns(block: StepBlock, events: list[Event], stride: float = 1.0) -> Curves:
    """The curves of a run's steps as columns (the history's blocks) and its other events, without an event a
    step: an overlay of 20 runs of 20,000 steps decoded 430,000 JSON steps before."""
    step = block.step.astype(np.float64)
    steady = steady_mask(block)
    rates = block.values["samples_per_s"][steady]

    def optional(name: str) -> np.ndarray:
        return np.where(block.present[name], block.values[name], np.nan)

    last_step_of_epoch = dict(zip(block.epoch.tolist(), block.step.tolist()))  # each epoch's last step
    epochs = [e for e in events if isinstance(e, EpochEnd)]
    compiles = [e.seconds for e in events if isinstance(e, CompileFinished)]
    started = next((e for e in events if isinstance(e, RunStarted)), None)
    return Curves(
        step=step,
        loss=block.values["loss"].copy(),
        throughput_step=step[steady],
        throughput=rates,
        memory={name: optional(name) for name in sorted(MEMORY) if block.present[name].any()},
        val_step=np.array([last_step_of_epoch.get(e.epoch, 0) for e in epochs], dtype=np.float64),
        val_loss=np.array([e.val_loss for e in epochs], dtype=np.float64),
        accuracy=optional("accuracy"),
        val_accuracy=np.array([e.val_accuracy for e in epochs], dtype=np.float64),
        compile_seconds=sum(compiles) if compiles else None,
        samples_per_s=_samples_per_s(events, rates),
        wall=optional("wall"),
        step_seconds=block.values["step_seconds"].copy(),
        started=started.wall if started is not None else None,
        steps_per_epoch=started.steps_per_epoch if started is not None else 0,
        stride=stride,
    )


def _samples_per_s(events: list[Event], steady_rates: np.ndarray) -> float | None:
    """The run's figure as it ended (RunFinished), else the same figure from its steady steps' rates (a run still
    going or cut off)."""
    finished = next((e for e in reversed(events) if isinstance(e, RunFinished)), None)
    if finished is not None and finished.results.samples_per_s:
        return finished.results.samples_per_s
    return steady_rate(steady_rates.tolist())


class Smoother:
    """TensorBoard's smoothing: an exponential moving average divided by its bias toward the zero it starts from, so
    the line starts at the first value instead of lagging in from zero (or from the first loss). Non-finite points
    are passed through and skipped, as TensorBoard does. It continues across calls, so the live plots smooth each
    batch of new points in O(batch) and a finished curve is one call: both draw the same line. 0 ≤ weight < 1."""

    def __init__(self, weight: float = SMOOTHING):
        self.weight = weight
        self.last = 0.0  # the running average of the finite points so far, biased toward 0
        self.count = 0  # finite points so far

    def extend(self, values: np.ndarray) -> np.ndarray:
        values = np.asarray(values, dtype=np.float64)
        out = values.copy()
        finite = np.isfinite(values)
        if not finite.any():
            return out
        w, points = self.weight, values[finite]
        last = _running_average(points, w) + self.last * _powers(w, 1, len(points))
        out[finite] = last / (1 - _powers(w, self.count + 1, len(points)))
        self.last, self.count = float(last[-1]), self.count + len(points)
        return out


def _running_average(values: np.ndarray, w: float) -> np.ndarray:
    """last[k] = w·last[k-1] + (1-w)·values[k] from last[-1] = 0, vectorised: a doubling scan (log2 n passes over
    the array; it stops once w^span underflows, after ~7 passes at w = 0.6) instead of a Python loop per point."""
    last = (1 - w) * values
    span, factor = 1, w
    while span < len(last) and factor > 0.0:
        last[span:] += factor * last[:-span]  # the right side is evaluated first: a copy, not an aliased update
        span, factor = 2 * span, factor * factor
    return last


def _powers(w: float, first: int, n: int) -> np.ndarray:
    """w**first … w**(first+n-1); 0 from where they drop below 1e-40, far under float rounding next to 1 (or to
    the data), which spares computing a power per point of a million-point curve."""
    out = np.zeros(n)
    if w > 0.0:
        live = max(0, min(n, math.ceil(-40 / math.log10(w)) - first))
        out[:live] = w ** np.arange(first, first + live, dtype=np.float64)
    return out


def smooth(values: np.ndarray, weight: float = SMOOTHING, stride: float = 1.0) -> np.ndarray:
    """A whole curve smoothed as the live plot smooths it. Points that stand for `stride` steps each (a level's
    rows) are smoothed with weight**stride: what the average of every step would give where the steps between
    are alike, so a compared run read at a level smooths as it does read whole."""
    return Smoother(weight ** stride).extend(values)


def scale_changes(block: StepBlock) -> tuple[Step, ...]:
    """fp16's loss-scale curve without every Step: the steps where the scale changed, and the last one (the curve
    is constant in between)."""
    scaled = np.flatnonzero(block.present["loss_scale"])
    scales = block.values["loss_scale"][scaled]
    kept = scaled[np.concatenate([[True], scales[1:] != scales[:-1]])] if len(scaled) else scaled
    if len(scaled) and kept[-1] != scaled[-1]:
        kept = np.append(kept, scaled[-1])
    return tuple(block.take(kept).steps())
