"""Seeds as one group: runs of one configuration that differ only by their seed, shown as a mean with a spread.

Which settings may differ inside a group is decided from config.py, by what a setting changes:
- `seed`: what a group is made of;
- `profile_steps` and `compile_trace`: they record what happened (a profiler window, the compiler's trace) and
  change nothing that is trained; profiled steps are kept off the steady figures;
- `allow_eager_fallback`: what to do if compiling fails; a run that did fall back says so in its backend used, and
  it trains the same network with the same numbers either way.
Every other setting changes what is trained or how fast, so it splits groups. `resume` does too, although it
names only a file: a continued run starts from another run's weights at its last step, so its curve and figures are
not another sample of a fresh run's (and a continuation keeps its parent's seed: it is never a seed of its own).
A setting a run's config lacks (one recorded before that setting existed) counts as its default, so that older runs
group with newer ones of the same configuration.
"""

from __future__ import annotations

import hashlib
import json
import math
import statistics
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from ..ground.config import settings, setup_label
from ..ground.codec import Record
from .naming import LABEL_MAX, run_name
from .runs import RunRecord

SEED = "seed"
IGNORED = (SEED, "profile_steps", "compile_trace", "allow_eager_fallback")
SEEDS_SHOWN = 5  # seeds a group's label lists before "…"


@dataclass(frozen=True)
class SeedGroup(Record):
    key: str  # the same configuration has the same key, in every listing and after a restart
    run_ids: tuple[int, ...]  # ascending
    seeds: tuple[int, ...]  # run_ids[i]'s seed (repeats of one seed are members too)
    label: str  # "inductor · default · bf16 · seeds 0, 1, 2: #4, #5, #7"


def group_key(config: dict) -> str:
    """A short digest of the configuration without the settings a group's members may differ by."""
    defaults = {s.name: s.default for s in settings()}
    kept = {k: v for k, v in {**defaults, **config}.items() if k not in IGNORED}
    text = json.dumps(kept, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def seed_groups(records: Sequence[RunRecord]) -> list[SeedGroup]:
    """The groups of two or more runs whose settings differ only by seed (and IGNORED), by their first run. A run
    whose config cannot be read (a damaged row) joins none."""
    members: dict[str, list[RunRecord]] = {}
    for record in records:
        if isinstance(record.config.get(SEED), int):
            members.setdefault(group_key(record.config), []).append(record)
    groups = [_group(key, sorted(runs, key=lambda r: r.id)) for key, runs in members.items() if len(runs) >= 2]
    return sorted(groups, key=lambda g: g.run_ids[0])


def _group(key: str, runs: list[RunRecord]) -> SeedGroup:
    seeds = tuple(r.config[SEED] for r in runs)
    distinct = sorted(set(seeds))
    shown = ", ".join(map(str, distinct[:SEEDS_SHOWN])) + (", …" if len(distinct) > SEEDS_SHOWN else "")
    label = f"{setup_label(runs[0].config)} · seeds {shown}: " + ", ".join(run_name(r.id) for r in runs)
    return SeedGroup(key, tuple(r.id for r in runs), seeds,
                     label if len(label) <= LABEL_MAX else label[:LABEL_MAX - 1] + "…")


@dataclass(frozen=True)
class Spread(Record):
    """One figure over a group's runs that have it: the mean, the sample standard deviation (what a few seeds say
    about all seeds; 0 for one run) and the range."""

    mean: float
    std: float
    low: float
    high: float
    count: int  # runs that have the figure

    def text(self, fmt: Callable[[float], str]) -> str:
        """'92.10% ± 0.40% (91.70%–92.60%, 3 runs)', each number written by `fmt`."""
        return f"{fmt(self.mean)} ± {fmt(self.std)} ({fmt(self.low)}–{fmt(self.high)}, {self.count} runs)"


@dataclass(frozen=True)
class GroupFigures(Record):
    """A group's headline figures as mean ± spread; None where no member has the figure."""

    runs: int
    best_val_accuracy: Spread | None
    samples_per_s: Spread | None
    compile_seconds: Spread | None
    peak_memory_mib: Spread | None


def spread(values: Sequence[float | None]) -> Spread | None:
    """The spread of the finite values among `values`; None when there are none."""
    kept = [float(v) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)]
    if not kept:
        return None
    return Spread(statistics.fmean(kept), statistics.stdev(kept) if len(kept) > 1 else 0.0, min(kept), max(kept),
                  len(kept))


def group_figures(group_records: Sequence[RunRecord]) -> GroupFigures:
    """The group's figures. A samples/s or peak memory of 0 is a run that measured none (no steady step, no
    reading), not a figure: it is left out, as the Runs list shows it as "—"."""
    def measured(value: float | None) -> float | None:
        return value if value else None

    return GroupFigures(
        runs=len(group_records),
        best_val_accuracy=spread([r.best_val_accuracy for r in group_records]),
        samples_per_s=spread([measured(r.samples_per_s) for r in group_records]),
        compile_seconds=spread([r.compile_seconds for r in group_records]),
        peak_memory_mib=spread([measured(r.peak_memory_mib) for r in group_records]),
    )


@dataclass(frozen=True, eq=False)
class Band:
    """Members' curves on their common steps: the mean line and what to shade around it (low–high, or mean ± std).
    Arrays of equal length; empty when the members share no step."""

    steps: np.ndarray
    mean: np.ndarray
    std: np.ndarray  # sample standard deviation (0 with one member)
    low: np.ndarray  # the lowest member at each step
    high: np.ndarray
    members: int


def band(curves: Sequence[tuple[np.ndarray, np.ndarray]]) -> Band:
    """The band of the members' (steps, values) curves on the steps every member has a finite value at: curves of
    different length end at the shortest, and a step a member lacks (or holds NaN at) is left out for all."""
    if not curves:
        empty = np.empty(0)
        return Band(empty, empty, empty, empty, empty, 0)
    steps, firsts, values = [], [], []
    for x, y in curves:
        x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
        finite = np.isfinite(y) & np.isfinite(x)
        unique, first = np.unique(x[finite], return_index=True)  # a repeated step counts once: its first value
        steps.append(unique)
        firsts.append(first)
        values.append(y[finite])
    common = steps[0]
    for x in steps[1:]:
        common = np.intersect1d(common, x, assume_unique=True)
    table = np.stack([y[first[np.searchsorted(x, common)]] for x, first, y in zip(steps, firsts, values)])
    std = table.std(axis=0, ddof=1) if len(curves) > 1 else np.zeros(len(common))
    return Band(common, table.mean(axis=0), std, table.min(axis=0), table.max(axis=0), len(curves))
