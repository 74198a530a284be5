"""The benchmark's timing rules, checked with fake clocks and a fake engine: no GPU and no timing asserts."""

from __future__ import annotations

import types

import pytest
import torch

from workbench.core.tools import bench
from workbench.core.kernel import launch
from workbench.core.tools.bench import BenchSettings, StepClock, engine_row, recording_overhead
from workbench.core.ground.config import TrainConfig
from workbench.core.domain.data import load_split
from workbench.core.ground.errors import WorkbenchError
from workbench.core.ground.events import MemorySample, RunFailed, RunFinished, Step
from workbench.core.ground.results import RunResults
from workbench.core.domain.model import PIXEL_MEAN, PIXEL_STD


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def advance(self, seconds: float) -> None:
        self.now += seconds


def _fake_event(elapsed_ms: float):
    """A stand-in for torch.cuda.Event whose timings all read `elapsed_ms`."""

    class Event:
        def __init__(self, enable_timing=False):
            pass

        def record(self, stream=None):
            pass

        def elapsed_time(self, other):
            return elapsed_ms

    return Event


def test_a_cuda_window_counts_the_training_work_drained_before_validation(monkeypatch):
    clock = FakeClock()

    monkeypatch.setattr(bench, "time", types.SimpleNamespace(perf_counter=lambda: clock.now))
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: clock.advance(1.0))  # queued steps finish
    monkeypatch.setattr(torch.cuda, "current_stream", lambda device=None: None)
    monkeypatch.setattr(torch.cuda, "Event", _fake_event(elapsed_ms=0.0))  # only their existence matters here
    steps = iter([False, True, False])

    def step() -> bool:
        clock.advance(0.1)  # the host queues the step
        return next(steps)

    rate = StepClock(torch.device("cuda")).time_window(3, step, 10, between=lambda: clock.advance(5.0))
    # 0.3 s queuing + 1 s draining before validation + 1 s draining at the end; validation's 5 s are left out
    assert rate == pytest.approx(3 * 10 / 2.3)


def _fake_trainer(blocks: list[list[float]], emitted: list):
    """An engine that emits its steps in read-back blocks, every step of a block with the block's average time
    (as on a GPU), up to the config's step cap."""

    class FakeTrainer:
        def run(self, config, emit, stop=None):
            step = 0
            for block in blocks:
                if step >= config.max_steps:
                    break
                seconds = sum(block)
                for _ in block:
                    step += 1
                    emitted.append(step)
                    emit(Step(step=step, epoch=1, loss=1.0, samples_per_s=len(block) * config.batch_size / seconds,
                              step_seconds=seconds / len(block), memory=MemorySample(), compiling=step == 1))
            return RunFinished(steps=step, epochs=0, seconds=1.0, stopped=False,
                               results=RunResults(backend_used=config.backend, peak_memory_mib=1.0))

    return FakeTrainer


def test_gpu_windows_start_at_the_first_block_after_the_warm_up(monkeypatch):
    # step 1 compiles; steps 2-5 share a block that holds warm-up steps 2-3 (a cudagraph recording: slow);
    # steps 6-9 and 10-13 are steady. Timing must start at step 6; the run ends at its cap (never stopped: a stopped
    # run measures no payback).
    emitted = []
    blocks = [[10.0], [4.0, 4.0, 0.01, 0.01], [0.01] * 4, [0.01] * 4]
    monkeypatch.setattr(bench, "Trainer", _fake_trainer(blocks, emitted))
    settings = BenchSettings(warmup=3, windows=2, window_steps=2)
    row = engine_row(TrainConfig(batch_size=10), settings, torch.device("cuda"))
    assert row.windows == pytest.approx([2 * 10 / 0.02] * 2)  # no warm-up time in any window
    assert emitted == list(range(1, 14))
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
    return RunFinished(steps=10, epochs=1, seconds=1.0, stopped=False, results=RunResults(samples_per_s=rate))


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


# -- CUDA, mocked: which device, which optimizer, which matmul precision -----------------------------------------
class _Sentinel(Exception):
    pass


@pytest.mark.parametrize("device, fused", [(torch.device("cuda", 1), True), (torch.device("cpu"), False)],
                         ids=["cuda", "cpu"])
@pytest.mark.parametrize("loop", ["plain_loop", "article_recipe"])
def test_reference_loops_use_fused_adamw_on_cuda_only(monkeypatch, loop, device, fused):
    seen = []

    def adamw(params, **kwargs):
        seen.append(kwargs)
        raise _Sentinel  # the optimizer is all this test is about: stop before any step runs

    real_fresh_model = bench._fresh_model
    monkeypatch.setattr(bench, "_fresh_model", lambda settings, device: real_fresh_model(settings, torch.device("cpu")))
    monkeypatch.setattr(torch.optim, "AdamW", adamw)
    monkeypatch.setattr(bench, "ARTICLE_WORKERS", 0)
    monkeypatch.setattr(bench, "DeviceBatches", lambda *args, **kwargs: None)  # no tensors on a GPU this CPU lacks
    train = load_split("mnist-sample", "val")
    with pytest.raises(_Sentinel):
        getattr(bench, loop)(BenchSettings(batch_size=64, hidden_dim=8), train, train, device)
    assert len(seen) == 1 and bool(seen[0].get("fused")) is fused


class _FakeCuda:
    """torch.cuda as a machine with two GPUs would answer, recording what each call was given; no kernel runs."""

    def __init__(self, monkeypatch):
        self.current = 0
        self.calls: list[tuple[str, object]] = []
        fakes = {"is_available": lambda: True, "device_count": lambda: 2, "current_device": lambda: self.current,
                 "set_device": self._set_device, "get_device_name": lambda device=None: "Fake GPU",
                 "reset_peak_memory_stats": lambda device=None: self.calls.append(("reset_peak", device)),
                 "synchronize": lambda device=None: self.calls.append(("synchronize", device)),
                 "current_stream": lambda device=None: self.calls.append(("current_stream", device))}
        for name, fake in fakes.items():
            monkeypatch.setattr(torch.cuda, name, fake)

    def _set_device(self, device) -> None:
        self.calls.append(("set_device", device))
        self.current = torch.device(device).index if not isinstance(device, int) else device


def _fake_rows(monkeypatch, cuda: _FakeCuda) -> list[tuple[str, int, str]]:
    """Every row replaced by one that records (row, the current CUDA device, the fp32 matmul precision)."""
    seen = []

    def row(name):
        seen.append((name, cuda.current, torch.get_float32_matmul_precision()))
        return bench.Row(name=name, kind="reference", samples_per_s=100.0)

    monkeypatch.setattr(bench, "load_splits", lambda dataset: (None, None))
    monkeypatch.setattr(bench, "plain_loop", lambda settings, train, val, device: row("plain loop"))
    monkeypatch.setattr(bench, "article_recipe", lambda settings, train, val, device: row("article recipe"))
    monkeypatch.setattr(bench, "matmul_bound",
                        lambda settings, device, precision: row(bench.matmul_bound_name(precision, device)))
    monkeypatch.setattr(bench, "engine_row", lambda config, settings, device: row(bench.engine_name(config)))
    return seen


def test_every_row_of_a_bench_on_cuda_1_runs_with_cuda_1_current(monkeypatch):
    cuda = _FakeCuda(monkeypatch)
    seen = _fake_rows(monkeypatch, cuda)
    result = bench.run_bench(BenchSettings(device="cuda:1", pairs=1), ["eager"], ["default"], ["off"])
    assert [name for name, _, _ in seen] == [
        "plain loop", "article recipe", "matmul bound · highest/fp32 (reference)",
        "matmul bound · high/TF32 (reference)", "engine · eager · off",
        "engine · eager · off", "plain loop", "article recipe"]  # the rows, then one round of pairs
    assert {device for _, device, _ in seen} == {1}  # never GPU 0
    assert cuda.current == 0  # the caller's current device comes back
    assert {d for call, d in cuda.calls if call == "reset_peak"} == {torch.device("cuda", 1)}
    assert result.device_name == "Fake GPU"


def test_cuda_step_clock_syncs_and_records_on_the_bench_device(monkeypatch):
    cuda = _FakeCuda(monkeypatch)

    monkeypatch.setattr(torch.cuda, "Event", _fake_event(elapsed_ms=1.0))
    StepClock(torch.device("cuda", 1)).time_window(3, lambda: True, 10, between=lambda: None)
    used = [(call, device) for call, device in cuda.calls if call in ("synchronize", "current_stream")]
    assert used and all(device == torch.device("cuda", 1) for _, device in used)


def test_the_matmul_bound_is_given_per_precision_on_cuda_and_once_on_the_cpu():
    assert bench.matmul_precisions(torch.device("cuda", 1), "highest") == ["highest", "high"]
    assert bench.matmul_precisions(torch.device("cuda", 1), "medium") == ["highest", "high"]
    assert bench.matmul_precisions(torch.device("cpu"), "high") == ["high"]
    assert bench.matmul_bound_name("high", torch.device("cuda", 0)) == "matmul bound · high/TF32 (reference)"
    assert bench.matmul_bound_name("highest", torch.device("cpu")) == "matmul bound · highest (reference)"


@pytest.mark.parametrize("cuda", [False, True], ids=["cpu", "cuda"])
def test_the_bench_runs_at_the_chosen_matmul_precision_states_it_and_restores_it(monkeypatch, cuda):
    if cuda:
        fake = _FakeCuda(monkeypatch)
    else:
        fake = types.SimpleNamespace(current=None)
    seen = _fake_rows(monkeypatch, fake)
    before = torch.get_float32_matmul_precision()
    settings = BenchSettings(device="cuda:1" if cuda else "cpu", pairs=1, matmul_precision="medium")
    result = bench.run_bench(settings, ["eager"], ["default"], ["off"])
    assert torch.get_float32_matmul_precision() == before == "highest"  # restored
    bounds = {name: precision for name, _, precision in seen if name.startswith("matmul bound")}
    others = {precision for name, _, precision in seen if not name.startswith("matmul bound")}
    assert others == {"medium"}
    assert bounds == ({"matmul bound · highest/fp32 (reference)": "highest",
                       "matmul bound · high/TF32 (reference)": "high"} if cuda
                      else {"matmul bound · medium (reference)": "medium"})
    assert result.matmul_precision == "medium" and result.to_dict()["matmul_precision"] == "medium"
    assert "fp32 matmul precision medium" in bench.format_table(result).splitlines()[0]


def test_engine_rows_train_at_the_benchmarks_matmul_precision():
    """The engine sets a run's precision itself: the bench must hand it the one it was asked to measure at."""
    from workbench.core.tools.bench import engine_configs

    configs, _ = engine_configs(BenchSettings(matmul_precision="high"), ["eager", "aot_eager"], ["default"],
                                ["off"], cuda=False)
    assert configs and {c.matmul_precision for c in configs} == {"high"}


@pytest.mark.slow
def test_a_compiled_row_runs_to_its_end_and_shows_the_runs_own_payback(monkeypatch):
    """The row's break-even is the engine's paired payback, which a stopped run does not measure: the row's run
    must end at its step cap, not by a stop. (Payback.short's other forms: tests/core/test_payback.py.)"""
    from workbench.core.engine.instruments.payback import PaybackCalibration
    from workbench.core.ground.payback import Payback

    seen = []

    def payback(self, run):
        seen.append(run.stopped)
        return Payback(eager_step_s=0.010, compiled_step_s=0.008, compile_s=12.0, steps=30)

    monkeypatch.setattr(PaybackCalibration, "_measure", payback)
    settings = bench.BenchSettings(batch_size=32, hidden_dim=16, warmup=2, windows=2, window_steps=5)
    config = bench.engine_configs(settings, ["aot_eager"], ["default"], ["off"], cuda=False)[0][0]
    row = bench.engine_row(config, settings, torch.device("cpu"))
    assert seen == [False] and row.break_even == "6,000 steps"
    result = bench.BenchResult(settings=settings, device_name="CPU", versions={}, rows=[row], skipped=[], ratios={})
    table = bench.format_table(result)
    assert "break-even" in table.splitlines()[1] and "6,000 steps" in table.splitlines()[2]
