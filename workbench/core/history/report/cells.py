"""The small pieces every report section writes: percentages, numbers, MiB, durations, the colour swatch of a
chart's line, and a run's label behind its swatch.
"""

from __future__ import annotations

import math

from .html import esc
from .facts import RunFacts


def pct(value: float | None) -> str:
    return "—" if value is None else f"{value:.2%}"


def num(value: float | None, spec: str) -> str:
    return "—" if value is None or not math.isfinite(value) else format(value, spec)


def mib(value: float | None) -> str:
    return "—" if value is None else f"{value:,.0f} MiB"


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    if seconds == 0:
        return "0 s"
    if seconds < 1e-3:
        return f"{seconds * 1e6:.0f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds:.2f} s"


def compile_time(seconds: float | None, backend_used: str | None) -> str:
    return "none (eager)" if not seconds and backend_used == "eager" else duration(seconds)


def swatch(color: str) -> str:
    """A small square of a line's colour, before the name of what the line is."""
    return f"<span class=swatch style='background:{color}'></span>"


def run_cell(run: RunFacts) -> str:
    return swatch(run.color) + esc(run.label)
