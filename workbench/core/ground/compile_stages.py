"""Where each compiled graph's compile time went, stage by stage: Dynamo's tracing, AOTAutograd, Inductor's lowering,
its code generation, the kernels' C++ / Triton compile, and autotuning.

PyTorch times these stages itself (`torch._dynamo.utils.CompilationMetrics`, ≥ 2.6): one record per frame Dynamo
compiled (the structured trace's `compilation_metrics`), one per backward compiled at its first call
(`bwd_compilation_metrics`) and one per runtime compile (`…_runtime`: Triton's autotuning at a kernel's first launch).
Its timers are cumulative and nested: the frame's Dynamo time holds AOTAutograd's, which holds Inductor's, which holds
code generation, which waits for the kernels' compile. `graph_compile_times` takes the nesting apart into stages that
add up to the frame's time, so a bar of them is the compile and nothing twice.

Torch-free: the engine feeds it PyTorch's records at the end of a run, a recorded trace feeds it the same dicts, and
the tests feed it recorded ones.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Iterable

from .codec import Record


@dataclass(frozen=True)
class Stage:
    name: str  # the legend's and the table's
    colour: str  # "#rrggbb": the panel's bar and the report's
    meaning: str  # a tooltip's line: what the compiler does in it


# In the order they run: the bar's segments, left to right.
STAGES: dict[str, Stage] = {
    "dynamo": Stage("Dynamo", "#1f77b4", "Dynamo traces the Python code into an FX graph and builds its guards"),
    "aot": Stage("AOTAutograd", "#ff7f0e", "AOTAutograd traces the forward and backward graphs and partitions them "
                 "(graph passes included)"),
    "lowering": Stage("Lowering", "#2ca02c", "Inductor lowers the graph to its loop-level IR and fuses it"),
    "codegen": Stage("Code generation", "#9467bd", "Inductor writes the kernels' source and the wrapper code"),
    "kernel_compile": Stage("C++ / Triton compile", "#d62728", "the C++ compiler or Triton compiles the kernels "
                            "(time spent waiting for the compile workers)"),
    "autotune": Stage("Autotuning", "#8c564b", "benchmarking kernel choices (max-autotune's templates, Triton's "
                      "configurations at a kernel's first launch)"),
}
FRAME, BACKWARD = "frame", "backward"


@dataclass(frozen=True)
class GraphCompileTime(Record):
    """One compiled graph's compile time by stage, in seconds (the fields are STAGES' keys)."""

    compile_id: str  # Dynamo's "frame/compile" id, e.g. "0/1" (the 2nd compile of frame 0)
    function: str  # the compiled function (co_name), "" when unknown
    # FRAME: Dynamo's trace of the frame and the graphs compiled with it (the forward, or the inference graph; the
    # backward too when a cache served it). BACKWARD: the backward, compiled when it first ran.
    graph: str = FRAME
    dynamo: float = 0.0
    aot: float = 0.0
    lowering: float = 0.0
    codegen: float = 0.0
    kernel_compile: float = 0.0
    autotune: float = 0.0

    @property
    def total(self) -> float:
        return sum(self.seconds().values(), 0.0)

    def seconds(self) -> dict[str, float]:
        """Seconds by stage, in STAGES' order."""
        return {key: getattr(self, key) for key in STAGES}

    @property
    def label(self) -> str:
        """'forward 0/0', 'forward 0/0 · backward': how a row is named."""
        name = f"{self.function or 'frame'} {self.compile_id}".strip()
        return f"{name} · backward" if self.graph == BACKWARD else name


def graph_compile_times(records: Iterable[dict]) -> tuple[GraphCompileTime, ...]:
    """Each compiled graph's time by stage, in the order compiled, from compilation-metrics records (dicts of
    CompilationMetrics' fields, as the trace logs them). A runtime record's autotuning is added to its graph's; a
    record without any stage time (a frame Dynamo skipped, a torch that does not time stages) gives no row."""
    rows: dict[tuple[str, str], GraphCompileTime] = {}
    functions: dict[str, str] = {}
    for record in records:
        compile_id = str(record.get("compile_id") or "")
        if record.get("co_name"):
            functions[compile_id] = record["co_name"]
        graph = BACKWARD if record.get("is_forward") is False else FRAME
        if record.get("is_runtime"):
            seconds = _us(record, "runtime_triton_autotune_time_us")
            key = (compile_id, graph)
            if seconds and key in rows:
                rows[key] = dataclasses.replace(rows[key], autotune=rows[key].autotune + seconds)
            elif seconds:
                rows[key] = GraphCompileTime(compile_id, functions.get(compile_id, ""), graph, autotune=seconds)
            continue
        stages = _stages(record, graph)
        if any(stages.values()):
            rows[(compile_id, graph)] = GraphCompileTime(compile_id, functions.get(compile_id, ""), graph, **stages)
    # A backward's record names no function: its frame's record does.
    return tuple(dataclasses.replace(row, function=row.function or functions.get(row.compile_id, ""))
                 for row in rows.values())


def _stages(record: dict, graph: str) -> dict[str, float]:
    """The nested timers taken apart (see the module docstring). Kernel compiles are waited for inside code
    generation; autotuning runs inside lowering (template choices) or code generation (fused-kernel benchmarks), and
    is taken from lowering first. Every stage is clamped at zero: the timers round separately."""
    inductor = _us(record, "inductor_cumulative_compile_time_us")
    codegen = min(_us(record, "inductor_code_gen_cumulative_compile_time_us"), inductor)
    kernels = min(_us(record, "triton_compile_time_us"), codegen)
    autotune = _us(record, "compile_time_autotune_time_us")
    from_lowering = min(autotune, inductor - codegen)
    from_codegen = min(autotune - from_lowering, codegen - kernels)
    if graph == BACKWARD:
        dynamo, aot = 0.0, max(0.0, _us(record, "backward_cumulative_compile_time_us") - inductor)
    else:
        whole = _us(record, "dynamo_cumulative_compile_time_us")
        backend = min(_us(record, "aot_autograd_cumulative_compile_time_us"), whole)
        dynamo, aot = whole - backend, max(0.0, backend - inductor)
    return {"dynamo": dynamo, "aot": aot, "lowering": inductor - codegen - from_lowering,
            "codegen": codegen - kernels - from_codegen, "kernel_compile": kernels,
            "autotune": from_lowering + from_codegen}


def _us(record: dict, key: str) -> float:
    value = record.get(key)
    return max(0.0, value / 1e6) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0
