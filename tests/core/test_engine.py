"""The Trainer, tested by the events it emits (Lightning-style: a list sink records them, the test reads the order)."""

from __future__ import annotations

import math
import threading
from importlib.metadata import version
from pathlib import Path

import pytest
import torch

from workbench.core.domain import checkpoint, devices
from workbench.core.ground.config import TrainConfig
from workbench.core.engine import TrainedModel, Trainer
from ..helpers import SMALL, StopAfter, of, run, shape, steps
from ..support.two_ranks import OneOfTwoRanks
from workbench.core.ground.events import (CompileEvent, CompileFinished, CompileReport, CompileStarted, EpochEnd,
                                          Notice, RunFailed, RunFinished, RunStarted, Step, is_terminal)

def saving_to(out_dir: Path, handed: list | None = None):
    """A save_checkpoint like the recorder's: checkpoint.pt in `out_dir`. What the engine hands over goes to
    `handed`."""
    def save(trained: TrainedModel) -> str:
        if handed is not None:
            handed.append(trained)
        return str(checkpoint.save(out_dir / "checkpoint.pt", trained.model, trained.config, results=trained.results,
                                   versions=trained.versions, classes=trained.classes))

    return save


# -- eager runs -------------------------------------------------------------------------------------------------
def test_eager_run_event_sequence():
    events, result = run(SMALL)
    assert shape(events) == ["RunStarted", "Step", "EpochEnd", "RunFinished"]
    started = events[0]
    assert started.train_size == 4000 and started.val_size == 1000
    assert started.steps_per_epoch == 4000 // 32 and started.total_steps == 20
    assert started.config == SMALL
    assert started.device == str(devices.resolve_device("auto"))
    assert started.versions.workbench == version("workbench")
    assert [s.step for s in steps(events)] == list(range(1, 21))  # consecutive from 1
    for s in steps(events):
        assert s.epoch == 1 and not s.compiling
        assert math.isfinite(s.loss) and s.samples_per_s > 0 and s.step_seconds > 0
        assert s.memory.readings() and all(v > 0 for v in s.memory.readings().values())
    assert isinstance(result, RunFinished)
    assert result.steps == 20 and result.epochs == 1 and not result.stopped
    assert result.results.backend_used == "eager"
    assert result.results.compile_seconds == 0
    end = of(events, EpochEnd)[0]
    assert 0.0 <= end.val_accuracy <= 1.0 and end.val_loss > 0 and end.train_loss > 0
    assert result.results.val_accuracy == end.val_accuracy


def test_the_run_its_steps_and_its_epochs_say_when_they_happened(trained_run):
    """Unix times: the run's start, each step's end (on the CPU its own, so a step ends its step_seconds after the
    one before it at the earliest, also inside one read-back block), each epoch's end (its validation's too)."""
    [started] = of(list(trained_run.events), RunStarted)
    taken, ends = steps(list(trained_run.events)), of(list(trained_run.events), EpochEnd)
    assert started.wall is not None and all(s.wall is not None for s in taken) and len(ends) == 2
    assert started.wall < taken[0].wall
    for before, after in zip(taken, taken[1:]):
        assert after.wall - before.wall >= after.step_seconds - 1e-6, (before, after)  # 1e-6: a Unix time's float
    for end in ends:
        last = max(s.wall for s in taken if s.epoch == end.epoch)
        assert last <= end.wall
        assert end.wall - started.wall == pytest.approx(end.seconds, abs=0.5)  # the same start, on either clock


def test_cpu_memory_reading_is_rss():
    events, _ = run(SMALL.replace(device="cpu", max_steps=3))
    assert set(steps(events)[0].memory.readings()) == {"rss"}


def test_two_epochs_in_order():
    events, result = run(TrainConfig(epochs=2, batch_size=1000, hidden_dim=16, stats_every=0))  # 4 steps an epoch
    assert shape(events) == ["RunStarted", "Step", "EpochEnd", "Step", "EpochEnd", "RunFinished"]
    assert [(s.step, s.epoch) for s in steps(events)] == [(i, 1 + (i - 1) // 4) for i in range(1, 9)]
    assert [e.epoch for e in of(events, EpochEnd)] == [1, 2]
    assert result.steps == 8 and result.epochs == 2
    assert result.results.best_val_accuracy == max(e.val_accuracy for e in of(events, EpochEnd))


def test_max_steps_stops_mid_epoch():
    events, result = run(TrainConfig(epochs=3, batch_size=1000, max_steps=6, hidden_dim=16))
    assert [s.step for s in steps(events)] == list(range(1, 7))
    assert [e.epoch for e in of(events, EpochEnd)] == [1, 2]
    assert result.steps == 6 and not result.stopped
    assert events[0].total_steps == 6


def test_same_seed_same_losses():
    config = TrainConfig(epochs=1, max_steps=30, hidden_dim=32, seed=11)
    first, a = run(config)
    second, b = run(config)
    assert [s.loss for s in steps(first)] == [s.loss for s in steps(second)]
    assert a.results.val_loss == b.results.val_loss
    third, _ = run(config.replace(seed=12))
    assert [s.loss for s in steps(third)] != [s.loss for s in steps(first)]


def test_bf16_autocast_on_cpu_trains():
    events, result = run(SMALL.replace(amp="bf16", device="cpu", max_steps=15))
    assert isinstance(result, RunFinished)
    losses = [s.loss for s in steps(events)]
    assert len(losses) == 15 and all(math.isfinite(x) for x in losses)
    assert math.isfinite(result.results.val_loss)


def _training_logits(monkeypatch) -> list[torch.dtype]:
    """The dtype of the logits of every training forward (grad on: not check_outputs', the census' or validation's,
    which run under no_grad), read by a hook on the model the engine builds."""
    from workbench.core import engine

    real, seen = engine.trainer.model_for, []

    def model_for(config, output_dim):
        model = real(config, output_dim)
        model.register_forward_hook(
            lambda module, args, output: seen.append(output.dtype) if torch.is_grad_enabled() else None)
        return model

    monkeypatch.setattr(engine.trainer, "model_for", model_for)
    return seen


@pytest.mark.parametrize("amp, dtype", [("off", torch.float32), ("bf16", torch.bfloat16), ("fp16", torch.float16)])
def test_amp_really_runs_the_training_forward_in_its_dtype(monkeypatch, amp, dtype):
    """Finite losses alone would not show it: with autocast silently off a bf16 run trains in fp32 just as well."""
    seen = _training_logits(monkeypatch)
    events, result = run(SMALL.replace(amp=amp, device="cpu", max_steps=3))
    assert isinstance(result, RunFinished) and len(steps(events)) == 3
    assert seen == [dtype] * 3  # one training forward per step, each in the run's precision


def test_sgd_constant_schedule_trains():
    events, result = run(SMALL.replace(optimizer="sgd", lr_schedule="constant", lr=0.05, max_steps=40))
    assert isinstance(result, RunFinished)
    losses = [s.loss for s in steps(events)]
    assert sum(losses[-10:]) < sum(losses[:10])  # it learns


def _learning_rates(monkeypatch) -> list[float]:
    """The learning rate each training step's optimizer step runs with (read as the step starts)."""
    from workbench.core import engine

    real, seen = engine.steps.train_step, []

    def train_step(session, x, y, config, device):
        seen.append(session.optimizer.param_groups[0]["lr"])
        return real(session, x, y, config, device)

    monkeypatch.setattr(engine.steps, "train_step", train_step)
    return seen


def _cosine_with_warmup(total: int) -> list[float]:
    """lr_schedule's documented factors for steps 1…total: a linear warm-up over the first 5% (at least one step)
    that reaches the full rate at its last step — never 0 at the first — then cosine decay towards zero."""
    warmup = max(1, total // 20)
    return [(i + 1) / warmup if i < warmup else 0.5 * (1 + math.cos(math.pi * (i - warmup) / (total - warmup)))
            for i in range(total)]


@pytest.mark.parametrize("total, warmup_factors", [(100, [0.2, 0.4, 0.6, 0.8, 1.0]), (40, [0.5, 1.0]),
                                                   (19, [1.0]), (1, [1.0])])
def test_lr_warmup_ramps_linearly_from_the_first_step_then_decays(total, warmup_factors):
    from workbench.core.engine import lr_schedule

    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.5)
    schedule = lr_schedule(optimizer, TrainConfig(lr=0.5), total)
    rates = []
    for _ in range(total):
        rates.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        schedule.step()
    assert rates[0] > 0  # the first step learns
    assert rates[:len(warmup_factors)] == pytest.approx([0.5 * f for f in warmup_factors])
    assert rates == pytest.approx([0.5 * f for f in _cosine_with_warmup(total)])
    if total > len(warmup_factors):  # after the planned steps the cosine has reached zero
        assert optimizer.param_groups[0]["lr"] == pytest.approx(0.0, abs=1e-12)
    assert lr_schedule(optimizer, TrainConfig(lr_schedule="constant"), total) is None


def test_the_runs_first_step_trains_with_the_warmed_up_learning_rate(monkeypatch):
    rates = _learning_rates(monkeypatch)
    _, result = run(SMALL.replace(max_steps=40, lr=0.002))  # 40 planned steps: a 2-step warm-up
    assert isinstance(result, RunFinished)
    assert rates[:3] == pytest.approx([0.001, 0.002, 0.002])  # half the rate, the full rate, the cosine's top
    assert rates == pytest.approx([0.002 * f for f in _cosine_with_warmup(40)])


def test_five_epochs_of_the_sample_reach_93_percent():
    events, result = run(TrainConfig())  # the defaults: 5 epochs, batch 32, AdamW, cosine
    assert isinstance(result, RunFinished)
    assert len(of(events, EpochEnd)) == 5
    assert result.results.val_accuracy >= 0.93


# -- stopping ---------------------------------------------------------------------------------------------------
def test_stop_flag_set_from_emit_stops_within_one_step():
    stop = threading.Event()
    events: list = []

    def emit(event):
        events.append(event)
        if isinstance(event, Step) and event.step == 5:
            stop.set()

    # flush_seconds=0: every step is reported as it happens, so "after step 5" is well defined.
    result = Trainer(flush_seconds=0).run(TrainConfig(epochs=2, hidden_dim=16), emit, stop)
    assert isinstance(result, RunFinished) and result.stopped
    assert 5 <= result.steps <= 6
    assert result.epochs == 0  # the interrupted epoch does not count as completed
    assert [s.step for s in steps(events)] == list(range(1, result.steps + 1))
    assert events[-1] is result and sum(is_terminal(e) for e in events) == 1


def test_stop_is_checked_before_every_step():
    # No read-back before the stop (they ask the flag too, after 50 ms of steps: a loaded machine got there
    # before step 7): each question is then the one before a step, and the 8th question stops the 8th step.
    events, result = run(TrainConfig(epochs=1, hidden_dim=16), stop=StopAfter(7), flush_seconds=3600.0)
    assert result.stopped and result.steps == 7
    assert [s.step for s in steps(events)] == list(range(1, 8))  # the steps taken are all reported


def test_stop_before_the_first_step_writes_no_checkpoint(tmp_path):
    stop = threading.Event()
    stop.set()
    handed: list = []
    events, result = run(SMALL, stop=stop, save_checkpoint=saving_to(tmp_path, handed))
    assert result.stopped and result.steps == 0
    assert shape(events) == ["RunStarted", "RunFinished"]
    assert not (tmp_path / "checkpoint.pt").exists()
    assert handed == [] and not result.results.checkpoint


# -- failures become one RunFailed event, never an exception ----------------------------------------------------
def test_divergence_is_reported_with_a_hint():
    events, result = run(TrainConfig(lr=10.0, epochs=1, max_steps=100, hidden_dim=32))
    assert isinstance(result, RunFailed) and result.kind == "diverged"
    assert "lr 10" in result.message
    assert "learning rate" in result.hint and "AMP" not in result.hint  # AMP is off: not offered as the fix
    assert shape(events)[0] == "RunStarted"
    assert len(steps(events)) < 100


NAN_FROM_STEP_4 = """import torch
from torch import nn


class Net(nn.Module):
    def __init__(self, input_dim, hidden_dim, output_dim, dropout):
        super().__init__()
        self.fc = nn.Linear(input_dim, output_dim)
        self.steps = 0

    def forward(self, x):
        logits = self.fc(x.flatten(1).float() / 255)
        if self.training and torch.is_grad_enabled():  # a training step (not the engine's no-grad checks)
            self.steps += 1
            if self.steps >= 4:
                logits = logits * float("nan")
        return logits
"""


def test_a_nan_loss_is_reported_as_divergence_though_it_never_grew(tmp_path):
    """NaN compares false with everything: the ×100 rule cannot see it; the non-finite check must."""
    path = tmp_path / "nan_model.py"
    path.write_text(NAN_FROM_STEP_4, encoding="utf-8")
    events, result = run(SMALL.replace(model=f"{path}:Net", max_steps=8, device="cpu"), flush_seconds=0)
    assert isinstance(result, RunFailed) and result.kind == "diverged"
    assert result.message.startswith("loss is nan at step 4 (epoch 1")
    assert "learning rate" in result.hint
    first = steps(events)
    assert [s.step for s in first] == [1, 2, 3]  # steps 1-3 were reported, step 4 was not
    assert all(math.isfinite(s.loss) and s.loss < 10 * first[0].loss for s in first)  # nothing grew first


DOUBLING_LOSS = """import torch
from torch import nn


class Net(nn.Module):
    def __init__(self, input_dim, hidden_dim, output_dim, dropout):
        super().__init__()
        self.fc = nn.Linear(input_dim, output_dim)
        self.register_buffer("pattern", torch.eye(output_dim)[0])  # class 0 confidently, whatever the image
        self.steps = 0

    def forward(self, x):
        logits = self.fc(x.flatten(1).float()) * 0  # trainable, but the loss does not depend on the weights
        scale = 1.0
        if self.training and torch.is_grad_enabled():  # a training step: its logits twice the last one's
            self.steps += 1
            scale = 2.0 ** (self.steps - 1)
        return logits + scale * self.pattern
"""


def test_the_divergence_rule_compares_with_the_runs_first_loss_not_each_read_backs(tmp_path):
    """A loss that doubles every step, read back step by step (flush_seconds=0): no read-back block grows ×100 on
    its own, the run does, against its first step's loss."""
    path = tmp_path / "doubling_model.py"
    path.write_text(DOUBLING_LOSS, encoding="utf-8")
    events, result = run(SMALL.replace(model=f"{path}:Net", max_steps=20, device="cpu"), flush_seconds=0)
    assert isinstance(result, RunFailed) and result.kind == "diverged"
    reported = steps(events)
    first = reported[0].loss
    assert 4 <= len(reported) < 19 and all(math.isfinite(s.loss) and s.loss <= 100 * first for s in reported)
    assert result.message.startswith(f"loss exploded from {first:.3g} to ")
    assert f" at step {len(reported) + 1} (epoch 1, lr " in result.message  # the first step past 100×


def test_data_error_is_a_run_failed_event(tmp_path):
    events, result = run(SMALL.replace(dataset="idx", data_root=str(tmp_path / "missing")))
    assert isinstance(result, RunFailed) and result.kind == "data"
    assert "missing" in result.message
    assert events == [result]  # nothing started


def test_config_error_is_a_run_failed_event(monkeypatch):
    monkeypatch.setattr(devices, "cuda_available", lambda: False)
    events, result = run(SMALL.replace(backend="cudagraphs"))
    assert isinstance(result, RunFailed) and result.kind == "config"
    assert result.message.startswith("backend:")
    assert events == [result]


def test_missing_user_model_is_a_config_failure(tmp_path):
    events, result = run(SMALL.replace(model=f"{tmp_path}/nope.py:Net"))
    assert isinstance(result, RunFailed) and result.kind == "config"
    assert "nope.py" in result.message


def test_unexpected_exception_is_an_internal_failure(monkeypatch):
    def explode(*args, **kwargs):
        raise ZeroDivisionError("surprise")

    monkeypatch.setattr("workbench.core.engine.steps.train_step", explode)
    events, result = run(SMALL)
    assert isinstance(result, RunFailed) and result.kind == "internal"
    assert "ZeroDivisionError" in result.message and result.hint


# -- compiled runs ----------------------------------------------------------------------------------------------
def test_compiled_run_event_sequence_and_checkpoint(tmp_path):
    config = TrainConfig(epochs=1, max_steps=6, hidden_dim=16, backend="aot_eager", stats_every=0)
    events, result = run(config, save_checkpoint=saving_to(tmp_path))
    timeline = of(events, CompileEvent)  # the compile timeline (tests/core/test_compile_trace.py)
    assert [(e.step, e.kind, e.phase) for e in timeline] == [
        (1, "graph", "train"), (1, "graph", "train"), (6, "graph", "eval"), (6, "recompile", "eval")]
    assert shape([e for e in events if not isinstance(e, CompileEvent)]) == [
        "RunStarted", "CompileReport", "CompileStarted", "Step", "CompileFinished", "Step", "CompileFinished",
        "EpochEnd", "CompileReport", "RunFinished"]
    explain_report, run_report = of(events, CompileReport)
    assert explain_report.source == "explain" and run_report.source == "run"
    assert explain_report.graph_count == 1 and explain_report.graph_break_count == 0
    assert run_report.compiled and run_report.backend == "aot_eager"
    first = steps(events)[0]
    assert first.step == 1 and first.compiling
    assert events.index(first) == events.index(of(events, CompileStarted)[0]) + 1
    assert not any(s.compiling for s in steps(events)[1:])
    assert [s.step for s in steps(events)] == list(range(1, 7))
    finished, eval_compiled = of(events, CompileFinished)
    assert (finished.phase, eval_compiled.phase) == ("train", "eval")
    assert isinstance(result, RunFinished)
    assert result.results.compile_seconds > 0
    assert result.results.compile_seconds == finished.seconds + eval_compiled.seconds == run_report.compile_seconds
    assert result.results.backend_used == "aot_eager"
    # The compiled model's checkpoint loads into a plain network.
    ckpt = checkpoint.load(tmp_path / "checkpoint.pt")
    assert not any("_orig_mod" in k for k in ckpt.state_dict)
    assert ckpt.config == config
    model = ckpt.build_model()
    probs, _ = model.predict(torch.zeros(2, 1, 28, 28, dtype=torch.uint8))
    assert probs.shape == (2, 10)


def test_planted_break_with_fullgraph_fails_naming_the_line(planted_break_spec, planted_break_line):
    config = TrainConfig(model=planted_break_spec, epochs=1, max_steps=3, hidden_dim=16, backend="aot_eager",
                         fullgraph=True)
    events, result = run(config)
    assert isinstance(result, RunFailed) and result.kind == "compile"
    assert f"planted_break.py:{planted_break_line}" in result.message
    assert "print(" in result.message
    assert result.hint
    assert not steps(events)


@pytest.mark.slow
def test_planted_break_without_fullgraph_warns_and_trains(planted_break_spec, planted_break_line):
    config = TrainConfig(model=planted_break_spec, epochs=1, max_steps=3, hidden_dim=16, backend="aot_eager")
    events, result = run(config)
    assert isinstance(result, RunFinished)
    warnings = [n for n in of(events, Notice) if n.level == "warning"]
    assert any("graph break" in n.message and f"planted_break.py:{planted_break_line}" in n.message
               for n in warnings)
    run_report = of(events, CompileReport)[-1]
    assert run_report.source == "run" and run_report.graph_break_count >= 1


REASON = "this backend is unusable here (test)"


def test_unusable_backend_fails_the_run(monkeypatch):
    monkeypatch.setattr(devices, "backend_problem", lambda backend, device: REASON)
    events, result = run(SMALL.replace(backend="aot_eager"))
    assert isinstance(result, RunFailed) and result.kind == "compile"
    assert REASON in result.message and "aot_eager" in result.message
    assert "eager" in result.hint
    assert not steps(events)


def test_unusable_backend_falls_back_to_eager_when_allowed(monkeypatch):
    monkeypatch.setattr(devices, "backend_problem", lambda backend, device: REASON)
    events, result = run(SMALL.replace(backend="aot_eager", allow_eager_fallback=True, max_steps=5))
    notices = of(events, Notice)
    assert notices and notices[0].level == "warning" and REASON in notices[0].message
    assert events.index(notices[0]) < events.index(steps(events)[0])  # said before training starts
    assert isinstance(result, RunFinished) and not result.stopped
    assert result.results.backend_used == "eager"
    assert result.steps == 5
    report = of(events, CompileReport)[-1]
    assert not report.compiled and any(REASON in w for w in report.warnings)


@pytest.mark.slow
def test_real_compile_failure_fails_or_falls_back(monkeypatch, tmp_path):
    """Not pre-checked: Inductor really fails (its C++ compiler does not exist). The suite's one Inductor test."""
    import torch._inductor.config as inductor_config

    monkeypatch.setattr(devices, "backend_problem", lambda backend, device: None)  # skip the friendly pre-check
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor-cache"))  # no cached kernels
    config = TrainConfig(epochs=1, max_steps=4, hidden_dim=8, backend="inductor", device="cpu")
    with inductor_config.patch({"cpp.cxx": (str(tmp_path / "no-such-c++"),), "fx_graph_cache": False}):
        failed_events, failed = run(config)
        fallback_events, fallback = run(config.replace(allow_eager_fallback=True))

    assert isinstance(failed, RunFailed) and failed.kind == "compile"
    assert "inductor" in failed.message and "compiler" in failed.message.lower()
    assert "\n" not in failed.message
    assert not steps(failed_events)

    assert isinstance(fallback, RunFinished)
    assert fallback.results.backend_used == "eager"
    warnings = [n for n in of(fallback_events, Notice) if n.level == "warning"]
    assert any("compile failed" in n.message and "eager" in n.message for n in warnings)
    assert [s.step for s in steps(fallback_events)] == [1, 2, 3, 4]
    assert all(math.isfinite(s.loss) for s in steps(fallback_events))
    assert any("fell back to eager" in w for w in of(fallback_events, CompileReport)[-1].warnings)


def _losses(config: TrainConfig) -> list[float]:
    events, result = run(config, flush_seconds=0)
    assert isinstance(result, RunFinished), result
    return [s.loss for s in steps(events)]


@pytest.mark.slow
def test_compiling_does_not_change_the_numbers_without_dropout():
    config = TrainConfig(epochs=1, max_steps=4, hidden_dim=16, dropout=0.0, seed=2)
    assert _losses(config.replace(backend="aot_eager")) == pytest.approx(_losses(config), rel=1e-5)


@pytest.mark.slow
def test_compiling_does_not_change_the_numbers_with_dropout():
    config = TrainConfig(epochs=1, max_steps=4, hidden_dim=16, dropout=0.2, seed=2)
    assert _losses(config.replace(backend="aot_eager")) == pytest.approx(_losses(config), rel=1e-5)


# -- output folder ----------------------------------------------------------------------------------------------
def test_without_save_checkpoint_nothing_is_saved_and_no_path_is_reported(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    events, result = run(SMALL.replace(max_steps=5))
    assert isinstance(result, RunFinished) and result.steps == 5
    assert not result.results.checkpoint and result.results.val_accuracy is not None
    assert list(tmp_path.iterdir()) == []
    assert not [n for n in of(events, Notice) if n.level == "error"]


def test_save_checkpoint_is_handed_the_trained_model_once_and_its_path_is_reported():
    handed: list[TrainedModel] = []

    def save(trained: TrainedModel) -> str:
        handed.append(trained)
        return "/somewhere/model.pt"

    config = SMALL.replace(max_steps=5)
    events, result = run(config, save_checkpoint=save)
    assert isinstance(result, RunFinished)
    assert result.results.checkpoint == "/somewhere/model.pt"
    assert len(handed) == 1
    trained = handed[0]
    assert trained.config == config and trained.classes == tuple("0123456789")
    assert trained.versions == devices.versions()
    assert trained.results.val_accuracy == result.results.val_accuracy
    assert trained.results.epochs_completed == result.epochs
    assert isinstance(trained.model, torch.nn.Module)
    # Handed over before RunFinished went out: the path is in the terminal event's metrics.
    assert of(events, RunFinished)[0].results.checkpoint == "/somewhere/model.pt"


def test_save_checkpoint_gets_a_loadable_checkpoint(tmp_path):
    out = tmp_path / "run"
    events, result = run(SMALL.replace(max_steps=10), save_checkpoint=saving_to(out))
    assert isinstance(result, RunFinished)
    assert result.results.checkpoint == str(out / "checkpoint.pt")
    assert sorted(p.name for p in out.iterdir()) == ["checkpoint.pt", "checkpoint.safetensors"]
    ckpt = checkpoint.load(out / "checkpoint.pt")
    assert ckpt.config == SMALL.replace(max_steps=10)
    assert ckpt.classes == tuple("0123456789")
    assert ckpt.results.val_accuracy == result.results.val_accuracy
    # The saved weights give the validation accuracy the run reported.
    from workbench.core.domain.data import load_split
    from workbench.core.domain.evaluate import evaluate_split

    evaluated = evaluate_split(ckpt.build_model(), load_split("mnist-sample", "val"), ckpt.config,
                               torch.device("cpu"))
    accuracy, predictions = evaluated.accuracy, evaluated.predictions
    assert accuracy == pytest.approx(result.results.val_accuracy)
    assert predictions.shape == (1000,)


# -- documented problems ----------------------------------------------------------------------------------------
def test_largest_valid_seed_runs():
    _, result = run(SMALL.replace(seed=2**32 - 1, max_steps=2))
    assert isinstance(result, RunFinished)


def test_batch_larger_than_dataset_is_a_config_failure():
    events, result = run(SMALL.replace(batch_size=5000))
    assert isinstance(result, RunFailed) and result.kind == "config"


def test_user_model_with_wrong_signature_is_a_config_failure(tmp_path):
    path = tmp_path / "noargs.py"
    path.write_text("from torch import nn\n\nclass Net(nn.Module):\n    def __init__(self):\n"
                    "        super().__init__()\n        self.fc = nn.Linear(784, 10)\n")
    _, result = run(SMALL.replace(model=f"{path}:Net"))
    assert isinstance(result, RunFailed) and result.kind == "config"


# -- CUDA -------------------------------------------------------------------------------------------------------
@pytest.mark.cuda
def test_cuda_run_reports_allocator_memory():
    events, result = run(SMALL.replace(device="cuda", max_steps=5))
    assert isinstance(result, RunFinished)
    assert events[0].device.startswith("cuda")
    for s in steps(events):
        assert set(s.memory.readings()) == {"allocated", "reserved", "peak"}
        assert s.memory.peak >= s.memory.allocated > 0
    assert result.results.peak_memory_mib > 0


@pytest.mark.cuda
def test_fp16_with_grad_scaler_on_cuda():
    events, result = run(SMALL.replace(device="cuda", amp="fp16", max_steps=20))
    assert isinstance(result, RunFinished)
    assert all(math.isfinite(s.loss) for s in steps(events))
    assert math.isfinite(result.results.val_loss)


@pytest.mark.cuda
def test_bf16_on_cuda():
    events, result = run(SMALL.replace(device="cuda", amp="bf16", max_steps=10))
    assert isinstance(result, RunFinished)
    assert all(math.isfinite(s.loss) for s in steps(events))


# -- review fixes -----------------------------------------------------------------------------------------------
def test_user_model_ignoring_output_dim_is_a_model_failure(tmp_path):
    path = tmp_path / "five.py"
    path.write_text("from torch import nn\n\nclass Net(nn.Module):\n"
                    "    def __init__(self, input_dim, hidden_dim, output_dim, dropout):\n"
                    "        super().__init__()\n        self.fc = nn.Linear(input_dim, 5)\n\n"
                    "    def forward(self, x):\n        return self.fc(x.flatten(1).float())\n")
    events, result = run(SMALL.replace(model=f"{path}:Net"))
    assert isinstance(result, RunFailed) and result.kind == "config"
    assert "(32, 5)" in result.message and "(32, 10)" in result.message
    assert "output_dim" in result.hint
    assert not steps(events)


def _compile_fails_at(monkeypatch, call: int) -> list[dict]:
    """Make the compiled model 'fail to compile' at its `call`-th training step; record what each step saw."""
    from torch._dynamo.exc import TorchDynamoException

    from workbench.core import engine

    real, seen = engine.steps.train_step, []

    def step(session, x, y, config, device):
        seen.append({"compiled": session.compiled, "lr": session.optimizer.param_groups[0]["lr"],
                     "scaler": session.scaler.state_dict() if session.scaler else None})
        if session.compiled and len(seen) == call:
            raise TorchDynamoException("injected compile failure")
        return real(session, x, y, config, device)

    monkeypatch.setattr(engine.steps, "train_step", step)
    return seen


def test_step_that_failed_to_compile_stays_off_the_throughput(monkeypatch):
    _compile_fails_at(monkeypatch, call=1)
    events, result = run(SMALL.replace(backend="aot_eager", allow_eager_fallback=True, max_steps=4),
                         flush_seconds=0)
    assert isinstance(result, RunFinished) and result.results.backend_used == "eager"
    assert [s.compiling for s in steps(events)] == [True, False, False, False]  # the failed compile's time is in 1
    assert of(events, CompileStarted) and not of(events, CompileFinished)
    assert result.results.compile_seconds == 0.0


def test_fallback_to_eager_keeps_the_learning_rate(monkeypatch):
    seen = _compile_fails_at(monkeypatch, call=3)
    _, result = run(SMALL.replace(backend="aot_eager", allow_eager_fallback=True, max_steps=6))
    assert isinstance(result, RunFinished) and result.results.backend_used == "eager"
    assert [s["compiled"] for s in seen] == [True, True, True, False, False, False, False]
    assert seen[2]["lr"] != seen[0]["lr"]  # the cosine schedule has moved on by step 3
    assert seen[3]["lr"] == seen[2]["lr"]  # the eager retry of step 3 trains with step 3's learning rate


@pytest.mark.cuda
def test_fallback_to_eager_keeps_the_grad_scaler_state(monkeypatch):
    seen = _compile_fails_at(monkeypatch, call=3)
    _, result = run(SMALL.replace(device="cuda", amp="fp16", backend="aot_eager", allow_eager_fallback=True,
                                  max_steps=6))
    assert isinstance(result, RunFinished)
    assert seen[2]["scaler"]["_growth_tracker"] > 0
    assert seen[3]["scaler"] == seen[2]["scaler"]


def test_evaluating_on_labels_the_model_has_no_output_for_is_a_data_error():
    from workbench.core.domain.data import DataError, Split
    from workbench.core.domain.evaluate import evaluate_split
    from workbench.core.domain.model import SandwichNet

    images = torch.zeros(4, 28, 28, dtype=torch.uint8)
    model = SandwichNet(hidden_dim=8, output_dim=3)
    with pytest.raises(DataError, match=r"labels 0…5 but the model has 3 outputs"):
        evaluate_split(model, Split(images, torch.tensor([0, 1, 2, 5])), SMALL, torch.device("cpu"))
    with pytest.raises(DataError, match=r"labels -1…2"):
        evaluate_split(model, Split(images, torch.tensor([0, 1, 2, -1])), SMALL, torch.device("cpu"))
    result = evaluate_split(model, Split(images, torch.tensor([0, 1, 2, 2])), SMALL, torch.device("cpu"))
    assert result.confusion().sum() == 4 and result.confusion().shape == (3, 3)


def test_unwritable_checkpoint_still_finishes_the_run(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    events, result = run(SMALL.replace(max_steps=5), save_checkpoint=saving_to(blocker / "run"))  # mkdir fails
    assert isinstance(result, RunFinished) and result.steps == 5
    assert not result.results.checkpoint and result.results.val_accuracy is not None
    errors = [n for n in of(events, Notice) if n.level == "error"]
    assert len(errors) == 1 and str(blocker / "run" / "checkpoint.pt") in errors[0].message


def test_processes_stop_together_when_any_one_is_asked_to(monkeypatch):
    """Several processes fold their stop flags into the losses' all_reduce: a stop asked of another process
    (simulated here) stops this one at the same read-back, though its own flag was never set."""
    from workbench.core.domain.distributed import Distributed

    class TwoRanks(Distributed):
        reads = 0

        def wrap(self, model):
            return model

        def mean(self, tensor):
            self.reads += 1
            other = tensor.clone()
            other[-1] = 1.0 if self.reads == 2 else 0.0  # the other rank is asked to stop before read-back 2
            return (tensor + other) / 2

        def sum(self, tensor):
            return tensor * 2

        def gather(self, value):
            return [value, value]

    events, result = run(SMALL.replace(max_steps=50), distributed=TwoRanks(rank=0, world_size=2))
    assert isinstance(result, RunFinished) and result.stopped
    assert result.steps == 2 * 10  # two blocks of DIST_FLUSH_STEPS


# -- the CUDA path, checked on the CPU (issue 17) ---------------------------------------------------------------
def _optimizer_kwargs(monkeypatch) -> list[tuple[str, dict]]:
    """Record the keyword arguments every AdamW/SGD is built with; build it without `fused` (CPU parameters)."""
    made: list[tuple[str, dict]] = []
    for name in ("AdamW", "SGD"):
        real = getattr(torch.optim, name)

        def build(params, *args, _real=real, _name=name, **kwargs):
            made.append((_name, dict(kwargs)))
            kwargs.pop("fused", None)
            return _real(params, *args, **kwargs)

        monkeypatch.setattr(torch.optim, name, build)
    return made


@pytest.mark.parametrize("optimizer, cls", [("adamw", "AdamW"), ("sgd", "SGD")])
def test_the_optimizer_is_fused_on_cuda_only(monkeypatch, optimizer, cls):
    """A non-fused optimizer under GradScaler reads found_inf.item() every step (pytorch/pytorch#80167)."""
    from workbench.core import engine

    made = _optimizer_kwargs(monkeypatch)
    config = SMALL.replace(optimizer=optimizer)
    engine.make_optimizer([torch.nn.Parameter(torch.zeros(3))], config, "cuda")
    engine.make_optimizer([torch.nn.Parameter(torch.zeros(3))], config, "cpu")
    assert [name for name, _ in made] == [cls, cls]
    assert made[0][1]["fused"] is True
    assert "fused" not in made[1][1]  # the CPU keeps PyTorch's default implementation
    assert made[0][1]["lr"] == made[1][1]["lr"] == config.lr


def test_the_session_and_its_eager_copy_build_a_fused_optimizer_on_cuda(monkeypatch):
    """The session helper, for a (pretend) CUDA run: both the compiled session and the eager fallback's copy."""
    from types import SimpleNamespace

    from workbench.core.domain.model import model_for

    made = _optimizer_kwargs(monkeypatch)
    config = SMALL.replace(amp="off")
    from workbench.core.engine import compiling

    fake_run = SimpleNamespace(config=config, device=torch.device("cuda"), total_steps=20, output_dim=10,
                               record_amp_health=False)
    make_session = Trainer()._session_maker(fake_run)
    fake_run.session = make_session(model_for(config, 10), True, None)
    copy = compiling._eager_copy(fake_run, make_session)
    assert not copy.compiled
    assert [kwargs.get("fused") for _, kwargs in made] == [True, True]


def test_the_cpu_run_builds_no_fused_optimizer(monkeypatch):
    made = _optimizer_kwargs(monkeypatch)
    _, result = run(SMALL.replace(max_steps=2, device="cpu"))
    assert isinstance(result, RunFinished)
    assert made and all("fused" not in kwargs for _, kwargs in made)


def test_warmup_plan_keeps_cudas_first_steps_and_the_recording_off_the_steady_figures():
    from workbench.core.engine import CUDA_WARMUP_STEPS, warmup_plan

    def kinds(config, device_type, compiled=None):
        plan = warmup_plan(config, device_type)
        return [plan.kind(step, config.compiled if compiled is None else compiled) for step in range(1, 8)]

    eager, aot = TrainConfig(), TrainConfig(backend="aot_eager")
    # The CPU: nothing special but a compiling first step.
    assert kinds(eager, "cpu") == ["steady"] * 7
    assert kinds(aot, "cpu") == ["compiling"] + ["steady"] * 6
    assert kinds(TrainConfig(backend="inductor", mode="reduce-overhead"), "cpu") == ["compiling"] + ["steady"] * 6
    # CUDA: the first CUDA_WARMUP_STEPS are warm-up; under CUDA graphs step 2 records them.
    assert CUDA_WARMUP_STEPS == 5
    assert kinds(eager, "cuda") == ["warmup"] * 5 + ["steady"] * 2
    assert kinds(aot, "cuda") == ["compiling"] + ["warmup"] * 4 + ["steady"] * 2
    graphed = ["compiling", "recording"] + ["warmup"] * 3 + ["steady"] * 2
    assert kinds(TrainConfig(backend="inductor", mode="reduce-overhead"), "cuda") == graphed
    assert kinds(TrainConfig(backend="inductor", mode="max-autotune"), "cuda") == graphed
    assert kinds(TrainConfig(backend="cudagraphs"), "cuda") == graphed
    assert kinds(TrainConfig(backend="inductor", mode="max-autotune-no-cudagraphs"), "cuda") == \
        ["compiling"] + ["warmup"] * 4 + ["steady"] * 2
    # After a fallback to eager nothing compiles or records any more.
    assert kinds(TrainConfig(backend="cudagraphs"), "cuda", compiled=False) == ["warmup"] * 5 + ["steady"] * 2


def _pretend_cuda_plan(monkeypatch):
    """Train on the CPU with the warm-up plan a CUDA device gets."""
    from workbench.core import engine

    real = engine.warmup_plan
    monkeypatch.setattr(engine.trainer, "warmup_plan", lambda config, device_type, start=0: real(config, "cuda", start))


def test_cuda_warmup_steps_are_flagged_and_kept_off_the_steady_figures(monkeypatch):
    from workbench.core.history.curves import curves_from_events

    _pretend_cuda_plan(monkeypatch)
    events, result = run(SMALL.replace(max_steps=12), flush_seconds=60)  # steady steps: one block, at the end
    assert isinstance(result, RunFinished)
    all_steps = steps(events)
    assert [s.warmup for s in all_steps] == [True] * 5 + [False] * 7
    assert not any(s.compiling for s in all_steps)
    warm, steady = all_steps[:5], all_steps[5:]
    # Read back in a block of their own: the steady block's rate is not diluted by the warm-up's.
    assert len({s.samples_per_s for s in warm}) == 1 and len({s.samples_per_s for s in steady}) == 1
    assert result.results.samples_per_s == pytest.approx(steady[0].samples_per_s)
    assert list(curves_from_events(events).throughput_step) == [s.step for s in steady]


@pytest.mark.slow
def test_cpu_steps_are_never_warmup_and_all_count_toward_the_steady_figures():
    events, result = run(SMALL.replace(device="cpu", max_steps=8), flush_seconds=0)  # one block per step
    assert isinstance(result, RunFinished)
    all_steps = steps(events)
    assert not any(s.warmup or s.compiling for s in all_steps)
    seconds = sum(SMALL.batch_size / s.samples_per_s for s in all_steps)  # step 1's included
    assert result.results.samples_per_s == pytest.approx(len(all_steps) * SMALL.batch_size / seconds)
    compiled, _ = run(SMALL.replace(device="cpu", max_steps=4, backend="aot_eager"), flush_seconds=0)
    assert [(s.compiling, s.warmup) for s in steps(compiled)] == [(True, False)] + [(False, False)] * 3


@pytest.mark.slow
def test_every_compile_phase_is_counted_train_then_eval():
    config = TrainConfig(epochs=2, batch_size=1000, hidden_dim=16, backend="aot_eager")  # 4 steps per epoch
    events, result = run(config)
    assert isinstance(result, RunFinished)
    compiles = of(events, CompileFinished)
    assert [c.phase for c in compiles] == ["train", "eval"]  # the second validation compiles nothing new
    train, evaluation = compiles
    first_epoch = of(events, EpochEnd)[0]
    # The first validation compiles the eval graph: its whole time is the eval phase, and it is said before the
    # epoch's end, which reports the same validation time.
    assert evaluation.seconds == first_epoch.val_seconds > 0
    assert events.index(evaluation) < events.index(first_epoch)
    assert events.index(train) < events.index(steps(events)[1])
    assert result.results.compile_breakdown == {"train": train.seconds, "eval": evaluation.seconds}
    assert result.results.compile_seconds == pytest.approx(train.seconds + evaluation.seconds)
    assert of(events, CompileReport)[-1].compile_seconds == result.results.compile_seconds


@pytest.mark.slow
def test_cuda_graph_recording_is_a_compile_phase_of_its_own(monkeypatch):
    from workbench.core import engine

    monkeypatch.setattr(engine.trainer, "warmup_plan",
                        lambda config, device_type, start=0: engine.WarmupPlan(warmup_steps=5, recording_steps=1,
                                                                                   start=start))
    events, result = run(SMALL.replace(backend="aot_eager", max_steps=8), flush_seconds=60)
    assert isinstance(result, RunFinished)
    compiles = of(events, CompileFinished)
    assert [c.phase for c in compiles] == ["train", "cudagraph recording", "eval"]
    recording = compiles[1]
    step2 = steps(events)[1]
    assert step2.warmup and not step2.compiling
    assert recording.seconds == pytest.approx(SMALL.batch_size / step2.samples_per_s)  # step 2's block alone
    assert set(result.results.compile_breakdown) == {"train", "cudagraph recording", "eval"}
    assert result.results.compile_seconds == pytest.approx(sum(c.seconds for c in compiles))


def test_no_compile_phase_is_counted_after_a_fallback_to_eager(monkeypatch):
    _compile_fails_at(monkeypatch, call=1)
    events, result = run(SMALL.replace(backend="aot_eager", allow_eager_fallback=True, max_steps=3))
    assert isinstance(result, RunFinished) and not of(events, CompileFinished)
    assert result.results.compile_breakdown == {} and result.results.compile_seconds == 0.0


def test_matmul_precision_is_the_runs_and_restored_afterwards(monkeypatch):
    from workbench.core import engine

    real, seen = engine.steps.train_step, []

    def step(session, x, y, config, device):
        seen.append(torch.get_float32_matmul_precision())
        return real(session, x, y, config, device)

    monkeypatch.setattr(engine.steps, "train_step", step)
    before = torch.get_float32_matmul_precision()
    assert before == "highest"  # PyTorch's default, and the setting's
    assert TrainConfig().matmul_precision == "highest"
    _, result = run(SMALL.replace(max_steps=2, matmul_precision="high"))
    assert isinstance(result, RunFinished) and result.results.val_accuracy >= 0
    assert seen == ["high", "high"]
    assert torch.get_float32_matmul_precision() == before
    # A failed run restores it too.
    monkeypatch.setattr(engine.steps, "train_step", lambda *args: 1 / 0)
    _, failed = run(SMALL.replace(max_steps=2, matmul_precision="medium"))
    assert isinstance(failed, RunFailed) and torch.get_float32_matmul_precision() == before


def test_ranks_start_from_the_same_weights_and_draw_their_own_dropout(monkeypatch):
    from workbench.core import engine
    from workbench.core.domain.distributed import weights_checksum

    real, first = engine.steps.train_step, {}

    def step(session, x, y, config, device):
        if "weights" not in first:
            first["weights"] = weights_checksum(session.model)
            first["mask"] = torch.nn.functional.dropout(torch.ones(256), 0.5).clone()  # the rank's random stream
        return real(session, x, y, config, device)

    monkeypatch.setattr(engine.steps, "train_step", step)
    seen = []
    for rank in (0, 1):
        first.clear()
        _, result = run(SMALL.replace(max_steps=2, dropout=0.5), distributed=OneOfTwoRanks.make(rank))
        assert isinstance(result, RunFinished)
        seen.append(dict(first))
    assert seen[0]["weights"] == seen[1]["weights"]  # replicas start identical
    assert not torch.equal(seen[0]["mask"], seen[1]["mask"])  # but drop different units
    assert engine.rank_seed(7, 0) == 7 and engine.rank_seed(7, 1) == 8


def test_ranks_train_on_disjoint_shards_of_one_batch_order():
    from workbench.core.domain.data import DeviceBatches, load_splits

    train, _ = load_splits("mnist-sample", None)
    shards = [DeviceBatches(train, 16, torch.device("cpu"), seed=3, rank=r, world_size=2) for r in (0, 1)]
    x0, _ = next(shards[0].epoch(1))
    x1, _ = next(shards[1].epoch(1))
    assert not torch.equal(x0, x1)


def test_cuda_graphs_on_a_worker_thread_warn_on_a_torch_without_the_fix(monkeypatch):
    """pytorch/pytorch#123177: CUDA graph trees asserted on threads Python started; fixed in torch 2.13.0."""
    from workbench.core import engine

    graphed = TrainConfig(backend="inductor", mode="reduce-overhead")

    def on_a_thread(config):
        out = []
        thread = threading.Thread(target=lambda: out.append(engine.cudagraph_thread_notice(config)))
        thread.start()
        thread.join()
        return out[0]

    monkeypatch.setattr(torch, "__version__", "2.12.1+cu126")
    notice = on_a_thread(graphed)
    assert isinstance(notice, Notice) and notice.level == "warning"
    assert "123177" in notice.message and "2.12.1" in notice.message and "2.13" in notice.hint
    assert isinstance(on_a_thread(TrainConfig(backend="cudagraphs")), Notice)
    assert engine.cudagraph_thread_notice(graphed) is None  # the main thread (a run kernel's) is fine
    assert on_a_thread(TrainConfig(backend="inductor", mode="max-autotune-no-cudagraphs")) is None
    assert on_a_thread(TrainConfig()) is None
    for fixed in ("2.13.0", "2.14.1+cu130", "3.0.0"):
        monkeypatch.setattr(torch, "__version__", fixed)
        assert on_a_thread(graphed) is None


def test_an_in_process_cuda_graph_run_on_a_worker_thread_says_so(monkeypatch):
    from workbench.core import engine

    monkeypatch.setattr(torch, "__version__", "2.6.0")
    monkeypatch.setattr(engine.plan, "uses_cuda_graphs", lambda config: True)  # CUDA graphs need a GPU: pretend
    out = []
    thread = threading.Thread(target=lambda: out.append(run(SMALL.replace(backend="aot_eager", max_steps=2))))
    thread.start()
    thread.join()
    events, result = out[0]
    assert isinstance(result, RunFinished)
    notices = [n for n in of(events, Notice) if "123177" in n.message]
    assert len(notices) == 1 and events.index(notices[0]) == 1  # right after RunStarted
