"""Compare numerics: one batch forward and backward, eager and compiled from the same weights, layer by layer and
op by op, so that a compiled model that drifts says where.

What runs: the config's model is built once from its seed and copied (identical weights); the copies take the run's
first batch (the same inputs) in training mode, under the config's AMP, through the same cross-entropy and backward
that a training step runs. Dynamo starts from a fresh state and is reset afterwards (the kernel keeps nothing of
this throw-away model). Random ops draw the same numbers on both sides: each forward starts from the same seed, and
Inductor runs them as eager's own ops (`fallback_random`), so a dropout mask is the same mask.

Three kinds of rows (ground/numerics.py holds them and their tolerances):
- layers: each module's output, caught by a forward hook on both models. Dynamo traces the hooks, so on the compiled
  side each layer's output is an output of the compiled graph — computed by the compiled code. A layer's gradient
  row is its own parameters' gradients after backward.
- ops: each compiled graph's ops (the FX graph Dynamo captured, the one the backend compiles), each compiled op
  against the same op run eagerly by `torch.fx.Interpreter` on the compiled values of its inputs — what the op
  itself computes differently, not what it inherits. The backend is wrapped (numerics_ops.OpShadow): it compiles
  the graph with every op's value added to its outputs, and each call also runs the interpreter on copies of the
  graph's inputs, with the random state the compiled call started from. An op's source line is the user's frame
  of the FX node's stack trace.
- the loss.

Why not `torch.utils._debug_mode.DebugMode` (torch 2.10+), which hashes every op's output: it sees the ops that go
through the dispatcher, and Inductor's CPU kernels are C++ functions called directly — on the CPU the compiled side
of a graph is invisible to it (on a GPU it records Triton kernels, not the ops they fused), and its interpreter mode
(`run_compile_with_interpreter`) runs aot_eager graphs instead of the compiled code. Asking the compiled graph for
its ops' values works with every backend on every device, and compares the values themselves, not hashes.

What this changes: the compiled graph keeps every op's value as an output, so Inductor stores values it would
otherwise keep in registers; a consumer in the same kernel still reads the unrounded value (it does not reload it),
so a drift from fusing stays visible. Backward ops have no rows (a graph's backward is one compiled function); the
layers' parameter gradients stand for them.
"""

from __future__ import annotations

import copy
import time
import traceback
from contextlib import ExitStack
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable

import torch
import torch._dynamo
import torch._inductor.config
from torch import nn
from torch.nn import functional as F

from ..ground.config import TrainConfig, split_model_spec
from ..ground.errors import WorkbenchError, first_line
from ..ground.numerics import (LAYER, LOSS, Difference, Fp32Check, NumericsReport, NumericsRow, NumericTolerance,
                               looser, tolerance_for)
from . import devices
from .data import DeviceBatches, classes_of, load_split
from .evaluate import autocast_context
from .compile_explain import inside_torch
from .model import check_outputs, model_for
from .numerics_ops import OpShadow, difference_of, dtype_name, tolerance_of

class NumericsError(WorkbenchError):
    kind = "compile"


def compare_numerics(config: TrainConfig) -> NumericsReport:
    """Eager against compiled on one batch of `config`'s data (an eager config is compared as inductor would
    compile it: comparing is about compiling). Raises NumericsError (a model that fails eagerly or does not compile)
    and the data's and the model's own WorkbenchErrors; never a traceback."""
    notes = [] if config.compiled else ["the settings say eager: compared as inductor compiles the model"]
    if not config.compiled:
        config = config.replace(backend="inductor")
    start = time.perf_counter()
    device = devices.resolve_device(config.device)
    x, y, output_dim = _first_batch(config, device)
    torch.manual_seed(config.seed)
    model = model_for(config, output_dim).to(device)
    try:
        check_outputs(model, x, output_dim)
    except WorkbenchError:
        raise
    except Exception as exc:  # the user's forward: one line, not a traceback
        raise _failure(model, config, exc, compiled=False) from None
    shadow = OpShadow(config)
    torch._dynamo.reset()
    try:
        eager = _Pass.run(copy.deepcopy(model), x, y, config, autocast=True, record_sites=True)
        compiled = _Pass.run(copy.deepcopy(model), x, y, config, autocast=True, shadow=shadow)
        fp32 = _Pass.run(copy.deepcopy(model), x, y, config, autocast=False) if config.amp != "off" else None
    finally:
        torch._dynamo.reset()
    rows = _rows(eager, compiled, fp32, shadow.rows(), config)
    if shadow.graphs != 1:
        notes.append(f"{shadow.graphs} compiled graphs: the code between them (each graph break) runs eagerly in "
                     "both models and has layer rows only; `workbench explain` lists the breaks")
    return NumericsReport(model=model_label(config.model), backend=config.backend, mode=config.mode, amp=config.amp,
                          device=str(device), batch=int(x.shape[0]), rows=rows, graphs=shadow.graphs,
                          seconds=time.perf_counter() - start, torch_version=str(torch.__version__),
                          notes=tuple(notes))


def model_label(spec: str) -> str:
    """'sandwich', or 'planted_drift.py:PlantedDriftNet' (the file's name, not its folder)."""
    parts = split_model_spec(spec)
    return f"{Path(parts[0]).name}:{parts[1]}" if parts else spec


def _first_batch(config: TrainConfig, device: torch.device) -> tuple[torch.Tensor, torch.Tensor, int]:
    """The first batch a run of `config` trains on: the same images and labels, in the same order."""
    classes = classes_of(config.dataset, config.data_root)
    batches = DeviceBatches(load_split(config.dataset, "train", config.data_root), config.batch_size, device,
                            seed=config.seed)
    first = next(iter(batches.epoch(0)), None)
    if first is None:
        raise NumericsError(f"the training split of {config.dataset} has fewer images than one batch of "
                            f"{config.batch_size}", "choose a smaller batch size")
    return first[0], first[1], len(classes)


# -- one pass: forward, loss, backward, with every layer's output --------------------------------------------------
@dataclass
class _Pass:
    root: str  # the model's class name (its layer path is "")
    outputs: dict[str, list[torch.Tensor]]  # layer path → its output at each call, in call order
    order: list[str]  # layer paths in the order their first call finished
    sites: dict[str, traceback.FrameSummary]  # layer path → the user's line that called it (eager only)
    gradients: dict[str, list[torch.Tensor]]  # layer path → its own parameters' gradients
    loss: torch.Tensor

    @classmethod
    def run(cls, model: nn.Module, x: torch.Tensor, y: torch.Tensor, config: TrainConfig, *, autocast: bool,
            record_sites: bool = False, shadow: "OpShadow | None" = None) -> "_Pass":
        outputs: dict[str, list[torch.Tensor]] = {}
        sites: dict[str, traceback.FrameSummary] = {}
        order: list[str] = []

        def hook(name: str) -> Callable:
            def keep(module, args, output):
                tensor = _first_tensor(output)
                if tensor is None:
                    return
                if name not in outputs:
                    outputs[name] = []
                    order.append(name)
                    if record_sites:
                        sites[name] = _user_frame(traceback.extract_stack())
                outputs[name].append(tensor)
            return keep

        model.train()
        handles = [module.register_forward_hook(hook(name)) for name, module in model.named_modules()]
        run_model: Callable = model
        if shadow is not None:
            run_model = torch.compile(model, backend=shadow, fullgraph=config.fullgraph, dynamic=config.dynamic)
        _reseed(config.seed, x.device)
        try:
            with ExitStack() as stack:
                if shadow is not None:
                    stack.enter_context(torch._inductor.config.patch(fallback_random=True))
                if autocast:
                    stack.enter_context(autocast_context(config, x.device))
                try:
                    logits = run_model(x)
                    loss = F.cross_entropy(logits, y)
                except WorkbenchError:
                    raise
                except Exception as exc:  # the user's model, or the compiler on it: one line, not a traceback
                    raise _failure(model, config, exc, compiled=shadow is not None) from None
            try:
                loss.backward()
            except Exception as exc:
                raise _failure(model, config, exc, compiled=shadow is not None) from None
        finally:
            for handle in handles:
                handle.remove()
        gradients = {name: [p.grad.detach() for p in module.parameters(recurse=False) if p.grad is not None]
                     for name, module in model.named_modules()}
        return cls(root=type(model).__name__, outputs=outputs, order=order, sites=sites, gradients=gradients,
                   loss=loss.detach())


def _failure(model: nn.Module, config: TrainConfig, exc: Exception, *, compiled: bool) -> NumericsError:
    name = type(model).__name__
    if compiled:
        return NumericsError(f"could not compile {name} with {config.backend}: {type(exc).__name__}: "
                             f"{first_line(exc)}",
                             "`workbench explain` (or Explain in the Compile panel) shows where it breaks; "
                             "`workbench train` with the same settings shows the error in full")
    return NumericsError(f"{name} fails when run eagerly: {type(exc).__name__}: {first_line(exc)}",
                         "run it with backend eager to see the error in full")


def _first_tensor(output: Any) -> torch.Tensor | None:
    """A layer's output as one floating tensor: itself, or the first floating tensor of a tuple or list."""
    if isinstance(output, torch.Tensor):
        return output if output.is_floating_point() else None
    if isinstance(output, (tuple, list)):
        return next((t for t in output if isinstance(t, torch.Tensor) and t.is_floating_point()), None)
    return None


def _user_frame(stack: list[traceback.FrameSummary]) -> traceback.FrameSummary | None:
    """The innermost frame outside torch: the user's line that called a layer (None for the model itself, which
    this module calls)."""
    frames = list(reversed(stack))
    while frames and frames[0].filename == __file__:  # the hook itself
        frames.pop(0)
    frame = next((f for f in frames if not inside_torch(f.filename)), None)
    return frame if frame is not None and frame.filename != __file__ else None


def _reseed(seed: int, device: torch.device) -> None:
    torch.manual_seed(seed)
    if device.type == "cuda":
        torch.cuda.manual_seed(seed)


# -- rows -------------------------------------------------------------------------------------------------------
def in_forward_order(layers: list[str], ops: list[NumericsRow]) -> list[str | NumericsRow]:
    """Layers (their paths, in the order they finished; "" is the model) and op rows (graph by graph, in graph
    order) merged as the forward ran them: a layer finishes after the last op that ran inside it, so each layer
    follows the ops up to that one. A row that exceeds first in this order is where the drift starts."""
    ordered: list[str | NumericsRow] = []
    taken = 0
    for layer in layers:
        inside = [i for i, op in enumerate(ops) if _within(op.module, layer)]
        last = max(inside, default=-1) + 1
        ordered += ops[taken:last]
        taken = max(taken, last)
        ordered.append(layer)
    return ordered + ops[taken:]


def _within(module: str, layer: str) -> bool:
    return not layer or module == layer or module.startswith(layer + ".")


def _rows(eager: _Pass, compiled: _Pass, fp32: _Pass | None, ops: list[NumericsRow],
          config: TrainConfig) -> tuple[NumericsRow, ...]:
    """Every row in forward order, then the loss. A layer's output is held to the loosest tolerance of its own
    dtype and everything the forward computed before it (ops have their graph's lineage: `_lineage`); gradients
    and the loss, which depend on the whole forward, to the loosest of all of it."""
    ordered = in_forward_order(eager.order, ops)
    dtypes = [(compiled.outputs.get(name) or eager.outputs[name])[0].dtype for name in eager.order]
    whole = tolerance_of(None, config, *(tolerance_of(d, config) for d in dtypes), *(op.tolerance for op in ops))
    rows, seen = [], tolerance_of(None, config)
    for item in ordered:
        if isinstance(item, NumericsRow):
            rows.append(item)
            seen = looser(seen, item.tolerance)
            continue
        row = _layer_row(item, eager, compiled, fp32, tolerance_of(dtypes[eager.order.index(item)], config, seen),
                         whole)
        rows.append(row)
        seen = row.tolerance
    rows.append(_loss_row(eager, compiled, fp32, whole))
    return tuple(rows)


def _layer_row(name: str, eager: _Pass, compiled: _Pass, fp32: _Pass | None, tolerance: NumericTolerance,
               gradient_tolerance: NumericTolerance) -> NumericsRow:
    reference = eager.outputs[name]
    ours = compiled.outputs.get(name)
    output = _differences(ours, reference, tolerance) if ours and len(ours) == len(reference) else None
    own_gradients = eager.gradients.get(name)
    gradient = _differences(compiled.gradients.get(name), own_gradients, gradient_tolerance)
    site = eager.sites.get(name)
    dtype = dtype_name((ours or reference)[0].dtype)
    row = NumericsRow(kind=LAYER, name=name or eager.root, module=name, dtype=dtype, tolerance=tolerance,
                      output=output, gradient=gradient,
                      gradient_tolerance=gradient_tolerance if gradient is not None else None,
                      file=site.filename if site else "", line=int(site.lineno or 0) if site else 0,
                      code=(site.line or "").strip() if site else "")
    if fp32 is not None and ours and name in fp32.outputs:
        row = _with_fp32(row, ours, reference, fp32.outputs[name], compiled.gradients.get(name),
                         eager.gradients.get(name), fp32.gradients.get(name))
    return row


def _loss_row(eager: _Pass, compiled: _Pass, fp32: _Pass | None, tolerance: NumericTolerance) -> NumericsRow:
    row = NumericsRow(kind=LOSS, name="loss", module="", dtype=dtype_name(compiled.loss.dtype), tolerance=tolerance,
                      output=difference_of(compiled.loss, eager.loss, tolerance))
    if fp32 is not None:
        row = _with_fp32(row, [compiled.loss], [eager.loss], [fp32.loss], None, None, None)
    return row


def _with_fp32(row: NumericsRow, compiled: list, eager: list, fp32: list, compiled_grads, eager_grads,
               fp32_grads) -> NumericsRow:
    output = Fp32Check(_max_abs(compiled, fp32), _max_abs(eager, fp32))
    gradient = (Fp32Check(_max_abs(compiled_grads, fp32_grads), _max_abs(eager_grads, fp32_grads))
                if compiled_grads and fp32_grads and eager_grads else None)
    return replace(row, fp32_output=output, fp32_gradient=gradient)


def _max_abs(values: list[torch.Tensor], references: list[torch.Tensor]) -> float:
    """The largest absolute difference over pairs of tensors (the tolerance plays no part in it)."""
    return max((difference_of(v, r, tolerance_for("float32")).max_abs for v, r in zip(values, references)),
               default=0.0)


def _differences(values: list[torch.Tensor] | None, references: list[torch.Tensor] | None,
                 tolerance: NumericTolerance) -> Difference | None:
    """Several tensors (a layer's calls, its parameters' gradients) compared pairwise, as one Difference."""
    if not values or not references or len(values) != len(references):
        return None
    result = None
    for value, reference in zip(values, references):
        one = difference_of(value, reference, tolerance)
        result = one if result is None else result.merged(one)
    return result
