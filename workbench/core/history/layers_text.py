"""A recorded run's layers and alerts in words: the layer table (torchinfo's: each module indented by its depth,
its kind, output shape, parameters and multiply-adds, the totals last), each layer's last sampled figures, and
one line per alert. The cells are shared: `workbench runs show` aligns them in columns here, the report puts the
same cells in HTML tables (report_layers), so both say the same thing in the same words. Torch-free."""

from __future__ import annotations

import math

from ..ground.alerts import alert_line
from ..ground.layer_stats import ModelSummary
from .layers import FIGURES, RunLayers, layer_label

TABLE_HEAD = ("layer", "kind", "output shape", "parameters", "mult-adds")
FIGURES_HEAD = ("layer", "gradient norm", "weight norm", "update ratio", "dead inputs", "at step")
NUMBERS_FROM = 3  # TABLE_HEAD's columns from here on, and FIGURES_HEAD's from 1 on, are numbers: aligned right


def table_rows(summary: ModelSummary) -> list[tuple[int, tuple[str, ...]]]:
    """(depth, cells) of each module, then the totals row (depth 0). A module is named by the last part of its path:
    its depth says whose child it is."""
    rows = [(row.depth, (layer_label(row.name).rsplit(".", 1)[-1], row.kind, shape_text(row.output_shape),
                         count_text(row.params), count_text(row.mult_adds))) for row in summary.rows]
    return rows + [(0, ("total", "", "", count_text(summary.params), count_text(summary.mult_adds)))]


def table_caption(summary: ModelSummary) -> str:
    trainable = sum(row.params for row in summary.rows if row.trainable)
    return (f"{summary.params:,} parameters ({trainable:,} trainable) · {summary.mult_adds:,} multiply-adds per "
            f"forward of a batch of {summary.batch}")


def figures_rows(layers: RunLayers) -> list[tuple[str, ...]]:
    """Each layer at its last sample: gradient norm, weight norm, update ratio, dead inputs' share, the step."""
    rows = []
    for series in layers.layers:
        grad, weight, ratio, dead = (series.values[figure][-1] for figure in FIGURES)
        rows.append((layer_label(series.name), _figure(grad), _figure(weight), _figure(ratio),
                     f"{dead:.0%}" if math.isfinite(dead) else "—", str(series.steps[-1])))
    return rows


def layers_lines(layers: RunLayers) -> list[str]:
    """The "layers" part of `runs show`: the table, then the last sampled figures; [] for a run without them."""
    lines = []
    if layers.summary is not None:
        rows = [(depth, ("  " * depth + cells[0], *cells[1:])) for depth, cells in table_rows(layers.summary)]
        lines += [f"layers:      {table_caption(layers.summary)}",
                  *columns(TABLE_HEAD, [cells for _, cells in rows], NUMBERS_FROM)]
    if layers.layers:
        lines += ["last sampled figures of each layer:", *columns(FIGURES_HEAD, figures_rows(layers), 1)]
    return lines


def alerts_lines(layers: RunLayers) -> list[str]:
    """The "alerts" part of `runs show`: one line per alert, by step; [] for a run no rule watched."""
    if not layers.watched:
        return []
    if not layers.alerts:
        return ["alerts:      none raised"]
    return ["alerts:", *(f"  {alert_line(alert)}" for alert in layers.alerts)]


def columns(head: tuple[str, ...], rows: list[tuple[str, ...]], numbers_from: int) -> list[str]:
    """The rows under their head, two spaces in, each column as wide as its widest cell; the columns from
    `numbers_from` on aligned right."""
    cells = [head, *rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(head))]
    return ["  " + "  ".join(cell.rjust(width) if i >= numbers_from else cell.ljust(width)
                             for i, (cell, width) in enumerate(zip(row, widths))).rstrip() for row in cells]


def count_text(value: int) -> str:
    """'100,480'; a dash where a module has none of its own (torchinfo's '--')."""
    return f"{value:,}" if value else "—"


def shape_text(shape: tuple[int, ...]) -> str:
    """'[32, 128]'; a dash for a module that returned no single tensor."""
    return f"[{', '.join(map(str, shape))}]" if shape else "—"


def _figure(value: float) -> str:
    return f"{value:.3g}"
