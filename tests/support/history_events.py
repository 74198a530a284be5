"""Events of a small run, for tests that write a run history row by row without training (tests/core/test_runs.py,
test_trash.py, test_runs_export.py)."""

from __future__ import annotations

from workbench.core.ground.config import TrainConfig
from workbench.core.ground.events import MemorySample, RunStarted, Step

from ..helpers import SMALL, VERSIONS


def started(config: TrainConfig = SMALL) -> RunStarted:
    return RunStarted(config=config, device="cpu", device_name="CPU", versions=VERSIONS,
                      train_size=4000, val_size=1000, steps_per_epoch=125, total_steps=SMALL.max_steps)


def step(i: int) -> Step:
    return Step(step=i, epoch=1, loss=1.0 / i, samples_per_s=1000.0, step_seconds=0.01, memory=MemorySample(rss=10.0))
