"""The compile timeline: what `torch.compile` did during a run, step by step, read from PyTorch's structured trace.

PyTorch reports every compile decision to the "torch.__trace" logger (what TORCH_TRACE writes and tlparse reads):
each frame compiled (`compilation_metrics`, with the guard failure behind a recompile), the AOT forward / backward /
inference graphs, the FX-graph and AOTAutograd cache hits and misses, and each graph break with its user stack.
CUDA-graph skips come from Inductor's cudagraphs logger (CUDAGRAPH_LOGGER). `CompileTracer` is a logging handler on
both: it turns records into `CompileEvent`s as they arrive, stamped with the step the engine says it is on, and the
engine emits them at its next read-back. With a trace folder it also writes the raw structured records, in
TORCH_TRACE's format, for tlparse and for the code view (ground.inductor_code), and has Inductor record its
provenance: which FX nodes and which of the user's lines each generated kernel came from.

The parsing is plain functions over (metadata, payload), so recorded records (a CUDA-graph skip recorded on a GPU
machine, say) are explained the same way on any machine.
"""

from __future__ import annotations

import collections
import dataclasses
import logging
import os
import re
import shutil
import subprocess
import threading
from pathlib import Path

from ..ground.compile_stages import GraphCompileTime, graph_compile_times
from ..ground.events import CompileEvent, Frame, printed_frames
from ..ground.inductor_code import TRACE_FILE

TRACE_LOGGER = "torch.__trace"
# Every CUDA-graph skip, at compile time or at run time (a mutation found on the first replay), goes through
# inductor's log_cudagraph_skip_and_bump_counter, which warns on this logger; the structured trace has only some.
CUDAGRAPH_LOGGER = "torch._inductor.cudagraph_utils.__cudagraphs"
CUDAGRAPH_SKIP_PREFIX = "skipping cudagraphs"
# With a trace recorded, Inductor's provenance (torch ≥ 2.9: kernel → FX nodes → user lines, logged beside its output
# code) and, on the CPU, a profiler record per C++ kernel (GPU kernels have one anyway): the profile's kernel times
# then line up with the code view's kernels. Both are in the FX-graph cache's key (the provenance level since torch
# 2.14's FxGraphHashDetails), so a graph cached without them is compiled again rather than served without them.
TRACED_INDUCTOR = {"trace.provenance_tracking_level": 1, "cpp.enable_kernel_profile": True}
TLPARSE_HINT = "install tlparse (pip install tlparse) to render the compile trace as HTML"
_TORCH_DIR = os.sep + "torch" + os.sep
_WORKBENCH_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
_RESOURCES_DIR = os.path.join(_WORKBENCH_DIR, "resources")  # where the installed package keeps the examples
# AOTAutograd's graphs: a training graph splits into forward and backward; a graph none of whose outputs needs a
# gradient (validation under no_grad, or a piece of forward without parameters) is one inference graph.
_GRAPHS = {"aot_forward_graph": "forward graph", "aot_backward_graph": "backward graph",
           "aot_inference_graph": "inference graph (no gradients needed)"}
_CACHES = {"fx_graph_cache_hit": ("cache_hit", "FX-graph cache"), "fx_graph_cache_miss": ("cache_miss",
                                                                                          "FX-graph cache"),
           "fx_graph_bundled_cache_hit": ("cache_hit", "FX-graph cache"),
           "aotautograd_cache_hit": ("cache_hit", "AOTAutograd cache"),
           "aotautograd_cache_miss": ("cache_miss", "AOTAutograd cache")}


def parse_record(metadata: dict, payload: str | None) -> list[CompileEvent]:
    """The timeline events one structured-trace record holds (most hold none), at step 0: the tracer stamps them."""
    compile_id = _compile_id(metadata)
    if "compilation_metrics" in metadata:
        return _from_metrics(metadata["compilation_metrics"], compile_id)
    for key, graph in _GRAPHS.items():
        if key in metadata:
            return [_event("graph", f"{graph} compiled (frame {compile_id or '?'})", compile_id=compile_id)]
    artifact = metadata.get("artifact")
    if isinstance(artifact, dict):
        name = artifact.get("name", "")
        if name in _CACHES:
            kind, cache = _CACHES[name]
            word = "hit" if kind == "cache_hit" else "miss: compiled from scratch"
            return [_event(kind, f"{cache} {word}", _cache_detail(payload), compile_id=compile_id)]
        if name == "dynamo_graph_break_reason" and payload:
            return [_graph_break(payload, compile_id)]
    return []


def _event(kind: str, title: str, detail: str = "", frames: tuple[Frame, ...] = (),
           compile_id: str = "") -> CompileEvent:
    return CompileEvent(step=0, kind=kind, title=title, detail=detail, frames=frames, compile_id=compile_id)


def _compile_id(metadata: dict) -> str:
    frame, attempt = metadata.get("frame_id"), metadata.get("frame_compile_id")
    return f"{frame}/{attempt}" if frame is not None and attempt is not None else ""


def _from_metrics(metrics: dict, compile_id: str) -> list[CompileEvent]:
    """A frame's compile: a recompile, with the guard that failed."""
    reason = metrics.get("recompile_reason")
    if not reason:
        return []
    name = _function(metrics.get("co_name") or "?")
    return [_event("recompile", f"{name} recompiled: {plain_guard(reason)}", reason.strip(), _code_frame(metrics),
                   compile_id)]


def parse_cudagraph_skip(message: str) -> CompileEvent | None:
    """Inductor's "skipping cudagraphs due to …" warning (None for its other messages), with the user's line that
    caused it when Inductor names one ("Found from: File …, line …")."""
    if not message.startswith(CUDAGRAPH_SKIP_PREFIX):
        return None
    return _event("cudagraph_skip", f"CUDA graphs skipped: {plain_cudagraph_skip(message)}", message.strip(),
                  _user_frames(message))


def _function(co_name: str) -> str:
    """Dynamo's name for the code it compiled, as a user would say it."""
    found = re.match(r"torch_dynamo_resume_in_(\w+)_at_(\d+)", co_name)
    return f"{found[1]} (after the break at line {found[2]})" if found else co_name


def _code_frame(metrics: dict) -> tuple[Frame, ...]:
    file, line = metrics.get("co_filename"), metrics.get("co_firstlineno")
    if not file or not isinstance(line, int) or _TORCH_DIR in file:
        return ()
    return (Frame(file=file, line=line, function=metrics.get("co_name") or "", source=_source(file, line)),)


def _source(file: str, line: int) -> str:
    import linecache

    return linecache.getline(file, line).strip()


def plain_guard(reason: str) -> str:
    """A guard failure in a user's words. Dynamo's text stays in the event's detail."""
    text = re.sub(r"^\d+/\d+:\s*", "", reason.strip()).splitlines()[0] if reason.strip() else ""
    size = re.search(r"tensor '([^']+)' size mismatch at index (\d+)\. expected (\d+), actual (\d+)", text)
    if size:
        return f"input {size[1]} changed size (dim {size[2]}: {size[3]} → {size[4]})"
    if "grad_mode" in text:
        return "gradients were switched off (validation runs under no_grad)"
    if re.search(r"\.training\b", text) or "training" in text:
        return "the module switched between train() and eval()"
    if "dtype mismatch" in text:
        return f"an input changed dtype ({text})"
    if "___stack" in text or "== " in text:
        return f"a Python value the graph depends on changed ({text.split('#')[0].strip()})"
    return text


def plain_cudagraph_skip(reason: str) -> str:
    """Why Inductor ran a graph without CUDA graphs, in a few words (its own message is the detail)."""
    text = reason.strip().lower()
    if "mutated input" in text or "mutation" in text:
        return "an input is changed in place (mutated)"
    if "cpu device" in text or "non-cuda" in text or "cpu tensor" in text:
        return "the graph uses a CPU tensor"
    if "dynamic shape" in text or "symint" in text or "dynamic" in text:
        return "dynamic shapes"
    if "incompatible op" in text:
        return "the graph contains an op CUDA graphs cannot capture"
    return reason.strip().splitlines()[0]


def _graph_break(payload: str, compile_id: str) -> CompileEvent:
    """A break's reason (type, explanation, hints, link) and its user frames, from Dynamo's break record."""
    body = payload.split("\nUser code traceback:", 1)[0]
    traceback = payload.split("\nUser code traceback:", 1)[1] if "\nUser code traceback:" in payload else ""
    traceback = traceback.split("\nTraceback (most recent call last):", 1)[0]
    lines = [_reason_line(ln.strip()) for ln in body.splitlines()]
    lines = [ln for ln in lines if ln and not ln.startswith(("Graph break in user code", "Developer debug context"))]
    attribution = next((i for i, ln in enumerate(lines) if ln.startswith("Stack variable source attribution")),
                       None)  # Dynamo's internals: which variable came from where
    lines = lines[:attribution]
    kind = lines[0] if lines else "graph break"
    return _event("graph_break", f"graph break: {kind}", "\n".join(lines), _user_frames(traceback), compile_id)


def _reason_line(line: str) -> str:
    """Dynamo's "Graph Break Reason:" line holds the break type itself for some breaks ("Graph Break Reason:
    Data-dependent branching"), and only a preamble for others (the type follows on a line of its own)."""
    if not line.startswith("Graph Break Reason:"):
        return line
    rest = line.removeprefix("Graph Break Reason:").strip()
    return "" if rest.startswith("Encountered graph break") else rest


def _user_frames(text: str) -> tuple[Frame, ...]:
    """The user's frames of a printed traceback, innermost last: those after the last frame of PyTorch or of
    Workbench itself (whatever called the training loop, and the loop, are not the user's business)."""
    frames: list[Frame] = []
    for frame in printed_frames(text):
        if _is_framework(frame.file):
            frames.clear()
            continue
        frames.append(frame)
    return tuple(frames)


def _is_framework(file: str) -> bool:
    """PyTorch's files, or Workbench's own (its bundled example models are the user's code)."""
    if _TORCH_DIR in file:
        return True
    path = os.path.realpath(file)
    return path.startswith(_WORKBENCH_DIR + os.sep) and not path.startswith(_RESOURCES_DIR + os.sep)


def _cache_detail(payload: str | None) -> str:
    found = re.search(r'"key":\s*"([^"]+)"', payload or "")
    return f"cache key {found[1]}" if found else ""


class CompileTracer(logging.Handler):
    """Collects the run's compile events from PyTorch's structured trace (see the module docstring). The engine
    sets `step` and `phase` as it goes; records may arrive from any thread, so the queue is locked."""

    def __init__(self, trace_dir: Path | None = None):
        super().__init__(level=logging.DEBUG)
        self.step, self.phase = 0, "train"
        self.trace_dir = trace_dir
        self._pending: collections.deque[CompileEvent] = collections.deque()
        self._seen: set[tuple] = set()  # breaks and graphs Dynamo logs more than once
        self._raw: logging.Handler | None = None
        self._patches: list = []  # the config patches a recorded trace applies, undone by remove()
        self._guard = threading.Lock()

    def install(self) -> CompileTracer:
        log = logging.getLogger(TRACE_LOGGER)
        self._level = log.level
        log.setLevel(logging.DEBUG)
        log.addHandler(self)
        cudagraphs = logging.getLogger(CUDAGRAPH_LOGGER)
        self._cudagraphs = (cudagraphs.level, cudagraphs.propagate)
        if not cudagraphs.isEnabledFor(logging.WARNING):
            # PyTorch's logs are quieted (the CLI and the kernels set them to CRITICAL): the skips must still reach
            # the timeline, without reaching the terminal.
            cudagraphs.setLevel(logging.WARNING)
            cudagraphs.propagate = False
        cudagraphs.addHandler(self)
        if self.trace_dir is not None:
            self._raw = _raw_trace_handler(self.trace_dir)
            log.addHandler(self._raw)
            self._patches = _traced_compile_patches()
            for patch in self._patches:
                patch.__enter__()
        return self

    def remove(self) -> None:
        log = logging.getLogger(TRACE_LOGGER)
        log.removeHandler(self)
        cudagraphs = logging.getLogger(CUDAGRAPH_LOGGER)
        cudagraphs.removeHandler(self)
        cudagraphs.setLevel(self._cudagraphs[0])
        cudagraphs.propagate = self._cudagraphs[1]
        if self._raw is not None:
            log.removeHandler(self._raw)
            self._raw.close()
        for patch in reversed(self._patches):
            patch.__exit__(None, None, None)
        self._patches = []
        log.setLevel(self._level)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            if record.name == CUDAGRAPH_LOGGER:
                skip = parse_cudagraph_skip(record.getMessage())
                parsed = [skip] if skip else []
            else:
                metadata = getattr(record, "metadata", None)
                parsed = parse_record(metadata, getattr(record, "payload", None)) if isinstance(metadata, dict) else []
        except Exception:  # a record of a shape this version does not know: the timeline skips it
            return
        with self._guard:
            for item in parsed:
                # Dynamo logs a break again at each recompile of its frame, and some graphs twice per compile.
                if item.kind in ("graph_break", "graph"):
                    key = (item.title, item.compile_id if item.kind == "graph" else item.where)
                    if key in self._seen:
                        continue
                    self._seen.add(key)
                self._pending.append(dataclasses.replace(item, step=self.step, phase=self.phase))

    def drain(self) -> list[CompileEvent]:
        with self._guard:
            events = list(self._pending)
            self._pending.clear()
        return events


def _raw_trace_handler(trace_dir: Path) -> logging.Handler:
    """TORCH_TRACE's own file handler and formatter, so tlparse reads the file as if TORCH_TRACE had written it."""
    from torch._logging._internal import TorchLogsFormatter

    trace_dir.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(trace_dir / TRACE_FILE, encoding="utf-8")
    handler.setFormatter(TorchLogsFormatter(trace=True))
    return handler


def _traced_compile_patches() -> list:
    """The config patch of the TRACED_INDUCTOR settings this torch knows (an older one has no provenance: its code
    view says so). PyTorch's config overrides are thread-local: the tracer is installed on the thread that compiles.
    A backward compiled lazily on autograd's CUDA worker thread may not see them (not checked on a GPU): its code
    would then come without provenance."""
    import torch._inductor.config as inductor_config

    known = {key: value for key, value in TRACED_INDUCTOR.items() if key in inductor_config.get_config_copy()}
    return [inductor_config.patch(known)] if known else []


def compile_times() -> tuple[GraphCompileTime, ...]:
    """Each graph's compile time by stage (ground.compile_stages), from the compilation metrics Dynamo keeps (the
    records the tracer sees as `compilation_metrics`, no trace file needed) since the run's RunCompileLog cleared
    them; Dynamo keeps the last 64."""
    from torch._dynamo.utils import get_compilation_metrics

    return graph_compile_times(vars(metrics) for metrics in get_compilation_metrics())


def render_trace(trace_dir: Path) -> tuple[Path | None, str]:
    """Render a recorded trace with tlparse into trace_dir/html: (its index.html, "") or (None, why not)."""
    log = trace_dir / TRACE_FILE
    if not log.is_file() or log.stat().st_size == 0:
        return None, "no compile trace was recorded (nothing compiled)"
    tlparse = shutil.which("tlparse") or _beside_python("tlparse")
    if tlparse is None:
        return None, TLPARSE_HINT
    out = trace_dir / "html"
    try:
        done = subprocess.run([tlparse, str(log), "-o", str(out), "--overwrite", "--no-browser"],
                              capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"tlparse failed: {exc}"
    index = out / "index.html"
    if done.returncode != 0 or not index.is_file():
        return None, f"tlparse failed: {(done.stderr or done.stdout).strip()[:300]}"
    return index, ""


def _beside_python(name: str) -> str | None:
    """A console script installed next to this interpreter (a venv whose bin/ is not on PATH)."""
    import sys

    candidate = Path(sys.executable).with_name(name)
    return str(candidate) if candidate.is_file() and os.access(candidate, os.X_OK) else None
