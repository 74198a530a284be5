"""Curves rebuilt from events, the smoothing every plot of them uses (TensorBoard's debiased average), and when
their steps ended: wall times on the events, and where the steps fall on each x axis."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from workbench.core.ground.errors import WorkbenchError
from workbench.core.ground.config import TrainConfig
from workbench.core.ground.events import (CompileFinished, EpochEnd, MemorySample, RunStarted, Step, from_dict,
                                          from_json, to_dict, to_json)
from workbench.core.history.curves import Curves, Smoother, curves_from_events, scale_changes, smooth
from workbench.core.history.step_columns import block_of
from workbench.core.history.x_axis import AXES, Clock, axis_label, clock_of, mean_x, x_axis

from ..helpers import VERSIONS


def _step(i: int, accuracy: float | None = None, **kwargs) -> Step:
    return Step(step=i, epoch=1, loss=1.0 / i, samples_per_s=100.0, step_seconds=0.1, memory=MemorySample(),
                accuracy=accuracy, **kwargs)


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
        return Step(step=n, epoch=1, loss=1.0, samples_per_s=1.0, step_seconds=0.1, memory=MemorySample(),
                    loss_scale=scale)

    def changes(steps: list[Step]) -> tuple[Step, ...]:
        return scale_changes(block_of(list(range(len(steps))), steps))  # the steps as the history keeps them

    steps = [step(1, 1024.0), step(2, 512.0), step(3, 512.0), step(4, 512.0), step(5, 1024.0), step(6, 1024.0)]
    assert [(s.step, s.loss_scale) for s in changes(steps)] == [(1, 1024.0), (2, 512.0), (5, 1024.0), (6, 1024.0)]
    assert changes([step(1, None), step(2, None)]) == ()  # no scaler, no curve
    assert [s.step for s in changes([step(1, 8.0)])] == [1]  # the last step is not kept twice


# -- when steps ended: wall times and the x axes ----------------------------------------------------------------------
START = 1_700_000_000.0


def _timed(i: int, wall: float | None) -> Step:
    return Step(step=i, epoch=1, loss=1.0, samples_per_s=1.0, step_seconds=0.25 * i, memory=MemorySample(), wall=wall)


def _started(wall: float | None, resumed_step: int = 0) -> RunStarted:
    return RunStarted(config=TrainConfig(), device="cpu", device_name="CPU", versions=VERSIONS, train_size=8,
                      val_size=2, steps_per_epoch=4, total_steps=8, resumed_step=resumed_step, wall=wall)


@pytest.mark.parametrize("event", [_started(START), _timed(3, START + 7.5),
                                   EpochEnd(epoch=1, train_loss=0.5, val_loss=0.4, val_accuracy=0.8, seconds=9.0,
                                            wall=START + 9)], ids=lambda e: type(e).__name__)
def test_events_keep_their_wall_time_and_those_recorded_before_it_still_load(event):
    assert from_json(to_json(event)) == event and event.wall is not None
    old = to_dict(event)
    del old["wall"]  # a line written before events carried it
    assert from_dict(old).wall is None and from_dict(old) == replace(event, wall=None)
    with pytest.raises(ValueError, match="wall"):
        from_dict({**old, "wall": "noon"})


def test_curves_carry_when_each_step_ended_and_what_places_them_on_each_axis():
    curves = curves_from_events([_started(START + 100, resumed_step=2), *(_timed(i, START + 110 + i)
                                                                           for i in (3, 4, 5))])
    assert curves.wall.tolist() == [START + 113, START + 114, START + 115]
    assert curves.step_seconds.tolist() == [0.75, 1.0, 1.25]
    assert curves.started == START + 100 and curves.steps_per_epoch == 4
    clock = clock_of(curves)
    steps = np.array([3.0, 5.0])
    assert clock.x("step", steps).tolist() == [3, 5]
    assert clock.x("epoch", steps).tolist() == [0.75, 1.25]
    assert clock.x("wall", steps).tolist() == [START + 113, START + 115]
    assert clock.x("elapsed", steps).tolist() == [13, 15]  # from the run's start, not from its first step
    assert replace(clock, shift=100).x("elapsed", steps).tolist() == [113, 115]  # a continuation's
    assert np.isnan(clock.x("wall", np.array([9.0]))).all()  # not one of its steps
    assert clock.last("elapsed") == 15 and all(clock.knows(kind) for kind in AXES) and clock.has_wall


def test_a_run_recorded_before_wall_times_has_no_wall_axis_and_adds_up_its_step_times():
    old = to_dict(_started(None))
    del old["wall"]
    curves = curves_from_events([from_dict(old), *(_timed(i, None) for i in (1, 2, 3))])
    assert np.isnan(curves.wall).all() and curves.started is None
    clock = clock_of(curves)
    steps = np.array([1.0, 2.0, 3.0])
    assert clock.x("elapsed", steps).tolist() == [0.25, 0.75, 1.5] and not clock.has_wall
    assert not clock.knows("wall") and clock.place("wall", steps, np.ones(3))[0].size == 0
    assert clock.place("epoch", steps, np.ones(3))[0].tolist() == [0.25, 0.5, 0.75]
    assert axis_label("elapsed", from_step_times=True) == "seconds since start (from step times)"
    hand_built = Curves(step=steps, loss=steps, throughput_step=steps, throughput=steps)
    assert np.isnan(hand_built.wall).all() and not clock_of(hand_built).knows("epoch")


def test_a_groups_steps_on_a_time_axis_are_at_its_members_mean_time():
    def member(started: float, walls: bool = True) -> Clock:
        steps = np.array([1.0, 2.0])
        return Clock(steps=steps, wall=started + 10 * steps if walls else np.full(2, np.nan),
                     step_time=np.array([1.0, 2.0]), started=started, steps_per_epoch=2)

    clocks = [member(START), member(START + 100), member(START + 50, walls=False)]
    assert mean_x(clocks, "wall", np.array([1.0, 2.0])).tolist() == [START + 60, START + 70]  # the third has none
    assert mean_x(clocks, "epoch", np.array([2.0])).tolist() == [1.0]
    assert np.isnan(mean_x(clocks[2:], "wall", np.array([1.0]))).all()


def test_an_unknown_x_axis_is_refused_with_the_ones_there_are():
    with pytest.raises(WorkbenchError, match="no x axis called 'steps'") as refused:
        x_axis("steps")
    assert refused.value.hint == "one of step, epoch, wall, elapsed"
