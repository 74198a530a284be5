"""Inside the network, as a recorded run holds it: its layer table (ModelSummary), each layer's figures over the
sampled steps (LayerStats) and the alerts it raised, picked out of its event stream once (`run_layers`) for
`runs show`, the report and the exports, which all name a layer's figures the same way (`layer_metric`).

A run recorded before these events existed has none of them, and its config lacks the alert settings: each
reader leaves its part out, rather than saying "no alerts" about a run nothing watched."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ..ground.alerts import Alert
from ..ground.events import Event
from ..ground.layer_stats import LayerStats, ModelSummary

FIGURES = ("grad_norm", "weight_norm", "update_ratio", "dead_fraction")  # LayerStat's numbers, per sampled step
HISTOGRAMS = ("weights", "grads", "activations")  # LayerStat's histograms: its largest parameter, its gradient, outputs
WATCHED_BY = "alert_grad_factor"  # a setting every run watched by the alert rules has in its config
MODEL = "(model)"  # how the model's own parameters are named (their module's path is "")


@dataclass(frozen=True)
class LayerSeries:
    """One layer over the sampled steps: `values[figure][i]` was measured at `steps[i]` (figure: one of FIGURES)."""

    name: str
    steps: tuple[int, ...]
    values: dict[str, tuple[float, ...]]


@dataclass(frozen=True)
class RunLayers:
    """What a recorded run says about the inside of its network."""

    summary: ModelSummary | None  # the layer table; None: recorded before it existed
    samples: tuple[LayerStats, ...]  # in step order
    layers: tuple[LayerSeries, ...]  # the samples per layer, in the order the layers first appear
    alerts: tuple[Alert, ...]  # by step (stable: those of one step as they were raised)
    watched: bool  # the alert rules watched the run, so no alert means none fired

    @property
    def empty(self) -> bool:
        """Nothing about its layers was recorded (an older run)."""
        return self.summary is None and not self.samples


def run_layers(events: Sequence[Event], config: dict) -> RunLayers:
    """A run's layer table, per-layer figures and alerts, from its events and its config."""
    summary = next((e for e in events if isinstance(e, ModelSummary)), None)
    samples = tuple(sorted((e for e in events if isinstance(e, LayerStats)), key=lambda e: e.step))
    alerts = tuple(sorted((e for e in events if isinstance(e, Alert)), key=lambda e: e.step))
    return RunLayers(summary=summary, samples=samples, layers=_series(samples), alerts=alerts,
                     watched=WATCHED_BY in config or bool(alerts))


def _series(samples: tuple[LayerStats, ...]) -> tuple[LayerSeries, ...]:
    by_name: dict[str, list] = {}
    for sample in samples:
        for layer in sample.layers:
            by_name.setdefault(layer.name, []).append((sample.step, layer))
    return tuple(LayerSeries(name=name, steps=tuple(step for step, _ in seen),
                             values={figure: tuple(getattr(layer, figure) for _, layer in seen) for figure in FIGURES})
                 for name, seen in by_name.items())


def layer_label(name: str) -> str:
    """A layer's name as shown: its module's path, MODEL for the model's own parameters."""
    return name or MODEL


def layer_metric(name: str, figure: str) -> str:
    """'layers/core_block.fc1/grad_norm': a layer's figure (or histogram) as the CSV and TensorBoard name it."""
    return f"layers/{layer_label(name)}/{figure}"
