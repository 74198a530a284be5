"""Progress: the one-line state a run's event stream adds up to (CLI bar and GUI status line)."""

from __future__ import annotations

import pytest

from workbench.core.ground.config import TrainConfig
from workbench.core.ground.events import (CompileFinished, CompileStarted, EpochEnd, MemorySample, Notice, RunFailed,
                                          RunFinished, RunStarted, Step)
from workbench.core.ground.progress import Progress, format_duration

from ..helpers import VERSIONS


def started(epochs: int = 2, steps_per_epoch: int = 5) -> RunStarted:
    return RunStarted(config=TrainConfig(epochs=epochs), device="cpu", device_name="CPU", versions=VERSIONS,
                      train_size=160, val_size=40, steps_per_epoch=steps_per_epoch,
                      total_steps=epochs * steps_per_epoch)


def step(n: int, epoch: int = 1, seconds: float = 2.0, compiling: bool = False) -> Step:
    return Step(step=n, epoch=epoch, loss=1.0 / n, samples_per_s=32 / seconds, step_seconds=seconds,
                memory=MemorySample(rss=1.0), compiling=compiling)


def test_compiled_run_states():
    p = Progress()
    assert p.describe() == "Idle"
    p.update(started())
    assert p.describe() == "Starting…"
    p.update(CompileStarted("inductor", "default"))
    assert p.describe() == "Compiling…"
    p.update(step(1, seconds=30.0, compiling=True))
    assert p.describe() == "Compiling…"  # the compiling step does not end compiling
    p.update(CompileFinished("inductor", "default", 30.0))
    # Training, but no steady-state step yet: no ETA rather than one inflated by the compile.
    assert p.describe() == "Epoch 1 of 2 · 10%"
    for n in range(2, 6):
        p.update(step(n))
    # 5 of 10 steps done, 5 left at 2 s each (the 30 s compile step is not counted)
    assert p.describe() == "Epoch 1 of 2 · 50% · ETA 0:10"
    assert p.fraction == 0.5
    assert p.samples_per_s == 16.0
    p.update(EpochEnd(epoch=1, train_loss=0.3, val_loss=0.2, val_accuracy=0.9, seconds=40.0))  # no change
    assert p.describe() == "Epoch 1 of 2 · 50% · ETA 0:10"
    p.update(Notice("warning", "something"))  # ignored
    p.update(step(6, epoch=2, seconds=1.0))
    assert p.describe().startswith("Epoch 2 of 2 · 60% · ETA ")
    p.update(RunFinished(steps=6, epochs=1, seconds=50.0, stopped=False))
    assert p.describe() == "Finished"


def test_eager_run_goes_straight_to_training():
    p = Progress()
    p.update(started(epochs=3, steps_per_epoch=4))
    p.update(step(1, seconds=1.0))
    assert p.state == "training"
    assert p.describe() == "Epoch 1 of 3 · 8% · ETA 0:11"


@pytest.mark.parametrize("end, text", [
    (RunFinished(steps=3, epochs=0, seconds=1.0, stopped=True), "Stopped"),
    (RunFinished(steps=10, epochs=2, seconds=1.0, stopped=False), "Finished"),
    (RunFailed(kind="diverged", message="loss is nan"), "Failed"),
])
def test_terminal_states(end, text):
    p = Progress()
    p.update(started())
    p.update(step(1))
    p.update(end)
    assert p.describe() == text


def test_failure_before_start():
    p = Progress()
    p.update(RunFailed(kind="config", message="amp: fp16 needs CUDA"))
    assert p.describe() == "Failed"


def test_a_new_run_starts_from_scratch():
    p = Progress()
    p.update(started())
    for n in range(1, 8):
        p.update(step(n, epoch=1 + (n - 1) // 5))
    p.update(RunFinished(steps=7, epochs=1, seconds=1.0, stopped=True))
    p.update(started(epochs=4, steps_per_epoch=10))
    assert p.describe() == "Starting…"
    assert p.step == 0 and p.eta_seconds is None
    assert p.epochs == 4 and p.total_steps == 40


@pytest.mark.parametrize("seconds, text", [(0, "0:00"), (9.6, "0:10"), (65, "1:05"), (3600, "1:00:00"),
                                           (3725, "1:02:05"), (-3, "0:00")])
def test_format_duration(seconds, text):
    assert format_duration(seconds) == text


def test_a_copys_progress_is_said_once_per_whole_percent_and_whole_at_the_end():
    from workbench.core.ground.progress import CopyProgress

    said: list[tuple[str, bool]] = []
    progress = CopyProgress(lambda text, whole: said.append((text, whole)))
    for done in range(0, 2_000_001, 1000):  # 2 MB in 1 kB reads: 2,001 calls
        progress(done, 2_000_000)
    assert len(said) == 101 and said[0] == ("copying 0.0 of 2.0 MB (0 %)", False)
    assert said[-1] == ("copying 2.0 of 2.0 MB (100 %)", True) and not any(whole for _, whole in said[:-1])
