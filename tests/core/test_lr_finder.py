"""The learning-rate range test: the sweep it applies, the rule that suggests, how it ends, and a compiled test
that does not recompile as the learning rate changes."""

from __future__ import annotations

import math

import pytest

from workbench.core.ground.config import TrainConfig
from workbench.core.ground.finder_results import LrFinding, LrPoint
from workbench.core.kernel.lr_finder import LrFinderError, find_lr, lr_at, suggest, turned

from ..helpers import SMALL_NET as SMALL



def test_the_sweep_is_exponential_from_the_first_to_the_last_step():
    assert lr_at(0, 101, 1e-6, 1.0) == pytest.approx(1e-6)
    assert lr_at(100, 101, 1e-6, 1.0) == pytest.approx(1.0)
    assert lr_at(50, 101, 1e-6, 1.0) == pytest.approx(1e-3)  # halfway in steps is halfway in log(LR)


def test_the_loss_falls_then_the_test_ends_where_it_diverges_with_a_suggestion_before_the_lowest_loss():
    heard = []
    finding = find_lr(TrainConfig(), on_point=heard.append)  # the built-in network as it ships
    assert isinstance(finding, LrFinding) and isinstance(finding.points, tuple)
    assert tuple(heard) == finding.points and finding.ended.startswith("the loss diverged at LR")
    assert len(finding.points) < 200  # it did not sweep on past the blow-up
    lowest = min(finding.points, key=lambda point: point.smoothed)
    assert lowest.smoothed < finding.points[0].smoothed / 2  # it learned along the way
    assert finding.points[0].lr == pytest.approx(1e-6) and finding.suggestion is not None
    assert finding.points[20].lr < finding.suggestion < lowest.lr
    assert not finding.compiled


def test_the_learning_rate_is_the_sweeps_not_the_configs():
    # config.lr (4e-3) would train: a sweep between 1e-9 and 1e-8 must not.
    finding = find_lr(SMALL, steps=60, lr_min=1e-9, lr_max=1e-8)
    assert len(finding.points) == 60 and finding.ended == "reached LR 1e-08 after 60 steps"
    assert min(point.smoothed for point in finding.points) > 2.0


def test_a_stop_ends_the_test_and_keeps_what_it_read():
    class StopAt:
        def __init__(self):
            self.seen = 0

        def __call__(self, point):
            self.seen += 1

        def is_set(self):
            return self.seen >= 30

    stop = StopAt()
    finding = find_lr(SMALL, on_point=stop, stop=stop)
    assert finding.ended == "stopped" and finding.stopped and 30 <= len(finding.points) < 200
    assert finding.suggestion is None  # stopped on the plateau: the fall has not even begun


def test_a_test_stopped_after_the_loss_turned_up_still_suggests():
    class StopWhenTurned:
        def __init__(self):
            self.points = []

        def __call__(self, point):
            self.points.append(point)

        def is_set(self):  # before the test's own end at 4× the lowest
            return len(self.points) > 20 and turned(self.points)

    stop = StopWhenTurned()
    finding = find_lr(SMALL, on_point=stop, stop=stop)
    assert finding.ended == "stopped" and turned(finding.points)
    assert finding.suggestion == suggest(finding.points) is not None


def test_the_fall_is_over_once_the_smoothed_loss_is_back_at_twice_its_lowest():
    def points(*smoothed):
        return [LrPoint(i + 1, 1e-3, value, value) for i, value in enumerate(smoothed)]

    assert not turned([]) and not turned(points(2.3, 2.2, 2.1))  # still falling
    assert not turned(points(2.3, 1.0, 1.9)) and turned(points(2.3, 1.0, 2.0))


def test_the_rule_picks_the_steepest_fall_against_log_lr_before_the_lowest_point():
    lrs = [10 ** (-6 + i * 0.1) for i in range(50)]
    # A loss that falls slowly, then fastest around index 30, bottoms out at 40 and rises.
    smoothed = [2.0 - 0.01 * i if i < 28 else 1.72 - 0.2 * (i - 27) if i < 33 else 0.72 - 0.01 * (i - 32)
                for i in range(41)] + [0.64 + 0.3 * i for i in range(1, 10)]
    points = [LrPoint(i + 1, lr, loss, loss) for i, (lr, loss) in enumerate(zip(lrs, smoothed))]
    assert math.log10(suggest(points)) == pytest.approx(math.log10(lrs[29]), abs=0.15)
    assert suggest(points[:6]) is None  # too few after the skipped start


@pytest.mark.parametrize("options, message", [({"lr_min": 1e-2, "lr_max": 1e-3}, "the range must grow"),
                                              ({"lr_min": 0.0}, "the range must grow"),
                                              ({"steps": 10}, "10 steps are too few")])
def test_a_range_that_cannot_work_is_refused(options, message):
    with pytest.raises(LrFinderError, match=message):
        find_lr(SMALL, **options)


def test_a_compiled_test_runs_compiled_and_the_changing_lr_costs_no_recompile():
    finding = find_lr(SMALL.replace(backend="aot_eager"), steps=40)
    assert finding.compiled and finding.recompiles == 0 and len(finding.points) == 40
    assert all("grad_mode" in reason for reason in finding.recompile_reasons)  # validation's graph, nothing else


def test_the_steepest_fall_may_be_the_step_into_the_lowest_point():
    lrs = [10 ** (-6 + 0.2 * i) for i in range(25)]
    smoothed = [2.0 - 0.01 * i for i in range(19)] + [1.0] + [1.5 + 0.5 * i for i in range(5)]
    points = [LrPoint(i + 1, lr, loss, loss) for i, (lr, loss) in enumerate(zip(lrs, smoothed))]
    assert suggest(points) == lrs[18]  # the slope at 18 reaches into 19, the lowest point
