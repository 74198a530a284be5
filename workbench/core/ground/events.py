"""The events a run emits: the only thing the GUI, the CLI, the run database and child processes consume.

Every event is a Record (ground.records): a frozen dataclass whose every field is a declared type, so it pickles,
serialises to one JSON line and is rebuilt from that line by the one codec every typed record uses, checked field
by field. `to_dict` adds a "type" tag; `from_dict` reads it. A RunFinished's results keep the flat layout every
version wrote ("metrics", ground.results).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Callable

from .alerts import Alert
from .amp_census import AmpCensus
from .compile_kinds import COMPILE_KINDS
from .compile_stages import GraphCompileTime
from .config import TrainConfig
from .layer_stats import LayerStats, ModelSummary
from .memory_trace import MemoryTimeline
from .profile_trace import ProfileTables
from .codec import Record
from .results import RunResults


@dataclass(frozen=True)
class Versions(Record):
    """What a run ran on: Workbench, PyTorch, Python, the CUDA build (and whether a device was there), the GPU."""

    workbench: str
    torch: str
    python: str
    cuda: str
    gpu: str = ""  # the first CUDA device's name; "" without one

    def to_dict(self) -> dict[str, Any]:
        """As every version wrote them: no "gpu" without one."""
        data = {"workbench": self.workbench, "torch": self.torch, "python": self.python, "cuda": self.cuda}
        return {**data, "gpu": self.gpu} if self.gpu else data


@dataclass(frozen=True)
class RunStarted(Record):
    config: TrainConfig
    device: str
    device_name: str
    versions: Versions
    train_size: int
    val_size: int
    steps_per_epoch: int
    total_steps: int
    world_size: int = 1  # processes training together (data parallel); batch sizes are global
    resumed_step: int = 0  # a continued run (config resume): the steps its checkpoint had; its first is this + 1
    # Unix time (time.time()) the run started, the moment EpochEnd.seconds counts from: the origin of a "time since
    # start" axis. None in runs recorded before events carried wall times.
    wall: float | None = None


@dataclass(frozen=True)
class CompileStarted(Record):
    backend: str
    mode: str


@dataclass(frozen=True)
class CompileFinished(Record):
    backend: str
    mode: str
    seconds: float  # wall time of this phase (see `phase`)
    # What was compiled (or recorded): "train" = the first step (forward + backward graphs, with the optimizer
    # step), "eval" = the first validation pass (the eval graph), "cudagraph recording" = the steps that record
    # CUDA graphs. A run emits one per phase, "train" first; logs from before phases were counted say "train".
    phase: str = "train"


MEMORY_READINGS = ("allocated", "reserved", "peak", "rss")  # a MemorySample's readings, in the order they are drawn


@dataclass(frozen=True)
class MemorySample(Record):
    """A step's memory, MiB: the CUDA allocator's allocated, reserved and peak on a GPU; the process's resident set
    (rss) on the CPU. A reading the device does not have is None."""

    allocated: float | None = None
    reserved: float | None = None
    peak: float | None = None
    rss: float | None = None

    def readings(self) -> dict[str, float]:
        """The readings it has, by name (MEMORY_READINGS' order): one curve each."""
        return {name: value for name in MEMORY_READINGS if (value := getattr(self, name)) is not None}

    def to_dict(self) -> dict[str, Any]:
        """As every version wrote it: only the readings it has."""
        return self.readings()

    @property
    def peak_mib(self) -> float | None:
        """What "peak memory" means of this reading: the CUDA allocator's peak, or the RSS on the CPU."""
        return self.peak if self.peak is not None else self.rss

    @property
    def held_mib(self) -> float | None:
        """What the process holds of the device's memory: the CUDA allocator's reserved, or the RSS on the CPU."""
        return self.reserved if self.reserved is not None else self.rss


@dataclass(frozen=True)
class Step(Record):
    step: int  # 1-based optimizer step
    epoch: int  # 1-based
    loss: float
    samples_per_s: float  # of the block of steps this one was read back with
    step_seconds: float  # this step's wall time on the CPU; on CUDA (asynchronous) the block's average
    memory: MemorySample  # the CUDA allocator's figures on a GPU, the process's resident memory on the CPU
    compiling: bool = False  # this step paid for compilation; keep it off the throughput axis
    # A CUDA warm-up step (kernel loading, cuBLAS setup, CUDA-graph recording): like a compiling step, kept off
    # the steady throughput figures. Never set on the CPU, whose first eager step is not special.
    warmup: bool = False
    # The share of the step's global batch (every process's part) predicted right, 0..1: counted on the device
    # and read back with the losses. None in runs recorded before steps carried it.
    accuracy: float | None = None
    # fp16 only: the GradScaler's scale after this step's update (a skipped step halves it); None without a scaler.
    loss_scale: float | None = None
    profiled: bool = False  # inside the profiler's window (domain.profiler): slower, kept off the steady figures
    # Unix time (time.time()) this step ended, as the engine read it back: on the CPU the step's own end, on CUDA
    # the block's read-back spread evenly over its steps (as step_seconds is). None in runs recorded before steps
    # carried it: a time axis then falls back to the steps' step_seconds.
    wall: float | None = None

    @property
    def steady(self) -> bool:
        """A step of the steady state: what throughput and step-time figures count (not compiling, warming up or
        profiled, each slower for its own reason)."""
        return not (self.compiling or self.warmup or self.profiled)




@dataclass(frozen=True)
class EpochEnd(Record):
    epoch: int
    train_loss: float
    val_loss: float
    val_accuracy: float  # 0..1
    seconds: float  # since the run started
    val_seconds: float = 0.0  # how long validation took (eval throughput = val_samples / val_seconds)
    val_samples: int = 0
    wall: float | None = None  # Unix time (time.time()) the epoch ended (its validation too); None in older runs


@dataclass(frozen=True)
class Frame(Record):
    file: str
    line: int
    function: str
    source: str


_PRINTED_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<function>\S+)\n(?P<source>[^\n]*)')


def printed_frames(text: str) -> list[Frame]:
    """The frames of a printed stack trace (a traceback, an FX node's or a kernel's stack_trace), outermost first."""
    return [Frame(file=m["file"], line=int(m["line"]), function=m["function"], source=m["source"].strip())
            for m in _PRINTED_FRAME.finditer(text)]


@dataclass(frozen=True)
class GraphBreak(Record):
    reason: str
    frames: tuple[Frame, ...] = ()  # user frames, innermost last

    @property
    def where(self) -> str:
        if not self.frames:
            return "(no user frame)"
        f = self.frames[-1]
        return f"{f.file}:{f.line}"


@dataclass(frozen=True)
class CompileReport(Record):
    compiled: bool
    backend: str
    mode: str
    graph_count: int = 0
    graph_break_count: int = 0
    breaks: tuple[GraphBreak, ...] = ()
    op_count: int = 0
    compile_seconds: float = 0.0
    recompiles: tuple[str, ...] = ()  # guard failures that triggered a recompile, as Dynamo words them
    warnings: tuple[str, ...] = ()  # fallbacks, cudagraph skips: never hidden
    source: str = "run"  # "run" (what happened while training) or "explain" (a dedicated inspection)
    # A warm start (instruments.warm_start): the run whose compile cache was loaded before the first compile (None: a
    # cold start), and the cold launch that cache descends from, its run and its compile seconds (None: not known).
    warm_from: int | None = None
    cold_run: int | None = None
    cold_compile_seconds: float | None = None
    graph_times: tuple[GraphCompileTime, ...] = ()  # each compiled graph's compile time by stage (a run's report)


# What a CompileEvent can be (each is one kind of marker on the compile timeline), in words; the kinds and how they
# are drawn are declared once, in ground.compile_kinds.
COMPILE_EVENT_KINDS = {kind: entry.meaning for kind, entry in COMPILE_KINDS.items()}


@dataclass(frozen=True)
class CompileEvent(Record):
    """One thing the compiler did, placed on the step axis: a marker of the compile timeline."""

    step: int  # the optimizer step during which it happened (validation: the last step before it)
    kind: str  # a key of COMPILE_EVENT_KINDS
    title: str  # one line in plain words
    detail: str = ""  # the rest: the guard that failed, Dynamo's explanation and hints, the skip's reason
    phase: str = "train"  # "train" | "eval": what the run was doing
    frames: tuple[Frame, ...] = ()  # the user's frames, innermost last
    compile_id: str = ""  # Dynamo's "frame/compile" id, e.g. "0/1" (the 2nd compile of frame 0)

    @property
    def where(self) -> str:
        return f"{self.frames[-1].file}:{self.frames[-1].line}" if self.frames else ""


@dataclass(frozen=True)
class GpuReading(Record):
    """One GPU at one moment (NVML): its utilisation, the memory used on it (by every process), power and heat."""

    util: float  # %
    memory_mib: float
    power_w: float
    temp_c: float


@dataclass(frozen=True)
class SystemSample(Record):
    """What the machine was doing, sampled in the training process (domain.system): on a time axis, not the step
    axis, since a compile or a validation can take seconds without a step."""

    seconds: float  # since the run started
    cpu_process: float  # % of one core used by the training process since the previous sample (200 = two cores)
    cpu_machine: float  # % of the whole machine's CPU (every core)
    rss_mib: float  # the training process's resident memory
    gpu: dict[str, GpuReading] = field(default_factory=dict)  # by device ("cuda:0"), from NVML; {} without one


@dataclass(frozen=True)
class ProfileReport(Record):
    """What `torch.profiler` saw over a window of steady steps (domain.profiler; tables from ground.profile_trace and
    ground.memory_trace): the op table, the steps' timeline, memory by category, and where the full trace went."""

    first_step: int  # the profiled steps, inclusive
    last_step: int
    device: str  # "cpu", "cuda:0"
    summary: ProfileTables  # profile_trace.summarise(): the op table, the regions, the steps, the timeline
    memory: MemoryTimeline | None = None  # memory by category over the window; None without one
    trace: str = ""  # the gzipped Chrome/Perfetto trace; "" when it was not written
    trace_bytes: int = 0  # its size on disk
    trimmed: str = ""  # what the size cap left out of the trace, in words; "" when nothing
    snapshot: str = ""  # CUDA: the allocator snapshot (pickle) for PyTorch's memory viewer; "" on the CPU
    problem: str = ""  # why a part is missing (the trace could not be written, …); "" when none

    @classmethod
    def read(cls, data: Any, where: str) -> ProfileReport:
        """Its layout, and older ones: no memory timeline was written as {}."""
        if isinstance(data, dict) and data.get("memory") == {}:
            data = {**data, "memory": None}
        return super().read(data, where)


@dataclass(frozen=True)
class AmpReport(Record):
    """Mixed precision at the start of a run (domain.amp): which ops autocast ran in the low precision and which
    it kept in fp32 (one forward and loss of the run's model), and the precision this device should use."""

    dtype: str  # "bf16" | "fp16"
    device: str
    census: AmpCensus
    recommendation: str  # one line: bf16 or fp16 (or off) for this device, and why


@dataclass(frozen=True)
class AmpSkipped(Record):
    """An fp16 step whose gradients overflowed: GradScaler skipped `optimizer.step()` and halved the scale."""

    step: int
    scale: float  # the scale the step ran with (the one that overflowed)
    param: str = ""  # the first parameter, in the model's order, whose gradient was not finite; "" if none was seen


@dataclass(frozen=True)
class Notice(Record):
    level: str  # "info" | "warning" | "error"
    message: str
    hint: str = ""


@dataclass(frozen=True)
class RunFinished(Record):
    steps: int
    epochs: int
    seconds: float
    stopped: bool  # True when the user asked to stop before the planned end
    # What the run measured. On the wire and in every stored line it is the flat object "metrics" (the layout
    # older versions wrote, ground.results).
    results: RunResults = field(default_factory=RunResults)

    def to_dict(self) -> dict[str, Any]:
        return {"steps": self.steps, "epochs": self.epochs, "seconds": self.seconds, "stopped": self.stopped,
                "metrics": self.results.to_dict()}

    @classmethod
    def read(cls, data: Any, where: str) -> RunFinished:
        """Its layout: the results as "metrics" (a "results" key besides is refused, as a field it does not know)."""
        if not isinstance(data, dict):
            raise ValueError(f"{where} is {type(data).__name__}, not an object")
        fields = {name: value for name, value in data.items() if name != "metrics"}
        outcome = _Outcome.read(fields, where)
        return cls(outcome.steps, outcome.epochs, outcome.seconds, outcome.stopped,
                   RunResults.read(data.get("metrics", {}), f"{where}.metrics"))


@dataclass(frozen=True)
class _Outcome(Record):
    """A RunFinished's own fields, read as a Record reads them (its results come apart, as "metrics")."""

    steps: int
    epochs: int
    seconds: float
    stopped: bool


@dataclass(frozen=True)
class RunFailed(Record):
    kind: str  # "config" | "data" | "compile" | "diverged" | "out_of_memory" | "internal"
    message: str
    hint: str = ""


@dataclass(frozen=True)
class RankTimes(Record):
    """A run of several processes, rank by rank (instruments/rank_timing.py): the mean time each rank's forward
    took over the steps since the last one (its own clock, before any collective of the step: the rank the others
    wait for is the slow one), and where each rank runs. Sent about once a second, not every step."""

    step: int  # the last step it covers
    forward_seconds: tuple[float, ...]  # by rank
    hosts: tuple[str, ...]  # by rank: the machine's name
    between_seconds: tuple[float, ...] = ()  # by rank: the mean time between its steps (loading data, read-backs)
    memory_mib: tuple[float, ...] = ()  # by rank: its memory now (the CUDA allocator's, or the process's RSS)


Event = (RunStarted | CompileStarted | CompileFinished | Step | EpochEnd | CompileReport | CompileEvent | SystemSample
         | ProfileReport | AmpReport | AmpSkipped | Notice | RunFinished | RunFailed | ModelSummary | LayerStats
         | Alert | RankTimes)
Emit = Callable[[Event], None]

EVENT_TYPES: dict[str, type[Record]] = {cls.__name__: cls for cls in (
    RunStarted, CompileStarted, CompileFinished, Step, EpochEnd, CompileReport, CompileEvent, SystemSample,
    ProfileReport, AmpReport, AmpSkipped, Notice, RunFinished, RunFailed, ModelSummary, LayerStats, Alert,
    RankTimes)}


def to_dict(event: Event) -> dict[str, Any]:
    """The event as plain data, its type named ("type"): the Record's own layout under the tag."""
    return {"type": type(event).__name__, **event.to_dict()}


def to_json(event: Event) -> str:
    """The event's line (NaN and infinities as JSON's extensions: a diverged loss is still said)."""
    return json.dumps(to_dict(event), separators=(",", ":"), allow_nan=True)


def from_dict(data: dict[str, Any]) -> Event:
    """The event a dict describes (a stored or received line). Anything else, an unknown type, a missing or unknown
    field, a value of the wrong type, is a ValueError that says what: such data is never trusted half-way."""
    if not isinstance(data, dict):
        raise ValueError(f"an event is a JSON object, not {type(data).__name__}")
    kind = data.get("type")
    cls = EVENT_TYPES.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise ValueError(f"unknown event type {kind!r}")
    fields = dict(data)
    del fields["type"]
    return cls.read(fields, kind)


def from_json(line: str) -> Event:
    return from_dict(json.loads(line))


def is_terminal(event: Event) -> bool:
    """A run ends with exactly one of these."""
    return isinstance(event, (RunFinished, RunFailed))
