"""Curves rebuilt from events, and the smoothing every plot of them uses (TensorBoard's debiased average)."""

from __future__ import annotations

import numpy as np
import pytest

from workbench.core.ground.events import CompileFinished, EpochEnd, Step, from_dict, to_dict
from workbench.core.history.curves import Smoother, curves_from_events, scale_changes, smooth


def _step(i: int, accuracy: float | None = None, **kwargs) -> Step:
    return Step(step=i, epoch=1, loss=1.0 / i, samples_per_s=100.0, step_seconds=0.1, memory={}, accuracy=accuracy,
                **kwargs)


def test_smoothing_is_the_debiased_moving_average_computed_by_hand():
    # w = 0.5: last = 0.5, 1.25, 2.125; debiased by 1 - 0.5**n = 0.5, 0.75, 0.875
    assert smooth(np.array([1.0, 2.0, 3.0]), 0.5) == pytest.approx([1.0, 5 / 3, 17 / 7])
    # the first point is the raw value (the old average started there too but then lagged: no debiasing)
    assert smooth(np.array([4.0, 0.0]), 0.9)[0] == 4.0
    assert smooth(np.array([4.0, 0.0]), 0.9)[1] == pytest.approx(0.9 * 0.1 * 4 / (1 - 0.81))
    assert smooth(np.array([1.0, 2.0, 3.0]), 0.0).tolist() == [1.0, 2.0, 3.0]


def test_non_finite_points_pass_through_and_are_skipped():
    out = smooth(np.array([1.0, np.nan, 3.0, np.inf]), 0.5)
    assert out[0] == 1.0 and np.isnan(out[1]) and np.isinf(out[3])
    assert out[2] == pytest.approx((0.25 + 1.5) / 0.75)  # as if the NaN were not there


@pytest.mark.parametrize("weight", [0.0, 0.6, 0.999])
def test_smoothing_in_pieces_draws_the_same_line_as_at_once(weight):
    values = np.random.default_rng(0).random(5000)
    smoother = Smoother(weight)
    pieces = np.concatenate([smoother.extend(part) for part in (values[:1], values[1:700], values[700:])])
    last, expected = 0.0, []
    for n, v in enumerate(values, 1):  # the textbook recursion, point by point
        last = last * weight + (1 - weight) * v
        expected.append(last / (1 - weight ** n))
    assert pieces == pytest.approx(expected, rel=1e-12)
    assert smooth(values, weight) == pytest.approx(expected, rel=1e-12)


def test_curves_carry_training_and_validation_accuracy_and_the_compile_time():
    events = [CompileFinished("inductor", "default", 2.0), _step(1, 0.25, compiling=True), _step(2),
              CompileFinished("inductor", "default", 0.5, phase="eval"), _step(3, 0.75),
              EpochEnd(epoch=1, train_loss=0.5, val_loss=0.4, val_accuracy=0.8, seconds=1.0)]
    curves = curves_from_events(events)
    assert curves.accuracy[0] == 0.25 and np.isnan(curves.accuracy[1]) and curves.accuracy[2] == 0.75
    assert curves.val_accuracy.tolist() == [0.8] and curves.val_step.tolist() == [3.0]
    assert curves.compile_seconds == 2.5
    assert curves_from_events([_step(1)]).compile_seconds is None


def test_steps_recorded_before_accuracy_still_load_and_a_wrong_one_is_refused():
    old = to_dict(_step(1))
    del old["accuracy"]
    assert from_dict(old).accuracy is None
    assert from_dict({**old, "accuracy": 0.5}).accuracy == 0.5
    with pytest.raises(ValueError, match="accuracy"):
        from_dict({**old, "accuracy": "high"})


def test_the_loss_scale_curve_keeps_its_changes_and_its_last_step():
    def step(n: int, scale: float | None) -> Step:
        return Step(step=n, epoch=1, loss=1.0, samples_per_s=1.0, step_seconds=0.1, memory={}, loss_scale=scale)

    events = [step(1, 1024.0), step(2, 512.0), step(3, 512.0), step(4, 512.0), step(5, 1024.0), step(6, 1024.0)]
    assert [(s.step, s.loss_scale) for s in scale_changes(events)] == [(1, 1024.0), (2, 512.0), (5, 1024.0),
                                                                       (6, 1024.0)]
    assert scale_changes([step(1, None), step(2, None)]) == ()  # no scaler, no curve
    assert [s.step for s in scale_changes([step(1, 8.0)])] == [1]  # the last step is not kept twice
