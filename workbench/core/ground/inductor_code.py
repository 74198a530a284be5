"""The code `torch.compile` wrote for a run, per compiled graph, read from the run's recorded structured trace: Dynamo's
captured graph, AOTAutograd's forward and backward (or inference) graphs, Inductor's output code, and the provenance
that ties them to the user's model: which of the user's lines each block of a graph came from ("# File: …" comments
the graphs carry), and which lines, FX nodes and kernels each of Inductor's kernels came from (its provenance
artifacts, torch ≥ 2.9, recorded when the run records its trace: domain.compile_trace).

With a profile of the same run (ProfileReport), `kernel_times` puts each kernel's measured time beside its name: a
generated kernel is the profiler's op of the same name (Triton's launcher records one; on the CPU Inductor's
`cpp.enable_kernel_profile`, on while tracing, names it graph_<n>_<kernel>), a library call (extern_kernels.mm) is
the ATen op it calls, shared by that op's calls in the graph.

Torch-free (plain text and JSON): the window reads a recorded run's trace without PyTorch, the tests a recorded file.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

from .errors import WorkbenchError
from .compile_stages import GraphCompileTime, graph_compile_times
from .events import Frame, ProfileReport, printed_frames
from .profile_trace import OpRow
from .codec import Record

TRACE_FILE = "dedicated_log_torch_trace_rank_0.log"  # the name TORCH_TRACE gives a single process's log
TRACE_HINT = "turn on 'record compile trace' in the compile settings and run again"
# A structured-trace line: glog's prefix (level, date, time, thread, file:line), then the record's JSON metadata;
# its payload follows on lines of its own, each starting with a tab.
_RECORD = re.compile(r"^[VIWEC]\d{4} [\d:.]+\s+\d+ \S+\] (\{.*\})\s*$")
# The tab that begins each of a record's payload lines.
_PAYLOAD = "\t"

# The listings a graph can have, in the order they are shown, with their titles.
LISTINGS = {
    "dynamo": "Dynamo graph",
    "aot_forward": "AOT forward",
    "aot_backward": "AOT backward",
    "aot_inference": "AOT inference",
    "code_forward": "Output code: forward",
    "code_backward": "Output code: backward",
    "code_inference": "Output code: inference",
}
_GRAPH_RECORDS = {"dynamo_output_graph": "dynamo", "aot_forward_graph": "aot_forward",
                  "aot_backward_graph": "aot_backward", "aot_inference_graph": "aot_inference"}
_METRICS = ("compilation_metrics", "bwd_compilation_metrics", "compilation_metrics_runtime",
            "bwd_compilation_metrics_runtime")
_NODE_MAPPINGS, _KERNEL_STACKS = ("inductor_provenance_tracking_node_mappings",
                                  "inductor_provenance_tracking_kernel_stack_traces")
# "# File: /m.py:13 in forward, code: h = relu(x)"; a backward graph's "# Backward of forward node: File: …".
_FILE_COMMENT = re.compile(r"^\s*# (?:Backward of forward node: )?File: (?P<file>.+?):(?P<line>\d+) "
                           r"in (?P<function>\S+), code: (?P<code>.*)$")
_AOT_ID = re.compile(r"^# AOT ID: \['\d+_(forward|backward|inference)'\]", re.MULTILINE)
_HANDLE = re.compile(r"^\s*# \[Provenance debug handles\] (?P<handles>.+)$")
_DEFINITION = re.compile(r"^(?P<name>\w+) = async_compile\.\w+\(")
_NODE = re.compile(r"^\s+(?P<name>\w+)(?:: \"[^\"]*\")? = ")


@dataclass(frozen=True)
class SourceSpan(Record):
    """Lines `first`…`last` (1-based) of a listing came from the user's line `source`."""

    first: int
    last: int
    source: Frame


@dataclass(frozen=True)
class Kernel(Record):
    """A kernel of Inductor's output code: one it generated (C++ or Triton) or a library call it makes."""

    name: str  # as the code names it: "cpp_fused_relu_0", "triton_poi_fused_add_0", "extern_kernels.addmm"
    handle: str = ""  # its provenance key, "cpp_fused_relu_0:2" (one per call); "" without provenance
    generated: bool = True  # False: a library call (extern_kernels.mm) or an ATen fallback (aten.randint)
    lines: tuple[int, ...] = ()  # its lines in the output code (1-based): the definition's, then the call's
    nodes: tuple[str, ...] = ()  # the FX nodes (post-grad graph) it computes
    sources: tuple[Frame, ...] = ()  # the user's lines it came from

    @property
    def key(self) -> str:
        """Unique within its listing: a library op is called more than once, each call its own handle."""
        return self.handle or self.name

    @property
    def op(self) -> str:
        """The ATen op a library call runs, as the profiler names it ("extern_kernels.addmm" and
        "aten.randint.low_out" run "aten::addmm" and "aten::randint"); "" for a generated kernel."""
        if self.generated:
            return ""
        parts = self.name.split(".")
        return f"aten::{parts[1] if parts[0] == 'aten' and len(parts) > 1 else parts[-1]}"


@dataclass(frozen=True)
class Listing(Record):
    kind: str  # a key of LISTINGS
    text: str
    spans: tuple[SourceSpan, ...] = ()  # the graphs' "# File:" blocks
    kernels: tuple[Kernel, ...] = ()  # output code only
    provenance: bool = False  # output code only: Inductor recorded which kernel came from where

    @property
    def title(self) -> str:
        return LISTINGS.get(self.kind, self.kind)

    @property
    def is_code(self) -> bool:
        return self.kind.startswith("code_")

    @property
    def graph(self) -> str:
        """"forward", "backward", "inference" (the AOT graph or output code of that pass), or "dynamo"."""
        return self.kind.split("_", 1)[-1]

    def lines_from(self, file: str, line: int) -> tuple[int, ...]:
        """The listing's lines (1-based) that came from the user's `file`:`line`: the graph blocks, and the kernels'
        lines (definition and calls) whose provenance names it."""
        found: set[int] = set()
        for span in self.spans:
            if (span.source.file, span.source.line) == (file, line):
                found.update(range(span.first, span.last + 1))
        for kernel in self.kernels_from(file, line):
            found.update(kernel.lines)
        return tuple(sorted(found))

    def kernels_from(self, file: str, line: int) -> tuple[Kernel, ...]:
        return tuple(k for k in self.kernels if any((s.file, s.line) == (file, line) for s in k.sources))

    def node_lines(self, nodes: tuple[str, ...]) -> tuple[int, ...]:
        """The lines that define these FX nodes (an AOT graph's `addmm: "f32[…]" = torch.ops.aten.addmm…`)."""
        wanted = set(nodes)
        return tuple(i for i, text in enumerate(self.text.splitlines(), 1)
                     if (found := _NODE.match(text)) and found["name"] in wanted)


@dataclass(frozen=True)
class CompiledGraph(Record):
    """What one compile of a frame (Dynamo's compile id) produced."""

    compile_id: str  # "0/1": the 2nd compile of frame 0
    function: str = ""  # the compiled function (co_name)
    listings: tuple[Listing, ...] = ()  # in LISTINGS' order
    times: tuple[GraphCompileTime, ...] = ()  # its compile time by stage (the frame, and a backward compiled later)

    @property
    def label(self) -> str:
        return f"{self.function or 'frame'} {self.compile_id}"

    @property
    def passes(self) -> str:
        """"forward + backward", "inference": the AOT graphs it has ("Dynamo graph" when it has none)."""
        return " + ".join(item.graph for item in self.listings if item.kind.startswith("aot_")) or "Dynamo graph"

    def listing(self, kind: str) -> Listing | None:
        return next((item for item in self.listings if item.kind == kind), None)

    def sources(self) -> tuple[Frame, ...]:
        """Every user line the graph's blocks and kernels came from, each once, by file and line."""
        seen: dict[tuple[str, int], Frame] = {}
        for listing in self.listings:
            for frame in [span.source for span in listing.spans] + [s for k in listing.kernels for s in k.sources]:
                seen.setdefault((frame.file, frame.line), frame)
        return tuple(sorted(seen.values(), key=lambda f: (f.file, f.line)))


@dataclass(frozen=True)
class InductorCode(Record):
    graphs: tuple[CompiledGraph, ...] = ()

    def files(self) -> tuple[str, ...]:
        """The user's source files the graphs came from, in the order first met."""
        return tuple(dict.fromkeys(f.file for g in self.graphs for f in g.sources()))


@dataclass(frozen=True)
class KernelTime(Record):
    """A kernel's measured time in a profiled window, per profiled step."""

    us: float  # device time where the kernel ran on a GPU, else its CPU time
    calls: float  # calls per step
    shared: int = 1  # a library op called this often in the graph: `us` is all of its calls together


def trace_log(path: str | Path) -> Path:
    """The raw trace file of a run's CompileTrace.path: tlparse's index.html (under the trace folder's html/), or
    the trace folder itself when it was not rendered."""
    path = Path(path)
    if path.suffix == ".html":
        return path.parent.parent / TRACE_FILE
    return path / TRACE_FILE if path.suffix != ".log" else path


def read_inductor_code(path: str | Path) -> InductorCode:
    """The compiled graphs of a recorded trace (a run's CompileTrace.path or the log itself), in compile order.
    A trace cut short (a run that crashed) gives what it holds; no trace file is a WorkbenchError with a hint."""
    log = trace_log(path)
    try:
        return InductorCode(graphs=_graphs(trace_records(log)))  # streamed: a trace can be hundreds of MB
    except OSError as exc:
        raise WorkbenchError(f"cannot read the compile trace {log}: {exc.strerror or exc}", TRACE_HINT) from None


def trace_records(log: Path) -> Iterator[tuple[dict, str]]:
    """(metadata, payload) of each record of a structured trace file, in order ("" for no payload). A line that is
    no record (a torn last line) is skipped, with any payload lines after it."""
    metadata: dict | None = None
    payload: list[str] = []
    with open(log, encoding="utf-8", errors="replace") as lines:
        for line in lines:
            if line.startswith(_PAYLOAD):
                payload.append(line[1:].rstrip("\n"))
                continue
            if metadata is not None:
                yield metadata, "\n".join(payload)
            metadata, payload = _metadata(line), []
    if metadata is not None:
        yield metadata, "\n".join(payload)


def _metadata(line: str) -> dict | None:
    found = _RECORD.match(line)
    if not found:
        return None
    try:
        data = json.loads(found[1])
    except json.JSONDecodeError:
        return None
    return data if isinstance(data, dict) else None


class _Graph:
    """One compile id's pieces as the trace gives them."""

    def __init__(self) -> None:
        self.texts: dict[str, str] = {}
        self.provenance: dict[str, dict] = {}  # by code listing kind: {artifact name: its JSON}
        self.last_code = ""  # the kind of the output code logged last: the provenance that follows is its
        self.metrics: list[dict] = []


def _graphs(records: Iterable[tuple[dict, str]]) -> tuple[CompiledGraph, ...]:
    graphs: dict[str, _Graph] = {}
    for metadata, payload in records:
        if "frame_id" not in metadata:  # a record of no compile (the trace's own header lines)
            continue
        graph = graphs.setdefault(f"{metadata['frame_id']}/{metadata.get('frame_compile_id', 0)}", _Graph())
        _add(graph, metadata, payload)
    return tuple(_compiled(compile_id, graph) for compile_id, graph in graphs.items()
                 if graph.texts or graph.metrics)


def _add(graph: _Graph, metadata: dict, payload: str) -> None:
    for key, kind in _GRAPH_RECORDS.items():
        if key in metadata:
            graph.texts[kind] = payload  # a restarted analysis logs again: its last attempt is the graph
            return
    if "inductor_output_code" in metadata:
        kind = _code_kind(payload, graph)
        graph.texts[kind], graph.last_code = payload, kind
        return
    for key in _METRICS:
        if isinstance(metadata.get(key), dict):
            graph.metrics.append(metadata[key])
            return
    artifact = metadata.get("artifact")
    name = artifact.get("name") if isinstance(artifact, dict) else None
    if name in (_NODE_MAPPINGS, _KERNEL_STACKS) and graph.last_code:
        try:
            value = json.loads(payload)
        except json.JSONDecodeError:
            return
        if isinstance(value, dict):
            graph.provenance.setdefault(graph.last_code, {})[name] = value


def _code_kind(code: str, graph: _Graph) -> str:
    """Which pass an output code is: its "# AOT ID: ['0_forward']" header, else the order (forward, then backward)."""
    found = _AOT_ID.search(code[:2000])
    if found:
        return f"code_{found[1]}"
    if "aot_inference" in graph.texts:
        return "code_inference"
    return "code_backward" if "code_forward" in graph.texts else "code_forward"


def _compiled(compile_id: str, graph: _Graph) -> CompiledGraph:
    times = graph_compile_times(graph.metrics)
    function = next((m["co_name"] for m in graph.metrics if isinstance(m.get("co_name"), str)), "")
    listings = []
    for kind in LISTINGS:
        text = graph.texts.get(kind)
        if text is None:
            continue
        if kind.startswith("code_"):
            provenance = graph.provenance.get(kind, {})
            kernels = _kernels(text, provenance.get(_NODE_MAPPINGS, {}), provenance.get(_KERNEL_STACKS, {}))
            listings.append(Listing(kind, text, kernels=kernels, provenance=bool(provenance.get(_KERNEL_STACKS))))
        else:
            listings.append(Listing(kind, text, spans=_spans(text)))
    return CompiledGraph(compile_id, function, tuple(listings), times)


def _spans(text: str) -> tuple[SourceSpan, ...]:
    """A graph's "# File:" blocks: each comment and the node lines under it, up to a blank line or the next."""
    spans: list[SourceSpan] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        found = _FILE_COMMENT.match(lines[i])
        if not found:
            i += 1
            continue
        last = i
        while last + 1 < len(lines) and lines[last + 1].strip() and not _FILE_COMMENT.match(lines[last + 1]):
            last += 1
        source = Frame(file=found["file"], line=int(found["line"]), function=found["function"],
                       source=found["code"].strip())
        spans.append(SourceSpan(i + 1, last + 1, source))
        i = last + 1
    return tuple(spans)


def _kernels(code: str, mappings: dict, stacks: dict) -> tuple[Kernel, ...]:
    """The output code's kernels: each call Inductor tagged with a provenance handle (torch ≥ 2.9), with its
    definition's lines (generated kernels), its FX nodes and the user lines it came from; without handles, each
    generated kernel's definition alone."""
    lines = code.splitlines()
    definitions = _definitions(lines)
    to_nodes = mappings.get("cppCodeToPost")  # its name for every device's kernels
    to_nodes = to_nodes if isinstance(to_nodes, dict) else {}
    kernels: list[Kernel] = []
    for i, text in enumerate(lines):
        found = _HANDLE.match(text)
        if not found:
            continue
        call = next((j for j in range(i + 1, min(i + 4, len(lines))) if not lines[j].lstrip().startswith("#")), i)
        first = i - 1 if i and lines[i - 1].lstrip().startswith("# Topologically Sorted Source Nodes") else i
        for handle in (h.strip() for h in found["handles"].split(",")):
            name = handle.rsplit(":", 1)[0]
            own = definitions.get(name, ())
            kernels.append(Kernel(name=name, handle=handle, generated=name in definitions or _generated(name),
                                  lines=(*own, *range(first + 1, call + 2)),
                                  nodes=tuple(_strings(to_nodes.get(handle))), sources=_frames(stacks.get(handle))))
    if not kernels:  # no provenance: the generated kernels, found by their definitions
        kernels = [Kernel(name=name, lines=own) for name, own in definitions.items()]
    return tuple(kernels)


def _generated(name: str) -> bool:
    """A kernel Inductor wrote (its definition may sit in another file: a cpp_wrapper's, a cached module)."""
    return name.startswith(("cpp_", "triton_"))


def _definitions(lines: list[str]) -> dict[str, tuple[int, ...]]:
    """Each generated kernel's definition lines (1-based): `name = async_compile.cpp_pybinding(… r'''` (or
    `.triton(`) through the line that closes its source (starts with ''')."""
    found: dict[str, tuple[int, ...]] = {}
    for i, text in enumerate(lines):
        start = _DEFINITION.match(text)
        if not start:
            continue
        end = next((j for j in range(i + 1, len(lines)) if lines[j].startswith("'''")), i)
        found[start["name"]] = tuple(range(i + 1, end + 2))
    return found


def _strings(value: object) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _frames(traces: object) -> tuple[Frame, ...]:
    """The frames of a kernel's stack traces (Dynamo records the user's alone), each once, in order."""
    frames: dict[tuple[str, int], Frame] = {}
    for trace in _strings(traces):
        for frame in printed_frames(trace):
            frames.setdefault((frame.file, frame.line), frame)
    return tuple(frames.values())


def kernel_times(graph: CompiledGraph, listing: Listing, profile: ProfileReport) -> dict[str, KernelTime]:
    """The profiled time of each of an output code's kernels, by Kernel.key (kernels the profile did not see are
    left out). The profile's op rows are matched by name within the graph's compiled region ("compiled 0/1" for
    its forward or inference, "compiled backward" for a backward): kernel names repeat from graph to graph."""
    steps = max(1, profile.last_step - profile.first_step + 1)
    region = "compiled backward" if listing.graph == "backward" else f"compiled {graph.compile_id}"
    rows = [row for row in profile.summary.ops if row.region == region]
    shared: dict[str, int] = {}
    for kernel in listing.kernels:
        if kernel.op:
            shared[kernel.op] = shared.get(kernel.op, 0) + 1
    times: dict[str, KernelTime] = {}
    for kernel in listing.kernels:
        matched = [row for row in rows if _same_kernel(kernel, row.name)]
        if not matched:
            continue
        us = sum(_row_us(row) for row in matched)
        calls = sum(row.calls for row in matched)
        times[kernel.key] = KernelTime(us=us / steps, calls=calls / steps, shared=shared.get(kernel.op, 1))
    return times


def _same_kernel(kernel: Kernel, name: str) -> bool:
    if kernel.op:
        return name == kernel.op
    return name == kernel.name or (name.startswith("graph_") and name.endswith("_" + kernel.name)
                                   and name[len("graph_"):-len(kernel.name) - 1].isdigit())


def _row_us(row: OpRow) -> float:
    """A row's device time where it has one (a GPU kernel), else its own CPU time."""
    return row.self_device_us if row.self_device_us > 0 else row.self_cpu_us
