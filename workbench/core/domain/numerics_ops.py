"""Compare numerics, op by op: a torch.compile backend that compiles each graph with the configured backend and
compares every op of it against the same op run eagerly on the same inputs (`OpShadow`), and the measurement both
the ops and the layers use (`difference_of`, `tolerance_of`). domain/numerics.py runs the comparison and says why
it is done this way.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from typing import Any, Callable

import torch
import torch._dynamo
from torch import fx

from ..ground.config import TrainConfig
from ..ground.events import printed_frames
from ..ground.numerics import OP, Difference, NumericsRow, NumericTolerance, looser, tolerance_for
from .compile_explain import inside_torch



@dataclass
class _OpRecord:
    graph: int
    op: str
    module: str
    frame: tuple[str, int, str] | None  # (file, line, code)
    dtype: torch.dtype
    tolerance: NumericTolerance
    difference: Difference


class OpShadow:
    """A backend that compiles with the config's backend and compares each op of every graph it compiles against
    the same op run eagerly (domain/numerics.py says how and why); `rows()` are the op rows."""

    def __init__(self, config: TrainConfig):
        self.config = config
        self.graphs = 0
        self.records: dict[tuple[int, str], _OpRecord] = {}

    def __call__(self, gm: fx.GraphModule, example_inputs: list) -> Callable:
        self.graphs += 1
        graph = self.graphs
        watched = [node for node in gm.graph.nodes if _is_floating_op(node)]
        shadowed, kept = _with_op_outputs(gm, [node.name for node in watched])
        inner = _backend(self.config)(shadowed, example_inputs)
        names = [node.name for node in watched]
        described = {node.name: _describe(node) for node in watched}
        tolerances = _lineage(gm, self.config)

        def run(*args):
            inputs = [a.detach().clone() if isinstance(a, torch.Tensor) else a for a in args]
            devices_used = sorted({a.device for a in inputs if isinstance(a, torch.Tensor)
                                   and a.device.type == "cuda"}, key=str)
            before = _rng_state(devices_used)
            outputs = inner(*args)
            after = _rng_state(devices_used)
            compiled = dict(zip(names, outputs[kept:]))
            _set_rng_state(before)
            try:
                with torch.no_grad():
                    reference = _Recorder(gm, compiled).values(inputs)
            finally:
                _set_rng_state(after)
            for name, value in compiled.items():
                self._record(graph, name, described[name], value, reference.get(name), tolerances[name])
            return outputs[:kept]

        return run

    def _record(self, graph: int, name: str, description: tuple, value: torch.Tensor,
                reference: torch.Tensor | None, tolerance: NumericTolerance) -> None:
        if reference is None or not isinstance(value, torch.Tensor):
            return
        op, module, frame = description
        difference = difference_of(value.detach(), reference, tolerance)
        key = (graph, name)  # a graph that runs twice (a loop around a graph break): one row, both runs in it
        earlier = self.records.get(key)
        if earlier is not None:
            difference = earlier.difference.merged(difference)
        self.records[key] = _OpRecord(graph, op, module, frame, value.dtype, tolerance, difference)

    def rows(self) -> list[NumericsRow]:
        rows = []
        for record in self.records.values():
            file, line, code = record.frame or ("", 0, "")
            rows.append(NumericsRow(kind=OP, name=record.op, module=record.module, dtype=dtype_name(record.dtype),
                                    tolerance=record.tolerance, output=record.difference, graph=record.graph,
                                    file=file, line=line, code=code))
        return rows


class _Recorder(fx.Interpreter):
    """Runs a graph eagerly op by op, each op on the compiled graph's values of its inputs: an op's reference is
    what eager computes from the very inputs the compiled op had, so an op that computes differently stands out,
    and the ops after it do not inherit its difference (the layer rows show what adds up)."""

    def __init__(self, gm: fx.GraphModule, compiled: dict[str, torch.Tensor]):
        super().__init__(gm)
        self.compiled = compiled
        self.kept: dict[str, torch.Tensor] = {}

    def run_node(self, n: fx.Node) -> Any:
        value = super().run_node(n)
        ours = self.compiled.get(n.name)
        if ours is None or not isinstance(value, torch.Tensor):
            return value
        self.kept[n.name] = value.detach().clone()  # an in-place op later on must not change it
        if ours.shape == value.shape and ours.dtype == value.dtype:
            return ours.detach().clone()  # what the next ops start from
        return value

    def values(self, inputs: list) -> dict[str, torch.Tensor]:
        self.run(*inputs)
        return self.kept


def _lineage(gm: fx.GraphModule, config: TrainConfig) -> dict[str, NumericTolerance]:
    """Each node's tolerance: the loosest of its own dtype's and those of every value it was computed from (a bf16
    value cast back to fp32 still carries bf16's rounding)."""
    tolerances: dict[str, NumericTolerance] = {}
    for node in gm.graph.nodes:
        value = node.meta.get("example_value")
        own = value.dtype if isinstance(value, torch.Tensor) and value.is_floating_point() else None
        tolerances[node.name] = tolerance_of(own, config, *(tolerances[n.name] for n in node.all_input_nodes
                                                          if n.name in tolerances))
    return tolerances


def _is_floating_op(node: fx.Node) -> bool:
    value = node.meta.get("example_value")
    return (node.op in ("call_function", "call_method", "call_module") and isinstance(value, torch.Tensor)
            and value.is_floating_point())


def _with_op_outputs(gm: fx.GraphModule, names: list[str]) -> tuple[fx.GraphModule, int]:
    """A copy of `gm` that also returns the named nodes' values, after its own outputs; and how many it had."""
    graph = copy.deepcopy(gm.graph)
    nodes = {node.name: node for node in graph.nodes}
    output = next(node for node in graph.nodes if node.op == "output")
    own = output.args[0]
    own = tuple(own) if isinstance(own, (tuple, list)) else (own,)
    output.args = ((*own, *(nodes[name] for name in names)),)
    shadowed = fx.GraphModule(gm, graph)
    shadowed.recompile()
    return shadowed, len(own)


def _backend(config: TrainConfig) -> Callable:
    """The config's backend as torch.compile would call it (Inductor with the config's mode)."""
    if config.backend == "inductor":
        return torch._TorchCompileInductorWrapper(config.mode, None, config.dynamic)
    return torch._dynamo.lookup_backend(config.backend)


def _describe(node: fx.Node) -> tuple[str, str, tuple[str, int, str] | None]:
    """(op name, the layer it ran in, the user's (file, line, code) that ran it) of an FX node."""
    target = node.target
    op = target if isinstance(target, str) else getattr(target, "__name__", str(target))
    stack = node.meta.get("nn_module_stack") or {}
    module = _module_path(list(stack.values())[-1][0]) if stack else ""
    return op.strip("_") or op, module, _stack_frame(node.meta.get("stack_trace") or "")


def _module_path(dynamo_path: str) -> str:
    """"L['self'].core_block.layers[0]" → "core_block.layers.0" (named_modules' spelling)."""
    path = re.sub(r"^L\['self'\]\.?", "", dynamo_path)
    path = re.sub(r"\[['\"]?([^\]'\"]+)['\"]?\]", r".\1", path)
    return path.strip(".")


def _stack_frame(stack_trace: str) -> tuple[str, int, str] | None:
    """The innermost user frame (outside torch) of an FX node's stack trace."""
    frames = [f for f in printed_frames(stack_trace) if not inside_torch(f.file)]
    return (frames[-1].file, frames[-1].line, frames[-1].source) if frames else None


def _rng_state(cuda: list[torch.device]) -> tuple:
    return torch.get_rng_state(), [(d, torch.cuda.get_rng_state(d)) for d in cuda]


def _set_rng_state(state: tuple) -> None:
    cpu, cuda = state
    torch.set_rng_state(cpu)
    for device, value in cuda:
        torch.cuda.set_rng_state(value, device)


def difference_of(value: torch.Tensor, reference: torch.Tensor, tolerance: NumericTolerance) -> Difference:
    """`value` against `reference`, element by element, in float64: the largest absolute and relative differences
    and how many elements lie beyond atol + rtol·|reference|. Non-finite values match only their like (NaN with
    NaN, +inf with +inf); any other pairing counts as an infinite difference. Shapes that differ are one."""
    elements = reference.numel()
    if value.shape != reference.shape:
        return Difference(float("inf"), float("inf"), max(elements, 1), max(elements, 1))
    if elements == 0:
        return Difference(0.0, 0.0, 0, 0)
    a = value.detach().to(torch.float64)
    b = reference.detach().to(torch.float64)
    same_special = (a == b) | (a.isnan() & b.isnan())
    finite = a.isfinite() & b.isfinite()
    diff = torch.where(finite, (a - b).abs(), torch.where(same_special, 0.0, float("inf")))
    allowed = tolerance.atol + tolerance.rtol * b.abs().nan_to_num(posinf=0.0, neginf=0.0)
    nonzero = b != 0
    rel = torch.where(nonzero, diff / b.abs().where(nonzero, 1.0), torch.where(diff > 0, float("inf"), 0.0))
    return Difference(max_abs=float(diff.max()), max_rel=float(rel.max()), beyond=int((diff > allowed).sum()),
                      elements=elements)


def tolerance_of(dtype: torch.dtype | None, config: TrainConfig, *inherited: NumericTolerance) -> NumericTolerance:
    """The loosest of a value's own dtype's tolerance (fp32's for None), those `inherited` from what it was computed
    from, and under AMP the AMP dtype's (see ground/numerics.py)."""
    tolerance = tolerance_for(dtype_name(dtype) if dtype is not None else "float32")
    if config.amp != "off":
        tolerance = looser(tolerance, tolerance_for("bfloat16" if config.amp == "bf16" else "float16"))
    for other in inherited:
        tolerance = looser(tolerance, other)
    return tolerance


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")
