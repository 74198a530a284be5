"""Payback: the break-even arithmetic on synthetic timings, and the engine's paired calibration."""

from __future__ import annotations

import contextlib
import copy

import pytest
import torch

from workbench.core import engine
from workbench.core.engine.instruments import payback
from workbench.core.engine.instruments.payback import PaybackCalibration
from workbench.core.engine import Trainer
from workbench.core.ground.config import TrainConfig
from workbench.core.ground.payback import Payback

from ..helpers import StopAfter


def test_a_compile_that_came_back_says_at_which_step():
    # 2 ms saved per step (10 ms eager, 8 ms compiled): 12 s of compile come back after 6,000 steps.
    payback = Payback(eager_step_s=0.010, compiled_step_s=0.008, compile_s=12.0, steps=9_000)
    assert payback.break_even_step == 6_000 and payback.paid_off
    assert payback.speedup == pytest.approx(1.25)
    assert payback.verdict() == "paid for itself at step 6,000 (compiled steps are 1.25× as fast as eager)"


def test_a_compile_that_will_pay_off_later_says_how_many_steps_and_how_many_this_run_had():
    payback = Payback(eager_step_s=0.010, compiled_step_s=0.008, compile_s=6.2, steps=625)
    assert payback.break_even_step == 3_100 and not payback.paid_off  # ceil(6.2 / 0.002)
    assert payback.verdict() == ("pays off after 3,100 steps (this run has 625; compiled steps are 1.25× as fast as "
                                 "eager)")


def test_a_compiled_step_slower_than_eager_never_pays_off():
    payback = Payback(eager_step_s=0.0073, compiled_step_s=0.010, compile_s=48.9, steps=10_000)
    assert payback.break_even_step is None and not payback.paid_off
    assert payback.verdict() == "never: compiled steps are 0.73× as fast as eager on this device"
    equal = Payback(eager_step_s=0.01, compiled_step_s=0.01, compile_s=1.0, steps=10)
    assert equal.break_even_step is None  # saving nothing is never paying off


def test_a_gain_within_the_calibrations_noise_is_not_called_a_payoff():
    # Measured here: inductor bf16 on a CPU, 2.88 ms against 2.88 ms (1.0007×): "pays off after 8,880,719 steps"
    # would be a property of the noise. (Timings chosen so that no break-even lands on a whole number.)
    payback = Payback(eager_step_s=1.005, compiled_step_s=1.0, compile_s=10.337, steps=625)
    assert payback.break_even_step == 2_068
    assert payback.verdict() == ("not measurably faster: compiled steps are 1.00× as fast as eager on this device "
                                 "(break-even after 2,068 steps)")
    clear = Payback(eager_step_s=1.03, compiled_step_s=1.0, compile_s=2.9, steps=625)  # 1.03×
    assert clear.verdict() == "paid for itself at step 97 (compiled steps are 1.03× as fast as eager)"
    assert (payback.short(), clear.short()) == ("no gain (1.00×)", "97 steps")
    assert Payback(eager_step_s=0.73, compiled_step_s=1.0, compile_s=1.0, steps=5).short() == "never (0.73×)"


def test_the_break_even_step_is_rounded_up_and_at_least_one():
    assert Payback(eager_step_s=0.003, compiled_step_s=0.001, compile_s=0.0041, steps=5).break_even_step == 3
    assert Payback(eager_step_s=0.003, compiled_step_s=0.001, compile_s=0.0, steps=5).break_even_step == 1


def test_a_payback_survives_the_run_record_and_junk_is_refused_saying_where():
    payback = Payback(eager_step_s=0.01, compiled_step_s=0.005, compile_s=3.0, steps=700, method="paired")
    recorded = payback.to_dict()
    assert recorded["break_even_step"] == 600 and recorded["verdict"].startswith("paid for itself at step 600")
    assert Payback.from_dict(recorded) == payback
    for junk, where in ((None, "Payback is NoneType"), ({"eager_step_s": 1}, "Payback.compiled_step_s is missing"),
                        ({**recorded, "steps": "many"}, "Payback.steps")):
        with pytest.raises(ValueError, match=where):
            Payback.from_dict(junk)


# -- the engine's calibration -----------------------------------------------------------------------------------
# A constant learning rate: at the end of a cosine schedule it is zero, and a calibration that left its steps in the
# weights would go unnoticed.
CONFIG = TrainConfig(epochs=1, max_steps=12, hidden_dim=16, backend="aot_eager", lr_schedule="constant")


def _run(config, monkeypatch=None, calibrate=True):
    handed: list = []
    if not calibrate:
        monkeypatch.setattr(PaybackCalibration, "_measure", lambda self, run: "not measured (test)")
    torch._dynamo.reset()
    result = Trainer(save_checkpoint=lambda trained: handed.append(trained) or "saved").run(config, lambda e: None)
    return result, {k: v.detach().clone() for k, v in handed[0].model.state_dict().items()}


@pytest.mark.slow
def test_a_compiled_run_measures_eager_and_compiled_steps_and_its_weights_are_untouched(monkeypatch):
    calibrated, weights = _run(CONFIG)
    payback = calibrated.results.payback
    assert payback is not None and payback.eager_step_s > 0 and payback.compiled_step_s > 0
    assert payback.compile_s == calibrated.results.compile_seconds and payback.steps == 12
    assert "force_eager" in payback.method
    # The calibration trained, then put everything back: the checkpoint is the run's own, bit for bit.
    plain, plain_weights = _run(CONFIG, monkeypatch, calibrate=False)
    assert plain.results.payback is None
    assert weights.keys() == plain_weights.keys()
    assert all(torch.equal(weights[k], plain_weights[k]) for k in weights)


@pytest.mark.slow
def test_the_calibration_really_runs_eager_steps_and_compiled_ones(monkeypatch):
    """force_eager must reach the step: with it ignored, no step of the calibration would run eagerly."""
    seen = {"eager": 0, "compiled": 0}
    real = engine.steps.train_step

    def step(session, x, y, config, device):
        seen["eager" if torch.compiler.is_compiling() is False and _stance_is_eager() else "compiled"] += 1
        return real(session, x, y, config, device)

    monkeypatch.setattr(engine.steps, "train_step", step)
    result, _ = _run(CONFIG)
    block = int(result.results.payback.method.split(" rounds of ")[1].split()[0])
    assert seen["eager"] == (payback.ROUNDS + 1) * block  # one untimed warm-up block, then the rounds
    assert seen["compiled"] == 12 + payback.ROUNDS * block


def _stance_is_eager() -> bool:
    from torch._dynamo.eval_frame import _stance

    return _stance.stance == "force_eager"


@pytest.mark.slow
def test_an_eager_run_has_no_payback_and_a_stopped_one_says_why():
    result = Trainer().run(CONFIG.replace(backend="eager"), lambda e: None)
    assert result.results.payback is None and not result.results.payback_problem
    torch._dynamo.reset()
    stopped = Trainer().run(CONFIG, lambda e: None, StopAfter(3))
    assert stopped.stopped and 0 < stopped.steps < 12
    assert stopped.results.payback_problem == "not measured: the run was stopped"


def test_restoring_the_training_state_puts_back_weights_optimizer_and_schedule():
    """What the calibration's steps change, beyond the weights: the optimizer's moments and the schedule's count
    (a run continued from the checkpoint would train on with them)."""
    model = torch.nn.Linear(4, 2)
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.1)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0 / (step + 1))
    session = engine.Session(model=model, train_model=model, optimizer=optimizer, scaler=None, compiled=False,
                              autocast=contextlib.nullcontext(), scheduler=scheduler)
    model(torch.ones(1, 4)).sum().backward()
    optimizer.step()
    session.scheduler.step()
    before = (copy.deepcopy(model.state_dict()), copy.deepcopy(optimizer.state_dict()), session.scheduler.state_dict())
    state = engine.steps.training_state(session)
    for _ in range(3):
        model(torch.randn(1, 4)).sum().backward()
        optimizer.step()
        session.scheduler.step()
    engine.steps.restore_training_state(session, state)
    weights, opt, sched = before
    assert all(torch.equal(model.state_dict()[k], weights[k]) for k in weights)
    assert optimizer.state_dict()["state"][0]["step"] == opt["state"][0]["step"]
    assert torch.equal(optimizer.state_dict()["state"][0]["exp_avg"], opt["state"][0]["exp_avg"])
    assert session.scheduler.state_dict()["last_epoch"] == sched["last_epoch"]
