"""The report's "Inside the network" (each run's layer table, its layers' last sampled figures, and their gradient
norms and update ratios over the steps) and "Alerts" (what each run's alert rules raised). Both come from the
run's ModelSummary, LayerStats and Alert events (history.layers); a report whose runs have none of them (recorded
before they existed) has neither section."""

from __future__ import annotations

import numpy as np

from .html import esc, table
from ..layers import LayerSeries, RunLayers, layer_label
from ..layers_text import FIGURES_HEAD, TABLE_HEAD, figures_rows, table_caption, table_rows
from .cells import run_cell, swatch
from .facts import PALETTE, RunFacts
from .page import section
from .svgchart import Series, StepMark, line_chart

CHARTED = (("grad_norm", "Gradient norm per layer (log10)"), ("update_ratio", "Update ratio per layer (log10)"))
SEVERITY_CLASS = {"error": "verdict bad", "warning": "verdict warn", "info": "muted"}
SEVERITY_COLOUR = {"error": "#d0203a", "warning": "#c77700", "info": "#4e79a7"}  # the window's Log and markers'
ALERT_LANE = "alert"  # the loss chart's lane of alert marks, under the compile timeline's


def alert_marks(runs: list[RunFacts]) -> list[StepMark]:
    """Every run's alerts as marks on the loss chart (the window marks them on its loss plot the same way)."""
    several = len(runs) > 1
    return [StepMark(alert.step, ALERT_LANE, SEVERITY_COLOUR[alert.severity],
                     f"{f'#{run.record.id} · ' if several else ''}step {alert.step:,} · alert ({alert.severity}): "
                     f"{alert.title} — {alert.advice}")
            for run in runs for alert in run.layers.alerts]


def section_layers(runs: list[RunFacts]) -> str:
    """Each run's layers; "" when no run recorded any."""
    if all(run.layers.empty for run in runs):
        return ""
    parts = [f"<h3>{run_cell(run)}</h3>" + (layers_html(run.layers) if not run.layers.empty else
                                           "<p class=muted>Recorded before Workbench kept per-layer statistics."
                                           "</p>") for run in runs]
    return section("layers", "".join(parts))


def layers_html(layers: RunLayers) -> str:
    """One run's layer table, last sampled figures and per-layer curves."""
    parts = []
    if layers.summary is not None:
        rows = [[f"<span style='padding-left:{depth * 1.2:g}em'>{esc(cells[0])}</span>", *map(esc, cells[1:])]
                for depth, cells in table_rows(layers.summary)]
        parts.append(f"<p>{esc(table_caption(layers.summary))}.</p>" + table(list(TABLE_HEAD), rows))
    if layers.layers:
        parts.append("<h4>Each layer at its last sample</h4>"
                     + table(list(FIGURES_HEAD), [list(map(esc, row)) for row in figures_rows(layers)]))
        parts.append(_curves(layers.layers))
    return "".join(parts)


def _curves(layers: tuple[LayerSeries, ...]) -> str:
    """A line per layer (at most one per palette colour: layers spread evenly from input to output) on a log10
    scale: gradient norms and update ratios span orders of magnitude, and a vanishing one is what to see."""
    shown = charted_layers(layers)
    colors = dict(zip((layer.name for layer in shown), PALETTE))
    legend = "<div class=legend>" + "".join(f"<span>{swatch(colors[layer.name])}{esc(layer_label(layer.name))}"
                                            "</span>" for layer in shown) + "</div>"
    note = ("<p class=muted>Lines: one per layer, at each sampled step · log10 scale: a layer whose gradient is "
            "exactly 0 has no point on it (its figures above say 0) · a healthy update ratio is near 10⁻³ (−3)"
            + (f" · {len(shown)} of {len(layers)} layers shown, spread evenly through the network (the JSON "
               "twin has every layer)" if len(shown) < len(layers) else "") + ".</p>")
    charts = [line_chart(title, "log10", [Series(colors[layer.name], np.array(layer.steps, dtype=float),
                                                 _log10(layer.values[figure])) for layer in shown])
              for figure, title in CHARTED]
    return legend + "".join(charts) + note


def charted_layers(layers: tuple[LayerSeries, ...]) -> list[LayerSeries]:
    """The layers that get a line: all of them, or as many as there are colours, evenly spaced, first and last
    included."""
    if len(layers) <= len(PALETTE):
        return list(layers)
    last = len(layers) - 1
    return [layers[round(i * last / (len(PALETTE) - 1))] for i in range(len(PALETTE))]


def _log10(values: tuple[float, ...]) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):  # 0 → -inf, left out of the chart like any non-finite
        return np.log10(np.array(values, dtype=float))


def section_alerts(runs: list[RunFacts]) -> str:
    """Each run's alerts by step, or that it raised none; "" when no run was watched by the alert rules."""
    if not any(run.layers.watched for run in runs):
        return ""
    return section("alerts", "".join(f"<h3>{run_cell(run)}</h3>{alerts_html(run.layers)}" for run in runs))


def alerts_html(layers: RunLayers) -> str:
    if not layers.watched:
        return "<p class=muted>Recorded before Workbench raised alerts.</p>"
    if not layers.alerts:
        return "<p>No alerts were raised.</p>"
    return table(["Step", "Severity", "What happened", "What to do"],
                 [[str(alert.step), f"<span class='{SEVERITY_CLASS.get(alert.severity, '')}'>{esc(alert.severity)}"
                   "</span>", esc(alert.title), esc(alert.advice)] for alert in layers.alerts])
