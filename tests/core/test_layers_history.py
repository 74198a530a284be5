"""A recorded run's layers and alerts (history.layers, history.layers_text) and `workbench runs show`'s "layers" and
"alerts" parts, from made-up events recorded in a history, and from the real run of `trained_run`."""

from __future__ import annotations

from dataclasses import replace

import pytest

from workbench.core.ground.config import TrainConfig
from workbench.core.ground.events import Step
from workbench.core.ground.layer_stats import LayerStats
from workbench.core.history.layers import layer_metric, run_layers
from workbench.core.history.layers_text import columns, figures_rows
from workbench.core.history.runs import RunStore

from ..helpers import call
from ..support.layers_history import LAYERS, SAMPLED, SUMMARY, layered_events, old_config, record, sample, stat


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
