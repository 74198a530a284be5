"""Sweeps: search the settings with Optuna, each trial a recorded run in a kernel process of its own.

Optuna samples (grid, random or TPE) and prunes (the median rule on each epoch's validation accuracy); the study
lives in SQLite beside the run history (`sweeps.sqlite`), so a stopped sweep resumes where it was, and every trial
points at its run (`run_id`), whose curves, checkpoint and report the history already keeps. The first trial of a
new random or TPE sweep is the base settings themselves (when the search space holds them), so the best trial is
held against the defaults.

A trial is judged by its best validation accuracy; its samples/s, compile seconds and peak memory are kept beside
it for the Pareto front (history/sweeps.py). Torch-free: the trials train in their own processes (here, or on a
host over SSH: the study and the history stay on this computer).
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Callable

import optuna

from ..ground.config import ConfigError, TrainConfig
from ..ground.errors import WorkbenchError
from ..ground.events import EpochEnd, Event, RunFailed
from ..history.sweeps import OBJECTIVES, SEARCHABLE, Param, Progress, Trial, best_trial, studies_path
from .launch import start_run
from .queued_run import train_recorded
from .remote.ssh import Remote

SAMPLERS = ("tpe", "random", "grid")
STATES = {"COMPLETE": "complete", "PRUNED": "pruned", "FAIL": "failed"}  # Optuna's, as Trial.state says them


class SweepError(WorkbenchError):
    kind = "config"


@dataclass(frozen=True)
class SweepSettings:
    name: str
    parameters: tuple[str, ...]  # keys of SEARCHABLE
    sampler: str = "tpe"
    trials: int = 12
    seed: int = 0

    def check(self) -> None:
        unknown = [p for p in self.parameters if p not in SEARCHABLE]
        if unknown or not self.parameters:
            raise SweepError(f"cannot search {', '.join(unknown) or 'nothing'}",
                             f"choose among: {', '.join(SEARCHABLE)}")
        if self.sampler not in SAMPLERS:
            raise SweepError(f"unknown sampler {self.sampler!r}", f"one of: {', '.join(SAMPLERS)}")
        if self.trials < 1:
            raise SweepError("a sweep needs at least one trial")


def storage_url(db: str | Path | None) -> str:
    """The studies' SQLite file, beside the run history's (its folder made when missing)."""
    path = studies_path(db)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SweepError(f"cannot keep sweeps in {path.parent}: {exc.strerror or exc}",
                         "choose a history database in a folder you can write to (--db)") from None
    return f"sqlite:///{path}"


def run_sweep(base: TrainConfig, settings: SweepSettings, *, epochs: int, cuda_devices: int,
              db: str | Path | None = None, runs_dir: str | Path | None = None,
              on_progress: Callable[[Progress], None] = lambda progress: None,
              on_event: Callable[[int, Event], None] = lambda number, event: None,
              stop: threading.Event | None = None, remote: Remote | None = None) -> list[Trial]:
    """Run the sweep `settings.name` (resumed when its study exists) until it holds `settings.trials` finished
    trials or `stop` is set; each trial trains `base` with its sampled settings for `epochs` epochs. Returns every
    trial of the study. `remote`: the trials train on that host (the study, and the trials' records, stay here)."""
    settings.check()
    stop = stop or threading.Event()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study, settings, base, epochs = _study(base, settings, epochs, db)
    distributions = {name: _distribution(SEARCHABLE[name]) for name in settings.parameters}
    durations = [t.duration.total_seconds() for t in study.trials if t.duration and t.state.is_finished()]
    for _attempt in range(2 * settings.trials):  # failed trials (a setting this machine refuses) are retried
        finished = [t for t in study.trials if t.state in (optuna.trial.TrialState.COMPLETE,
                                                           optuna.trial.TrialState.PRUNED)]
        if len(finished) >= settings.trials or stop.is_set():
            break
        trial = study.ask(distributions)
        started = time.monotonic()
        result = _run_trial(trial, base, epochs, cuda_devices, db, runs_dir, on_event, stop, remote)
        durations.append(time.monotonic() - started)
        left = settings.trials - len(finished) - (result.state in ("complete", "pruned"))
        trials = trials_of(study)
        on_progress(Progress(done=settings.trials - left, total=settings.trials, trial=result, trials=trials,
                             eta_seconds=left * sum(durations) / len(durations), best=best_trial(trials)))
    return trials_of(study)


def _study(base: TrainConfig, settings: SweepSettings, epochs: int,
           db: str | Path | None) -> tuple[optuna.Study, SweepSettings, TrainConfig, int]:
    """The sweep's study: created with its sampler, the median pruner and its settings, or loaded to resume (with
    the sampler, settings, base config and epochs it was made with; only the trial count may change). A grid holds
    at most its own number of trials."""
    storage = storage_url(db)
    existing = {s.study_name: s for s in optuna.get_all_study_summaries(storage)}
    if settings.name in existing:
        saved = existing[settings.name].user_attrs
        settings = SweepSettings(**{**saved["settings"], "parameters": tuple(saved["settings"]["parameters"]),
                                    "trials": settings.trials})
        base, epochs = TrainConfig.from_dict(saved["base"]), saved["epochs"]
    if settings.sampler == "grid":
        settings = replace(settings, trials=min(settings.trials, math.prod(
            len(SEARCHABLE[name].points) for name in settings.parameters)))
    sampler = _sampler(settings)
    # Prune below the median of earlier trials at the same epoch, once 3 trials have finished; never after epoch 1
    # alone (Optuna prunes from step n_warmup_steps on): one epoch says little about a small learning rate.
    pruner = optuna.pruners.MedianPruner(n_startup_trials=3, n_warmup_steps=2)
    study = optuna.create_study(study_name=settings.name, storage=storage, direction="maximize", sampler=sampler,
                                pruner=pruner, load_if_exists=True)
    if settings.name not in existing:
        study.set_user_attr("settings", {**asdict(settings), "parameters": list(settings.parameters)})
        study.set_user_attr("base", base.to_dict())
        study.set_user_attr("epochs", epochs)
        defaults = {name: getattr(base, name) for name in settings.parameters}
        # Trial 0: the base settings, to hold the best trial against (when the search space holds them).
        if settings.sampler != "grid" and all(SEARCHABLE[k].contains(v) for k, v in defaults.items()):
            study.enqueue_trial(defaults)
    return study, settings, base, epochs


def _distribution(param: Param) -> optuna.distributions.BaseDistribution:
    if param.choices:
        return optuna.distributions.CategoricalDistribution(param.choices)
    return optuna.distributions.FloatDistribution(param.low, param.high, log=param.log)


def _sampler(settings: SweepSettings) -> optuna.samplers.BaseSampler:
    if settings.sampler == "grid":
        return optuna.samplers.GridSampler({name: list(SEARCHABLE[name].points) for name in settings.parameters},
                                           seed=settings.seed)
    if settings.sampler == "random":
        return optuna.samplers.RandomSampler(seed=settings.seed)
    return optuna.samplers.TPESampler(seed=settings.seed)


def _run_trial(trial: optuna.Trial, base: TrainConfig, epochs: int, cuda_devices: int, db, runs_dir,
               on_event: Callable[[int, Event], None], sweep_stop: threading.Event,
               remote: Remote | None = None) -> Trial:
    """Train one trial's settings as a recorded run (on `remote`, if given); report each epoch's validation
    accuracy to the pruner and stop the run when it says so. The trial is told COMPLETE, PRUNED or FAIL."""
    TrialState = optuna.trial.TrialState
    stop = threading.Event()
    pruned_at: list[int] = []
    epochs_done = 0

    def emit(event: Event) -> None:
        nonlocal epochs_done
        on_event(trial.number, event)
        if sweep_stop.is_set():
            stop.set()
        if isinstance(event, EpochEnd):
            epochs_done = event.epoch
            trial.report(event.val_accuracy, event.epoch)
            if trial.should_prune() and event.epoch < epochs:
                pruned_at.append(event.epoch)
                stop.set()

    try:
        config = base.replace(epochs=epochs, resume=None, **trial.params)
        ran = train_recorded(config, emit, stop, cuda_devices=cuda_devices, db=db, runs_dir=runs_dir, remote=remote,
                             on_folder=lambda folder: trial.set_user_attr("out_dir", folder), start=start_run)
    except ConfigError as exc:
        return _told(trial, TrialState.FAIL, note=f"not runnable here: {exc}")
    result, run_id = ran.outcome, ran.run_id
    if isinstance(result, RunFailed):
        return _told(trial, TrialState.FAIL, note=f"{result.kind}: {result.message}", run_id=run_id)
    results = result.results
    figures = {"val_accuracy": ran.best_val_accuracy, "samples_per_s": results.samples_per_s,
               "compile_seconds": results.compile_seconds, "peak_memory_mib": results.peak_memory_mib}
    if pruned_at:
        return _told(trial, TrialState.PRUNED, note=f"pruned after epoch {pruned_at[0]}: below the median",
                     run_id=run_id, epochs=epochs_done, **figures)
    if result.stopped or figures["val_accuracy"] is None:  # the sweep was stopped mid-trial: run it again later
        return _told(trial, TrialState.FAIL, note="stopped before it ended", run_id=run_id, epochs=epochs_done,
                     **figures)
    return _told(trial, TrialState.COMPLETE, run_id=run_id, epochs=epochs_done, **figures)


def _told(trial: optuna.Trial, state, note: str = "", **attrs) -> Trial:
    """Record the trial's figures on it and tell the study how it ended; the Trial the views show."""
    for key, value in {"note": note, **attrs}.items():
        trial.set_user_attr(key, value)
    value = attrs.get("val_accuracy") if state == optuna.trial.TrialState.COMPLETE else None
    try:
        trial.study.tell(trial, value, state=state)
    except RuntimeError as exc:  # a used-up grid calls study.stop(), which only optimize() allows: told all the same
        if "Study.stop" not in str(exc):
            raise
    return _trial(trial.study.trials[trial.number])


def trials_of(study: optuna.Study) -> list[Trial]:
    return [_trial(t) for t in study.trials]


def load_trials(name: str, db: str | Path | None = None) -> list[Trial]:
    """A stored sweep's trials (the views and the report read them back)."""
    return trials_of(_stored(name, db))


def sweep_parameters(name: str, db: str | Path | None = None) -> list[str]:
    """The settings a stored sweep searches (the report's axes)."""
    return list(_stored(name, db).user_attrs["settings"]["parameters"])


def _stored(name: str, db: str | Path | None) -> optuna.Study:
    try:
        return optuna.load_study(study_name=name, storage=storage_url(db))
    except KeyError:
        raise SweepError(f"no sweep named {name!r}", "workbench sweep --list shows the sweeps") from None


def sweep_names(db: str | Path | None = None) -> list[str]:
    return [s.study_name for s in optuna.get_all_study_summaries(storage_url(db))]


def _trial(frozen: optuna.trial.FrozenTrial) -> Trial:
    attrs = frozen.user_attrs
    return Trial(number=frozen.number, state=STATES.get(frozen.state.name, "running"),
                 params=dict(frozen.params), seconds=frozen.duration.total_seconds() if frozen.duration else None,
                 **{key: attrs.get(key) for key in (*OBJECTIVES, "run_id")}, epochs=attrs.get("epochs", 0),
                 note=attrs.get("note", ""))
