"""Per-layer statistics on the device (`LayerProbe`) and the model's layer table (`model_summary`).

A layer is a module with parameters of its own (a Linear, a Conv, a norm). At a sampled step the probe takes, on the
device and without a sync, each layer's weight and gradient norms and histograms (between backward and the
optimizer's step), the size of the update (after it), and, in one extra eager forward of the same batch in eval
mode, each layer's output histogram and the share of its inputs that were 0 for the whole batch (ReLU units that
never fired). Everything lands in one flat tensor per sample that rides along with the block's losses
(instruments.layer_statistics) and is read back as a `LayerStats` event (`decode`).

The extra forward calls `model.forward` itself: a model compiled in place (`nn.Module.compile`) keeps its compiled
call for `model(x)`, so the probe runs its layers eagerly; the hooks it adds for that forward are gone before the
next compiled call (Dynamo does not guard on module hooks: `skip_nnmodule_hook_guards`), so nothing recompiles."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import torch
from torch import nn

from ..ground.layer_stats import HISTOGRAM_BINS, Histogram, LayerRow, LayerStat, LayerStats, ModelSummary
from .model import side_effect_free

_SCALARS = 4  # weight norm, gradient norm, update ratio, dead fraction
_HIST = 2 + HISTOGRAM_BINS  # lo, hi, counts
WIDTH = _SCALARS + 3 * _HIST  # one layer's share of a sample's flat tensor


HISTOGRAM_SAMPLE = 4096  # values counted per histogram: a fixed spread of the tensor's (its range is the whole's)


def stat_layers(model: nn.Module) -> list[tuple[str, nn.Module, list[nn.Parameter]]]:
    """The layers the probe watches: modules with trainable parameters of their own, in module order."""
    layers = []
    for name, module in model.named_modules():
        params = [p for p in module.parameters(recurse=False) if p.requires_grad]
        if params:
            layers.append((name, module, params))
    return layers


def histograms(tensors: list[torch.Tensor], bins: int = HISTOGRAM_BINS) -> torch.Tensor:
    """One row [lo, hi, counts...] per tensor, over the tensor's own range, on the device and without a sync
    (torch.histc needs its range on the host). The counts are those of HISTOGRAM_SAMPLE values spread evenly over
    the tensor, scaled to its size: the shape is the same, and every tensor is counted in one batched pass. Counting
    every value of every tensor one by one was most of a sample's cost (measured: 3.6 ms against a 0.9 ms step)."""
    device = tensors[0].device
    flats = [t.detach().reshape(-1) if t.numel() else torch.zeros(1, device=device) for t in tensors]
    ranges = torch.stack([torch.stack(torch.aminmax(flat)).float() for flat in flats])
    counted = torch.stack([flat.index_select(0, _spread(flat.numel(), device)).float() for flat in flats])
    lo, hi = ranges[:, :1], ranges[:, 1:]
    width = (hi - lo).clamp_min(1e-12) / bins
    index = torch.nan_to_num((counted - lo) / width, nan=0.0).long().clamp_(0, bins - 1)
    index += torch.arange(len(flats), device=device).unsqueeze(1) * bins
    counts = torch.zeros(len(flats) * bins, device=device).scatter_add_(0, index.flatten(),
                                                                      torch.ones(index.numel(), device=device))
    scales = _constant(tuple(t.numel() / HISTOGRAM_SAMPLE for t in tensors), device).unsqueeze(1)
    return torch.cat([ranges, counts.view(len(flats), bins) * scales], dim=1)


@functools.lru_cache(maxsize=64)
def _constant(values: tuple, device: torch.device) -> torch.Tensor:
    """A small constant tensor on the device, made once: copying a new one from the host each sample would wait for
    the GPU's queue (a copy from pageable memory is synchronous)."""
    return torch.tensor(values, device=device)


@functools.lru_cache(maxsize=64)
def _spread(size: int, device: torch.device) -> torch.Tensor:
    """HISTOGRAM_SAMPLE indices spread evenly over `size` values: a golden-ratio sequence, which never lines up with
    a weight matrix's rows the way a fixed stride can (a tensor smaller than the sample has each value about
    equally often)."""
    golden = (5 ** 0.5 - 1) / 2
    return ((torch.arange(HISTOGRAM_SAMPLE, dtype=torch.float64) * golden) % 1.0 * size).long().to(device)


@dataclass
class _Sample:
    step: int
    names: list[str]
    params: list[torch.Tensor]  # every watched parameter, layer by layer
    owner: torch.Tensor  # the index of each parameter's layer
    old: list[torch.Tensor]  # copies of the parameters before the update
    head: torch.Tensor  # per layer: [weight norm, gradient norm]
    tail: torch.Tensor  # per layer: [dead fraction, weight, gradient and output histograms]
    row: torch.Tensor | None = None  # the sample's flat tensor, once the update was measured


class LayerProbe:
    """Samples taken in `train_step` (steps.py) at the steps the instrument picks, until `flat` hands them over.
    Per layer: the norms cover all its parameters; the weight and gradient histograms are of its largest parameter
    (its weight matrix, not its bias)."""

    def __init__(self) -> None:
        self.samples: list[_Sample] = []
        self.step = 0  # the step being sampled (set by the instrument before the step)

    def before_update(self, model: nn.Module, x: torch.Tensor, autocast) -> None:
        """Between backward and the optimizer's step: norms and histograms of weights and gradients, a copy of the
        weights, and the extra forward for the outputs and dead inputs."""
        layers = stat_layers(model)
        if not layers:
            return
        params = [p for _, _, own in layers for p in own]
        owner = _constant(tuple(i for i, (_, _, own) in enumerate(layers) for _ in own), x.device)
        with torch.no_grad():
            grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in params]
            norms = torch.stack(torch._foreach_norm(params) + torch._foreach_norm(grads)).float()
            head = _per_layer(norms.view(2, -1), owner, len(layers)).T
            old = torch._foreach_mul(params, 1.0)  # copies, in one call
            largest = [max(range(len(own)), key=lambda k: own[k].numel()) for _, _, own in layers]
            weights = [own[k] for (_, _, own), k in zip(layers, largest)]
            inputs, outputs = _forward(model, x, autocast, layers)
            hists = histograms(weights + [w.grad if w.grad is not None else torch.zeros_like(w) for w in weights]
                               + outputs).view(3, len(layers), -1)
            dead = torch.stack([_dead_share(tensor) for tensor in inputs]).unsqueeze(1)
            tail = torch.cat([dead, hists.permute(1, 0, 2).reshape(len(layers), -1)], dim=1)
        self.samples.append(_Sample(step=self.step, names=[name for name, _, _ in layers], params=params,
                                    owner=owner, old=old, head=head, tail=tail))

    def after_update(self) -> None:
        """After the optimizer's step: how far it moved each layer's parameters, against their size before."""
        if not self.samples or self.samples[-1].row is not None:
            return
        sample = self.samples[-1]
        with torch.no_grad():
            moved = torch.stack(torch._foreach_norm(torch._foreach_sub(sample.params, sample.old))).float()
            ratio = _per_layer(moved.unsqueeze(0), sample.owner, len(sample.names))[0]
            ratio = ratio / sample.head[:, 0].clamp_min(1e-12)
            sample.row = torch.cat([sample.head, ratio.unsqueeze(1), sample.tail], dim=1).flatten()
        sample.params, sample.old = [], []  # the copies are done with

    def flat(self) -> tuple[torch.Tensor | None, list[tuple[int, list[str]]]]:
        """Every finished sample as one flat tensor (WIDTH per layer) and what it holds: (step, layer names) each.
        A sample whose step did not finish (a compile failure retried eagerly) is dropped."""
        done = [s for s in self.samples if s.row is not None]
        self.samples = []
        return (torch.cat([s.row for s in done]) if done else None), [(s.step, s.names) for s in done]


def _per_layer(norms: torch.Tensor, owner: torch.Tensor, layers: int) -> torch.Tensor:
    """Rows of per-parameter norms → rows of per-layer norms (the root of the layer's summed squares)."""
    total = torch.zeros(norms.shape[0], layers, device=norms.device)
    return total.index_add_(1, owner, norms.square()).sqrt()


def _dead_share(tensor: torch.Tensor) -> torch.Tensor:
    """The share of a layer input's features (dim 1) that were 0 for every sample (and position) of the batch."""
    if tensor.dim() < 2:
        return torch.zeros((), device=tensor.device)
    features = tensor.transpose(0, 1).reshape(tensor.shape[1], -1)
    return (features == 0).all(dim=1).float().mean()


def _forward(model: nn.Module, x: torch.Tensor, autocast,
             layers: list[tuple[str, nn.Module, list]]) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """One eager forward in eval mode: each layer's input and output (an empty tensor for one that did not run or
    did not take or give a tensor)."""
    empty = torch.zeros(0, device=x.device)
    inputs = [empty] * len(layers)
    outputs = [empty] * len(layers)
    handles = []
    for i, (_, module, _) in enumerate(layers):
        def pre(module, args, i=i):
            if args and isinstance(args[0], torch.Tensor):
                inputs[i] = args[0]

        def post(module, args, output, i=i):
            if isinstance(output, torch.Tensor):
                outputs[i] = output
        handles += [module.register_forward_pre_hook(pre), module.register_forward_hook(post)]
    try:
        with side_effect_free(model, x, fork_random=False), autocast:
            model.forward(x)  # not model(x): a model compiled in place would run its compiled call
    finally:
        for handle in handles:
            handle.remove()
    return inputs, outputs


def decode(values: list[float], contents: list[tuple[int, list[str]]]) -> list[LayerStats]:
    """The LayerStats events of a read-back's slice (LayerProbe.flat's layout)."""
    events, offset = [], 0
    for step, names in contents:
        layers = []
        for name in names:
            row = values[offset:offset + WIDTH]
            offset += WIDTH
            hists = [_hist(row[_SCALARS + k * _HIST:_SCALARS + (k + 1) * _HIST]) for k in range(3)]
            layers.append(LayerStat(name=name, weight_norm=row[0], grad_norm=row[1], update_ratio=row[2],
                                    dead_fraction=row[3], weights=hists[0], grads=hists[1], activations=hists[2]))
        events.append(LayerStats(step=step, layers=tuple(layers)))
    return events


def _hist(values: list[float]) -> Histogram:
    return Histogram(lo=values[0], hi=values[1], counts=tuple(values[2:]))


def model_summary(model: nn.Module, example: torch.Tensor) -> ModelSummary:
    """torchinfo's table for the first batch: each module's output shape, own parameters and multiply-adds. One
    eager forward in eval mode, without gradients and on a forked random stream (the run is unchanged)."""
    shapes: dict[str, tuple[int, ...]] = {}
    adds: dict[str, int] = {}
    handles = []
    for name, module in model.named_modules():
        def post(module, args, output, name=name):
            shapes[name] = tuple(output.shape) if isinstance(output, torch.Tensor) else ()
            adds[name] = _mult_adds(module, output)
        handles.append(module.register_forward_hook(post))
    try:
        with side_effect_free(model, example):
            model(example)
    finally:
        for handle in handles:
            handle.remove()
    rows = []
    for name, module in model.named_modules():
        own = list(module.parameters(recurse=False))
        rows.append(LayerRow(name=name, kind=type(module).__name__, depth=name.count(".") + 1 if name else 0,
                             output_shape=shapes.get(name, ()), params=sum(p.numel() for p in own),
                             trainable=any(p.requires_grad for p in own), mult_adds=adds.get(name, 0)))
    return ModelSummary(batch=example.shape[0], rows=tuple(rows))


def _mult_adds(module: nn.Module, output) -> int:
    """Multiply-adds of one forward in `module` itself: each output value of a Linear costs in_features of them, of
    a Conv its kernel's size times its input channels per group (torchinfo's count)."""
    if not isinstance(output, torch.Tensor):
        return 0
    if isinstance(module, nn.Linear):
        return output.numel() * module.in_features
    if isinstance(module, nn.modules.conv._ConvNd):
        kernel = 1
        for size in module.kernel_size:
            kernel *= size
        return output.numel() * kernel * module.in_channels // module.groups
    return 0
