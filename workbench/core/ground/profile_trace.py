"""A `torch.profiler` Chrome trace, summarised: the op table, the regions, the steps' timeline, and a copy small
enough to open.

Why here and torch-free: the trace is plain JSON, so the run history, the report and the window read it without
loading PyTorch, and the tests feed the same code hand-built traces (CUDA ones too, on a machine without a GPU).
What the summary adds to the raw trace is the arithmetic nobody does by hand: self time (an op's time minus its
children's), the kernels' device time charged to the op that launched them (through the runtime call's correlation
id), and the compiled regions (`torch.compile`'s forward, its backward, the optimizer) as a column to group by.
`write_trace` caps the trace's size because chrome://tracing and ui.perfetto.dev fail on hundreds of MB of JSON.
"""

from __future__ import annotations

import gzip
import json
import re
from collections import defaultdict
from bisect import bisect_right
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from .atomic import atomic_path
from .codec import Record

MAX_SPANS = 4000
TRACE_CAP_BYTES = 100 * 2**20
STEP_PREFIX = "ProfilerStep#"
# Timestamps are microseconds with nanosecond digits; ts + dur of large timestamps rounds by about that much, so
# an event starting within this of its predecessor's end is its sibling, not its child.
EPS_US = 0.01
OP_CATEGORIES = ("cpu_op", "user_annotation")
DEVICE_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")
LAUNCH_CATEGORIES = ("cuda_runtime", "cuda_driver")  # cudaLaunchKernel, and cuLaunchKernel for Triton's kernels
_COMPILED_REGION = re.compile(r"Torch-Compiled Region: (\S+)")
KEPT_DEPTH = 2  # ops this deep under a step stay in the spans (deeper ones are in the table and the trace)
TRIM_DEPTH = 3  # a trace over the cap loses the cpu_ops nested deeper than this under a step


# -- what a profiled window is, as plain data -------------------------------------------------------------------
@dataclass(frozen=True)
class OpRow(Record):
    """One row of the op table: an op (or annotation) by name, compiled region and input shapes, how often it ran
    and its times (µs): its own (self) and with what it called, on the CPU and on the device it launched work on."""

    name: str
    region: str
    calls: int
    self_cpu_us: float
    cpu_us: float
    self_device_us: float
    device_us: float
    shapes: str = ""


@dataclass(frozen=True)
class RegionRow(Record):
    """A compiled region's (or eager's) totals over the op table."""

    region: str
    self_cpu_us: float
    self_device_us: float
    calls: int


@dataclass(frozen=True)
class StepTime(Record):
    """A profiled step on the window's time axis (µs from its origin)."""

    step: int
    start_us: float
    dur_us: float


@dataclass(frozen=True)
class Span(Record):
    """A bar of the timeline: a step, a compiled region, an op or a kernel on its lane (a CPU thread, a GPU stream)."""

    lane: str
    start_us: float
    dur_us: float
    name: str
    kind: str  # "step" | "region" | "op" | "kernel"
    depth: int


@dataclass(frozen=True)
class ProfileCost(Record):
    """What profiling cost: a profiled step's median time against a steady one's (None where not measured)."""

    profiled_step_ms: float | None = None
    steady_step_ms: float | None = None


@dataclass(frozen=True)
class ProfileTables(Record):
    """The trace summarised (`summarise`): the op table heaviest first, the regions' totals, the steps, the
    timeline's spans (and how many short ones were left out), the window's origin and length, the device kind, and
    what profiling cost."""

    ops: tuple[OpRow, ...] = ()
    regions: tuple[RegionRow, ...] = ()
    steps: tuple[StepTime, ...] = ()
    spans: tuple[Span, ...] = ()
    spans_left_out: int = 0
    origin_us: float = 0.0
    window_us: float = 0.0
    device: str = "cpu"  # "cuda" when the trace has device work
    cost: ProfileCost = field(default_factory=ProfileCost)


@dataclass(eq=False)
class Op:
    """One op or annotation of the trace, placed in its thread's nesting."""

    event: dict
    name: str
    thread: tuple
    ts: float
    end: float
    parent: Op | None
    level: int  # enclosing ops on its thread (0: top level)
    children_us: float = 0.0  # time covered by its direct children
    region: str = ""
    self_device_us: float = 0.0
    device_us: float = 0.0

    @property
    def dur(self) -> float:
        return self.end - self.ts

    @property
    def self_us(self) -> float:
        return max(0.0, self.dur - self.children_us)

    @property
    def is_step(self) -> bool:
        return _is_step(self.event)

    def chain(self) -> list[Op]:
        """This op and its enclosing ops, innermost first."""
        out: list[Op] = []
        op: Op | None = self
        while op is not None:
            out.append(op)
            op = op.parent
        return out


def _num(value: object, default: float = 0.0) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else default


def _thread(event: dict) -> tuple:
    return (str(event.get("pid", "")), str(event.get("tid", "")))


def trace_events(trace: dict) -> list[dict]:
    events = trace.get("traceEvents") if isinstance(trace, dict) else None
    return [e for e in events if isinstance(e, dict)] if isinstance(events, list) else []


def is_op(event: dict) -> bool:
    return event.get("ph") == "X" and event.get("cat") in OP_CATEGORIES and isinstance(event.get("name"), str)


def _is_step(event: dict) -> bool:
    """A "ProfilerStep#N" annotation: the name the profiler's schedule, Perfetto and HTA give a step."""
    return is_op(event) and event["cat"] == "user_annotation" and event["name"].startswith(STEP_PREFIX)


def nest(spans: Iterable[dict], points: Iterable[dict] = ()) -> tuple[list[Op], list[Op | None]]:
    """Place `spans` ("X" events) in their threads' nesting by ts/dur, and find the innermost span enclosing each
    of `points` (instant events, runtime calls) on its thread.

    Per thread, events are walked in time order with a stack; at equal start the longer one is the parent and a
    point starting with a span is inside it. Returns the ops (parents before children) and, for each point in
    order, its innermost enclosing op or None.
    """
    by_thread: dict[tuple, list[tuple]] = defaultdict(list)
    for seq, event in enumerate(spans):
        ts, dur = _num(event.get("ts")), max(0.0, _num(event.get("dur")))
        by_thread[_thread(event)].append((ts, 0, -dur, seq, event))
    point_list = list(points)
    for seq, event in enumerate(point_list):
        by_thread[_thread(event)].append((_num(event.get("ts")), 1, 0.0, seq, event))
    ops: list[Op] = []
    owners: list[Op | None] = [None] * len(point_list)
    for thread, items in by_thread.items():
        items.sort(key=lambda item: item[:4])
        stack: list[Op] = []
        for ts, kind, neg_dur, seq, event in items:
            while stack and ts >= stack[-1].end - EPS_US:
                stack.pop()
            parent = stack[-1] if stack else None
            if kind == 1:
                owners[seq] = parent
                continue
            op = Op(event, str(event.get("name", "")), thread, ts, ts - neg_dur, parent, len(stack))
            if parent is not None:
                parent.children_us += max(0.0, min(op.end, parent.end) - ts)
            ops.append(op)
            stack.append(op)
    return ops, owners


def region_of_name(name: str) -> str | None:
    """The region an op of this name opens, or None when it opens none."""
    match = _COMPILED_REGION.match(name)
    if match:
        return f"compiled {match.group(1)}"
    if name == "CompiledFunctionBackward":
        return "compiled backward"
    if name.startswith("Optimizer.step#"):
        return "optimizer"
    return None


def _is_region_span(name: str) -> bool:
    """Spans always kept in the timeline: the compiled regions and what runs their code."""
    return (region_of_name(name) is not None or name == "CompiledFunction"
            or name.startswith("## Call CompiledFxGraph"))


def shapes_of(event: dict) -> str:
    """The op's "Input Dims" as "[32, 784], [128, 784]" ("" when shapes were not recorded)."""
    args = event.get("args")
    dims = args.get("Input Dims") if isinstance(args, dict) else None
    if not isinstance(dims, list):
        return ""
    return ", ".join(json.dumps(d) if isinstance(d, list) else "?" for d in dims)


def _assign_regions(ops: list[Op]) -> None:
    for op in ops:  # parents come before their children
        own = region_of_name(op.name)
        op.region = own if own is not None else (op.parent.region if op.parent is not None else "")


def steps_of(ops: list[Op]) -> list[Op]:
    return sorted((op for op in ops if op.is_step), key=lambda op: op.ts)


def window_origin(trace: dict) -> float:
    """The absolute ts every relative time starts from: the first step's start, else the trace's first event."""
    events = trace_events(trace)
    steps = [_num(e.get("ts")) for e in events if _is_step(e)]
    if steps:
        return min(steps)
    times = [_num(e["ts"]) for e in events if e.get("ph") != "M" and isinstance(e.get("ts"), (int, float))]
    return min(times) if times else 0.0


class StepWindows:
    """Is a time inside a step? (Steps are windows in time: another thread's ops during a step belong to it.)"""

    def __init__(self, steps: list[Op]):
        self.starts = [s.ts for s in steps]  # steps_of(): in time order
        self.ends = [s.end for s in steps]

    def contains(self, ts: float) -> bool:
        i = bisect_right(self.starts, ts) - 1
        return i >= 0 and ts < self.ends[i]


def step_depth(op: Op, windows: StepWindows) -> int | None:
    """An op's depth below its step (1: directly under it; a step itself is 0); None outside every step.

    On another thread than the step's, ops during a step count as if the step enclosed them."""
    depth = 0
    for outer in op.chain():
        if outer.is_step:
            return depth
        depth += 1
    return depth if windows.contains(op.ts) else None


def _step_number(name: str) -> int | None:
    try:
        return int(name[len(STEP_PREFIX):])
    except ValueError:
        return None


def _launches(events: list[dict]) -> list[dict]:
    """The host's runtime calls that launched device work (they carry the device events' correlation ids)."""
    return [e for e in events if e.get("ph") == "X" and e.get("cat") in LAUNCH_CATEGORIES
            and isinstance(e.get("args"), dict) and "correlation" in e["args"]]


def _attribute_device_time(device: list[dict], launches: list[dict], launchers: list[Op | None]) -> None:
    """Charge each kernel/memcpy/memset to the op that encloses its launch (the runtime call with the same
    correlation id): self device time to that op, device time to it and every op enclosing it."""
    launcher = {launch["args"]["correlation"]: owner for launch, owner in zip(launches, launchers)}
    for event in device:
        args = event.get("args") if isinstance(event.get("args"), dict) else {}
        owner = launcher.get(args.get("correlation"))
        if owner is None:
            continue
        dur = max(0.0, _num(event.get("dur")))
        owner.self_device_us += dur
        for op in owner.chain():
            op.device_us += dur


def _op_rows(ops: list[Op]) -> list[dict]:
    rows: dict[tuple, dict] = {}
    for op in ops:
        if op.is_step:
            continue
        key = (op.name, op.region, shapes_of(op.event))
        row = rows.get(key)
        if row is None:
            row = rows[key] = {"name": key[0], "region": key[1], "calls": 0, "self_cpu_us": 0.0, "cpu_us": 0.0,
                               "self_device_us": 0.0, "device_us": 0.0, "shapes": key[2]}
        row["calls"] += 1
        row["self_cpu_us"] += op.self_us
        row["cpu_us"] += op.dur
        row["self_device_us"] += op.self_device_us
        row["device_us"] += op.device_us
    out = sorted(rows.values(), key=lambda r: (-(r["self_device_us"] + r["self_cpu_us"]), r["name"]))
    for row in out:
        for key in ("self_cpu_us", "cpu_us", "self_device_us", "device_us"):
            row[key] = round(row[key], 3)
    return out


def _region_rows(op_rows: list[dict]) -> list[dict]:
    regions: dict[str, dict] = {}
    for row in op_rows:
        total = regions.setdefault(row["region"], {"region": row["region"], "self_cpu_us": 0.0,
                                                   "self_device_us": 0.0, "calls": 0})
        total["self_cpu_us"] += row["self_cpu_us"]
        total["self_device_us"] += row["self_device_us"]
        total["calls"] += row["calls"]
    out = sorted(regions.values(), key=lambda r: (-(r["self_cpu_us"] + r["self_device_us"]), r["region"]))
    for row in out:
        row["self_cpu_us"], row["self_device_us"] = round(row["self_cpu_us"], 3), round(row["self_device_us"], 3)
    return out


def _span(lane: str, start: float, dur: float, name: str, kind: str, depth: int) -> dict:
    return {"lane": lane, "start_us": round(start, 3), "dur_us": round(dur, 3), "name": name, "kind": kind,
            "depth": depth}


def _device_lane(event: dict) -> str:
    args = event.get("args") if isinstance(event.get("args"), dict) else {}
    return f"GPU {args.get('device', event.get('pid', '?'))} stream {args.get('stream', event.get('tid', '?'))}"


def _spans(ops: list[Op], steps: list[Op], device: list[dict], origin: float, max_spans: int) -> tuple[list, int]:
    """The timeline's spans (steps, regions, shallow ops, kernels), at most `max_spans` unless steps and regions
    alone are more; returns them and how many short ops/kernels were left out."""
    if steps:
        main = steps[0].thread
    else:
        counts: dict[tuple, int] = defaultdict(int)
        for op in ops:
            counts[op.thread] += 1
        main = max(counts, key=counts.get) if counts else None
    windows = StepWindows(steps)
    fixed: list[dict] = []
    optional: list[dict] = []
    for op in ops:
        lane = "CPU" if op.thread == main else f"CPU thread {op.thread[1]}"
        under_step = step_depth(op, windows)
        depth = under_step if under_step is not None else op.level
        if op.is_step:
            fixed.append(_span(lane, op.ts - origin, op.dur, op.name, "step", 0))
        elif _is_region_span(op.name):
            fixed.append(_span(lane, op.ts - origin, op.dur, op.name, "region", depth))
        elif (under_step is not None or not steps) and depth <= KEPT_DEPTH:
            optional.append(_span(lane, op.ts - origin, op.dur, op.name, "op", depth))
    for event in device:
        optional.append(_span(_device_lane(event), _num(event.get("ts")) - origin, max(0.0, _num(event.get("dur"))),
                              str(event.get("name", "")), "kernel", 0))
    room = max(0, max_spans - len(fixed))
    left_out = max(0, len(optional) - room)
    if left_out:
        optional = sorted(optional, key=lambda s: -s["dur_us"])[:room]
    spans = sorted(fixed + optional, key=lambda s: (s["start_us"], s["depth"]))
    return spans, left_out


def summarise(trace: dict, *, max_spans: int = MAX_SPANS) -> ProfileTables:
    """The trace as records: the op table, the regions' totals, the steps, the timeline (see the module doc).

    Times are microseconds; start times are relative to `origin_us` (window_origin)."""
    events = trace_events(trace)
    launches = _launches(events)
    ops, launchers = nest((e for e in events if is_op(e)), launches)
    _assign_regions(ops)
    device = [e for e in events if e.get("ph") == "X" and e.get("cat") in DEVICE_CATEGORIES]
    _attribute_device_time(device, launches, launchers)
    steps = steps_of(ops)
    origin = window_origin(trace)
    op_rows = _op_rows(ops)
    spans, left_out = _spans(ops, steps, device, origin, max_spans)
    if steps:
        window = max(s.end for s in steps) - steps[0].ts
    else:
        timed = [(op.ts, op.end) for op in ops] + [(_num(e.get("ts")), _num(e.get("ts")) + _num(e.get("dur")))
                                                   for e in device]
        window = max(end for _, end in timed) - min(ts for ts, _ in timed) if timed else 0.0
    return ProfileTables(
        ops=tuple(OpRow(**row) for row in op_rows),
        regions=tuple(RegionRow(**row) for row in _region_rows(op_rows)),
        steps=tuple(StepTime(step=n, start_us=round(s.ts - origin, 3), dur_us=round(s.dur, 3))
                    for s in steps if (n := _step_number(s.name)) is not None),
        spans=tuple(Span(**span) for span in spans),
        spans_left_out=left_out,
        origin_us=origin,
        window_us=round(window, 3),
        device="cuda" if device else "cpu",
    )


# --- the trace file ---------------------------------------------------------------------------------------------

WORDS_ROOM = 512  # bytes kept free under the cap for the "workbench" key that says what was left out


def _trim_stages(events: list[dict]) -> list[tuple[str, set[int]]]:
    """What a trace over the cap loses, in order: (words, indices of the events it drops)."""
    python = {i for i, e in enumerate(events) if e.get("cat") == "python_function"}
    memory = {i for i, e in enumerate(events) if e.get("name") == "[memory]"}
    flows = {i for i, e in enumerate(events) if e.get("ph") in ("s", "f", "t")}
    op_index = [i for i, e in enumerate(events) if is_op(e)]
    ops, _ = nest(events[i] for i in op_index)
    windows = StepWindows(steps_of(ops))
    deep = {i for i, op in zip(op_index, ops) if op.event.get("cat") == "cpu_op"
            and (depth := step_depth(op, windows)) is not None and depth > TRIM_DEPTH}
    return [("python_function events", python), ("[memory] events", memory), ("flow events", flows),
            (f"cpu_ops nested deeper than {TRIM_DEPTH} under a step", deep)]


def _step_buckets(events: list[dict], starts: list[float]) -> list[int]:
    """For each event, the index of the step it belongs to (-1: before the first step, or metadata): host events
    by their start, device events by the start of the runtime call that launched them (by their own without one)."""
    bucket = [-1] * len(events)
    launched: dict[object, int] = {}
    for i, e in enumerate(events):
        if e.get("ph") != "M" and e.get("cat") not in DEVICE_CATEGORIES:
            bucket[i] = bisect_right(starts, _num(e.get("ts"))) - 1
            args = e.get("args")
            if e.get("cat") in LAUNCH_CATEGORIES and isinstance(args, dict) and args.get("correlation"):
                launched[args["correlation"]] = bucket[i]
    for i, e in enumerate(events):
        if e.get("cat") in DEVICE_CATEGORIES:
            args = e.get("args") if isinstance(e.get("args"), dict) else {}
            own = bisect_right(starts, _num(e.get("ts"))) - 1
            bucket[i] = launched.get(args.get("correlation"), own)
    return bucket


def _drop_steps(events: list[dict], sizes: list[int], dropped: set[int], total: int, max_bytes: int
                ) -> tuple[int, list[str]]:
    """Drop whole steps from the end (never the first) until the trace fits; adds to `dropped`, returns the new
    total and the words."""
    op_index = [i for i, e in enumerate(events) if is_op(e) and i not in dropped]
    starts = [s.ts for s in steps_of(nest(events[i] for i in op_index)[0])]
    if len(starts) < 2:
        return total, []
    bucket = _step_buckets(events, starts)
    step_bytes = [0] * len(starts)
    for i, b in enumerate(bucket):
        if b >= 0 and i not in dropped:
            step_bytes[b] += sizes[i] + 2
    keep = len(starts)
    while keep > 1 and total > max_bytes:
        keep -= 1
        total -= step_bytes[keep]
    dropped.update(i for i, b in enumerate(bucket) if b >= keep)
    return total, [f"the last {len(starts) - keep} of {len(starts)} steps"]


def write_trace(trace: dict, path: Path, max_bytes: int = TRACE_CAP_BYTES) -> tuple[int, str]:
    """Write the trace gzipped and atomically to `path`, its uncompressed JSON under `max_bytes` (see the module
    doc); returns (bytes written, what was left out in words or ""). The caller's dict is not changed.

    Each event is serialised once to know its size; each stage then subtracts the sizes of what it drops."""
    events = trace_events(trace)
    sizes = [len(json.dumps(e)) for e in events]
    rest = {k: v for k, v in trace.items() if k != "traceEvents"} if isinstance(trace, dict) else {}
    total = len(json.dumps({**rest, "traceEvents": []})) + sum(sizes) + 2 * max(0, len(events) - 1)
    budget = max_bytes - WORDS_ROOM
    dropped: set[int] = set()
    said: list[str] = []
    if total > max_bytes:
        for words, indices in _trim_stages(events):
            fresh = indices - dropped
            if fresh:
                total -= sum(sizes[i] + 2 for i in fresh)
                dropped |= fresh
                said.append(f"{len(fresh):,} {words}")
            if total <= budget:
                break
        else:
            total, steps_said = _drop_steps(events, sizes, dropped, total, budget)
            said.extend(steps_said)
    out = dict(rest)
    out["traceEvents"] = [e for i, e in enumerate(events) if i not in dropped]
    words = f"left out {', '.join(said)} to keep the trace under {_size(max_bytes)}" if said else ""
    if words:
        out["workbench"] = {"trimmed": words}
    with atomic_path(path) as tmp:
        with gzip.open(tmp, "wt", encoding="ascii", compresslevel=6) as fh:
            json.dump(out, fh)
        written = tmp.stat().st_size
    return written, words


def _size(n: int) -> str:
    return f"{n / 2**20:.0f} MiB" if n >= 2**20 else f"{n:,} bytes"
