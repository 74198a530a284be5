"""A sweep's trials as the views and the report see them, and which of them make the Pareto front; and which runs
of the history a sweep's trials trained. Torch-free and Optuna-free: the window draws them, the report renders
them, run/sweep.py fills them from its study.
"""

from __future__ import annotations

import json
import math
import sqlite3
from contextlib import closing
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import NamedTuple

from .runs import BUSY_TIMEOUT_S, default_db_path

STUDIES_FILE = "sweeps.sqlite"  # run/sweep.py's Optuna studies, beside the run history's database


class Param(NamedTuple):
    """One searchable setting: a range (`log` for a log-uniform one) or `choices`; `grid`: its points on a grid."""

    low: float | None = None
    high: float | None = None
    log: bool = False
    choices: tuple = ()
    grid: tuple = ()

    def contains(self, value) -> bool:
        return value in self.choices if self.choices else self.low <= value <= self.high

    @property
    def points(self) -> tuple:
        return self.choices or self.grid


SEARCHABLE = {
    "lr": Param(1e-4, 3e-2, log=True, grid=(1e-3, 4e-3, 1e-2)),
    "batch_size": Param(choices=(16, 32, 64, 128, 256)),
    "hidden_dim": Param(choices=(64, 128, 256, 512)),
    "dropout": Param(0.0, 0.5, grid=(0.0, 0.2, 0.4)),
    "weight_decay": Param(1e-5, 1e-1, log=True, grid=(1e-4, 1e-2)),
    "backend": Param(choices=("eager", "inductor")),
    "mode": Param(choices=("default", "max-autotune-no-cudagraphs")),
    "amp": Param(choices=("off", "bf16")),
}


# What a trial is measured by, and which way is better. The sampler optimises the first; the front weighs all.
# (The sampler maximises val_accuracy; compile seconds and peak memory only inform the front.)
OBJECTIVES = {"val_accuracy": "max", "samples_per_s": "max", "compile_seconds": "min", "peak_memory_mib": "min"}


@dataclass
class Trial:
    """One trial as the views show it."""

    number: int
    state: str  # "complete", "pruned", "failed", "running"
    params: dict
    val_accuracy: float | None = None
    samples_per_s: float | None = None
    compile_seconds: float | None = None
    peak_memory_mib: float | None = None
    seconds: float | None = None
    run_id: int | None = None
    epochs: int = 0  # how many it trained before it ended (fewer when pruned)
    note: str = ""  # why it failed, or where it was pruned

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class Progress:
    """Where a sweep stands: after each trial, with the time left estimated from the trials so far."""

    done: int
    total: int
    eta_seconds: float | None
    best: Trial | None
    trial: Trial | None = None  # the trial that just ended
    trials: list[Trial] = field(default_factory=list)


def best_trial(trials: list[Trial]) -> Trial | None:
    complete = [t for t in trials if t.state == "complete" and t.val_accuracy is not None]
    return max(complete, key=lambda t: t.val_accuracy) if complete else None


def pareto_front(trials: list[Trial], objectives: tuple[str, ...] = tuple(OBJECTIVES)) -> list[Trial]:
    """The complete trials that no other complete trial beats on every objective at once (better or equal on
    each, better on one), by OBJECTIVES' directions; a missing figure counts as the worst."""
    def score(trial: Trial) -> tuple[float, ...]:
        signs = {"max": 1.0, "min": -1.0}
        return tuple(signs[OBJECTIVES[name]] * getattr(trial, name) if getattr(trial, name) is not None
                     else -math.inf for name in objectives)

    complete = [t for t in trials if t.state == "complete"]
    scores = {t.number: score(t) for t in complete}

    def dominated(t: Trial) -> bool:
        mine = scores[t.number]
        return any(all(o >= m for o, m in zip(other, mine)) and other != mine
                   for n, other in scores.items() if n != t.number)

    return [t for t in complete if not dominated(t)]


def axis_position(name: str, value) -> float:
    """Where `value` of searchable setting `name` sits on its parallel-coordinates axis, 0 (bottom) to 1 (top):
    a choice by its index, a range linearly or, for a log-uniform one, by its logarithm."""
    param = SEARCHABLE[name]
    if param.choices:
        return param.choices.index(value) / max(1, len(param.choices) - 1) if value in param.choices else 0.5
    low, high, value = ((math.log(param.low), math.log(param.high), math.log(value)) if param.log
                        else (param.low, param.high, value))
    return min(1.0, max(0.0, (value - low) / ((high - low) or 1)))


def axis_ends(name: str) -> tuple[str, str]:
    """How the bottom and the top of a setting's axis read."""
    param = SEARCHABLE[name]
    low, high = (param.choices[0], param.choices[-1]) if param.choices else (param.low, param.high)
    return f"{low:g}" if isinstance(low, float) else str(low), f"{high:g}" if isinstance(high, float) else str(high)


@dataclass(frozen=True)
class TrialOf:
    """The sweep trial that trained a run: how the Runs table names the run."""

    sweep: str
    number: int  # Optuna's trial number, as the Sweep dialog's Trial column shows it (0: the base settings)

    def __str__(self) -> str:
        return f"trial {self.number} of sweep {self.sweep}"


# Optuna's RDB storage keeps a trial's user attributes as JSON beside its number and its study's name.
TRIAL_ATTRIBUTES = """SELECT studies.study_name, trials.number, attrs.key, attrs.value_json
FROM trial_user_attributes AS attrs JOIN trials ON attrs.trial_id = trials.trial_id
JOIN studies ON trials.study_id = studies.study_id WHERE attrs.key IN ('out_dir', 'run_id')"""


def studies_path(db: str | Path | None = None) -> Path:
    """The sweeps' Optuna studies file: beside the run history's database (`db`, else the default one)."""
    return Path(db or default_db_path()).resolve().with_name(STUDIES_FILE)


def trials_of_runs(db: str | Path | None, out_dirs: dict[int, str | None]) -> dict[int, TrialOf]:
    """Run id → the sweep trial that trained it, for the runs given (id → the folder it recorded). A trial names
    its run's folder from its start (`out_dir`, so a trial still running is found) and its id once it ended
    (`run_id`, all older trials have); the folder wins, so a run that took a removed run's id is not taken for
    its trial. Read with sqlite3 from the studies' file, read-only: listing runs must not import Optuna (seconds
    of the GUI thread) nor write to a file a sweep is writing. No file, or tables not Optuna's: no trials (a
    mark on a run, never a reason the history cannot be listed)."""
    path = studies_path(db)
    if not path.is_file():
        return {}
    try:
        with closing(sqlite3.connect(path.as_uri() + "?mode=ro", uri=True, timeout=BUSY_TIMEOUT_S)) as studies:
            rows = studies.execute(TRIAL_ATTRIBUTES).fetchall()
    except sqlite3.DatabaseError:
        return {}
    attributes: dict[TrialOf, dict[str, object]] = {}
    for sweep, number, key, value in rows:
        try:
            attributes.setdefault(TrialOf(sweep, number), {})[key] = json.loads(value)
        except (TypeError, ValueError):
            continue  # a value this code did not write
    by_folder = {_folder(folder): run_id for run_id, folder in out_dirs.items() if folder}
    found = {}
    for trial, attrs in attributes.items():
        folder = attrs.get("out_dir")
        run_id = by_folder.get(_folder(folder)) if isinstance(folder, str) else attrs.get("run_id")
        if isinstance(run_id, int) and run_id in out_dirs:
            found[run_id] = trial
    return found


def _folder(path: str) -> str:
    return str(Path(path).resolve())
