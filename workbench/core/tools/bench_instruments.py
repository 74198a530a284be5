"""`workbench bench --instruments`: what each of the loop's always-on instruments costs a run, on against off.

Short runs on a shared machine scatter by more than an instrument costs (pairs of 375-step runs: ±20 %), so each
pair alternates which runs first and the median ratio is kept; the per-layer statistics are also priced inside
each run, a sampled step against the steady ones (`sampled_step_ratio`)."""

from __future__ import annotations

import statistics
from typing import Callable

from ..engine import Trainer, standard_instruments
from ..engine.instruments.amp_health import AmpHealth
from ..engine.instruments.base import Instrument
from ..engine.instruments.layer_statistics import LayerStatistics
from ..engine.instruments.system_metrics import SystemMetrics
from ..ground.config import TrainConfig
from ..ground.errors import WorkbenchError
from ..ground.events import RunFailed, Step
from ..ground.layer_stats import LayerStats

# What `bench --instruments` prices: name → (the config, what differs between off and on: the config's changes, or
# the instrument a run does without when off).
INSTRUMENT_PAIRS: dict[str, tuple[dict, tuple[dict, dict] | type[Instrument]]] = {
    "profiler (steady steps outside a 20-step window)": ({}, ({"profile_steps": 0}, {"profile_steps": 20})),
    "fp16 step health (loss scale + gradient check)": ({"amp": "fp16"}, AmpHealth),
    "system sampler (2 Hz)": ({}, SystemMetrics),
    f"per-layer statistics (every {TrainConfig().stats_every} steps, and steps 1–32)": ({}, LayerStatistics),
}


def instrument_overhead(config: TrainConfig, rounds: int,
                        progress: Callable[[str], None] = lambda text: None) -> dict:
    """Each instrument's cost when on: steady samples/s with it on against off, in back-to-back pairs whose order
    alternates (as recording_overhead does), the median of the per-pair ratios; for the profiler also the
    profiled steps' own time against a steady step's (the window's cost, from the run's report)."""
    results = {}
    for name, (base, differs) in INSTRUMENT_PAIRS.items():
        ratios, window, sampled = [], [], []
        for i in range(rounds):
            progress(f"{name}: pair {i + 1}/{rounds}…")
            rates = {}
            for enabled in ((False, True) if i % 2 == 0 else (True, False)):
                changes = differs[enabled] if isinstance(differs, tuple) else {}
                left_out = () if enabled or isinstance(differs, tuple) else (differs,)
                events: list = []
                result = Trainer(instruments=standard_instruments(leave_out=left_out)).run(
                    config.replace(**base, **changes), events.append)
                if isinstance(result, RunFailed) or not result.results.samples_per_s:
                    raise WorkbenchError(f"an instrument-overhead run failed: {getattr(result, 'message', '')}")
                rates[enabled] = result.results.samples_per_s
                cost = result.results.profile.cost if result.results.profile else None
                if cost and cost.profiled_step_ms and cost.steady_step_ms:
                    window.append(cost.profiled_step_ms / cost.steady_step_ms)
                if enabled and differs is LayerStatistics and (ratio := sampled_step_ratio(events)) is not None:
                    sampled.append(ratio)
            ratios.append(rates[True] / rates[False])
        results[name] = {"ratios": ratios, "median_ratio": statistics.median(ratios),
                         "window_step_ratio": statistics.median(window) if window else None,
                         "sampled_step_ratio": statistics.median(sampled) if sampled else None}
    return {"config": config.to_dict(), "instruments": results}


def sampled_step_ratio(events: list) -> float | None:
    """A step the per-layer statistics sampled against the other steady steps of the same run: the median time of
    each (exact per step on the CPU, where ops run synchronously; on CUDA a step's time is its block's average, and
    this says nothing). The pair ratios of short runs on a shared machine scatter by more than the statistics cost;
    within one run the comparison is paired step by step. None when the run sampled no steady step."""
    stats_steps = {e.step for e in events if isinstance(e, LayerStats)}
    steady = [e for e in events if isinstance(e, Step) and e.steady and e.step > 1]
    on = [e.step_seconds for e in steady if e.step in stats_steps]
    off = [e.step_seconds for e in steady if e.step not in stats_steps]
    if not on or not off:
        return None
    return statistics.median(on) / statistics.median(off)
