"""The training worker: a QObject on a QThread of its own that runs one task and ends with it.

By default a run trains in a child process (core/child.py) that the worker drives: the child owns every compile
and every call of the compiled model, with a GIL of its own, so painting the plots neither slows training nor
stutters (see `workbench bench --gui` for the figures). `in_process=True` trains on the worker thread itself —
then that thread owns the compiles. Either way events are buffered on the worker thread and cross to the GUI
thread as one queued signal carrying a list, at most ~30 times a second (terminal and compile events go at once),
so training speed never drives the GUI's repaint rate. Stop is a threading.Event checked between steps.
"""

from __future__ import annotations

import threading
import time
from datetime import datetime
from pathlib import Path

from PySide6.QtCore import QObject, QThread, QTimer, Signal, Slot

from ..core import paths
from ..core.child import ChildProcess, run_in_child, start_distributed
from ..core.distributed import Launch, check_launch
from ..core.config import TrainConfig
from ..core.errors import WorkbenchError, first_line
from ..core.events import CompileReport, Event, RunFailed, Step
from ..core.runfiles import run_recorded

FORWARD_INTERVAL = 1 / 30  # seconds between batches of events sent to the GUI


class EventForwarder:
    """Collects events on the worker thread; hands them to `send` in batches, throttled to FORWARD_INTERVAL."""

    def __init__(self, send):
        self.send = send
        self.pending: list[Event] = []
        self.last_sent = 0.0

    def __call__(self, event: Event) -> None:
        self.pending.append(event)
        now = time.monotonic()
        if not isinstance(event, Step) or now - self.last_sent >= FORWARD_INTERVAL:
            self.flush(now)

    def flush(self, now: float | None = None) -> None:
        if self.pending:
            batch, self.pending = self.pending, []
            self.last_sent = time.monotonic() if now is None else now
            self.send(batch)


class TrainWorker(QObject):
    """Lives on the worker thread. Slots run there; signals are delivered to the GUI thread (queued)."""

    events = Signal(list)  # a batch of core events
    runFinished = Signal(object)  # the terminal event (RunFinished or RunFailed), after its batch
    explained = Signal(object)  # a CompileReport, or a RunFailed when explaining failed

    def __init__(self, runs_dir: Path | None, db: Path | None, *, in_process: bool, child: ChildProcess | None,
                 processes: int):
        super().__init__()
        self.stop_flag = threading.Event()
        self.runs_dir = runs_dir
        self.db = db
        self.in_process = in_process
        self.child = child  # a pre-started child process, or None to start one now
        self.processes = processes  # > 1: data-parallel ranks under torchrun

    @Slot(object)
    def train(self, config: TrainConfig) -> None:
        forward = EventForwarder(self.events.emit)
        out_dir = (self.runs_dir or paths.runs_dir()) / datetime.now().strftime("%Y%m%d-%H%M%S-%f")
        try:
            result = self._run(config, out_dir, forward)
        except Exception as exc:  # whatever happens, the GUI hears that the run ended (and can start another)
            result = RunFailed(kind="internal", message=f"{type(exc).__name__}: {first_line(exc)}",
                               hint="this looks like a bug in Workbench; the log has details")
            forward(result)
        forward.flush()
        self.runFinished.emit(result)

    def _run(self, config: TrainConfig, out_dir: Path, forward: EventForwarder):
        """The run's terminal event; a problem found before training starts becomes one too."""
        try:
            if self.processes > 1:
                launch = Launch(nproc_per_node=self.processes)
                check_launch(launch, config.batch_size, config.device)
                self.child = start_distributed(config, out_dir, launch, db=self.db)  # reachable from shutdown
                return self.child.run(None, forward, self.stop_flag)
            if self.in_process:
                return run_recorded(config, out_dir, sinks=(forward,), stop=self.stop_flag, db=self.db)
            self.child = self.child or ChildProcess()
            return run_in_child(config, out_dir, emit=forward, stop=self.stop_flag, db=self.db, child=self.child)
        except WorkbenchError as exc:  # e.g. a run folder that cannot be created: nothing was trained
            result = RunFailed(kind=exc.kind, message=str(exc), hint=exc.hint)
            forward(result)
            return result

    @Slot(object)
    def explain(self, config: TrainConfig) -> None:
        """Runs torch._dynamo.explain here, on the thread that owns compilation, never during a run."""
        from ..core.inspect import explain

        try:
            report: CompileReport | RunFailed = explain(config)
        except WorkbenchError as exc:
            report = RunFailed(kind=exc.kind, message=str(exc), hint=exc.hint)
        except Exception as exc:  # the model could not be traced at all: that is the answer
            report = RunFailed(kind="compile", message=f"explain failed: {first_line(exc)}")
        self.explained.emit(report)


class WorkerHost(QObject):
    """Starts one task (a run or an explain) at a time, each on a fresh QThread that ends with the task.

    A thread per task (superqt's pattern: moveToThread, task done → quit → wait) means the thread that compiled a
    model is the only one that ever calls it, and nothing outlives a stopped run. Python owns both objects, so
    dropping them after `wait()` deletes them. The GUI talks to training only through this object; worker signals
    arrive here, on the GUI thread, as queued calls.

    With `prestart`, a spare child process is started ahead of each run (once the event loop runs after start-up,
    and after every run), so pressing Train does not wait ~2–3 s for a fresh interpreter to import PyTorch. A spare
    that cannot be started is only a notice: the run then starts its own child, and reports why if it cannot.
    """

    events = Signal(list)
    runFinished = Signal(object)
    explained = Signal(object)
    notice = Signal(str)  # a warning for the log that belongs to no run (e.g. no spare process)
    _startTrain = Signal(object)
    _startExplain = Signal(object)

    def __init__(self, parent: QObject | None = None, runs_dir: Path | None = None, db: Path | None = None, *,
                 in_process: bool = False, prestart: bool = True):
        super().__init__(parent)
        self.runs_dir = runs_dir
        self.db = db
        self.in_process = in_process
        self.prestart = prestart
        self.processes = 1
        self.spare: ChildProcess | None = None
        self.thread: QThread | None = None
        self.worker: TrainWorker | None = None
        self.task: str | None = None  # "train" or "explain" while a task is alive
        self.closing = False
        QTimer.singleShot(0, self, self._prestart)  # once the owner has connected `notice` (and is idle)

    def _prestart(self) -> None:
        if self.prestart and not self.in_process and self.spare is None and not self.closing and not self.busy:
            try:
                self.spare = ChildProcess()
            except Exception as exc:  # OSError too (sockets, temp files): never worth more than a notice
                self.notice.emit(f"could not pre-start a training process ({type(exc).__name__}: "
                                 f"{first_line(exc)}); each run starts its own")

    def settle_spare(self) -> None:
        """Wait until the pre-started child has imported PyTorch (a benchmark must not time anything against that
        import); one that fails to start is dropped, and the next run starts its own."""
        if self.spare is not None:
            try:
                self.spare.connect()
            except WorkbenchError:
                self._drop_spare()

    def set_in_process(self, in_process: bool) -> None:
        self.in_process = in_process
        if in_process:
            self._drop_spare()
        self._prestart()

    def restart_spare(self) -> None:
        """Replace the pre-started child, e.g. after the environment it should inherit has changed."""
        self._drop_spare()
        self._prestart()

    def _drop_spare(self) -> None:
        if self.spare is not None:
            self.spare.close()
            self.spare = None

    @property
    def busy(self) -> bool:
        return self.thread is not None

    @property
    def training(self) -> bool:
        """A run is alive (Stop applies to runs only: an explain cannot be interrupted)."""
        return self.busy and self.task == "train"

    def train(self, config: TrainConfig) -> bool:
        """Start a run; refuses (returns False) while a task is alive: one task at a time."""
        return self._start(self._startTrain, config)

    def explain(self, config: TrainConfig) -> bool:
        return self._start(self._startExplain, config)

    def _start(self, signal, config: TrainConfig) -> bool:
        if self.busy:
            return False
        thread = QThread()
        thread.setObjectName("workbench-worker")
        child = None
        if signal is self._startTrain and not self.in_process and self.processes == 1:
            child, self.spare = self.spare, None
        worker = TrainWorker(self.runs_dir, self.db, in_process=self.in_process, child=child,
                             processes=self.processes)
        worker.moveToThread(thread)
        worker.events.connect(self._on_events)
        worker.runFinished.connect(self._on_finished)
        worker.explained.connect(self._on_explained)
        self._startTrain.connect(worker.train)
        self._startExplain.connect(worker.explain)
        self.thread, self.worker = thread, worker
        self.task = "train" if signal is self._startTrain else "explain"
        thread.start()
        signal.emit(config)  # queued: runs in the worker thread as soon as its event loop starts
        return True

    def stop(self) -> None:
        if self.worker is not None:
            self.worker.stop_flag.set()

    @Slot(list)
    def _on_events(self, batch: list) -> None:
        self.events.emit(batch)

    @Slot(object)
    def _on_finished(self, result) -> None:
        if self.closing:  # delivered after shutdown() waited for the thread: nobody is listening any more
            return
        self._end_task()
        self.runFinished.emit(result)  # first: whatever happens next, the window hears that the run ended
        self._prestart()  # the next run starts warm

    @Slot(object)
    def _on_explained(self, report) -> None:
        if self.closing:
            return
        self._end_task()
        self.explained.emit(report)

    def _end_task(self) -> None:
        """The task has returned; end its thread and wait for it (immediate: its event loop is idle)."""
        thread, worker = self.thread, self.worker
        self.thread = self.worker = self.task = None
        if worker is not None:
            self._startTrain.disconnect(worker.train)
            self._startExplain.disconnect(worker.explain)
        if thread is not None:
            thread.quit()
            thread.wait()

    def shutdown(self, grace_ms: int = 10_000) -> bool:
        """Stop any task and wait for its thread to end; a child that does not stop within `grace_ms` (it may be
        compiling) is terminated with its process group. True when no worker thread or child process is left."""
        self.closing = True
        self._drop_spare()
        thread, worker = self.thread, self.worker
        if thread is None:
            return True
        self.stop()
        thread.quit()  # processed after the task returns (within one step of the stop flag)
        if not thread.wait(grace_ms):
            if worker is not None and worker.child is not None:
                worker.child.terminate()  # the run then ends as RunFailed("crashed"), and the thread returns
            if not thread.wait(grace_ms):
                return False
        if worker is not None and worker.child is not None:
            worker.child.close()  # a spare handed over to a task that never ran (quit before its loop started)
        self.thread = self.worker = self.task = None
        return True
