"""Repeat with seeds…: one run's settings queued once per seed through the dialog's buttons, the progress line, each
seed's result as it ends, the group's mean ± spread once two runs have finished, Stop, and what it refuses.

The queue is the core's own, worked by its own runner (queue_worker.work, on a thread, as `workbench queue work`
would) and read as the window's Queue feature reads it; only its runs are made up (the start_run it calls is
replaced, as tests/core/test_seeds.py does): each records itself in the history as a real run does, and a run can be
held mid-way until the test lets it go."""

from __future__ import annotations

import re
import threading

import pytest
from PySide6.QtCore import QObject, Qt, QTimer, Signal

from workbench.core.ground.config import TrainConfig
from workbench.core.ground.events import EpochEnd, RunFinished, RunStarted
from workbench.core.ground.results import RunResults
from workbench.core.history.queue import RUNNING, RunQueue
from workbench.core.history.recording import RunRecorder
from workbench.core.history.runs import RunStore
from workbench.core.run import queue_worker
from workbench.core.run.seeds import SeedRun
from workbench.ui.features.queue import say_changes

from ..helpers import VERSIONS

CONFIG = TrainConfig(hidden_dim=16, epochs=2, seed=0)
ACCURACY = {0: 0.90, 1: 0.91, 2: 0.95, 5: 0.80, 6: 0.82, 7: 0.84}  # each seed's best epoch
HELD = 30  # seconds a held run waits for the test at most (a failed test must not hang the suite)


class Runs:
    """start_run for the seeds' runs: each records its events in the history (RunRecorder, as the run kernel does)
    and reaches ACCURACY[seed] at its last epoch; the run of `hold` waits after its first epoch until `go` is set
    (`until_stopped`: until the run is stopped)."""

    def __init__(self, db, hold: int | None = None, until_stopped: bool = False):
        self.db, self.hold, self.until_stopped = db, hold, until_stopped
        self.held, self.go = threading.Event(), threading.Event()

    def __call__(self, request, emit, stop, process=None):
        config = request.config
        with RunStore(self.db) as store:
            recorder = RunRecorder(store, out_dir=request.out_dir, interval=0)

            def both(event):
                recorder(event)
                emit(event)
                return event

            both(RunStarted(config=config, device="cpu", device_name="CPU", versions=VERSIONS, train_size=8,
                            val_size=2, steps_per_epoch=1, total_steps=config.epochs))
            best = ACCURACY[config.seed]
            for epoch in range(1, config.epochs + 1):
                both(EpochEnd(epoch=epoch, train_loss=0.5, val_loss=0.5,
                              val_accuracy=best if epoch == config.epochs else best - 0.1, seconds=1.0))
                if config.seed == self.hold and epoch == 1:
                    self.held.set()
                    (stop if self.until_stopped else self.go).wait(HELD)
                if stop.is_set():
                    return both(RunFinished(steps=epoch, epochs=epoch, seconds=1.0, stopped=True))
            return both(RunFinished(steps=config.epochs, epochs=config.epochs, seconds=1.0, stopped=False,
                                    results=RunResults(best_val_accuracy=best, samples_per_s=1000.0 + config.seed)))


class WorkedQueue(QObject):
    """The window's Queue feature as the dialog sees it: its entries worked by the core's runner on a thread, their
    changes read from the queue every 20 ms and said as the feature says them (say_changes)."""

    entryStarted = Signal(object)
    entryHeard = Signal(object, object)
    entryEnded = Signal(object)
    entryRemoved = Signal(int)
    place = ""

    def __init__(self, db, runs_dir):
        super().__init__()
        self.db, self.states, self.stop = db, {}, threading.Event()
        self.worker = threading.Thread(target=queue_worker.work, args=(db, self.stop), daemon=True, kwargs=dict(
            cuda_devices=0, wait=True, runs_dir=runs_dir, say=lambda line: None, emit=self._heard))
        self.timer = QTimer(self)
        self.timer.setInterval(20)
        self.timer.timeout.connect(self.read)

    def start(self) -> None:
        self.worker.start()
        self.timer.start()

    def _heard(self, event) -> None:  # on the runner's thread: the entry it trains is the one running
        if isinstance(event, (RunStarted, EpochEnd)):
            with RunQueue(self.db) as queue:
                running = next(entry for entry in queue.entries() if entry.state == RUNNING)
            self.entryHeard.emit(running, event)  # (crosses to the GUI thread)

    def read(self) -> None:
        with RunQueue(self.db) as queue:
            entries = queue.entries()
        self.states = say_changes(self, self.states, entries)

    def add_entries(self, add):
        ids = add(self.place, "python3")
        self.read()
        return ids

    def cancel_entries(self, ids) -> None:
        with RunQueue(self.db) as queue:
            for entry_id in ids:
                queue.cancel(entry_id)

    def close(self) -> None:
        self.timer.stop()
        self.stop.set()
        if self.worker.is_alive():
            self.worker.join()


@pytest.fixture
def db(tmp_path):
    return tmp_path / "runs.sqlite"


@pytest.fixture
def queue(tmp_path, db, monkeypatch):
    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path / "data"))  # the place locks
    monkeypatch.setattr(queue_worker, "IDLE_POLL_S", 0.02)
    worked = WorkedQueue(str(db), tmp_path / "runs")
    yield worked
    worked.close()


@pytest.fixture
def dialog(qtbot, db, queue):
    from workbench.ui.dialogs.seeds import SeedsDialog
    from workbench.ui.support.tasks import Tasks

    tasks = Tasks()
    widget = SeedsDialog(tasks, queue, db)
    qtbot.addWidget(widget)
    widget.show()
    yield widget
    widget.stop()
    tasks.wait()


@pytest.fixture
def make_runs(queue, db, monkeypatch):
    """The seeds' runs, made up (the one of a held seed let go at the end, should the test fail while it waits); the
    queue's runner starts once they are."""
    made: list[Runs] = []

    def make(hold: int | None = None, until_stopped: bool = False) -> Runs:
        made.append(Runs(db, hold, until_stopped))
        monkeypatch.setattr(queue_worker, "start_run", made[-1])
        if not queue.worker.is_alive():
            queue.start()
        return made[-1]

    yield make
    for held in made:
        held.go.set()


def recorded(db, config: TrainConfig, best: float, rate: float = 1000.0, status: str = "finished"):
    """A run of the history, written directly (its figures are all the dialog reads)."""
    with RunStore(db) as store:
        run_id = store.start_run(config.to_dict())
        store.append_events(run_id, 0, [], {"status": status, "best_val_accuracy": best, "samples_per_s": rate})
        return store.get(run_id)


def test_seeds_run_one_after_another_with_progress_results_and_the_groups_spread(dialog, qtbot, db, make_runs):
    original = recorded(db, CONFIG, 0.90)  # #1: seed 0, the run repeated
    runs = make_runs(hold=2)
    assert dialog.set_run(original)
    assert dialog.about.text().startswith("#1's settings: eager · off · lr 0.004, batch 32, 2 epochs · seed 0")
    assert dialog.counted.text() == "seeds 0, 1, 2"  # three seeds from the run's own
    qtbot.waitUntil(lambda: dialog.history.text() == "The history has finished seed 0 with these settings: #1.")
    assert dialog.spread.text() == ""  # one run is no spread
    ended = []
    dialog.runEnded.connect(ended.append)
    qtbot.mouseClick(dialog.start_button, Qt.LeftButton)
    assert dialog.running and not dialog.start_button.isEnabled() and dialog.stop_button.isEnabled()
    assert not dialog.count.isEnabled() and not dialog.listed.isEnabled()  # nothing changes while it runs
    qtbot.waitUntil(runs.held.is_set)  # seed 0 left out (the history has it): seed 1 ran, seed 2 is held
    qtbot.waitUntil(lambda: bool(re.fullmatch(r"Run 2 of 2 · seed 2 · epoch 1/2 · ETA \d+:\d\d", dialog.status.text())))
    assert [(run.seed, run.run_id, run.status) for run in ended] == [(1, 2, "finished")]
    assert not dialog.set_run(original)  # another run's settings wait until these seeds have ended
    assert dialog.status.text() == "Seeds are running: stop them before choosing another run."
    assert [dialog.table.item(0, column).text() for column in (0, 1, 2, 3, 5)] == ["1", "#2", "finished", "91.00%",
                                                                                  ""]
    qtbot.waitUntil(lambda: dialog.table.item(0, 4).text() == "1,001")  # its samples/s, as its run recorded it
    qtbot.waitUntil(lambda: dialog.spread.text() != "")  # two finished runs now: #1 and #2
    assert dialog.spread.text() == ("Seeds 0, 1 (2 finished runs): val accuracy 90.50% ± 0.71% (90.00%–91.00%, "
                                    "2 runs) · samples/s 1,000 ± 1 (1,000–1,001, 2 runs)")
    with qtbot.waitSignal(dialog.seedsEnded, timeout=30_000) as done:
        runs.go.set()
    assert [run.seed for run in done.args[0]] == [1, 2] and ended[-1] == done.args[0][-1]
    assert dialog.status.text() == "Done: 2 of 2 seeds finished."
    with RunQueue(db) as queue:  # queue entries like any other, named for what they repeat
        assert [(e.label, e.state) for e in queue.entries()] == [("seed 1 of #1", "finished"),
                                                                 ("seed 2 of #1", "finished")]
    assert dialog.table.rowCount() == 2 and dialog.table.item(1, 3).text() == "95.00%"
    qtbot.waitUntil(lambda: "#3" in dialog.history.text())
    assert dialog.history.text() == "The history has finished seeds 0, 1, 2 with these settings: #1, #2, #3."
    assert dialog.spread.text().startswith("Seeds 0, 1, 2 (3 finished runs): val accuracy 92.00% ± 2.65% ")
    assert dialog.start_button.isEnabled() and not dialog.stop_button.isEnabled()


def test_stop_ends_the_running_seed_and_starts_no_other(dialog, qtbot, db, make_runs):
    runs = make_runs(hold=6, until_stopped=True)
    dialog.set_run(recorded(db, CONFIG, 0.90))
    qtbot.keyClicks(dialog.listed, "5, 6, 7")  # typing a list chooses it
    assert dialog.by_list.isChecked() and dialog.chosen_seeds() == (5, 6, 7)
    dialog.skip_done.setChecked(False)
    assert dialog.start()
    qtbot.waitUntil(runs.held.is_set)
    qtbot.mouseClick(dialog.stop_button, Qt.LeftButton)
    assert dialog.status.text() == "Stopping after this step…" and not dialog.stop_button.isEnabled()
    with RunQueue(db) as queue:
        running = next(entry for entry in queue.entries() if entry.state == RUNNING)
    dialog.queue.entryHeard.emit(running, EpochEnd(epoch=2, train_loss=0.5, val_loss=0.5, val_accuracy=0.8,
                                                   seconds=1.0))
    assert dialog.status.text() == "Stopping after this step…"  # what is still heard does not hide that it stops
    with qtbot.waitSignal(dialog.seedsEnded, timeout=30_000) as done:
        pass  # the queue's runner sees the cancel and stops the held run
    assert [(run.seed, run.status) for run in done.args[0]] == [(5, "finished"), (6, "stopped")]  # 7 never began
    assert dialog.status.text() == "Stopped: 1 of 3 seeds finished."
    assert [dialog.table.item(1, column).text() for column in (0, 2, 5)] == ["6", "stopped",
                                                                             "stopped before it ended"]
    assert not dialog.stop()  # nothing running any more


def test_seeds_the_history_has_finished_are_left_out_and_with_none_left_nothing_is_queued(dialog, qtbot, db):
    for seed in (1, 2):
        recorded(db, CONFIG.replace(seed=seed), 0.9)
    dialog.set_run(recorded(db, CONFIG, 0.9))
    assert dialog.skip_done.isChecked()  # by default
    # said beside the count before anything starts, not found out after
    qtbot.waitUntil(lambda: dialog.counted.text() == "seeds 0, 1, 2 — seeds 0, 1, 2 finished already, left out: "
                                                     "0 to train")
    dialog.skip_done.setChecked(False)
    assert dialog.counted.text() == "seeds 0, 1, 2"
    dialog.skip_done.setChecked(True)
    assert not dialog.start() and not dialog.running and dialog.table.rowCount() == 0
    assert dialog.status.text() == ("Cannot start: the history has finished every one of these seeds with these "
                                    "settings — choose other seeds, or clear the box that leaves them out")


def test_nothing_is_queued_without_a_run_or_with_seeds_it_cannot_read(dialog, db):
    assert not dialog.start_button.isEnabled() and not dialog.start()  # no run chosen yet
    dialog.set_run(recorded(db, CONFIG, 0.90))
    dialog.by_list.setChecked(True)
    dialog.listed.setText("0, x")
    assert not dialog.start()
    assert dialog.status.text() == "Cannot start: 'x' is not a seed — write whole numbers separated by commas, e.g. " \
                                   "0, 1, 2"
    assert dialog.start_button.isEnabled()
    with RunQueue(db) as queue:
        assert queue.entries() == []


def test_a_run_whose_settings_another_seed_cannot_repeat_is_refused_and_the_chosen_one_kept(dialog, qtbot, db):
    plain = recorded(db, CONFIG, 0.90)
    dialog.set_run(plain)
    continued = recorded(db, CONFIG.replace(resume="/runs/1/checkpoint.pt"), 0.93)
    assert not dialog.set_run(continued)
    assert dialog.status.text() == ("Cannot repeat #2: these settings continue another run, which keeps that run's "
                                    "seed — repeat the run it continues with seeds instead")
    assert dialog.config == CONFIG and dialog.about.text().startswith("#1's settings")


def test_a_seed_the_history_has_finished_with_other_settings_is_not_these_settings(dialog, qtbot, db):
    recorded(db, CONFIG.replace(seed=1, lr=0.01), 0.5)  # another learning rate: another group
    recorded(db, CONFIG.replace(seed=2), 0.5, status="failed")  # no sample of seed 2
    dialog.set_run(recorded(db, CONFIG.replace(seed=0, epochs=3), 0.9))  # #3: three epochs
    qtbot.waitUntil(lambda: dialog.history.text() != "")
    assert dialog.history.text() == "The history has finished seed 0 with these settings: #3."
    dialog.set_run(recorded(db, CONFIG.replace(seed=4), 0.9, status="stopped"))
    qtbot.waitUntil(lambda: dialog.history.text() == "The history has no finished run of these settings yet.")


def test_every_control_is_named_for_a_screen_reader(dialog):
    from ..support.accessibility import audit

    assert audit(dialog) == ([], [])


def test_a_seed_run_is_shown_with_what_it_measured_or_a_dash(dialog):
    dialog._add_result(SeedRun(3, None, "failed", None, None, "diverged: loss is nan"))
    assert [dialog.table.item(0, column).text() for column in range(6)] == ["3", "—", "failed", "—", "—",
                                                                            "diverged: loss is nan"]


def test_the_counted_seeds_are_spelled_out_beside_their_number():
    from workbench.ui.dialogs.seeds import counted_text

    assert counted_text(4, 1) == "seed 4" and counted_text(3, 5) == "seeds 3, 4, 5, 6, 7"
    assert counted_text(3, 100) == "seeds 3–102"


def test_seeds_taken_out_of_the_queue_are_no_longer_waited_for(dialog, qtbot, db, make_runs):
    runs = make_runs(hold=5)
    dialog.set_run(recorded(db, CONFIG, 0.90))
    dialog.listed.setText("5, 6, 7")
    dialog.by_list.setChecked(True)
    dialog.skip_done.setChecked(False)
    assert dialog.start()
    qtbot.waitUntil(runs.held.is_set)  # seed 5 trains; 6 and 7 wait in the queue
    with RunQueue(db) as queue:  # the Queue dock's Remove, on the two waiting
        for entry in queue.entries():
            if entry.config.seed in (6, 7):
                queue.remove(entry.id)
    with qtbot.waitSignal(dialog.seedsEnded, timeout=30_000) as done:
        runs.go.set()
    assert [(run.seed, run.status) for run in done.args[0]] == [(5, "finished")]
    assert dialog.status.text() == "Done: 1 of 1 seeds finished." and not dialog.running
