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
from ..ground.events import EpochEnd, Event, RunFailed, RunFinished
from ..history.sweeps import OBJECTIVES, SEARCHABLE, Param, Progress, Trial, best_trial, studies_path
from .launch import start_run
from .queued_run import train_recorded
from .remote.ssh import Remote

SAMPLERS = ("tpe", "random", "grid")
# Optuna's states, as Trial.state says them (waiting: enqueued, not yet asked for; any other: running)
STATES = {"COMPLETE": "complete", "PRUNED": "pruned", "FAIL": "failed", "WAITING": "waiting"}


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
    optuna.logging.set_verbosity(optuna.logging.WARNING)
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
    sampler = _sampler(settings, existing[settings.name].n_trials if settings.name in existing else 0)
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


def _sampler(settings: SweepSettings, asked: int) -> optuna.samplers.BaseSampler:
    """The sweep's sampler, its seed moved on by the trials already asked (`asked`): a study loaded again (each
    queued trial's, a resumed sweep's) must not draw the first trials' random points again."""
    seed = settings.seed + asked
    if settings.sampler == "grid":
        return optuna.samplers.GridSampler({name: list(SEARCHABLE[name].points) for name in settings.parameters},
                                           seed=seed)
    if settings.sampler == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    return optuna.samplers.TPESampler(seed=seed)


def _run_trial(trial: optuna.Trial, base: TrainConfig, epochs: int, cuda_devices: int, db, runs_dir,
               on_event: Callable[[int, Event], None], sweep_stop: threading.Event,
               remote: Remote | None = None) -> Trial:
    """Train one trial's settings as a recorded run (on `remote`, if given), stopped when the pruner says so."""
    stop = threading.Event()
    run = TrialRun(trial, base, epochs)

    def emit(event: Event) -> None:
        on_event(trial.number, event)
        if sweep_stop.is_set() or run.heard(event):
            stop.set()

    try:
        ran = train_recorded(run.config, emit, stop, cuda_devices=cuda_devices, db=db, runs_dir=runs_dir,
                             remote=remote, on_folder=run.folder, start=start_run)
    except ConfigError as exc:
        return run.refused(exc)
    return run.ended(ran.outcome, ran.run_id, ran.best_val_accuracy)


class TrialRun:
    """One trial of a sweep as a recorded run: its settings asked of the study (`config`), each epoch's validation
    accuracy reported to the pruner (`heard` says when to stop), and how it ended told to the study. The sweep's own
    loop (run_sweep) and the queue (a trial entry, worked by `workbench queue work` or the window) train a trial
    through it, so a sweep run through the queue keeps the same study: pruning, the best trial, the Pareto front."""

    def __init__(self, trial: optuna.Trial, base: TrainConfig, epochs: int):
        self.trial, self.epochs = trial, epochs
        self.config = base.replace(epochs=epochs, resume=None, **trial.params)
        self.pruned_at: int | None = None
        self.epochs_done = 0
        self.told: Trial | None = None  # how the study was told it ended (once: a study refuses a second)

    @property
    def label(self) -> str:
        return f"sweep {self.trial.study.study_name} · trial {self.trial.number}"

    def heard(self, event: Event) -> bool:
        """Report an epoch's accuracy; True when the pruner stops the trial (never after its last epoch)."""
        if isinstance(event, EpochEnd) and self.pruned_at is None:
            self.epochs_done = event.epoch
            self.trial.report(event.val_accuracy, event.epoch)
            if self.trial.should_prune() and event.epoch < self.epochs:
                self.pruned_at = event.epoch
        return self.pruned_at is not None

    def folder(self, folder: str) -> None:
        self.trial.set_user_attr("out_dir", folder)

    def refused(self, exc: BaseException) -> Trial:
        """This machine cannot run the trial's settings: it fails, with the reason."""
        return self._tell(optuna.trial.TrialState.FAIL, note=f"not runnable here: {exc}")

    def stopped(self) -> Trial:
        """Its runner went away mid-run (the window closed): it fails, to be run again later (unless the study was
        told how it ended already)."""
        return self.told or self._tell(optuna.trial.TrialState.FAIL, note="stopped before it ended",
                                       epochs=self.epochs_done)

    def ended(self, result: RunFinished | RunFailed, run_id: int | None, best: float | None) -> Trial:
        """Tell the study how the run ended: COMPLETE, PRUNED, or FAIL (a failed run, or one stopped before it ended:
        run again later)."""
        TrialState = optuna.trial.TrialState
        if isinstance(result, RunFailed):
            return self._tell(TrialState.FAIL, note=f"{result.kind}: {result.message}", run_id=run_id)
        results = result.results
        figures = {"val_accuracy": best, "samples_per_s": results.samples_per_s,
                   "compile_seconds": results.compile_seconds, "peak_memory_mib": results.peak_memory_mib}
        if self.pruned_at is not None:
            return self._tell(TrialState.PRUNED, note=f"pruned after epoch {self.pruned_at}: below the median",
                              run_id=run_id, epochs=self.epochs_done, **figures)
        if result.stopped or best is None:
            return self._tell(TrialState.FAIL, note="stopped before it ended", run_id=run_id,
                              epochs=self.epochs_done, **figures)
        return self._tell(TrialState.COMPLETE, run_id=run_id, epochs=self.epochs_done, **figures)

    def _tell(self, state, **attrs) -> Trial:
        self.told = _told(self.trial, state, **attrs)
        return self.told


def next_trial(name: str, db: str | Path | None = None) -> TrialRun:
    """The next trial of the stored sweep `name` (a queued trial starting): asked of its study now, so it learns
    from every trial that ended before it."""
    if name not in sweep_names(db):
        raise SweepError(f"no sweep named {name!r}", "it was deleted: remove its queued trials")
    study, settings, base, epochs = _study(TrainConfig(), SweepSettings(name, ("lr",)), 0, db)
    return TrialRun(study.ask({name: _distribution(SEARCHABLE[name]) for name in settings.parameters}), base, epochs)


def queue_sweep(base: TrainConfig, settings: SweepSettings, *, epochs: int, db: str | Path | None = None,
                place: str = "", python: str = "python3") -> list[int]:
    """Line the sweep `settings.name` up in the queue (history/queue.py): made with its study, or resumed with the
    one stored, and a trial entry for each trial it still needs (its finished trials and those already queued
    counted). The queue entries' ids; a SweepError when none is needed."""
    from ..history.queue import RunQueue

    settings.check()
    study, settings, base, epochs = _study(base, settings, epochs, db)
    finished = sum(t.state in (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED)
                   for t in study.trials)
    with RunQueue(db) as queue:
        wanted = settings.trials - finished - len(queue.pending(settings.name))
        if wanted < 1:
            raise SweepError(f"sweep {settings.name} has its {settings.trials} trials finished or queued already",
                             "ask for more trials to go on")
        return [queue.add(base.replace(epochs=epochs), place=place, python=python, sweep=settings.name,
                          label=f"sweep {settings.name} · trial") for _ in range(wanted)]


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
