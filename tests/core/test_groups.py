"""Seeds as one group: runs that differ only by seed, their figures as mean ± spread, and the band of their curves."""

from __future__ import annotations

import math

import numpy as np
import pytest

from workbench.core.ground.config import TrainConfig
from workbench.core.history.groups import GroupFigures, band, group_figures, group_key, seed_groups, spread
from workbench.core.history.runs import RunRecord


def _record(run_id: int, *, config: dict | None = None, best: float | None = 0.9, rate: float | None = 1000.0,
            compile_s: float | None = 0.0, memory: float | None = 500.0, **settings) -> RunRecord:
    return RunRecord(id=run_id, created="2025-03-14T10:00:00+00:00", status="finished",
                     config=config if config is not None else TrainConfig(**settings).to_dict(), environment={},
                     steps=100, best_val_accuracy=best, samples_per_s=rate, compile_seconds=compile_s,
                     peak_memory_mib=memory, backend_used="eager", failure=None, out_dir=None, checkpoint=None)


def test_runs_that_differ_only_by_seed_are_one_group():
    runs = [_record(1, seed=0), _record(2, seed=1, lr=1e-2), _record(3, seed=1), _record(4, seed=2, lr=1e-2),
            _record(5, seed=7), _record(6, seed=3, lr=1e-3)]
    groups = seed_groups(runs)
    assert [(g.run_ids, g.seeds) for g in groups] == [((1, 3, 5), (0, 1, 7)), ((2, 4), (1, 2))]
    assert groups[0].label == "eager · off · seeds 0, 1, 7: #1, #3, #5"
    assert groups[0].key != groups[1].key
    assert seed_groups(list(reversed(runs))) == groups  # the order runs are listed in does not matter


def test_another_setting_splits_the_group_and_a_single_run_is_no_group():
    assert seed_groups([_record(1, seed=0), _record(2, seed=1, backend="inductor")]) == []
    assert seed_groups([_record(1, seed=0, amp="bf16"), _record(2, seed=1, amp="fp16")]) == []
    assert seed_groups([_record(1, seed=0)]) == []
    assert seed_groups([]) == []


def test_what_does_not_change_the_training_does_not_split_the_group_but_a_continuation_does():
    plain = _record(1, seed=0)
    observed = _record(2, seed=1, profile_steps=10, compile_trace=True, allow_eager_fallback=True)
    assert [g.run_ids for g in seed_groups([plain, observed])] == [(1, 2)]
    continued = _record(3, seed=1, resume="/runs/2/checkpoint.pt")
    assert [g.run_ids for g in seed_groups([plain, observed, continued])] == [(1, 2)]


def test_a_setting_an_older_run_lacks_counts_as_its_default_and_a_damaged_run_joins_none():
    older = TrainConfig(seed=0).to_dict()
    del older["matmul_precision"]
    assert group_key(older) == group_key(TrainConfig(seed=5).to_dict())
    assert [g.run_ids for g in seed_groups([_record(1, config=older), _record(2, seed=5)])] == [(1, 2)]
    assert seed_groups([_record(1, config={}), _record(2, config={})]) == []


def test_group_figures_are_mean_and_spread_of_the_runs_that_have_them():
    runs = [_record(1, best=0.90, rate=1000.0, compile_s=None, memory=0.0),
            _record(2, best=0.92, rate=0.0, compile_s=None, memory=0.0),
            _record(3, best=0.97, rate=3000.0, compile_s=None, memory=0.0)]
    figures = group_figures(runs)
    accuracy = figures.best_val_accuracy
    assert (accuracy.mean, accuracy.low, accuracy.high, accuracy.count) == (pytest.approx(0.93), 0.90, 0.97, 3)
    assert accuracy.std == pytest.approx(math.sqrt((0.03 ** 2 + 0.01 ** 2 + 0.04 ** 2) / 2))  # sample std
    assert (figures.samples_per_s.mean, figures.samples_per_s.count) == (2000.0, 2)  # 0: no steady step, left out
    assert figures.compile_seconds is None and figures.peak_memory_mib is None and figures.runs == 3
    assert accuracy.text(lambda v: f"{v:.1%}") == "93.0% ± 3.6% (90.0%–97.0%, 3 runs)"
    assert GroupFigures.from_dict(figures.to_dict()) == figures
    assert spread([5.0]).std == 0.0 and spread([None, math.nan]) is None


def test_band_against_a_hand_computed_example():
    curves = [(np.array([1, 2, 3, 4]), np.array([1.0, 2.0, 3.0, 4.0])),
              (np.array([1, 2, 3]), np.array([3.0, 4.0, 5.0])),  # shorter: the band ends at step 3
              (np.array([1, 2, 3, 4, 5]), np.array([2.0, np.nan, 7.0, 8.0, 9.0]))]  # no value at step 2
    result = band(curves)
    assert result.steps.tolist() == [1.0, 3.0] and result.members == 3
    assert result.mean.tolist() == [2.0, 5.0]  # (1+3+2)/3, (3+5+7)/3
    assert result.std.tolist() == pytest.approx([1.0, 2.0])  # sample std of (1, 3, 2) and of (3, 5, 7)
    assert result.low.tolist() == [1.0, 3.0] and result.high.tolist() == [3.0, 7.0]


def test_band_of_one_curve_no_curve_and_curves_that_share_no_step():
    one = band([(np.array([1.0, 2.0]), np.array([5.0, 6.0]))])
    assert one.mean.tolist() == [5.0, 6.0] and one.std.tolist() == [0.0, 0.0] and one.members == 1
    assert band([]).steps.size == 0 and band([]).members == 0
    apart = band([(np.array([1.0, 2.0]), np.array([1.0, 1.0])), (np.array([3.0, 4.0]), np.array([1.0, 1.0]))])
    assert apart.steps.size == apart.mean.size == apart.std.size == 0
