"""Repeat with seeds: train one configuration once per seed, one run after another, so that its figures can be read
as a mean with a spread (history/groups.py groups the runs that differ only by seed).

Each seed is a recorded run of its own, in a kernel process of its own (or on a host over SSH), queued as a sweep's
trials are (run/queued.py). A seed that fails does not end the queue: the next seed may well train (a diverging seed
is what repeating is for). A stop ends the running seed after its step and starts no other.

Which seeds the history already has for the settings is read from its finished runs: a stopped or failed run of a
seed is no sample of it, so that seed counts as still to do. Torch-free.
"""

from __future__ import annotations

import re
import statistics
import threading
from dataclasses import dataclass
from pathlib import Path
from time import monotonic
from typing import Callable, Iterable, Sequence

from ..ground.config import TrainConfig, setting_named
from ..ground.errors import WorkbenchError
from ..ground.events import Event, RunFailed
from ..ground.codec import Record
from ..history.groups import SEED, group_key
from ..history.runs import RunRecord, RunStore
from .launch import start_run
from .queued_run import train_recorded
from .remote.ssh import Remote

DEFAULT_COUNT = 3
STATUSES = ("finished", "stopped", "failed")  # how a seed's run ended (RunStore's words for them)


class SeedsError(WorkbenchError):
    kind = "config"


@dataclass(frozen=True)
class SeedRun(Record):
    """One seed's run as it ended."""

    seed: int
    run_id: int | None  # its row in the history (None: it never started, or its record was lost)
    status: str  # one of STATUSES
    best_val_accuracy: float | None  # its best epoch's (None: no epoch ended)
    samples_per_s: float | None  # steady steps only (None: none measured)
    note: str = ""  # why it failed, or that it was stopped


@dataclass(frozen=True)
class SeedProgress(Record):
    """Where the queue is: before its first run (done 0, no run yet) and after each run."""

    done: int
    total: int  # the seeds this call runs (those the history had left out, when asked to skip them)
    last: SeedRun | None  # the run that has just ended
    eta_seconds: float | None  # the runs left times the mean run so far (None before the first has ended)


def check_seeds(seeds: Iterable[int]) -> tuple[int, ...]:
    """The seeds, each a seed a run can take and given once; a SeedsError that says which is not."""
    declared = setting_named(SEED)
    seeds = tuple(seeds)
    if not seeds:
        raise SeedsError("no seeds to run", "give a number of seeds, or seeds such as 0, 1, 2")
    for seed in seeds:
        if isinstance(seed, bool) or not isinstance(seed, int) or not declared.low <= seed <= declared.high:
            raise SeedsError(f"{seed!r} is not a seed", f"seeds are whole numbers from {declared.low} to "
                                                        f"{declared.high}")
    repeated = next((seed for index, seed in enumerate(seeds) if seed in seeds[:index]), None)
    if repeated is not None:
        raise SeedsError(f"seed {repeated} is given twice", "a seed trains the same run each time: give each once")
    return seeds


def check_repeatable(config: TrainConfig) -> None:
    """Refuse settings that another seed cannot repeat: a continued run's (a continuation keeps its parent's seed and
    starts from its weights)."""
    if config.resume:
        raise SeedsError("these settings continue another run, which keeps that run's seed",
                         "repeat the run it continues with seeds instead")


def parse_seeds(text: str) -> tuple[int, ...]:
    """'0, 1, 2' (commas or spaces between them) as the seeds it names, checked."""
    words = [word for word in re.split(r"[,\s]+", text.strip()) if word]
    for word in words:
        if not (word.isascii() and word.isdigit()):
            raise SeedsError(f"{word!r} is not a seed", "write whole numbers separated by commas, e.g. 0, 1, 2")
    return check_seeds(int(word) for word in words)


def counted_seeds(first: int, count: int) -> tuple[int, ...]:
    """`count` seeds from `first` on: repeating a run starts at its own seed, which the history already has."""
    if count < 1:
        raise SeedsError("no seeds to run", "ask for one seed or more")
    return check_seeds(range(first, first + count))


def runs_of(config: TrainConfig, records: Sequence[RunRecord]) -> list[RunRecord]:
    """The runs whose settings are `config`'s but for the seed (and what groups.IGNORED lets differ), oldest first.
    A run whose config cannot be read (no whole-number seed) is none of them."""
    key = group_key(config.to_dict())
    return sorted((r for r in records if isinstance(r.config.get(SEED), int) and group_key(r.config) == key),
                  key=lambda r: r.id)


def seeds_done(runs: Sequence[RunRecord]) -> dict[int, int]:
    """seed → the newest of `runs` that finished with it."""
    return {r.config[SEED]: r.id for r in sorted(runs, key=lambda r: r.id) if r.status == "finished"}


def history_runs(config: TrainConfig, db: str | Path | None = None) -> list[RunRecord]:
    """`runs_of` the history in `db`."""
    with RunStore(db, recover=False) as store:
        return runs_of(config, store.list())


def run_seeds(config: TrainConfig, seeds: Sequence[int], *, cuda_devices: int, db: str | Path | None = None,
              runs_dir: str | Path | None = None, remote: Remote | None = None,
              on_event: Callable[[int, Event], None] = lambda seed, event: None,
              on_progress: Callable[[SeedProgress], None] = lambda progress: None,
              stop: threading.Event | None = None, skip_done: bool = False) -> list[SeedRun]:
    """Train `config` once with each of `seeds`, in that order; every event goes to `on_event` with its seed.
    Returns the runs trained (not those skipped, nor those a stop left out). `skip_done`: leave out the seeds the
    history already has a finished run of with these settings. Raises a WorkbenchError, before any run starts, for
    seeds or settings that cannot run (a continued run's settings: a continuation keeps its parent's seed)."""
    seeds = check_seeds(seeds)
    check_repeatable(config)
    stop = stop or threading.Event()
    if skip_done:
        done = seeds_done(history_runs(config, db))
        seeds = tuple(seed for seed in seeds if seed not in done)
    on_progress(SeedProgress(done=0, total=len(seeds), last=None, eta_seconds=None))
    runs: list[SeedRun] = []
    durations: list[float] = []
    for seed in seeds:
        if stop.is_set():
            break
        started = monotonic()
        run = _run_seed(config.replace(seed=seed), on_event, stop, cuda_devices=cuda_devices, db=db,
                        runs_dir=runs_dir, remote=remote)
        durations.append(monotonic() - started)
        runs.append(run)
        on_progress(SeedProgress(done=len(runs), total=len(seeds), last=run,
                                 eta_seconds=(len(seeds) - len(runs)) * statistics.fmean(durations)))
    return runs


def _run_seed(config: TrainConfig, on_event: Callable[[int, Event], None], stop: threading.Event,
              **where) -> SeedRun:
    ran = train_recorded(config, lambda event: on_event(config.seed, event), stop, start=start_run, **where)
    outcome = ran.outcome
    if isinstance(outcome, RunFailed):
        return SeedRun(config.seed, ran.run_id, "failed", ran.best_val_accuracy, None,
                       f"{outcome.kind}: {outcome.message}")
    return SeedRun(config.seed, ran.run_id, "stopped" if outcome.stopped else "finished", ran.best_val_accuracy,
                   outcome.results.samples_per_s or None, "stopped before it ended" if outcome.stopped else "")
