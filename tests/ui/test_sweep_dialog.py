"""Run → Sweep…: a sweep of the form's settings driven through the dialog's buttons, its trials queued and trained by
the window, each a run in the Runs dock; Stop, then Resume under the same name; closing the window with the sweep
queued; and the views drawn from made-up trials (the Pareto front's highlighting, the parallel coordinates'
scales)."""

from __future__ import annotations

import math
import re

import pytest
from PySide6.QtCore import QObject, Qt, Signal

from workbench.core.ground.config import TrainConfig, setting_named
from workbench.core.history.queue import CANCELLED, INTERRUPTED, RunQueue
from workbench.core.history.report.sweep import BEST, FRONT, OTHER
from workbench.core.history.sweeps import SEARCHABLE, Trial
from workbench.core.run.sweep import load_trials
from workbench.ui.panels.plots.style import LIGHT

from ..helpers import set_config

FINISHED = ("complete", "pruned")
SWEEP_TIMEOUT = 300_000  # each trial starts a kernel process (PyTorch imported: seconds on a loaded 2-core machine)


def configure(qtbot, dialog, name: str, parameters: tuple[str, ...], trials: int) -> None:
    """What a user would enter (once the stored sweeps are read): a name, the settings to search, a random
    sampler, one epoch a trial."""
    qtbot.waitUntil(dialog.start_button.isEnabled, timeout=30_000)
    dialog.name.setEditText(name)
    for key, box in dialog.parameter_boxes.items():
        box.setChecked(key in parameters)
    dialog.sampler.setCurrentText("random")
    dialog.trial_count.setValue(trials)
    dialog.epochs.setValue(1)


class StandInQueue(QObject):
    """The window's Queue feature as a dialog sees it, without a window: entries are queued for this computer and
    nothing trains them."""

    entryStarted = Signal(object)
    entryHeard = Signal(object, object)
    entryEnded = Signal(object)
    entryRemoved = Signal(int)
    place = ""

    def add_entries(self, add):
        return add("", "python3")


def dock_run_ids(window) -> set[int]:
    from workbench.ui.panels.runs.runs import SORT_ROLE

    proxy = window.runs.proxy
    return {int(proxy.index(row, 0).data(SORT_ROLE)) for row in range(proxy.rowCount())}


@pytest.mark.slow
def test_a_sweep_runs_each_trial_as_a_run_and_draws_every_trial(window, qtbot):
    assert window.named_actions["sweep"].shortcut().toString() == "Ctrl+Shift+W"
    assert window.named_actions["sweep"] in window.menuBar().actions()[1].menu().actions()  # the Run menu
    set_config(window, hidden_dim=16)
    window.named_actions["sweep"].trigger()
    dialog = window.search.sweep_dialog
    assert dialog.isVisible() and window.search.open_sweep() is dialog  # one per window
    configure(qtbot, dialog, "tiny", ("lr", "dropout"), trials=3)
    seen = []  # at each trial's end: the progress line and the Runs dock's rows
    dialog.trialEnded.connect(lambda trial: seen.append((trial.number, dialog.status.text(),
                                                         len(dock_run_ids(window)))))
    with qtbot.waitSignal(dialog.sweepEnded, timeout=SWEEP_TIMEOUT) as ended:
        qtbot.mouseClick(dialog.start_button, Qt.LeftButton)
        assert not dialog.start_button.isEnabled() and dialog.stop_button.isEnabled()
        assert not dialog.sampler.isEnabled()  # nothing changes while it runs
    trials = ended.args[0]
    assert [t.state for t in trials] == ["complete"] * 3, [t.note for t in trials]
    assert trials[0].params == {"lr": 0.004, "dropout": 0.2}  # trial 0: the form's settings
    assert [number for number, _text, _rows in seen] == [0, 1, 2]
    for (_number, text, _rows), next_trial in zip(seen, (2, 3)):  # the next trial may have started already
        assert re.fullmatch(rf"Trial {next_trial} of 3 queued · (starting · )?ETA \d+:\d\d", text), text
    qtbot.waitUntil(lambda: dock_run_ids(window) == {t.run_id for t in trials})  # listed again as trials ended
    assert dialog.status.text() == "Done: 3 trial(s) finished." and dialog.start_button.text() == "Resume"
    # They were queue entries, trained by the window: the Queue dock lists them as the trials they were.
    assert [(e.label, e.run_id) for e in window.queue.queue.entries()] == [
        (f"sweep tiny · trial {t.number}", t.run_id) for t in trials]
    table = dialog.table
    assert table.rowCount() == 3 and table.item(0, 2).text() == "0.004" and table.item(0, 3).text() == "0.2"
    assert table.item(1, 4).text() == f"{trials[1].val_accuracy:.2%}"
    assert sorted(dialog.parallel.lines) == [0, 1, 2]
    assert sorted(spot.data() for spot in dialog.pareto.dots.points()) == [0, 1, 2]
    best = max(trials, key=lambda t: t.val_accuracy)
    assert dialog.best.text().startswith(f"Best: trial {best.number}, val accuracy {best.val_accuracy:.2%}")


@pytest.mark.slow
def test_stop_ends_the_sweep_early_and_resume_reaches_the_count(window, qtbot):
    set_config(window, hidden_dim=16)
    dialog = window.search.open_sweep()
    configure(qtbot, dialog, "halted", ("lr",), trials=2)
    stopped = []

    def stop_once(_trial) -> None:  # as the first trial ends
        if not stopped:
            stopped.append(True)
            qtbot.mouseClick(dialog.stop_button, Qt.LeftButton)

    dialog.trialEnded.connect(stop_once)
    with qtbot.waitSignal(dialog.sweepEnded, timeout=SWEEP_TIMEOUT) as ended:
        qtbot.mouseClick(dialog.start_button, Qt.LeftButton)
    first = ended.args[0]
    assert sum(t.state in FINISHED for t in first) == 1  # the second trial was stopped (or never started)
    assert dialog.status.text() == "Stopped with 1 trial(s) finished. Resume goes on from there."
    assert dialog.start_button.text() == "Resume" and not dialog.sampler.isEnabled()  # stored: its settings kept
    with qtbot.waitSignal(dialog.sweepEnded, timeout=SWEEP_TIMEOUT) as resumed:
        qtbot.mouseClick(dialog.start_button, Qt.LeftButton)
    trials = resumed.args[0]
    assert sum(t.state in FINISHED for t in trials) == 2 and trials[0] == first[0]  # the first trial kept
    assert dialog.status.text() == "Done: 2 trial(s) finished." and dialog.table.rowCount() == len(trials)


def test_closing_the_window_and_cancelling_the_queue_ends_the_running_trial_and_the_queued_ones(window, qtbot):
    set_config(window, hidden_dim=16, epochs=3)
    dialog = window.search.open_sweep()
    configure(qtbot, dialog, "closed", ("lr",), trials=3)
    dialog.epochs.setValue(3)
    qtbot.mouseClick(dialog.start_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: dialog.epoch_text == "starting", timeout=SWEEP_TIMEOUT)  # trial 0 has begun
    assert window.queue.close_with("cancel")  # what the closing window's question answers
    window.close()
    trials = load_trials("closed", window.db)
    assert [(t.state, t.note) for t in trials] == [("failed", "stopped before it ended")]
    with RunQueue(window.db) as queue:
        assert [e.state for e in queue.entries()] == [INTERRUPTED, CANCELLED, CANCELLED]


def test_errors_are_said_in_the_dialog(qtbot, tmp_path):
    from workbench.ui.dialogs.sweep import SweepDialog
    from workbench.ui.support.tasks import Tasks

    tasks = Tasks()
    dialog = SweepDialog(tasks, StandInQueue(), LIGHT, lambda: TrainConfig(lr=0), db=tmp_path / "runs.sqlite")
    qtbot.addWidget(dialog)
    assert not dialog.start_button.isEnabled()  # until the stored sweeps are read
    qtbot.waitUntil(dialog.start_button.isEnabled, timeout=30_000)
    assert not dialog.start()
    assert dialog.status.text() == "Cannot start: Learning rate: 0 must be greater than 0 (allowed: > 0 and ≤ 100)"
    dialog.base_config = TrainConfig
    for box in dialog.parameter_boxes.values():
        box.setChecked(False)
    assert not dialog.start()
    assert dialog.status.text() == "Cannot start: cannot search nothing — choose among: " + ", ".join(
        dialog.parameter_boxes)
    assert dialog.start_button.isEnabled() and not dialog.running
    with RunQueue(tmp_path / "runs.sqlite") as queue:
        assert queue.entries() == []  # nothing queued
    tasks.wait()


def test_the_settings_to_search_are_named_as_the_setup_form_names_them(qtbot, tmp_path):
    from workbench.ui.dialogs.sweep import SweepDialog
    from workbench.ui.support.tasks import Tasks

    tasks = Tasks()
    dialog = SweepDialog(tasks, StandInQueue(), LIGHT, TrainConfig, db=tmp_path / "runs.sqlite")
    qtbot.addWidget(dialog)
    shown = {name: box.text() for name, box in dialog.parameter_boxes.items()}
    assert (shown["lr"], shown["batch_size"], shown["hidden_dim"]) == ("Learning rate", "Batch size", "Hidden size")
    assert shown == {name: setting_named(name).label for name in SEARCHABLE}
    assert dialog.chosen_parameters() == ("lr", "batch_size", "hidden_dim")  # the sweep still gets the names
    tasks.wait()


def made_up(number: int, accuracy: float | None, samples: float | None = None, compile_s: float | None = None,
            memory: float | None = None, state: str = "complete", **params) -> Trial:
    return Trial(number=number, state=state, params=params, val_accuracy=accuracy, samples_per_s=samples,
                 compile_seconds=compile_s, peak_memory_mib=memory)


PARETO_TRIALS = [made_up(0, 0.90, 100, 0.0, 500), made_up(1, 0.80, 300, 5.0, 400),
                 made_up(2, 0.70, 200, 1.0, 300), made_up(3, 0.95, 50, 9.0, 900, state="pruned"),
                 made_up(4, None, state="failed")]


@pytest.mark.parametrize("objective, front", [("samples_per_s", [0, 1]), ("compile_seconds", [0]),
                                              ("peak_memory_mib", [2, 1, 0])])
def test_the_pareto_view_highlights_and_joins_the_front_of_accuracy_and_the_chosen_objective(qtbot, objective,
                                                                                              front):
    from workbench.ui.dialogs.sweep_views import FRONT_SIZE, ParetoView

    view = ParetoView(LIGHT)
    qtbot.addWidget(view)
    view.show_trials(PARETO_TRIALS)
    view.objective.setCurrentIndex(view.objective.findData(objective))
    spots = {spot.data(): spot for spot in view.dots.points()}
    assert sorted(spots) == [0, 1, 2, 3]  # every trial measured on both axes, the pruned one too
    assert [t.number for t in view.front] == front  # in the objective's order, as the line joins them
    assert sorted(n for n, spot in spots.items() if spot.size() == FRONT_SIZE) == sorted(front)
    assert list(view.line.xData) == [getattr(PARETO_TRIALS[n], objective) for n in front]
    assert list(view.line.yData) == [100 * PARETO_TRIALS[n].val_accuracy for n in front]
    colours = {n: spot.brush().color().name() for n, spot in spots.items() if n != 3}
    assert colours[0] == BEST and all(colours[n] == FRONT for n in front if n)
    pruned = spots[3]  # hollow: outlined, not filled (its accuracy is from an earlier epoch)
    assert pruned.brush().style() == Qt.NoBrush and pruned.pen().color().name() == OTHER
    assert view.plot.getPlotItem().getAxis("bottom").labelText == view.objective.currentText()


def test_parallel_coordinates_scale_each_axis_its_own_way(qtbot):
    from workbench.ui.dialogs.sweep_views import ParallelView

    middle_lr = math.sqrt(1e-4 * 3e-2)  # halfway on the learning rate's log scale
    trials = [made_up(0, 0.5, lr=1e-4, batch_size=16), made_up(1, 0.9, lr=3e-2, batch_size=256),
              made_up(2, 0.7, lr=middle_lr, batch_size=64, state="pruned"),
              made_up(3, None, lr=1e-3, batch_size=32, state="failed")]
    view = ParallelView(LIGHT)
    qtbot.addWidget(view)
    view.show_trials(trials, ["lr", "batch_size"])
    assert sorted(view.lines) == [0, 1, 2]  # the failed trial reached no accuracy: no line
    heights = {n: list(line.yData) for n, line in view.lines.items()}
    assert heights[0] == [0.0, 0.0, 0.0] and heights[1] == [1.0, 1.0, 1.0]
    assert heights[2] == pytest.approx([0.5, 0.5, 0.5])  # lr on a log scale, batch 64 the middle choice
    assert {n: line.opts["pen"].color().name() for n, line in view.lines.items()} == {0: FRONT, 1: BEST, 2: OTHER}


def test_use_the_best_settings_puts_the_best_trials_settings_into_the_form(window, qtbot):
    dialog = window.search.open_sweep()
    assert not dialog.use_button.isEnabled()  # no trial yet
    set_config(window, epochs=3, lr=0.004, batch_size=32)
    # a pruned trial is never "the best", however accurate it was when it was cut
    dialog._show([made_up(0, 0.90, lr=0.004, batch_size=32, dropout=0.2),
                  made_up(1, 0.95, lr=0.0123, batch_size=64, dropout=0.35),
                  made_up(2, 0.99, state="pruned", lr=0.5, batch_size=16, dropout=0.1)])
    assert dialog.use_button.isEnabled()
    qtbot.mouseClick(dialog.use_button, Qt.LeftButton)
    config = window.setup.config()
    assert (config.lr, config.batch_size, config.dropout) == (0.0123, 64, 0.35)  # dropout: not on the form, kept
    assert config.epochs == 3  # what the sweep did not search stays as it was
    lines = [window.log.item(row).text() for row in range(window.log.count())]
    assert "the best trial's settings are in the form: " in lines[-1]
    assert all(part in lines[-1] for part in ("Learning rate 0.0123", "Batch size 64", "Dropout 0.35"))
    dialog.close()


def test_a_sweep_whose_queued_trials_are_all_removed_ends(qtbot, tmp_path):
    from workbench.ui.dialogs.sweep import SweepDialog
    from workbench.ui.support.tasks import Tasks

    tasks, queue = Tasks(), StandInQueue()
    dialog = SweepDialog(tasks, queue, LIGHT, TrainConfig, db=tmp_path / "runs.sqlite")
    qtbot.addWidget(dialog)
    configure(qtbot, dialog, "removed", ("lr",), trials=2)
    assert dialog.start() and dialog.running and len(dialog.ids) == 2
    with qtbot.waitSignal(dialog.sweepEnded, timeout=30_000) as ended:
        for entry_id in list(dialog.ids):  # the Queue dock's Remove, on both
            queue.entryRemoved.emit(entry_id)
    # Nothing trained: the study holds only trial 0 (the base settings), waiting to be asked for.
    assert [t.state for t in ended.args[0]] == ["waiting"] and not dialog.running and dialog.start_button.isEnabled()
    tasks.wait()
