"""Sweeps: each trial a recorded run of its sampled settings, the defaults as trial 0, median pruning on each
epoch's validation accuracy, stop and resume, and the Pareto front the views and the report draw."""

from __future__ import annotations

import json
import threading

import optuna
import pytest

from workbench.core.ground.config import TrainConfig
from workbench.core.ground.events import RunFailed
from workbench.core.history.runs import RunStore
from workbench.core.history.report.sweep import sweep_html
from workbench.core.history.sweeps import Trial, axis_position, pareto_front
from workbench.core.run import sweep
from workbench.core.run.sweep import SweepError, SweepSettings, load_trials, run_sweep, sweep_parameters

from ..support.fake_sweep import fake_start_run

BASE = TrainConfig(hidden_dim=64, batch_size=250)  # big batches: few steps per trial


@pytest.mark.slow
def test_a_real_sweep_records_each_trial_as_a_run_of_its_settings_and_resumes(tmp_path):
    db = tmp_path / "runs.sqlite"
    heard, stop = [], threading.Event()

    def progress(p):
        heard.append(p)
        stop.set()  # the first trial ends: stop the sweep there

    settings = SweepSettings("s", ("lr",), "random", trials=2)
    first = run_sweep(BASE, settings, epochs=1, cuda_devices=0, db=db, runs_dir=tmp_path / "runs",
                      on_progress=progress, stop=stop)
    assert [t.state for t in first] == ["complete"] and first[0].params == {"lr": BASE.lr}  # trial 0: defaults
    assert heard[0].done == 1 and heard[0].total == 2 and heard[0].eta_seconds > 0
    # Resumed by name: the stored settings win over different ones (only the trial count may change).
    trials = run_sweep(TrainConfig(), SweepSettings("s", ("hidden_dim",), "grid", trials=2), epochs=3,
                       cuda_devices=0, db=db, runs_dir=tmp_path / "runs")
    assert [t.number for t in trials] == [0, 1] and all(t.state == "complete" for t in trials)
    assert set(trials[1].params) == {"lr"} and trials[1].params["lr"] != BASE.lr
    with RunStore(db) as store:
        for trial in trials:
            record = store.get(trial.run_id)
            assert record.config["lr"] == trial.params["lr"] and record.config["hidden_dim"] == 64
            assert record.config["epochs"] == 1 and trial.val_accuracy == record.best_val_accuracy
    assert (tmp_path / "sweeps.sqlite").is_file() and load_trials("s", db) == trials
    assert sweep_parameters("s", db) == ["lr"]


def test_a_trial_below_the_median_is_pruned_and_its_run_stopped(tmp_path, monkeypatch):
    stops: list[bool] = []
    good = [0.90, 0.92, 0.93, 0.94]
    monkeypatch.setattr(sweep, "start_run", fake_start_run([good, good, good, [0.5, 0.6, 0.7, 0.8]], stops))
    trials = run_sweep(BASE, SweepSettings("p", ("lr",), "random", trials=4), epochs=4, cuda_devices=0,
                       db=tmp_path / "runs.sqlite")
    assert [t.state for t in trials] == ["complete"] * 3 + ["pruned"]
    # Not after epoch 1 (0.5 is below the median there too): one epoch says too little.
    assert trials[3].note == "pruned after epoch 2: below the median" and stops == [True]
    assert trials[3].epochs == 2 and trials[0].val_accuracy == 0.94


def test_no_trial_is_pruned_before_three_trials_have_finished(tmp_path, monkeypatch):
    stops: list[bool] = []
    good, low = [0.90, 0.92, 0.94], [0.5, 0.6, 0.7]  # low: below every earlier trial from epoch 1 on
    monkeypatch.setattr(sweep, "start_run", fake_start_run([good, low, low], stops))
    trials = run_sweep(BASE, SweepSettings("startup", ("lr",), "random", trials=3), epochs=3, cuda_devices=0,
                       db=tmp_path / "runs.sqlite")
    assert [t.state for t in trials] == ["complete"] * 3 and stops == []  # one or two trials are no median yet
    assert [t.epochs for t in trials] == [3, 3, 3]


def test_a_trial_below_the_median_only_at_its_last_epoch_is_complete_not_pruned(tmp_path, monkeypatch):
    # Optuna's own in-memory study and median pruner: three finished trials, then one run by _run_trial.
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction="maximize",
                                pruner=optuna.pruners.MedianPruner(n_startup_trials=3, n_warmup_steps=2))
    for _ in range(3):
        finished = study.ask()
        for epoch, accuracy in enumerate([0.90, 0.91, 0.99], 1):
            finished.report(accuracy, epoch)
        study.tell(finished, 0.99)
    # Above the median at epoch 2 (0.95 against 0.91); below it at epoch 3, the last (0.96 against 0.99), where
    # the pruner alone says prune (it holds each trial's best so far against the others').
    stops: list[bool] = []
    monkeypatch.setattr(sweep, "start_run", fake_start_run([[0.95, 0.95, 0.96]], stops))
    trial = study.ask({"lr": optuna.distributions.FloatDistribution(1e-4, 3e-2, log=True)})
    result = sweep._run_trial(trial, BASE, 3, 0, tmp_path / "runs.sqlite", tmp_path / "runs",
                              lambda number, event: None, threading.Event())
    assert trial.should_prune()  # the pruner would have pruned it ...
    assert result.state == "complete" and result.note == ""  # ... but at its last epoch a trial has ended
    assert result.epochs == 3 and result.val_accuracy == 0.96 and stops == []  # its run was not stopped
    assert study.trials[3].state == optuna.trial.TrialState.COMPLETE and study.trials[3].value == 0.96


def test_failed_and_unrunnable_trials_are_failed_and_retried(tmp_path, monkeypatch):
    answers = iter([RunFailed(kind="diverged", message="loss is nan")])
    finishes = fake_start_run([[0.5]], [])

    def start_run(request, emit, stop, process=None):
        return next(answers, None) or finishes(request, emit, stop)

    monkeypatch.setattr(sweep, "start_run", start_run)
    trials = run_sweep(BASE, SweepSettings("f", ("lr",), "random", trials=1), epochs=1, cuda_devices=0,
                       db=tmp_path / "runs.sqlite")
    assert [t.state for t in trials] == ["failed", "complete"] and trials[0].note == "diverged: loss is nan"
    # A setting this machine refuses (CUDA graphs on a CPU) fails before anything starts.
    trials = run_sweep(BASE.replace(mode="reduce-overhead", backend="inductor"), SweepSettings(
        "r", ("amp",), "grid", trials=1), epochs=1, cuda_devices=0, db=tmp_path / "runs.sqlite")
    assert trials[0].state == "failed" and trials[0].note.startswith("not runnable here:")


@pytest.mark.parametrize("settings, message", [
    (SweepSettings("x", ("colour",)), "cannot search colour"),
    (SweepSettings("x", ()), "cannot search nothing"),
    (SweepSettings("x", ("lr",), "bayes"), "unknown sampler 'bayes'"),
    (SweepSettings("x", ("lr",), trials=0), "at least one trial")])
def test_settings_that_cannot_sweep_are_refused(settings, message, tmp_path):
    with pytest.raises(SweepError, match=message):
        run_sweep(BASE, settings, epochs=1, cuda_devices=0, db=tmp_path / "runs.sqlite")


def test_an_unknown_sweep_is_a_clear_error(tmp_path):
    with pytest.raises(SweepError, match="no sweep named 'nope'"):
        load_trials("nope", tmp_path / "runs.sqlite")


def trial(number, accuracy, speed, compile_s=0.0, memory=100.0, state="complete", **params):
    return Trial(number, state, params or {"lr": 1e-3}, accuracy, speed, compile_s, memory)


def test_the_pareto_front_keeps_the_trials_no_other_beats_on_every_objective():
    trials = [trial(0, 0.90, 1000), trial(1, 0.93, 500), trial(2, 0.89, 900),  # 2: beaten by 0 on both
              trial(3, 0.95, 100, memory=50.0), trial(4, 0.99, 5000, state="pruned"), trial(5, 0.90, 1000)]
    assert [t.number for t in pareto_front(trials, ("val_accuracy", "samples_per_s"))] == [0, 1, 3, 5]
    assert [t.number for t in pareto_front(trials)] == [0, 1, 3, 5]  # 3 also wins on memory
    slower = [trial(0, 0.9, 1000, compile_s=20.0), trial(1, 0.9, 1000, compile_s=5.0)]
    assert [t.number for t in pareto_front(slower)] == [1]  # equal but for compile time: the faster compile wins


def test_parallel_coordinates_place_choices_by_index_and_log_ranges_by_logarithm():
    assert axis_position("batch_size", 16) == 0.0 and axis_position("batch_size", 256) == 1.0
    assert axis_position("backend", "inductor") == 1.0
    assert axis_position("lr", 1e-4) == 0.0 and axis_position("lr", 3e-2) == pytest.approx(1.0)
    assert axis_position("lr", (1e-4 * 3e-2) ** 0.5) == pytest.approx(0.5)  # the geometric middle
    assert axis_position("dropout", 0.25) == pytest.approx(0.5) and axis_position("lr", 1.0) == 1.0  # clamped


def test_the_report_names_the_best_trial_against_the_defaults_and_draws_the_front():
    trials = [trial(0, 0.914, 16500, lr=4e-3), trial(1, 0.934, 7000, lr=9e-3), trial(2, 0.828, 500, state="pruned",
                                                                                    lr=2.6e-2)]
    page = sweep_html("demo", trials, ["lr"])
    assert "Best: trial 1, validation accuracy 93.40% with lr 0.009." in page
    assert "reached 91.40%: the best is +2.0 points." in page
    assert page.count("<svg") == 4 and "pruned after" not in page
    assert json.dumps(trials[0].to_dict())  # a trial travels as JSON (the window's worker thread, the report)


def test_the_runs_a_sweep_trained_are_named_by_their_trials(tmp_path, monkeypatch):
    """Which runs of the history are trials, read from the studies' file without Optuna (the Runs table marks
    them): a trial names its run's folder from its start, and its run's id once it ended."""
    from workbench.core.history.sweeps import TrialOf, trials_of_runs

    db = tmp_path / "runs.sqlite"
    finishes = fake_start_run([[0.9], [0.8]], [])

    def start_run(request, emit, stop, process=None):  # a run recorded in the history, as a real trial's run is
        with RunStore(db) as store:
            store.start_run(request.config.to_dict(), out_dir=request.out_dir)
        return finishes(request, emit, stop)

    monkeypatch.setattr(sweep, "start_run", start_run)
    assert trials_of_runs(db, {}) == {}  # no sweep yet: no studies' file, nothing to mark
    with RunStore(db) as store:
        own = store.start_run(BASE.to_dict(), out_dir=str(tmp_path / "own"))  # a run of the user's own
    trials = run_sweep(BASE, SweepSettings("lr search", ("lr",), "random", trials=2), epochs=1, cuda_devices=0,
                       db=db, runs_dir=tmp_path / "runs")
    with RunStore(db) as store:
        out_dirs = {record.id: record.out_dir for record in store.list()}
    assert [t.run_id for t in trials] == [2, 3]
    assert trials_of_runs(db, out_dirs) == {2: TrialOf("lr search", 0), 3: TrialOf("lr search", 1)}
    assert own not in trials_of_runs(db, out_dirs) and str(TrialOf("lr search", 1)) == "trial 1 of sweep lr search"
    # A run that took a removed trial run's id (another folder) is not that trial.
    assert trials_of_runs(db, {2: str(tmp_path / "elsewhere")}) == {}


def test_a_studies_file_that_is_not_optunas_marks_no_runs(tmp_path):
    import sqlite3
    from contextlib import closing

    from workbench.core.history.sweeps import STUDIES_FILE, trials_of_runs

    with closing(sqlite3.connect(tmp_path / STUDIES_FILE)) as other:
        other.execute("CREATE TABLE studies (id INTEGER)")
    assert trials_of_runs(tmp_path / "runs.sqlite", {1: str(tmp_path / "run")}) == {}
