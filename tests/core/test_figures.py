"""One truth for every figure: a run's samples/s is the same number live, at its end, in its record and its curves."""

import pytest

from tests.helpers import SMALL, VERSIONS, run, steps
from workbench.core.ground.config import TrainConfig
from workbench.core.ground.events import MemorySample, RunFinished, RunStarted, Step
from workbench.core.ground.figures import steady_rate
from workbench.core.ground.progress import Progress
from workbench.core.ground.results import RunResults
from workbench.core.history.curves import curves_from_events


def _step(step: int, rate: float, compiling: bool = False) -> Step:
    return Step(step=step, epoch=1, loss=1.0, samples_per_s=rate, step_seconds=0.01, memory=MemorySample(),
                compiling=compiling)


def test_the_steady_rate_is_steps_over_their_time_not_the_last_blocks_rate():
    # two blocks of 2 steps at batch 64: 128 samples in 1.28 s, then 128 in 0.32 s → 256 / 1.6 s = 160 samples/s
    assert steady_rate([100.0, 100.0, 400.0, 400.0]) == pytest.approx(160.0)
    assert steady_rate([]) is None and steady_rate([0.0]) is None


def test_progress_shows_the_runs_figure_so_far_and_then_its_own():
    progress = Progress()
    progress.update(RunStarted(config=TrainConfig(epochs=1), device="cpu", device_name="CPU", versions=VERSIONS,
                               train_size=512, val_size=64, steps_per_epoch=4, total_steps=4))
    for event in (_step(1, 50.0, compiling=True), _step(2, 100.0), _step(3, 100.0), _step(4, 400.0)):
        progress.update(event)
    assert progress.samples_per_s == pytest.approx(steady_rate([100.0, 100.0, 400.0]))  # the compile step left out
    progress.update(RunFinished(steps=4, epochs=1, seconds=1.0, stopped=False,
                                results=RunResults(samples_per_s=123.0)))
    assert progress.samples_per_s == 123.0


def test_the_live_figure_the_record_and_the_curves_agree_with_the_engines():
    events, result = run(SMALL.replace(max_steps=30))
    assert isinstance(result, RunFinished)
    engine = result.results.samples_per_s
    live = Progress()
    for event in events[:-1]:  # everything but RunFinished: what the window had just before the end
        live.update(event)
    assert live.samples_per_s == pytest.approx(engine, rel=1e-9)
    assert steady_rate(s.samples_per_s for s in steps(events) if s.steady) == pytest.approx(engine, rel=1e-9)
    assert curves_from_events(events).samples_per_s == engine
    assert curves_from_events(events[:-1]).samples_per_s == pytest.approx(engine, rel=1e-9)  # a run cut off
