"""The small pieces every report section writes: percentages, numbers, MiB, durations, a run's GPU figures, and a
run's colour swatch with its label.
"""

from __future__ import annotations

import math

from .html import esc
from .report_facts import RunFacts


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


def gpu_text(system: dict) -> str:
    """'cuda:0: 87 % busy, peak 412 W, 61 °C, 30,512 MiB' per GPU of a run's system summary; '' without one."""
    return "; ".join(f"{name}: {g['util_mean']:.0f} % busy, peak {g['power_peak_w']:.0f} W, {g['temp_peak_c']:.0f} °C, "
                     f"{g['memory_peak_mib']:,.0f} MiB" for name, g in system.items()
                     if name.startswith("cuda:") and isinstance(g, dict))


def run_cell(run: RunFacts) -> str:
    return f"<span class=swatch style='background:{run.color}'></span>{esc(run.label)}"
