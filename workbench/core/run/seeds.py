"""Repeat with seeds: train one configuration once per seed, one run after another, so that its figures can be read
as a mean with a spread (history/groups.py groups the runs that differ only by seed).

Each seed is an entry of the queue (history/queue.py), as a sweep's trials are: a recorded run of its own, in a
kernel process of its own (or on a host over SSH), trained by whoever works the queue. A seed that fails does not end
the queue: the next seed may well train (a diverging seed is what repeating is for). Cancelling the seeds' entries
ends the running seed after its step and starts no other.

Which seeds the history already has for the settings is read from its finished runs: a stopped or failed run of a
seed is no sample of it, so that seed counts as still to do. Torch-free.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

from ..ground.config import TrainConfig, setting_named
from ..ground.errors import WorkbenchError
from ..ground.codec import Record
from ..history.groups import SEED, group_key
from ..history.queue import FAILED, FINISHED, QueueEntry, RunQueue
from ..history.runs import RunRecord, RunStore

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


def queue_seeds(config: TrainConfig, seeds: Sequence[int], *, of: str, db: str | Path | None = None,
                place: str = "", python: str = "python3", skip_done: bool = False) -> list[int]:
    """Queue `config` once with each of `seeds`, in that order, for `place` (history/queue.py): each a run of its
    own, trained by whoever works the queue (the window, `workbench queue work`). `of` names what is repeated
    ("#12"), for the entries' labels. `skip_done`: leave out the seeds the history already has a finished run of
    with these settings. The entries' ids; a WorkbenchError, with nothing queued, for seeds or settings that cannot
    run, or when no seed is left to train."""
    seeds = check_seeds(seeds)
    check_repeatable(config)
    if skip_done:
        done = seeds_done(history_runs(config, db))
        seeds = tuple(seed for seed in seeds if seed not in done)
        if not seeds:
            raise SeedsError("the history has finished every one of these seeds with these settings",
                             "choose other seeds, or clear the box that leaves them out")
    with RunQueue(db) as queue:
        return [queue.add(config.replace(seed=seed), place=place, python=python, label=f"seed {seed} of {of}")
                for seed in seeds]


def seed_run(entry: QueueEntry, samples_per_s: float | None = None) -> SeedRun:
    """A seed's queue entry as it ended, in the seeds' words (a cancelled or interrupted run was stopped)."""
    status = {FINISHED: "finished", FAILED: "failed"}.get(entry.state, "stopped")
    note = entry.error if status == "failed" else "stopped before it ended" if status == "stopped" else ""
    return SeedRun(entry.config.seed, entry.run_id, status, entry.best_val_accuracy, samples_per_s, note)
