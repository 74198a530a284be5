"""The queue in the window. Run → Add to queue lines the form's run up, for this computer or the connected host. The
Queue dock shows and changes the history's queue (history/queue.py). While the window is open it works the queue of
its place: when no run trains, it claims the next entry (taking the place's lock, as `workbench queue work` does: one
run at a time per place, whoever works it) and trains it as Train would, so its curves are drawn as they come. The
desktop is told when an entry fails and when the queue is done. Closing the window with work queued asks whether to
keep working in the background (each host's entries handed over to the host, which trains them on its own; a
`workbench queue work` of its own for this computer's), pause the queue or cancel it. What hosts trained on their own
is taken back into this history at the next opening."""

from __future__ import annotations

import math
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from typing import TYPE_CHECKING, Callable

from PySide6.QtCore import QObject, QTimer, Signal
from PySide6.QtWidgets import QMessageBox

from ...core.ground.config import TrainConfig
from ...core.ground.errors import WorkbenchError, with_hint
from ...core.ground.events import EpochEnd, Event, RunFailed, RunFinished, RunStarted
from ...core.history.queue_eta import ends_in
from ...core.history.queue import (CANCELLED, FAILED, INTERRUPTED, QUEUED, RUNNING, AcrossHosts, QueueEntry,
                                    QueueError, RunQueue, state_changes)
from ...core.run.queue_worker import (WorkDone, ask_trial, ended_state, on_device, release_place,
                                      start_background_worker, try_place)
from ...core.run.queue_handover import Collected, collect, hand_over
from ..actions import ActionSpec
from ..support.form_errors import form_text
from .parts import WindowParts
from .training import Training

if TYPE_CHECKING:
    from ...core.run.sweep import TrialRun

TRIAL_SLOT = "a sweep trial, asked of or told to its study"
PRUNE_SLOT = "a sweep trial's epoch, told to its pruner"
REFRESH_MS = 2000  # how often the queue is read again (other windows and runners change it too)
COLLECT_EVERY_S = 60.0  # how often the runs that hosts trained on their own are looked for
COLLECT_SLOT = "taking back the runs hosts trained"


def say_changes(owner, states: dict[int, str], entries: list[QueueEntry]) -> dict[int, str]:
    """`owner`'s entryStarted, entryEnded and entryRemoved for the entries whose state changed since the queue was
    read with `states` (or that are gone: removed, by this window or another); each entry's state now."""
    started, ended = state_changes(states, entries)
    for entry in started:
        owner.entryStarted.emit(entry)
    for entry in ended:
        owner.entryEnded.emit(entry)
    for entry_id in states.keys() - {entry.id for entry in entries}:
        owner.entryRemoved.emit(entry_id)
    return {entry.id: entry.state for entry in entries}


class Queue(QObject):
    """Signals say what happened to an entry, whoever trains it (this window, or a runner the queue shows working
    it): `entryStarted`, `entryEnded` and `entryRemoved` as the queue is read, `entryHeard` a run start or epoch end
    of the entry this window trains (Sweep… and Repeat with seeds… follow their entries with them)."""

    entryStarted = Signal(object)  # the QueueEntry, running now
    entryHeard = Signal(object, object)  # the QueueEntry this window trains, and its RunStarted or EpochEnd
    entryEnded = Signal(object)  # the QueueEntry, as it ended
    entryRemoved = Signal(int)  # an entry's id, taken out of the queue

    def __init__(self, parts: WindowParts, training: Training, hosts=None):
        """`hosts`: the Hosts feature, whose Hosts of a run… queues runs across a set of hosts here."""
        super().__init__(parts.window)
        self.window, self.runner, self.training, self.kernel = parts.window, parts.runner, training, parts.kernel
        self.state, self.feedback, self.notifier, self.db = parts.state, parts.feedback, parts.notifier, parts.db
        self.setup, self.panel = parts.panels.setup, parts.panels.queue
        try:
            self.queue: RunQueue | None = RunQueue(parts.db)
        except QueueError as exc:  # a read-only or broken history: the window works without a queue
            self.queue = None
            self.panel.unavailable(f"No queue: {with_hint(exc)}")
        self.current: tuple[QueueEntry, int] | None = None  # the entry this window trains, and its place's lock
        self.trial: TrialRun | None = None  # the current entry's, when it is a sweep's trial
        # A sweep's study (Optuna over SQLite) is asked, told each epoch and told the end on a thread of its own, one
        # call at a time and in order: never on the GUI thread.
        self.study = ThreadPoolExecutor(max_workers=1, thread_name_prefix="workbench-study")
        self.best: float | None = None
        self.ended: list[tuple[QueueEntry, str]] = []  # what this window worked since the queue was last empty
        self.editing: int | None = None  # the queued entry whose settings the form holds (Edit)
        self.states: dict[int, str] = {}  # each entry's state when the queue was last read
        self.tasks, self.refresh_runs = parts.tasks, parts.panels.runs.refresh
        self.collect_stop = threading.Event()  # set as the window closes: a host's run followed is left there
        self.collected_at = -math.inf  # when the hosts' runs were last taken back (time.monotonic)
        self.timer = QTimer(self)
        self.timer.setInterval(REFRESH_MS)
        self.timer.timeout.connect(self.tick)
        if self.queue is not None:
            self.timer.start()
        panel = self.panel
        panel.cancelRequested.connect(self.cancel)
        panel.retryRequested.connect(lambda entry: self._change(self.queue.retry, entry))
        panel.resumeRequested.connect(lambda entry: self._change(self.queue.resume, entry))
        panel.editRequested.connect(self.edit)
        panel.removeRequested.connect(lambda entry: self._change(self.queue.remove, entry))
        panel.moveRequested.connect(lambda entry, index: self._change(self.queue.move, entry, index))
        panel.pauseToggled.connect(lambda paused: self._change(self.queue.pause, paused))
        parts.runner.events.connect(self.saw)
        if hosts is not None:
            hosts.queueAcrossRequested.connect(self.queue_across)
        training.runFinished.connect(self.run_ended)
        if self.queue is not None:
            self.show_queue()

    def actions(self) -> tuple[ActionSpec, ...]:
        return (ActionSpec("queue", "Add to queue", lambda: self.queue_form(), "Run", 15, "Ctrl+Shift+Q", toolbar=15,
                           enabled=lambda: self.queue is not None, name="queueAction", button="queueButton",
                           keywords="line up later batch"),)

    @property
    def place(self) -> str:
        """Where this window's runs train: "" for this computer, else the connected host."""
        return str(self.runner.remote) if self.runner.remote is not None else ""

    @property
    def python(self) -> str:
        """The Python that has Workbench where this window's runs train (the connected host's)."""
        return self.runner.remote.python if self.runner.remote is not None else "python3"

    # -- lining up ----------------------------------------------------------------------------------------------
    def queue_form(self) -> int | None:
        """Run → Add to queue: the form's settings, queued last for this window's place; the entry's id."""
        config = self._form_to_queue()
        if config is None:
            return None
        if self.editing is not None:
            entry, self.editing = self.editing, None
            try:
                self.queue.update(entry, config)
                self.feedback.note("info", f"queued entry {entry} now trains the form's settings")
                self.show_queue()
                return entry
            except QueueError as exc:  # it started (or went) meanwhile: the form's settings are a new entry
                self.feedback.note("warning", f"{exc}: queued as a new entry")
        entry = self.queue.add(config, place=self.place, python=self.python)
        self.feedback.note("info", f"queued entry {entry} on {self.queue.entry(entry).where}")
        self.tick()
        return entry

    def _form_to_queue(self) -> TrainConfig | None:
        """The form's settings to queue; None (said in the banner) with no queue, or a form that cannot run."""
        if self.queue is None:
            return None
        try:
            return self.setup.config()
        except WorkbenchError as exc:
            self.feedback.show("error", f"Cannot queue: {form_text(exc)}")
            return None

    def queue_across(self, hosts: list, processes: int, port: int) -> int | None:
        """Hosts of a run… → Queue on these hosts: the form's settings, queued to train across them (checked again
        when its turn comes); the entry's id. A runner of this computer works it (the window works its own place)."""
        config = self._form_to_queue()
        if config is None:
            return None
        place = ",".join(str(host) for host in hosts)
        entry = self.queue.add(config, place=place, python=hosts[0].python, across=AcrossHosts(processes, port))
        self.feedback.note("info", f"queued entry {entry} across {place}: `workbench queue work --host {place}` "
                                   "trains it (or closing this window, keeping the queue working)")
        self.show_queue()
        return entry

    def _change(self, change, *args) -> None:
        try:
            change(*args)
        except WorkbenchError as exc:
            self.feedback.show("warning", with_hint(exc))
        self.show_queue()

    def edit(self, entry_id: int) -> None:
        """Edit: the entry's settings into the form; Add to queue then saves the form into it."""
        entry = self.queue.entry(entry_id)
        self.setup.set_config(entry.config)
        self.editing = entry_id
        self.feedback.note("info", f"editing queued entry {entry_id}: change the form, then Add to queue "
                                   "(Ctrl+Shift+Q) saves it")
        self.show_queue()

    def cancel(self, entry_id: int) -> None:
        self._change(self.queue.cancel, entry_id)
        self._stop_if_cancelled()

    # -- working ------------------------------------------------------------------------------------------------
    def tick(self) -> None:
        if self.queue is None:
            return
        self._stop_if_cancelled()
        self.work_next()
        self.show_queue()

    def show_queue(self) -> None:
        """The dock, as the history's queue is now (not `refresh`: the window calls that at every action's update)."""
        if self.queue is None:
            return
        try:
            form = self.setup.config()
        except WorkbenchError:
            form = None
        entries = self.queue.entries()
        ends = ends_in(entries, self.queue.estimates(entries), time.time())
        self.panel.show_entries(entries, paused=self.queue.paused, form=form, ends=ends, editing=self.editing)
        self.states = say_changes(self, self.states, entries)
        self._collect_soon(entries)

    # -- what hosts trained on their own (core/run/queue_handover.py) -------------------------------------------------
    def _collect_soon(self, entries: list[QueueEntry]) -> None:
        """Entries handed over to their hosts: their runs taken back (recorded here, each entry ended as its run
        did) off the GUI thread, at opening and every COLLECT_EVERY_S while some are left."""
        places = sorted({entry.place for entry in entries if entry.state == RUNNING and entry.handed})
        if (not places or self.tasks.busy(COLLECT_SLOT) or self.collect_stop.is_set()
                or time.monotonic() - self.collected_at < COLLECT_EVERY_S):
            return
        self.collected_at = time.monotonic()
        db, stop = self.db, self.collect_stop
        self.tasks.submit(COLLECT_SLOT, lambda: [collect(db, place, stop) for place in places], self._collected,
                          lambda error: self.feedback.note("warning", f"cannot take back the hosts' runs: {error}"))

    def _collected(self, results: list[Collected]) -> None:
        if self.queue is None:  # the window closed meanwhile
            return
        for result in results:
            if result.problem:
                self.feedback.note("warning", f"{result.problem}: tried again in a minute")
            for entry, state in result.ended:
                self.ended.append((entry, state))
                self.feedback.note("info", f"queue: entry {entry.id}, trained on {entry.where} on its own, {state}")
                if state == FAILED:
                    self.notifier.notify("Queued run failed", f"entry {entry.id} ({entry.title}) on {entry.where}: "
                                                              f"{entry.error}", "error")
        if any(result.ended for result in results):
            self.refresh_runs()
            if not any(entry.state in (QUEUED, RUNNING) for entry in self.queue.entries()):
                self._done()
        self.show_queue()

    def closing(self) -> None:
        """The window closes: a host's run being followed is left training there (taken back at the next opening),
        and what the sweep's study was being told is told before the window goes."""
        self.collect_stop.set()
        self.study.shutdown(wait=True)

    # -- what the dialogs line up ---------------------------------------------------------------------------------
    def add_entries(self, add: Callable[[str, str], list[int]]) -> list[int]:
        """Entries a dialog lines up (Sweep…, Repeat with seeds…) for this window's place: `add(place, python)`
        queues them (raising a WorkbenchError, nothing queued, when it cannot); their ids. They start at once when
        nothing else is queued or training here."""
        ids = add(self.place, self.python)
        self.feedback.note("info", f"queued {len(ids)} run(s) on {self.place or 'this computer'}")
        self.tick()
        return ids

    def cancel_entries(self, ids: list[int]) -> None:
        """Cancel each of `ids` still queued or running (Stop in a dialog); the running one stops after its step."""
        for entry_id in ids:
            try:
                self.queue.cancel(entry_id)
            except QueueError:  # removed meanwhile: nothing to cancel
                pass
        self._stop_if_cancelled()
        self.show_queue()

    def work_next(self) -> bool:
        """Train the next entry of this window's place, when nothing trains here; True when one started. The window
        works the place's first slot (its first CUDA device, or the CPU), one entry at a time: its curves are
        drawn. `workbench queue work --parallel N` works the other devices' slots beside it."""
        if (self.current is not None or self.runner.training or self.state.train_waiting
                or not self.kernel.capabilities.known or self.queue.paused):
            return False
        lock = try_place(self.place)
        if lock is None:  # another runner trains an entry on this slot's device
            return False
        device = "cuda:0" if self.kernel.capabilities.cuda_devices else ""
        entry = self.queue.claim(self.place, device=device)
        if entry is None:
            release_place(lock)
            return False
        self.current, self.best, self.trial = (entry, lock), None, None
        if not entry.sweep:
            return self._train_entry(entry, None, device)
        # A sweep's trial: its settings asked of the study (Optuna: SQLite, ~0.15 s) off the GUI thread.
        db = self.db
        self.tasks.watch(TRIAL_SLOT, self.study.submit(ask_trial, db, entry),
                         lambda trial: self._train_entry(entry, trial, device),
                         lambda exc: self._end(FAILED, None, with_hint(exc)))  # a sweep whose study is gone
        return True

    def _train_entry(self, entry: QueueEntry, trial: TrialRun | None, device: str) -> bool:
        """Train the claimed entry (with its trial's settings, once asked) as Train would."""
        if self.current is None or self.current[0].id != entry.id:  # the window closed while the study answered
            if trial is not None:
                trial.stopped()
            return False
        self.trial = trial
        if self.queue.cancel_asked(entry.id):  # cancelled while its study answered: it never starts
            if trial is not None:
                self.study.submit(trial.stopped)
            self._end(CANCELLED, None, "cancelled")
            return False
        self.feedback.note("info", f"queue: entry {entry.id} ({trial.label if trial else entry.title}) starts")
        if not self.training.train(on_device(trial.config if trial else entry.config, device)):
            if trial is not None:
                self.study.submit(trial.refused, WorkbenchError("the window could not start it"))
            self._end(FAILED, None, "the window could not start it: the banner says why")
            return False
        return True

    def saw(self, batch: list[Event]) -> None:
        if self.current is None:
            return
        entry = self.current[0]
        for event in batch:
            if isinstance(event, EpochEnd):
                self.best = max(self.best or 0.0, event.val_accuracy)
                if self.trial is not None:  # told to the pruner, off the GUI thread, in order
                    self.tasks.watch(PRUNE_SLOT, self.study.submit(self.trial.heard, event),
                                     lambda pruned: pruned and self._prune(entry.id), self._study_failed)
            if isinstance(event, (RunStarted, EpochEnd)):
                self.entryHeard.emit(entry, event)

    def _prune(self, entry_id: int) -> None:
        """Below the median of the trials before it: its run stops after its step."""
        if self.current is not None and self.current[0].id == entry_id and self.runner.training:
            self.training.stop()

    def _study_failed(self, error: BaseException) -> None:
        self.feedback.note("warning", f"the sweep's study could not be told: {error}")

    def run_ended(self, result: RunFinished | RunFailed) -> None:
        if self.current is None:
            return
        entry, trial, run_id, best = self.current[0], self.trial, self.state.shown_run, self.best
        if trial is None:
            self._finish(entry, *ended_state(result, True, None, run_id, best), run_id)
            return
        self.tasks.watch(TRIAL_SLOT, self.study.submit(ended_state, result, True, trial, run_id, best),
                         lambda told: self._finish(entry, *told, run_id),
                         lambda exc: self._finish(entry, FAILED, with_hint(exc), run_id))

    def _finish(self, entry: QueueEntry, state: str, error: str, run_id: int | None) -> None:
        """The entry ended as its run did (its trial told to the study first); the next one starts."""
        if self.current is None or self.current[0].id != entry.id:  # the window closed meanwhile
            return
        self._end(state, run_id, error)
        if not any(e.state == QUEUED and e.place == entry.place for e in self.queue.entries()):
            self._done()
        QTimer.singleShot(0, self.tick)

    def _end(self, state: str, run_id: int | None, error: str) -> None:
        entry, lock = self.current
        self.current = None
        self.queue.ended(entry.id, state, run_id=run_id, best=self.best, error=error)
        release_place(lock)
        ended = self.queue.entry(entry.id)
        self.ended.append((ended, state))
        if state == FAILED:
            self.notifier.notify("Queued run failed", f"entry {entry.id} ({entry.title}): {error}", "error")
        self.show_queue()

    def _done(self) -> None:
        text = WorkDone(self.ended).said()
        self.feedback.note("info", f"queue done: {text}")
        self.notifier.notify("Queue done", text, "info")
        self.ended = []

    def _stop_if_cancelled(self) -> None:
        if self.current is not None and self.queue.cancel_asked(self.current[0].id):
            self.training.stop()

    # -- closing ------------------------------------------------------------------------------------------------
    def ask_to_close(self) -> bool:
        """Closing with work queued (here or on hosts): keep working in the background, pause, or cancel the queued
        entries; False: the user chose not to close. The entry this window trains is interrupted (and, to keep
        working, queued again)."""
        if self.queue is None:
            return True
        places = self._waiting_places()
        if not places and self.current is None:
            return True
        waiting = sum(1 for entry in self.queue.entries() if entry.state == QUEUED)
        where = " and ".join(place or "this computer" for place in places) or self.place or "this computer"
        box = QMessageBox(QMessageBox.Question, "Runs are queued", f"{waiting} run(s) are queued"
                          + (" and one is training" if self.current else "") + f" on {where}.", QMessageBox.Cancel,
                          self.window)
        box.setObjectName("closeQueueQuestion")
        keep = box.addButton("Keep working in the background", QMessageBox.AcceptRole)
        pause = box.addButton("Pause the queue", QMessageBox.ActionRole)
        cancel = box.addButton("Cancel them", QMessageBox.DestructiveRole)
        box.setDefaultButton(keep)
        box.exec()
        return self.close_with({keep: "keep", pause: "pause", cancel: "cancel"}.get(box.clickedButton()))

    def close_with(self, choice: str | None) -> bool:
        """What ask_to_close does with the user's `choice` ("keep", "pause", "cancel"; None: stay open). To keep
        working hands each host's entries over to the host (_keep_working), and starts a `workbench queue work` of
        its own for this computer's."""
        if choice is None:
            return False
        if self.current is not None:
            entry = self.current[0]
            if self.trial is not None:  # after whatever the study is still being told (a run that just ended)
                self.study.submit(self.trial.stopped).result()
            self._end(INTERRUPTED, self.state.shown_run, "the window closed while it trained")
            if choice == "keep":
                self.queue.retry(entry.id)
        if choice == "pause":
            self.queue.pause()
        elif choice == "cancel":
            for entry in self.queue.entries():
                if entry.state == QUEUED:
                    self.queue.cancel(entry.id)
        else:
            self.queue.pause(False)  # to keep working is to go on
            for place in self._waiting_places():
                self._keep_working(place)
        return True

    def _keep_working(self, place: str) -> None:
        """A host's entries are handed over to the host, which trains them on its own (with no connection to this
        computer); what it cannot take (a sweep's trials, a host not answering) and this computer's entries are
        worked by a `workbench queue work` of their own in the background."""
        if place and "," not in place:  # (a host set's entries: its hosts train them together, started from here)
            try:
                _ids, said = hand_over(self.db, place)
                if said:
                    self.feedback.note("info", said)
            except WorkbenchError as exc:
                self.feedback.note("warning", f"{place} could not take its queue ({exc}): this computer trains its "
                                              "entries there over SSH instead")
            if place not in self._waiting_places():
                return
        pid = start_background_worker(self.db, place)
        self.feedback.note("info", f"the queue of {place or 'this computer'} goes on in the background "
                                   f"(workbench queue work, pid {pid})")

    def _waiting_places(self) -> list[str]:
        """The places with queued entries, in queue order."""
        return list(dict.fromkeys(entry.place for entry in self.queue.entries() if entry.state == QUEUED))

    def close(self) -> None:
        self.timer.stop()
        if self.queue is not None:
            self.queue.close()
            self.queue = None  # whatever comes late (a task's answer updating the actions) finds no queue
