"""Inside the network while it trains, as plain data (torch-free): each layer's weight and gradient norms, the size
of its last update against its weights, the inputs that never fired, and histograms of its weights, gradients and
outputs (`LayerStat`), sampled every few steps (`LayerStats`, an event); and the layer table torchinfo prints
(`LayerRow`: output shape, parameters, mult-adds), once per run (`ModelSummary`).

Histograms are fixed bins over a range of their own (`Histogram`): what the engine counts on the device and reads
back with the losses, and what TensorBoard's distribution views draw."""

from __future__ import annotations

import math
from dataclasses import dataclass

from .codec import Record

HISTOGRAM_BINS = 24  # per histogram: enough to see a shape, few enough to ride along with the losses
# The steps every run samples before its interval (config.stats_every) takes over: a history for the alerts early.
EARLY_STEPS = (1, 2, 4, 8, 16, 32)


@dataclass(frozen=True)
class Histogram(Record):
    """`counts[i]` values fell in the i-th of len(counts) equal bins from `lo` to `hi` (the data's own range)."""

    lo: float
    hi: float
    counts: tuple[float, ...]

    @property
    def edges(self) -> list[float]:
        width = (self.hi - self.lo) / len(self.counts) if self.counts else 0.0
        return [self.lo + i * width for i in range(len(self.counts) + 1)]

    @property
    def total(self) -> float:
        return sum(self.counts)

    def quantile(self, q: float) -> float:
        """The value below which a share `q` of the counts lie (linear inside a bin): the bands of a distribution
        view."""
        total = self.total
        if not total or not self.counts:
            return self.lo
        target, seen = q * total, 0.0
        edges = self.edges
        for i, count in enumerate(self.counts):
            if seen + count >= target and count:
                return edges[i] + (target - seen) / count * (edges[i + 1] - edges[i])
            seen += count
        return self.hi


@dataclass(frozen=True)
class LayerStat(Record):
    """One layer (a module with its own parameters) at one sampled step."""

    name: str  # the module's path in the model, "core_block.fc1"
    weight_norm: float  # L2 norm of all the layer's parameters together
    grad_norm: float  # L2 norm of their gradients in this step (before the optimizer used them; unscaled under fp16)
    update_ratio: float  # ‖this step's change of the parameters‖ / ‖the parameters before it‖ (healthy: ~1e-3)
    # Share of the layer's input features that were 0 for every sample of the batch: ReLU units of the layer
    # before that never fired ("dead"). Measured in eval mode (no dropout), 0..1.
    dead_fraction: float
    weights: Histogram
    grads: Histogram
    activations: Histogram  # the layer's outputs on the sampled batch (eval mode)


@dataclass(frozen=True)
class LayerStats(Record):
    """A sampled step's per-layer statistics (instruments.layer_statistics), in the model's module order."""

    step: int
    layers: tuple[LayerStat, ...]

    @property
    def grad_norm(self) -> float:
        """The whole model's gradient norm: what clipping would measure."""
        return math.sqrt(sum(layer.grad_norm ** 2 for layer in self.layers))


@dataclass(frozen=True)
class LayerRow(Record):
    """One row of the layer table: a module, as torchinfo's summary shows it."""

    name: str  # the module's path ("" for the model itself)
    kind: str  # its class name
    depth: int  # how deep in the model it sits (the model is 0)
    output_shape: tuple[int, ...]  # for the run's first batch; () when it returned no single tensor
    params: int  # parameters of its own (not of its children)
    trainable: bool  # any of its own parameters requires grad
    mult_adds: int  # multiply-adds of one forward of the batch in this module itself (Linear, Conv; else 0)


@dataclass(frozen=True)
class ModelSummary(Record):
    """The model's layer table, for the run's first batch, before anything compiles it."""

    batch: int
    rows: tuple[LayerRow, ...]

    @property
    def params(self) -> int:
        return sum(row.params for row in self.rows)

    @property
    def mult_adds(self) -> int:
        return sum(row.mult_adds for row in self.rows)
