"""The alert rules (ground.alerts), fed made-up events: each rule fires past its threshold, stays quiet below it,
and fires once per run."""

import math

import pytest

from workbench.core.ground import events as ev
from workbench.core.ground.alerts import Alert, AlertThresholds, AlertWatch, alert_line, divergence_hint
from workbench.core.ground.config import TrainConfig
from workbench.core.ground.layer_stats import Histogram, LayerStat, LayerStats

FLAT = Histogram(lo=0.0, hi=1.0, counts=(1.0,))


def step(n, loss=1.0, *, rate=1000.0, seconds=0.032, memory=None, scale=None, compiling=False):
    return ev.Step(step=n, epoch=1, loss=loss, samples_per_s=rate, step_seconds=seconds,
                   memory=memory if memory is not None else ev.MemorySample(rss=100.0), loss_scale=scale,
                   compiling=compiling)


def stats(n, *grads, dead=0.0):
    """A LayerStats whose layers l0, l1, … have these gradient norms."""
    return LayerStats(step=n, layers=tuple(
        LayerStat(name=f"l{i}", weight_norm=1.0, grad_norm=g, update_ratio=1e-3, dead_fraction=dead,
                  weights=FLAT, grads=FLAT, activations=FLAT) for i, g in enumerate(grads)))


def feed(watch, events):
    return [alert for event in events for alert in watch.observe(event)]


def rules(alerts):
    return [a.rule for a in alerts]


def test_a_non_finite_loss_fires_once_before_the_run_fails():
    watch = AlertWatch(AlertThresholds())
    assert watch.losses(1, [2.3, 2.2]) == []
    [alert] = watch.losses(3, [2.1, math.nan, math.inf])
    assert (alert.rule, alert.step, alert.severity, alert.panel) == ("loss_not_finite", 4, "error", "setting:lr")
    assert watch.losses(6, [math.nan]) == []  # once per run


@pytest.mark.parametrize("amp, offered, not_offered", [
    ("off", "learning rate", "AMP"), ("fp16", "use bf16 instead of fp16", "turn AMP off"),
    ("bf16", "turn AMP off", "use bf16"),
])
def test_a_blown_up_runs_advice_fits_its_precision(amp, offered, not_offered):
    [alert] = AlertWatch(AlertThresholds(amp=amp)).losses(1, [2.3, math.nan])
    assert offered in alert.advice and not_offered not in alert.advice
    assert divergence_hint(amp) in alert.advice
    assert AlertThresholds.of(TrainConfig(amp=amp)).amp == amp


def test_a_loss_far_above_the_first_fires_and_a_rise_below_the_factor_does_not():
    watch = AlertWatch(AlertThresholds())
    assert watch.losses(1, [2.0, 150.0]) == []  # 75× the first
    assert rules(watch.losses(3, [201.0])) == ["loss_exploded"]


def test_the_gradient_norm_explodes_against_the_runs_own_history():
    watch = AlertWatch(AlertThresholds(grad_factor=10.0))
    # no history yet: a large second norm is no jump (its history is one sample)
    assert feed(watch, [stats(1, 1.0, 1.0), stats(2, 5.0, 5.0), stats(4, 3.0, 3.0)]) == []
    assert feed(watch, [stats(8, 20.0, 20.0)]) == []  # 28.3: 6.7× the median so far (4.24)
    [alert] = feed(watch, [stats(16, 60.0, 60.0)])  # 84.9: 15× the median so far (5.66)
    assert alert.rule == "grad_exploding" and alert.step == 16 and "84.9" in alert.title and "15×" in alert.title


def test_the_gradient_factor_setting_is_read():
    history = [stats(1, 1.0), stats(2, 1.0), stats(4, 1.0), stats(8, 5.0)]
    assert feed(AlertWatch(AlertThresholds(grad_factor=10.0)), history) == []
    assert rules(feed(AlertWatch(AlertThresholds(grad_factor=4.0)), history)) == ["grad_exploding"]
    assert AlertThresholds.of(TrainConfig(alert_grad_factor=4.0)).grad_factor == 4.0


def test_a_vanishing_gradient_needs_two_samples_in_a_row_and_names_every_layer_it_reaches():
    watch = AlertWatch(AlertThresholds(grad_factor=10.0))
    assert feed(watch, [stats(1, 1e-5, 1e-4, 1.0)]) == []  # one sample: could be a moment
    assert feed(watch, [stats(2, 1e-2, 1e-2, 1.0)]) == []  # 1/100 of the largest: small, not vanished (1/1000)
    assert feed(watch, [stats(4, 1e-5, 1e-4, 1.0)]) == []
    [alert] = feed(watch, [stats(8, 1e-6, 1e-4, 1.0)])
    assert alert.rule == "grad_vanishing" and alert.layer == "l0" and "l0, l1" in alert.title
    # once per run, not once per layer: l1 is now the smallest, and still no second alert
    assert feed(watch, [stats(16, 1e-5, 1e-7, 1.0), stats(32, 1e-5, 1e-7, 1.0)]) == []


def test_dead_units_fire_above_half_of_a_layers_inputs():
    watch = AlertWatch(AlertThresholds())
    assert feed(watch, [stats(1, 1.0, dead=0.5)]) == []
    [alert] = feed(watch, [stats(2, 1.0, 1.0, dead=0.97)])[:1]
    assert (alert.rule, alert.layer, alert.panel) == ("dead_units", "l0", "model") and "97%" in alert.title


def test_a_plateau_is_off_by_default_and_fires_after_its_steps_without_a_1_percent_gain():
    flat = [step(n, loss=1.0) for n in range(1, 400)]
    assert feed(AlertWatch(AlertThresholds()), flat) == []
    improving = [step(n, loss=2.0 * 0.995 ** n) for n in range(1, 400)]
    assert feed(AlertWatch(AlertThresholds(plateau_steps=100)), improving) == []
    [alert] = feed(AlertWatch(AlertThresholds(plateau_steps=100)), flat)
    assert alert.rule == "loss_plateau" and alert.step == 101
    creeping = [step(n, loss=2.0 * 0.99995 ** n) for n in range(1, 400)]  # 0.5% per 100 steps: below the 1% gain
    assert rules(feed(AlertWatch(AlertThresholds(plateau_steps=100)), creeping)) == ["loss_plateau"]


def test_the_fp16_scale_collapses_below_one():
    watch = AlertWatch(AlertThresholds())
    assert feed(watch, [step(1, scale=65536.0), step(2, scale=1.0)]) == []
    [alert] = feed(watch, [step(3, scale=0.5)])
    assert alert.rule == "loss_scale_collapse" and alert.panel == "setting:amp"


def recompile(n, kind="recompile", phase="train", title="guard failed"):
    return ev.CompileEvent(step=n, kind=kind, title=title, phase=phase)


def test_a_recompile_storm_is_the_settings_count_within_100_steps():
    spread = [recompile(n) for n in (10, 150, 300, 450, 600, 750)]
    assert feed(AlertWatch(AlertThresholds(recompile_storm=5)), spread) == []
    burst = [recompile(n) for n in (10, 20, 30, 40, 50)]
    assert feed(AlertWatch(AlertThresholds(recompile_storm=6)), burst) == []
    [alert] = feed(AlertWatch(AlertThresholds(recompile_storm=5)), burst)
    assert alert.rule == "recompile_storm" and alert.step == 50 and alert.panel == "compile"


def test_a_recompile_exactly_100_steps_before_is_out_of_the_window():
    assert feed(AlertWatch(AlertThresholds(recompile_storm=2)), [recompile(10), recompile(110)]) == []
    assert rules(feed(AlertWatch(AlertThresholds(recompile_storm=2)), [recompile(11), recompile(110)])) == [
        "recompile_storm"]


def test_the_recompile_limit_warning_becomes_an_alert():
    [alert] = feed(AlertWatch(AlertThresholds()), [recompile(7, kind="recompile_limit", title="about to")])
    assert alert.rule == "recompile_limit" and alert.title == "about to"


def test_a_graph_break_alerts_only_mid_run():
    watch = AlertWatch(AlertThresholds())
    first = [recompile(1, kind="graph_break"), recompile(125, kind="graph_break", phase="eval")]
    assert feed(watch, first) == []  # the first step's and the first validation's compiles: every run has them
    [alert] = feed(watch, [ev.EpochEnd(epoch=1, train_loss=1, val_loss=1, val_accuracy=0.5, seconds=1.0),
                           recompile(300, kind="graph_break", title="data-dependent branch")])
    assert alert.rule == "graph_break" and alert.step == 300 and "data-dependent branch" in alert.title


def test_throughput_falling_by_more_than_the_share_fires():
    steady = [step(n, rate=1000.0, seconds=0.1) for n in range(1, 61)]  # three 2-second readings at 1,000/s
    watch = AlertWatch(AlertThresholds(throughput_drop=0.5))
    assert feed(watch, steady) == []
    assert feed(watch, [step(n, rate=600.0, seconds=0.1) for n in range(61, 81)]) == []  # 40% down
    [alert] = feed(watch, [step(n, rate=400.0, seconds=0.1) for n in range(81, 101)])  # 60% down
    assert alert.rule == "throughput_drop" and alert.step == 100 and alert.panel == "system"


@pytest.mark.parametrize("share, quiet, fires", [(0.3, 750.0, 650.0), (0.7, 350.0, 250.0)])
def test_the_throughput_drop_share_is_the_share_below_the_median_whatever_its_value(share, quiet, fires):
    """At 0.5 a share and its complement agree: other values tell `(1 - share) × median` from `share × median`."""
    steady = [step(n, rate=1000.0, seconds=0.1) for n in range(1, 61)]
    watch = AlertWatch(AlertThresholds(throughput_drop=share))
    assert feed(watch, steady) == []
    assert feed(watch, [step(n, rate=quiet, seconds=0.1) for n in range(61, 81)]) == []  # less than `share` down
    [alert] = feed(watch, [step(n, rate=fires, seconds=0.1) for n in range(81, 101)])  # more than `share` down
    assert alert.rule == "throughput_drop" and f"{1 - fires / 1000:.0%} below the run's median" in alert.title


@pytest.mark.parametrize("share", [0.6, 0.95])
def test_memory_fires_at_the_share_it_is_given(share):
    watch = AlertWatch(AlertThresholds(memory_share=share), memory_limit_mib=1000.0)
    assert feed(watch, [step(1, memory=ev.MemorySample(rss=1000.0 * share - 1))]) == []
    assert rules(feed(watch, [step(2, memory=ev.MemorySample(rss=1000.0 * share))])) == ["memory_near_limit"]


def test_compiling_steps_are_no_throughput_reading():
    watch = AlertWatch(AlertThresholds())
    slow_compiles = [step(n, rate=10.0, seconds=0.5, compiling=True) for n in range(1, 30)]
    steady = [step(n, rate=1000.0, seconds=0.1) for n in range(30, 150)]
    assert feed(watch, slow_compiles + steady) == []


def test_memory_near_the_devices_fires_at_the_share():
    watch = AlertWatch(AlertThresholds(memory_share=0.9), memory_limit_mib=1000.0, memory_where="cuda:0")
    assert feed(watch, [step(1, memory=ev.MemorySample(reserved=899.0, peak=950.0))]) == []
    [alert] = feed(watch, [step(2, memory=ev.MemorySample(reserved=920.0))])
    assert alert.rule == "memory_near_limit" and "92% of cuda:0's 1,000 MiB" in alert.title
    # no known limit: no rule
    assert feed(AlertWatch(AlertThresholds()), [step(1, memory=ev.MemorySample(rss=1e9))]) == []


def test_an_alert_is_an_event_that_round_trips_and_reads_as_one_line():
    [alert] = AlertWatch(AlertThresholds()).losses(5, [math.nan])
    assert ev.from_json(ev.to_json(alert)) == alert
    assert alert_line(alert).startswith("alert (error, step 5): the loss is nan at step 5 — lower the learning rate")
    with pytest.raises(ValueError, match="step"):
        ev.from_dict({**ev.to_dict(alert), "step": "five"})
    assert isinstance(alert, Alert)


def test_the_first_validations_recompile_is_no_storm():
    """Every compiled run recompiles for its first validation (no gradients): not a recompile the user caused."""
    watch = AlertWatch(AlertThresholds(recompile_storm=1))
    assert feed(watch, [recompile(1), recompile(125, phase="eval")]) == []
    [alert] = feed(watch, [recompile(126)])
    assert alert.title == "1 recompile in the 100 steps before step 126"


def test_every_alert_setting_reaches_its_threshold():
    config = TrainConfig(alert_grad_factor=3.0, alert_plateau_steps=250, alert_throughput_drop=0.3,
                         alert_memory_share=0.8, alert_recompile_storm=2)
    assert AlertThresholds.of(config) == AlertThresholds(grad_factor=3.0, plateau_steps=250, throughput_drop=0.3,
                                                         memory_share=0.8, recompile_storm=2)
    defaults = AlertThresholds.of(TrainConfig())
    assert defaults == AlertThresholds()  # the setting's defaults are the rules' own
