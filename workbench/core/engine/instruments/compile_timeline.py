"""The compile timeline's instrument: what the compiler does while a compiled run trains (compiles, recompiles,
graph breaks, CUDA-graph skips), as CompileEvents on the step axis, and on the main process PyTorch's structured
compile trace, rendered with tlparse at the end."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...domain.compile_trace import CompileTracer, render_trace
from ...ground.events import Notice
from ...ground.results import CompileTrace
from .base import Instrument
from ..state import RunState

BREAK_PREFIX = "graph break: "  # a graph break event's title: the prefix, then the break's type


class CompileTimeline(Instrument):
    def __init__(self, trace_dir: Path | None):
        """`trace_dir`: where the main process records the structured trace; None: not recorded."""
        self.trace_dir = trace_dir
        self.tracer: CompileTracer | None = None

    def prepared(self, run: RunState) -> None:
        """From here on, what the compiler does is the run's (explain's traces are reset): the timeline starts."""
        if run.session.compiled:
            self.tracer = CompileTracer(self.trace_dir if run.dist.is_main else None).install()

    def step_context(self, run: RunState, kind: str) -> None:
        if self.tracer is not None:
            self.tracer.step = run.step

    def phase_changed(self, run: RunState) -> None:
        if self.tracer is not None:
            self.tracer.phase = run.phase

    def drain(self, run: RunState) -> None:
        if self.tracer is None:
            return
        for event in self.tracer.drain():
            if event.kind == "graph_break":  # its user frames serve the final report's breaks
                run.break_frames.setdefault(event.title.removeprefix(BREAK_PREFIX), event.frames)
            run.emit(event)

    def section(self, run: RunState) -> dict[str, Any]:
        if self.tracer is None or self.tracer.trace_dir is None:
            return {}
        index, problem = render_trace(self.tracer.trace_dir)
        if problem:
            run.emit(Notice("warning" if index is None and "tlparse" in problem else "info",
                            f"compile trace recorded in {self.tracer.trace_dir}; {problem}"))
        return {"compile_trace": CompileTrace(path=str(index or self.tracer.trace_dir), problem=problem or "")}

    def close(self, run: RunState) -> None:
        if self.tracer is not None:
            self.tracer.remove()
