"""Memory over time by category (parameters, gradients, optimizer state, activations, other), from either record a
run can have: the profiler's "[memory]" events (any device) or the CUDA caching allocator's history snapshot.

Why: "out of memory" is the most common way a training run fails, and a total alone does not say what to shrink.
Split by category it does: activations scale with the batch, optimizer state with the optimizer's choice, gradients
and parameters with the model. Neither record carries the category, so it is inferred: from the ops enclosing each
allocation (profiler) or from its Python stack (allocator), and from the addresses the engine knows (weights and
optimizer state alive before the window). Each result's "note" says how, in one line. Torch-free: the report and
the window read it, and the tests feed it hand-built records.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Iterable

from .profile_trace import Op, StepWindows, is_op, nest, shapes_of, steps_of, trace_events, window_origin
from .codec import Record

CATEGORIES = ("parameters", "gradients", "optimizer state", "activations", "other")
MAX_POINTS = 2000
LARGEST = 20
_DEVICE_TYPES = {0: "cpu", 1: "cuda"}  # c10::DeviceType as the profiler writes it
PROFILER_NOTE = ("categories from the ops enclosing each allocation: inside Optimizer.step = optimizer state, inside "
                 "the autograd engine = gradients, elsewhere in a step = activations, outside the steps = other; "
                 "parameters and optimizer state from before the window are constant layers")
SNAPSHOT_NOTE = ("categories from the addresses of the weights and optimizer state, else from each allocation's "
                 "stack: torch/optim = optimizer state, backward = gradients, the model's code or torch/nn/modules = "
                 "activations, else other; blocks from before the trace with no known address are other")


@dataclass(frozen=True)
class Allocation(Record):
    """One allocation: its size, category, where it was made (an op and its input shapes, or a stack frame), the
    enclosing ops or frames outermost first, and when it lived (in the timeline's unit; end None: still alive)."""

    bytes: int
    category: str
    where: str
    stack: tuple[str, ...]
    start_us: float
    end_us: float | None


@dataclass(frozen=True)
class MemoryTimeline(Record):
    """Bytes alive per category over the profiled window (at most MAX_POINTS samples, the peak kept), the peak, the
    largest allocations, where it came from ("profiler", "cuda allocator") and how it was categorised (`note`)."""

    source: str
    device: str
    time_unit: str = "us"  # "us", or "event" where the allocator's history has no times
    times_us: tuple[float, ...] = ()
    categories: dict[str, tuple[float, ...]] = field(default_factory=dict)  # CATEGORIES → bytes at each time
    peak_bytes: int = 0
    peak_us: float = 0.0
    largest: tuple[Allocation, ...] = ()
    note: str = ""


class _Timeline:
    """Bytes alive per category, sampled after each event; and every allocation, for the largest."""

    def __init__(self, base: dict[str, int] | None = None):
        self.alive = dict.fromkeys(CATEGORIES, 0)
        for category, n in (base or {}).items():
            self.alive[category if category in self.alive else "other"] += n
        self.times: list[float] = []
        self.samples: list[tuple[int, ...]] = []
        self.allocations: list[dict] = []

    def allocate(self, category: str, n: int, t: float, where: str, stack: list[str]) -> dict:
        self.alive[category] += n
        record = {"bytes": n, "category": category, "where": where, "stack": stack, "start_us": round(t, 3),
                  "end_us": None}
        self.allocations.append(record)
        return record

    def free(self, category: str, n: int) -> None:
        self.alive[category] = max(0, self.alive[category] - n)

    def sample(self, t: float) -> None:
        self.times.append(t)
        self.samples.append(tuple(self.alive[c] for c in CATEGORIES))

    def result(self, source: str, device: str, note: str, time_unit: str = "us") -> MemoryTimeline:
        totals = [sum(s) for s in self.samples]
        peak = max(range(len(totals)), key=totals.__getitem__) if totals else None
        keep = downsample(totals)
        largest = heapq.nlargest(LARGEST, self.allocations, key=lambda a: a["bytes"])
        return MemoryTimeline(
            source=source, device=device, time_unit=time_unit, times_us=tuple(round(self.times[i], 3) for i in keep),
            categories={c: tuple(self.samples[i][k] for i in keep) for k, c in enumerate(CATEGORIES)},
            peak_bytes=totals[peak] if peak is not None else 0,
            peak_us=round(self.times[peak], 3) if peak is not None else 0.0,
            largest=tuple(Allocation(a["bytes"], a["category"], a["where"], tuple(a["stack"]), a["start_us"],
                                     a["end_us"]) for a in largest),
            note=note)


def downsample(totals: list[int], max_points: int = MAX_POINTS) -> list[int]:
    """Indices of at most `max_points` samples: in each of `max_points` equal runs, the one with the highest total
    (so the peak always stays)."""
    n = len(totals)
    if n <= max_points:
        return list(range(n))
    return [max(range(b * n // max_points, (b + 1) * n // max_points), key=totals.__getitem__)
            for b in range(max_points)]


def _empty(source: str, device: str, note: str, time_unit: str = "us") -> MemoryTimeline:
    return _Timeline().result(source, device, note, time_unit)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


# --- the profiler's [memory] events -------------------------------------------------------------------------------


def _device_name(device_type: int, device_id: int) -> str:
    name = _DEVICE_TYPES.get(device_type, f"device type {device_type}")
    return f"{name}:{device_id}" if device_id >= 0 else name


def _memory_events(trace: dict, device_type: int, device_id: int) -> list[dict]:
    events = [e for e in trace_events(trace) if e.get("name") == "[memory]" and isinstance(e.get("args"), dict)
              and e["args"].get("Device Type") == device_type and e["args"].get("Device Id") == device_id
              and _is_int(e["args"].get("Bytes")) and isinstance(e.get("ts"), (int, float))]
    return sorted(events, key=lambda e: e["ts"])


def _profiler_category(owner: Op | None, in_step: bool) -> str:
    """The innermost optimizer step or autograd-engine work enclosing an allocation decides; else the step."""
    for op in owner.chain() if owner is not None else ():
        if op.name.startswith("Optimizer.step#"):
            return "optimizer state"
        if op.name.startswith("autograd::engine::evaluate_function"):
            return "gradients"
    return "activations" if in_step else "other"


def _op_where(owner: Op | None) -> tuple[str, list[str]]:
    if owner is None:
        return "outside any op", []
    shapes = shapes_of(owner.event)
    return (f"{owner.name} ({shapes})" if shapes else owner.name), [op.name for op in reversed(owner.chain())]


def from_profiler(trace: dict, baseline: dict[str, int], device_type: int = 0, device_id: int = -1) -> MemoryTimeline:
    """Memory of one device over the profiled window from the profiler's "[memory]" events (see the module doc).

    `baseline`: bytes alive before the window per category (the weights, the optimizer state): constant layers.
    A free of memory allocated before the window is taken from "other", never below zero."""
    device = _device_name(device_type, device_id)
    memory = _memory_events(trace, device_type, device_id)
    if not memory:
        return _empty("profiler", device, "no [memory] events for this device (profile_memory was off?)")
    ops, owners = nest((e for e in trace_events(trace) if is_op(e)), memory)
    windows = StepWindows(steps_of(ops))
    origin = window_origin(trace)
    timeline = _Timeline({k: v for k, v in baseline.items() if _is_int(v)})
    alive: dict[object, dict] = {}  # address -> its allocation's record
    for event, owner in zip(memory, owners):
        args, t = event["args"], event["ts"] - origin
        n, addr = args["Bytes"], args.get("Addr")
        if n > 0:
            where, stack = _op_where(owner)
            alive[addr] = timeline.allocate(_profiler_category(owner, windows.contains(event["ts"])), n, t, where,
                                            stack)
        elif n < 0:
            record = alive.pop(addr, None)
            timeline.free(record["category"] if record else "other", -n)
            if record:
                record["end_us"] = round(t, 3)
        timeline.sample(t)
    return timeline.result("profiler", device, PROFILER_NOTE)


# --- the CUDA allocator's snapshot --------------------------------------------------------------------------------


def _in_torch(filename: str, under: str = "") -> bool:
    path = "/" + filename.replace("\\", "/")
    return f"/torch/{under}" in path


def _is_python(filename: str) -> bool:
    return filename.endswith(".py") or filename.startswith("<")


def _is_backward(frame: dict) -> bool:
    name = frame["name"]
    return name in ("backward", "_engine_run_backward") or "autograd::Engine::evaluate_function" in name


def _frames(value: object) -> list[dict]:
    """The allocation's frames (innermost first, as the allocator records them), each with the three keys."""
    if not isinstance(value, list):
        return []
    return [{"filename": str(f.get("filename", "?")), "line": f.get("line", 0), "name": str(f.get("name", "?"))}
            for f in value if isinstance(f, dict)]


def _frame_category(frames: list[dict]) -> str:
    """The innermost optimizer or backward frame decides; else any frame of the model's code (outside torch, or in
    torch/nn/modules) makes it an activation."""
    for frame in frames:
        if _in_torch(frame["filename"], "optim/"):
            return "optimizer state"
        if _is_backward(frame):
            return "gradients"
    for frame in frames:
        file = frame["filename"]
        if (_is_python(file) and not _in_torch(file)) or _in_torch(file, "nn/modules/"):
            return "activations"
    return "other"


def _frame_text(frame: dict) -> str:
    return f"{frame['filename']}:{frame['line']} {frame['name']}"


def _frames_where(frames: list[dict]) -> tuple[str, list[str]]:
    """The first frame outside torch (else the innermost) and the stack outermost first."""
    if not frames:
        return "no stack recorded", []
    outside = next((f for f in frames if _is_python(f["filename"]) and not _in_torch(f["filename"])), frames[0])
    return _frame_text(outside), [_frame_text(f) for f in reversed(frames)]


def _entries(snapshot: dict, device: int) -> tuple[list[dict], int] | str:
    """The device's trace entries usable for the replay, and how many were skipped; or what is wrong."""
    traces = snapshot.get("device_traces")
    if not isinstance(traces, list):
        return "no device_traces list"
    if not 0 <= device < len(traces) or not isinstance(traces[device], list):
        return f"no trace for device {device}"
    usable = [e for e in traces[device] if isinstance(e, dict) and isinstance(e.get("action"), str)]
    usable = [e for e in usable if e["action"] not in ("alloc", "free_requested", "free_completed")
              or (_is_int(e.get("addr")) and _is_int(e.get("size")) and e["size"] >= 0)]
    return usable, len(traces[device]) - len(usable)


def _end_blocks(snapshot: dict, device: int) -> Iterable[tuple[int, int, list[dict]]]:
    """(address, size, frames) of the blocks active when the snapshot was taken."""
    segments = snapshot.get("segments")
    for segment in segments if isinstance(segments, list) else ():
        if not isinstance(segment, dict) or segment.get("device", device) != device:
            continue
        addr, blocks = segment.get("address"), segment.get("blocks")
        for block in blocks if isinstance(blocks, list) else ():
            if not isinstance(block, dict) or not _is_int(block.get("size")):
                break  # the addresses of the blocks after this one are unknown
            block_addr = block.get("address", addr)
            if _is_int(block_addr) and str(block.get("state", "")).startswith("active"):
                yield block_addr, block["size"], _frames(block.get("frames"))
            addr = block_addr + block["size"] if _is_int(block_addr) else None


def _times(entries: list[dict]) -> tuple[list[float], str]:
    """Each entry's time: microseconds since the first entry when every entry has time_us, else its index."""
    if entries and all(isinstance(e.get("time_us"), (int, float)) for e in entries):
        first = entries[0]["time_us"]
        return [e["time_us"] - first for e in entries], "us"
    return [float(i) for i in range(len(entries))], "event"


def _before_trace(entries: list[dict], free_action: str) -> tuple[dict[int, dict], set[int]]:
    """What the replay must start with: the frees of addresses not allocated in the trace before them (address ->
    entry), and the addresses allocated in the trace and still alive at its end."""
    live: set[int] = set()
    freed_unseen: dict[int, dict] = {}
    for e in entries:
        if e["action"] == "alloc":
            live.add(e["addr"])
        elif e["action"] == free_action:
            if e["addr"] in live:
                live.discard(e["addr"])
            else:
                freed_unseen.setdefault(e["addr"], e)
    return freed_unseen, live


def from_snapshot(snapshot: dict, known: dict[int, str] | None = None, device: int = 0) -> MemoryTimeline:
    """Memory of one CUDA device over the allocator's recorded history (`torch.cuda.memory._snapshot()`), replayed
    the way PyTorch's memory viewer does (see the module doc). `known`: address -> category of the allocations the
    engine can name (the weights, the optimizer state). A damaged snapshot gives empty series and says why."""
    name = f"cuda:{device}"
    if not isinstance(snapshot, dict):
        return _empty("cuda allocator", name, f"damaged snapshot: a {type(snapshot).__name__}, not a dict")
    found = _entries(snapshot, device)
    if isinstance(found, str):
        return _empty("cuda allocator", name, f"damaged snapshot: {found}")
    entries, skipped = found
    if not entries:
        return _empty("cuda allocator", name, "no allocator history in the snapshot "
                      "(torch.cuda.memory._record_memory_history was off?)")
    known = {a: c if c in CATEGORIES else "other" for a, c in (known or {}).items()}
    times, unit = _times(entries)
    free_action = "free_completed" if any(e["action"] == "free_completed" for e in entries) else "free_requested"
    freed_unseen, live_at_end = _before_trace(entries, free_action)

    timeline = _Timeline()
    alive: dict[int, dict] = {}
    start = times[0]
    for addr, size, frames in _end_blocks(snapshot, device):
        if addr not in live_at_end and addr not in freed_unseen:
            where, stack = _frames_where(frames)
            alive[addr] = timeline.allocate(known.get(addr, "other"), size, start, where, stack)
    for addr, e in freed_unseen.items():
        alive[addr] = timeline.allocate(known.get(addr, "other"), e["size"], start, "allocated before the trace", [])
    timeline.sample(start)
    for e, t in zip(entries, times):
        if e["action"] == "alloc":
            frames = _frames(e.get("frames"))
            category = known.get(e["addr"]) or _frame_category(frames)
            alive[e["addr"]] = timeline.allocate(category, e["size"], t, *_frames_where(frames))
        elif e["action"] == free_action and e["addr"] in alive:
            record = alive.pop(e["addr"])
            timeline.free(record["category"], record["bytes"])
            record["end_us"] = round(t, 3)
        else:
            continue
        timeline.sample(t)
    note = SNAPSHOT_NOTE + (f"; {skipped} malformed trace entries skipped" if skipped else "")
    return timeline.result("cuda allocator", name, note, unit)
