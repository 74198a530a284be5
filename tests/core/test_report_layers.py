"""The report's "Inside the network" and "Alerts" sections and their JSON, from made-up runs: one with per-layer
statistics and alerts, one watched that raised none, one recorded before any of it."""

from __future__ import annotations

import dataclasses
import json
import re

from workbench.core.ground.config import TrainConfig
from workbench.core.ground.events import Step
from workbench.core.ground.layer_stats import LayerStats
from workbench.core.history.layers import FIGURES, LayerSeries
from workbench.core.history.report.build import build_report
from workbench.core.history.report.facts import PALETTE
from workbench.core.history.report.layers_section import charted_layers
from workbench.core.history.runs import RunRecord

from ..support.layers_history import ALERTS, LAYERS, SAMPLED, SUMMARY, layered_events, old_config, stat


def run(run_id: int, events: list, config: dict | None = None) -> RunRecord:
    return RunRecord(id=run_id, created="2025-01-01T00:00:00+00:00", status="finished",
                     config=TrainConfig().to_dict() if config is None else config, environment={}, steps=4,
                     best_val_accuracy=None, samples_per_s=None, compile_seconds=None, peak_memory_mib=None,
                     backend_used="eager", failure=None, out_dir=None, checkpoint=None, events=events)


def old_run(run_id: int) -> RunRecord:
    return run(run_id, [e for e in layered_events() if isinstance(e, Step)], old_config())


def part(text: str, anchor: str) -> str:
    """One section of the page ("" when it has none)."""
    found = re.search(rf"<section id={anchor}>.*?</section>", text)
    return found.group(0) if found else ""


def test_the_section_has_the_layer_table_the_last_figures_and_a_line_per_layer():
    text, _ = build_report([run(1, layered_events())], {})
    inside = part(text, "layers")
    assert "<h2>Inside the network</h2>" in inside
    assert "12,730 parameters (12,560 trainable) · 406,528 multiply-adds per forward of a batch of 32." in inside
    assert ("<tr><td><span style='padding-left:2.4em'>fc1</span></td><td>Linear</td><td>[32, 16]</td><td>12,560</td>"
            "<td>401,408</td></tr>") in inside
    assert "<tr><td>block.fc2</td><td>0.167</td><td>12.3</td><td>0.00035</td><td>25%</td><td>4</td></tr>" in inside
    assert re.findall(r"<h3>([^<]*)</h3><svg", inside) == ["Gradient norm per layer (log10)",
                                                         "Update ratio per layer (log10)"]
    lines = re.findall(r"<polyline points='([^']*)'[^>]*stroke='([^']*)'", inside)
    assert len(lines) == 2 * len(LAYERS) and all(len(points.split()) == len(SAMPLED) for points, _ in lines)
    assert [color for _, color in lines] == list(PALETTE[:2]) * 2  # a colour per layer, as in the legend
    assert "</span>block.fc1</span>" in inside


def test_a_layer_whose_gradient_is_zero_has_no_gradient_line():
    events = [dataclasses.replace(e, layers=(dataclasses.replace(e.layers[0], grad_norm=0.0), e.layers[1]))
              if isinstance(e, LayerStats) else e for e in layered_events()]
    inside = part(build_report([run(1, events)], {})[0], "layers")
    assert len(re.findall("<polyline", inside)) == 2 * len(LAYERS) - 1
    assert "<td>block.fc1</td><td>0</td>" in inside


def test_the_alerts_are_listed_by_step_with_what_to_do():
    alerts = part(build_report([run(1, layered_events())], {})[0], "alerts")
    rows = re.findall(r"<tr><td>(\d+)</td><td><span class='([^']*)'>(\w+)</span></td><td>([^<]*)</td><td>([^<]*)</td>",
                      alerts)
    assert rows == [("3", "verdict bad", "error", "the loss went from 2.3 to 267 at step 3", "lower the learning rate"),
                    ("4", "verdict warn", "warning", "75% of the inputs of block.fc2 were 0", "use LeakyReLU")]


def test_a_watched_run_without_alerts_says_so_and_an_older_one_beside_it_too():
    text, _ = build_report([run(1, layered_events(alerts=())), old_run(2)], {})
    alerts, inside = part(text, "alerts"), part(text, "layers")
    assert "No alerts were raised." in alerts and "Recorded before Workbench raised alerts." in alerts
    assert "Recorded before Workbench kept per-layer statistics." in inside


def test_runs_recorded_before_have_neither_section():
    text, data = build_report([old_run(1)], {})
    assert not part(text, "layers") and not part(text, "alerts")
    assert "#layers" not in text and "#alerts" not in text  # nor a link to them
    assert (data["runs"][0]["layer_table"], data["runs"][0]["layer_stats"], data["runs"][0]["alerts"]) == (
        None, [], None)


def test_the_json_twin_has_the_table_every_figure_and_the_alerts():
    _, data = build_report([run(1, layered_events()), run(2, layered_events(alerts=()))], {})
    json.dumps(data, allow_nan=False)
    first, second = data["runs"]
    table = first["layer_table"]
    assert (table["batch"], table["params"], table["mult_adds"]) == (32, 12_730, 406_528)
    assert table["rows"][2] == {"name": "block.fc1", "kind": "Linear", "depth": 2, "output_shape": [32, 16],
                                "params": 12_560, "trainable": True, "mult_adds": 401_408}
    assert len(table["rows"]) == len(SUMMARY.rows)
    assert [layer["name"] for layer in first["layer_stats"]] == list(LAYERS)
    for layer in first["layer_stats"]:
        assert layer["steps"] == list(SAMPLED)
        for figure in FIGURES:  # exactly the events' values
            assert layer[figure] == [getattr(stat(layer["name"], step), figure) for step in SAMPLED]
    assert [alert["step"] for alert in first["alerts"]] == [3, 4]
    assert first["alerts"][1] == dataclasses.asdict(ALERTS[0])
    assert second["alerts"] == []


def test_many_layers_get_one_line_per_colour_spread_from_input_to_output():
    layers = tuple(LayerSeries(name=f"l{i}", steps=(1,), values={}) for i in range(25))
    shown = [layer.name for layer in charted_layers(layers)]
    assert len(shown) == len(PALETTE) and shown[0] == "l0" and shown[-1] == "l24"
    assert shown == sorted(set(shown), key=lambda name: int(name[1:]))
    assert charted_layers(layers[:3]) == list(layers[:3])


def test_the_loss_chart_marks_each_alert_at_its_step_coloured_by_severity():
    curves = part(build_report([run(1, layered_events())], {})[0], "curves")
    marks = re.findall(r"<g class='stepmark' data-kind='alert' data-step='(\d+)'><title>([^<]*)</title><rect [^>]*"
                       r"fill='(#[0-9a-f]{6})'/>", curves)
    assert [(step, colour) for step, _, colour in marks] == [("3", "#d0203a"), ("4", "#c77700")]
    assert marks[1][1] == "step 4 · alert (warning): 75% of the inputs of block.fc2 were 0 — use LeakyReLU"
    assert "the lowest row: the alerts" in curves
    quiet = part(build_report([run(1, layered_events(alerts=()))], {})[0], "curves")
    assert "alert (" not in quiet and "the lowest row" not in quiet
