"""A recorded run's layers and alerts (history.layers, history.layers_text) and `workbench runs show`'s "layers" and
"alerts" parts, from made-up events recorded in a history, and from the real run of `trained_run`."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from workbench.core.ground.alerts import Alert
from workbench.core.ground.config import TrainConfig
from workbench.core.ground.events import RunStarted, Step
from workbench.core.ground.layer_stats import Histogram, LayerRow, LayerStat, LayerStats, ModelSummary
from workbench.core.history.layers import layer_metric, run_layers
from workbench.core.history.layers_text import columns, figures_rows
from workbench.core.history.recording import RunRecorder
from workbench.core.history.runs import RunStore

from ..helpers import call

SUMMARY = ModelSummary(batch=32, rows=(
    LayerRow(name="", kind="Net", depth=0, output_shape=(32, 10), params=0, trainable=False, mult_adds=0),
    LayerRow(name="block", kind="Block", depth=1, output_shape=(32, 10), params=0, trainable=False, mult_adds=0),
    LayerRow(name="block.fc1", kind="Linear", depth=2, output_shape=(32, 16), params=12_560, trainable=True,
             mult_adds=401_408),
    LayerRow(name="block.act", kind="ReLU", depth=2, output_shape=(32, 16), params=0, trainable=False, mult_adds=0),
    LayerRow(name="block.fc2", kind="Linear", depth=2, output_shape=(32, 10), params=170, trainable=False,
             mult_adds=5_120),
    LayerRow(name="head", kind="Head", depth=1, output_shape=(), params=0, trainable=False, mult_adds=0),
))
SAMPLED = (1, 2, 4)
LAYERS = ("block.fc1", "block.fc2")
# Recorded out of step order (a read-back's loss alert may follow its statistics' alerts): shown by step.
ALERTS = (Alert(step=4, rule="dead_units", severity="warning", title="75% of the inputs of block.fc2 were 0",
                advice="use LeakyReLU", panel="model", layer="block.fc2"),
          Alert(step=3, rule="loss_exploded", severity="error", title="the loss went from 2.3 to 267 at step 3",
                advice="lower the learning rate", panel="setting:lr"))


def histogram(step: int, i: int) -> Histogram:
    return Histogram(lo=-1.0 / step - i, hi=0.5 + i, counts=(1.0 * step, 4.0, 2.5 + i, 0.0))


def stat(name: str, step: int) -> LayerStat:
    """Values that are not round in binary, different per layer and step."""
    i = LAYERS.index(name)
    return LayerStat(name=name, weight_norm=10.0 + step / 3 + i, grad_norm=(i + 1) / (3 * step),
                     update_ratio=1e-3 / step + i * 1e-4, dead_fraction=0.25 * i * step / 4,
                     weights=histogram(step, i), grads=histogram(step + 1, i), activations=histogram(step + 2, i))


def sample(step: int) -> LayerStats:
    return LayerStats(step=step, layers=tuple(stat(name, step) for name in LAYERS))


def layered_events(alerts: tuple[Alert, ...] = ALERTS) -> list:
    """What a run with per-layer statistics and alerts records: its table first, then samples and alerts."""
    steps = [Step(step=i, epoch=1, loss=2.0 / i, samples_per_s=100.0, step_seconds=0.01, memory={})
             for i in range(1, 5)]
    return [SUMMARY, sample(1), steps[0], sample(2), steps[1], steps[2], *alerts, sample(4), steps[3]]


def started(config: dict) -> RunStarted:
    return RunStarted(config=config, device="cpu", device_name="CPU", versions={}, train_size=128, val_size=32,
                      steps_per_epoch=4, total_steps=4)


def old_config() -> dict:
    """A run's config as versions before the alert rules recorded it: none of their settings."""
    return {k: v for k, v in TrainConfig().to_dict().items() if not k.startswith(("alert_", "stats_"))}


def record(db: Path, events: list, config: dict | None = None) -> int:
    """Record a run of `events` in the history at `db`; its id."""
    with RunStore(db) as store:
        recorder = RunRecorder(store, interval=3600)
        for event in [started(TrainConfig().to_dict() if config is None else config), *events]:
            recorder(event)
        recorder.flush()
        return recorder.run_id


def test_the_layers_are_read_back_per_layer_and_the_alerts_by_step(tmp_path):
    run_id = record(tmp_path / "runs.sqlite", layered_events())
    with RunStore(tmp_path / "runs.sqlite") as store:
        stored = store.get(run_id, with_events=True)
    layers = run_layers(stored.events, stored.config)
    assert layers.summary == SUMMARY and layers.samples == tuple(sample(step) for step in SAMPLED)
    assert [series.name for series in layers.layers] == list(LAYERS)
    fc2 = layers.layers[1]
    assert fc2.steps == SAMPLED
    assert fc2.values["grad_norm"] == tuple(stat("block.fc2", step).grad_norm for step in SAMPLED)
    assert fc2.values["dead_fraction"] == tuple(stat("block.fc2", step).dead_fraction for step in SAMPLED)
    assert [alert.step for alert in layers.alerts] == [3, 4] and layers.watched and not layers.empty
    assert layer_metric("block.fc1", "grad_norm") == "layers/block.fc1/grad_norm"
    assert layer_metric("", "weights") == "layers/(model)/weights"


def test_runs_show_has_the_layer_table_each_layers_last_figures_and_the_alerts(tmp_path, capsys):
    db = tmp_path / "runs.sqlite"
    run_id = record(db, layered_events())
    code, out, _ = call(capsys, "runs", "show", run_id, "--db", db)
    assert code == 0
    lines = out.splitlines()
    start = lines.index("layers:      12,730 parameters (12,560 trainable) · 406,528 multiply-adds per forward of a "
                        "batch of 32")
    assert lines[start + 1:start + 9] == [
        "  layer    kind    output shape  parameters  mult-adds",
        "  (model)  Net     [32, 10]               —          —",
        "    block  Block   [32, 10]               —          —",
        "      fc1  Linear  [32, 16]          12,560    401,408",
        "      act  ReLU    [32, 16]               —          —",
        "      fc2  Linear  [32, 10]             170      5,120",
        "    head   Head    —                      —          —",
        "  total                              12,730    406,528"]
    assert lines[start + 9:start + 13] == [
        "last sampled figures of each layer:",
        "  layer      gradient norm  weight norm  update ratio  dead inputs  at step",
        "  block.fc1         0.0833         11.3       0.00025           0%        4",  # 1/12, 10 + 4/3, 1e-3/4
        "  block.fc2          0.167         12.3       0.00035          25%        4"]
    assert lines[start + 13:] == [
        "alerts:",
        "  alert (error, step 3): the loss went from 2.3 to 267 at step 3 — lower the learning rate",
        "  alert (warning, step 4): 75% of the inputs of block.fc2 were 0 — use LeakyReLU"]


def test_a_watched_run_without_alerts_says_none_were_raised(tmp_path, capsys):
    db = tmp_path / "runs.sqlite"
    run_id = record(db, layered_events(alerts=()))
    _, out, _ = call(capsys, "runs", "show", run_id, "--db", db)
    assert out.splitlines()[-1] == "alerts:      none raised"


def test_an_older_run_shows_neither_part(tmp_path, capsys):
    db = tmp_path / "runs.sqlite"
    run_id = record(db, [e for e in layered_events() if isinstance(e, Step)], old_config())
    code, out, _ = call(capsys, "runs", "show", run_id, "--db", db)
    assert code == 0 and "layers:" not in out and "alerts:" not in out and "last sampled" not in out
    layers = run_layers([], old_config())
    assert layers.empty and not layers.watched


def test_a_run_without_samples_shows_its_table_only(tmp_path, capsys):
    """stats_every = 0: the table is recorded, no layer was sampled."""
    db = tmp_path / "runs.sqlite"
    run_id = record(db, [SUMMARY], TrainConfig(stats_every=0).to_dict())
    _, out, _ = call(capsys, "runs", "show", run_id, "--db", db)
    assert "  total                              12,730    406,528" in out and "last sampled" not in out


def test_columns_align_numbers_right():
    assert columns(("name", "n"), [("a", "1"), ("bbb", "1,000")], 1) == ["  name      n", "  a         1",
                                                                         "  bbb   1,000"]


def test_runs_show_of_a_real_run(trained_run, capsys):
    """The defaults for 2 epochs (250 steps): the Sandwich's table, its two Linear layers last sampled at step 200
    (every 100 steps), and no alert."""
    code, out, _ = call(capsys, "runs", "show", trained_run.run_id, "--db", trained_run.db)
    assert code == 0
    lines = out.splitlines()
    assert any(line.split() == ["fc1", "Linear", "[32,", "128]", "100,480", "3,211,264"] for line in lines), out
    figures = lines[lines.index("last sampled figures of each layer:") + 2:][:2]
    assert [line.split()[0] for line in figures] == ["core_block.fc1", "core_block.fc2"]
    assert all(line.split()[-1] == "200" for line in figures)
    last = [e for e in trained_run.events if isinstance(e, LayerStats)][-1]
    assert figures[0].split()[1] == f"{last.layers[0].grad_norm:.3g}"
    assert lines[-1] == "alerts:      none raised"


@pytest.mark.parametrize("value, shown", [(float("nan"), "—"), (0.5, "50%")])
def test_a_dead_share_that_is_not_a_number_is_a_dash(value, shown):
    broken = LayerStats(step=9, layers=(replace(stat("block.fc1", 9), dead_fraction=value),))
    assert figures_rows(run_layers([broken], {}))[0][4] == shown
