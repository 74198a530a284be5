"""The profiler's instrument: a window of steady steps run under torch.profiler (config.profile_steps, placed after
the compile and the warm-up, or asked for during the run), read into a ProfileReport once the window is over.
Every process plans the window (their read-backs stay aligned); the main one profiles."""

from __future__ import annotations

import contextlib
import dataclasses
from pathlib import Path
from typing import Any

from ...domain.profiler import StepProfiler, profile_metrics, profile_window
from ...ground.errors import first_line
from ...ground.events import Notice, ProfileReport
from ...ground.signals import RunSignals
from .base import Instrument
from ..state import RunState


class Profiling(Instrument):
    def __init__(self, profile_dir: Path | None = None):
        """`profile_dir`: where the trace is written (by the main process); None: the report only."""
        self.profile_dir = profile_dir
        self.profiler: StepProfiler | None = None  # the window's, on the main process, until its report is out
        self.report: ProfileReport | None = None

    def prepared(self, run: RunState) -> None:
        steps = run.config.profile_steps
        if not steps:
            return
        window = profile_window(run.plan.first_steady(run.session.compiled), run.total_steps, steps)
        if window is None:
            run.emit(Notice("warning", f"not profiled: the run has no steady step to profile ({run.total_steps} "
                                       f"step(s) in all)", "train more steps (epochs or max steps)"))
            return
        if window[1] - window[0] + 1 < steps:
            run.emit(Notice("info", f"profiling steps {window[0]}–{window[1]}: the run is too short for {steps}"))
        self._start(run, window)

    def _start(self, run: RunState, window: tuple[int, int]) -> None:
        run.plan = dataclasses.replace(run.plan, profile=window)
        if run.dist.is_main:
            self.profiler = StepProfiler(run.device, window, self.profile_dir)

    def step_context(self, run: RunState, kind: str) -> contextlib.AbstractContextManager | None:
        if kind == "profiling" and self.profiler is not None:
            return self.profiler.step(run.step)
        return None

    def requests(self, run: RunState, signals: RunSignals) -> None:
        """A profile of the next steps, asked for during the run (read at a read-back, so no block mixes kinds)."""
        steps = signals.take_profile_request()
        if not steps:
            return
        window = run.plan.profile
        if window is not None and window[1] > run.totals.steps:
            run.emit(Notice("info", f"already profiling steps {window[0]}–{window[1]}"))
            return
        if run.dist.active:  # the processes plan their read-backs alike; only rank 0 hears the request
            run.emit(Notice("warning", "a multi-process run cannot be profiled on request",
                            "set Profile steps before starting it"))
            return
        first = max(run.totals.steps + 1, run.plan.first_steady(run.session.compiled))
        if first > run.total_steps:
            run.emit(Notice("info", "not profiled: the run ends before another steady step"))
            return
        self._start(run, (first, min(run.total_steps, first + steps - 1)))

    def phase_ended(self, run: RunState, kind: str) -> None:
        """The profiled window is over: its report, after the Steps it covers."""
        if kind != "profiling" or self.profiler is None:
            return
        profiler, self.profiler = self.profiler, None
        try:
            report = profiler.report(run.session.model, run.session.optimizer, run.steady_step_seconds())
        except Exception as exc:  # noqa: BLE001 - a profile that cannot be read must not cost the run
            run.emit(Notice("warning", f"the profile of steps {profiler.first}–{profiler.last} could not be built: "
                                       f"{type(exc).__name__}: {first_line(exc)}",
                            "this looks like a bug in Workbench or PyTorch; the run goes on"))
            return
        self.report = report
        run.emit(report)

    def section(self, run: RunState) -> dict[str, Any]:
        return {"profile": profile_metrics(self.report)} if self.report is not None else {}

    def close(self, run: RunState) -> None:
        if self.profiler is not None:
            self.profiler.abandon()
