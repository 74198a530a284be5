"""The instruments a run has: one list, in the order their hooks are called. Adding an instrument is its module and
one entry here; a caller that wants fewer (the finders, `bench --instruments`) leaves some out by type.

Payback first: it measures before the system sampler stops. Resume is not here: the loop adds it last when a run
is continued (it puts the random streams back after everything else has set up)."""

from __future__ import annotations

from collections.abc import Callable, Collection
from pathlib import Path

from .alerting import Alerting
from .amp_health import AmpHealth
from .base import Instrument
from .compile_timeline import CompileTimeline
from .layer_statistics import LayerStatistics
from .payback import PaybackCalibration
from .profiling import Profiling
from .rank_timing import RankTiming
from .recompile_stance import RecompileStance
from .system_metrics import SystemMetrics
from .warm_start import CacheHome, WarmStart

# A run's instruments, made fresh for each run (an instrument keeps the state of the run it watches).
Instruments = Callable[[], list[Instrument]]


def standard_instruments(*, trace_dir: Path | None = None, profile_dir: Path | None = None,
                         compile_cache: CacheHome | None = None,
                         leave_out: Collection[type[Instrument]] = ()) -> Instruments:
    """Every instrument a recorded run has. `trace_dir`: where a compiled run records PyTorch's structured compile
    trace; `profile_dir`: where a profiled run writes its trace; `compile_cache`: where a compiled run keeps its
    compile cache and the history it looks for a warm start in (None each: not kept). `leave_out`: instrument types
    this caller does without (the LR range test's steps teach nothing about payback, for one)."""
    def make() -> list[Instrument]:
        every = [PaybackCalibration(), SystemMetrics(), AmpHealth(), Profiling(profile_dir), WarmStart(compile_cache),
                 CompileTimeline(trace_dir), RecompileStance(), LayerStatistics(), Alerting(), RankTiming()]
        return [instrument for instrument in every if not isinstance(instrument, tuple(leave_out))]
    return make
