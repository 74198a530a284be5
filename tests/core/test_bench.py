"""The benchmark's timing rules, checked with fake clocks and a fake engine: no GPU and no timing asserts."""

from __future__ import annotations

import types

import pytest
import torch

from workbench.core.tools import bench
from workbench.core.run import launch
from workbench.core.tools.bench import BenchSettings, StepClock, engine_row, recording_overhead
from workbench.core.ground.config import TrainConfig
from workbench.core.domain.data import load_split
from workbench.core.ground.errors import WorkbenchError
from workbench.core.ground.events import RunFailed, RunFinished, Step
from workbench.core.domain.model import PIXEL_MEAN, PIXEL_STD


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def advance(self, seconds: float) -> None:
        self.now += seconds


def test_a_cuda_window_counts_the_training_work_drained_before_validation(monkeypatch):
    clock = FakeClock()

    class Event:  # CUDA events: only their existence matters here
        def __init__(self, enable_timing=False):
            pass

        def record(self):
            pass

        def elapsed_time(self, other):
            return 0.0

    monkeypatch.setattr(bench, "time", types.SimpleNamespace(perf_counter=lambda: clock.now))
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: clock.advance(1.0))  # queued training steps finish
    monkeypatch.setattr(torch.cuda, "Event", Event)
    steps = iter([False, True, False])

    def step() -> bool:
        clock.advance(0.1)  # the host queues the step
        return next(steps)

    rate = StepClock(torch.device("cuda")).time_window(3, step, 10, between=lambda: clock.advance(5.0))
    # 0.3 s queuing + 1 s draining before validation + 1 s draining at the end; validation's 5 s are left out
    assert rate == pytest.approx(3 * 10 / 2.3)


def _fake_trainer(blocks: list[list[float]], emitted: list):
    """An engine that emits its steps in read-back blocks, every step of a block with the block's average time
    (as on a GPU), checking the stop flag between blocks."""

    class FakeTrainer:
        def run(self, config, emit, stop):
            step = 0
            for block in blocks:
                if stop.is_set():
                    break
                seconds = sum(block)
                for _ in block:
                    step += 1
                    emitted.append(step)
                    emit(Step(step=step, epoch=1, loss=1.0, samples_per_s=len(block) * config.batch_size / seconds,
                              step_seconds=seconds / len(block), memory={}, compiling=step == 1))
            return RunFinished(steps=step, epochs=0, seconds=1.0, stopped=stop.is_set(),
                               metrics={"backend_used": config.backend, "peak_memory_mib": 1.0})

    return FakeTrainer


def test_gpu_windows_start_at_the_first_block_after_the_warm_up(monkeypatch):
    # step 1 compiles; steps 2-5 share a block that holds warm-up steps 2-3 (a cudagraph recording: slow);
    # steps 6-9 and 10-13 are steady. Timing must start at step 6, and the run stop once 4 steps are timed.
    emitted = []
    blocks = [[10.0], [4.0, 4.0, 0.01, 0.01], [0.01] * 4, [0.01] * 4]
    monkeypatch.setattr(bench, "Trainer", _fake_trainer(blocks, emitted))
    settings = BenchSettings(warmup=3, windows=2, window_steps=2)
    row = engine_row(TrainConfig(batch_size=10), settings, torch.device("cuda"))
    assert row.windows == pytest.approx([2 * 10 / 0.02] * 2)  # no warm-up time in any window
    assert emitted == list(range(1, 10))  # stopped after the block that completed the timed steps
    assert "warm-up" not in row.note


def test_gpu_windows_without_a_block_after_the_warm_up_say_so(monkeypatch):
    monkeypatch.setattr(bench, "Trainer", _fake_trainer([[1.0], [0.01] * 8], []))
    row = engine_row(TrainConfig(batch_size=10), BenchSettings(warmup=2, windows=2, window_steps=2),
                     torch.device("cuda"))
    assert len(row.windows) == 2 and "too few steps to keep the warm-up's read-back block out" in row.note


def test_the_article_recipe_normalises_once_like_the_engine(monkeypatch):
    seen = []
    real_fresh_model = bench._fresh_model

    def recording_model(settings, device):
        model = real_fresh_model(settings, device)
        model.core_block.register_forward_pre_hook(lambda module, args: seen.append(args[0].detach().clone()))
        return model

    monkeypatch.setattr(bench, "_fresh_model", recording_model)
    monkeypatch.setattr(bench, "ARTICLE_WORKERS", 0)
    settings = BenchSettings(batch_size=64, hidden_dim=8, warmup=1, windows=1, window_steps=1)
    bench.article_recipe(settings, load_split("mnist-sample", "train"), None, torch.device("cpu"))
    background = -PIXEL_MEAN / PIXEL_STD  # a black pixel, normalised once (what the engine's model sees)
    assert seen and all(x.min().item() == pytest.approx(background, abs=1e-5) for x in seen)


def _fake_start_run(results: dict, calls: list):
    def start_run(request, emit, stop=None, **kwargs):
        assert request.launch.where == "here"  # measured in this process, as the CLI trains
        calls.append(request.record)
        return results[request.record]

    return start_run


def _finished(rate: float) -> RunFinished:
    return RunFinished(steps=10, epochs=1, seconds=1.0, stopped=False, metrics={"samples_per_s": rate})


def test_recording_overhead_alternates_which_run_goes_first(monkeypatch, tmp_path):
    calls = []
    monkeypatch.setattr(launch, "start_run", _fake_start_run({True: _finished(90.0),
                                                                      False: _finished(100.0)}, calls))
    result = recording_overhead(TrainConfig(), 3, tmp_path)
    assert calls == [False, True, True, False, False, True]
    assert result["ratios"] == pytest.approx([0.9] * 3) and result["median_ratio"] == pytest.approx(0.9)


@pytest.mark.parametrize("bad", [RunFailed(kind="diverged", message="loss exploded", hint="lower lr"), _finished(0.0)],
                         ids=["failed run", "no steady steps"])
def test_recording_overhead_of_a_run_without_a_rate_is_a_clear_error(monkeypatch, tmp_path, bad):
    monkeypatch.setattr(launch, "start_run", _fake_start_run({True: _finished(90.0), False: bad}, []))
    with pytest.raises(WorkbenchError, match="a recording-overhead run (failed|measured no steady-state steps)"):
        recording_overhead(TrainConfig(), 1, tmp_path)
