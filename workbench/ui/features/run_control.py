"""Runs seen from the window: one at a time, in a kernel process of its own, events throttled to ~30 Hz.

A run is `start_run(request, emit, stop)` on a pool thread (the `run` slot of Tasks) driving a run kernel: the
kernel owns every compile and every call of the compiled model, with a GIL of its own, so painting the plots
neither slows training nor stutters (`workbench bench --gui` measures it). Events are buffered on that thread and
cross to the GUI thread as one queued signal carrying a list, at most ~30 times a second (terminal, compile and
notice events go at once), so training speed never drives the repaint rate. Stop is a threading.Event the kernel
hears between steps.

A spare run kernel is started ahead of each run (after start-up and after every run), so Train does not wait
~2–4 s for a fresh interpreter to import PyTorch. A spare that cannot be started is only a notice.

Connected to another host (`set_remote`), a run trains there under a supervisor of its own (a RemoteRun; the spare
is there too: a supervisor started ahead with its kernel, held by an SSH session), and the window can follow one
of the host's runs from its first event (`attach`); closing the window can leave such a run training there
(`shutdown(leave=True)`: no cancel is sent).
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Callable

from PySide6.QtCore import QObject, QTimer, Signal

from ...core.ground.errors import WorkbenchError, first_line
from ...core.ground.stacks import RankStack
from ...core.ground.events import Event, RunFailed, RunFinished, Step
from ...core.run.hosts.across import AcrossRun
from ...core.run.hosts.preflight import Preflight
from ...core.run.launch import start_run
from ...core.run.process import ChildProcess, start_distributed
from ...core.run.remote.kernels import RemoteRun, RemoteSpare
from ...core.run.run_request import RunRequest
from ...core.run.remote.ssh import Remote
from ..support.tasks import Tasks

FORWARD_INTERVAL = 1 / 30  # seconds between batches of events sent to the GUI
HELD_STEPS_S = 0.25  # steps the throttle held back are sent after this long without another event
SLOT = "run"
SPARE_SLOT = "starting a run kernel on the host"


class EventForwarder:
    """Collects events on the run's thread; hands them to `send` in batches, throttled to FORWARD_INTERVAL. Steps
    held back by the throttle are sent by a ticker thread too, so that a run that goes silent (a hang, a long
    evaluation) still shows its last steps. Batches go out under one lock, in order."""

    def __init__(self, send):
        self.send = send
        self.pending: list[Event] = []
        self.last_sent = 0.0
        self.lock = threading.Lock()
        self.closed = threading.Event()
        threading.Thread(target=self._tick, name="workbench-forward", daemon=True).start()

    def __call__(self, event: Event) -> None:
        with self.lock:
            self.pending.append(event)
        now = time.monotonic()
        if not isinstance(event, Step) or now - self.last_sent >= FORWARD_INTERVAL:
            self.flush(now)

    def flush(self, now: float | None = None) -> None:
        with self.lock:
            if self.pending:
                batch, self.pending = self.pending, []
                self.last_sent = time.monotonic() if now is None else now
                self.send(batch)

    def close(self) -> None:
        """The run is over: what is left goes out, and the ticker ends."""
        self.closed.set()
        self.flush()

    def _tick(self) -> None:
        while not self.closed.wait(HELD_STEPS_S):
            self.flush()


class RunControl(QObject):
    events = Signal(list)  # a batch of core events (emitted on the run's thread: queued to the GUI thread)
    runFinished = Signal(object)  # the terminal event (RunFinished or RunFailed), after its batch
    notice = Signal(str)  # a warning that belongs to no run (e.g. no spare process)

    def __init__(self, tasks: Tasks, parent: QObject | None = None, *, prestart: bool = True):
        super().__init__(parent)
        self.tasks = tasks
        self.prestart = prestart
        self.spare: ChildProcess | RemoteSpare | None = None  # a run kernel started ahead, here or on the host
        self.process: ChildProcess | RemoteRun | None = None  # the running run's kernel (or torchrun, or host)
        self.remote: Remote | None = None  # the host runs train on; None: this computer
        self.run_remote: Remote | None = None  # where the latest run trained (its files are there), kept after it
        self.stop_flag: threading.Event | None = None
        self.closing = False
        QTimer.singleShot(0, self, self._prestart)  # once the owner has connected `notice` (and is idle)

    @property
    def training(self) -> bool:
        return self.tasks.busy(SLOT)

    def _prestart(self) -> None:
        if not self.prestart or self.spare is not None or self.closing or self.training:
            return
        if self.remote is not None:
            self._prestart_there(self.remote)
            return
        try:
            self.spare = ChildProcess()
        except Exception as exc:  # OSError too (sockets, temp files): never worth more than a notice
            self.notice.emit(f"could not pre-start a training process ({type(exc).__name__}: "
                             f"{first_line(exc)}); each run starts its own")

    def _prestart_there(self, remote: Remote) -> None:
        """A spare run kernel on the host, asked for off the GUI thread (an SSH session takes a moment); kept if
        nothing has changed meanwhile (same host, no run started, not closing)."""
        def made(spare: RemoteSpare) -> None:
            if self.remote == remote and self.spare is None and not self.closing and not self.training:
                self.spare = spare
            else:
                spare.close()

        def failed(error: BaseException) -> None:
            self.notice.emit(f"could not pre-start a training process on {remote} ({first_line(error)}); each run "
                             "there starts its own")

        self.tasks.submit(SPARE_SLOT, lambda: RemoteSpare(remote), made, failed, exclusive=True)

    def settle_spare(self) -> None:
        """Wait until the spare kernel has imported PyTorch (a benchmark must not time anything against that
        import); one that fails to start is dropped, and the next run starts its own."""
        if isinstance(self.spare, ChildProcess):
            try:
                self.spare.connect()
            except WorkbenchError:
                self._drop_spare()

    def restart_spare(self) -> None:
        """Replace the spare, e.g. after the environment it should inherit has changed."""
        self._drop_spare()
        self._prestart()

    def _drop_spare(self) -> None:
        if self.spare is not None:
            self.spare.close()
            self.spare = None

    def set_remote(self, remote: Remote | None) -> bool:
        """Runs train on `remote` from now on (None: on this computer, with a spare kernel again); False, and
        nothing changed, while a run is alive (it stays where it started)."""
        if self.training:
            return False
        self.remote = remote
        self._drop_spare()
        self._prestart()
        return True

    def start(self, request: RunRequest) -> bool:
        """Start a run; False while one is alive (one at a time)."""
        if self.training or self.closing:
            return False
        try:
            process = self._process_for(request)
        except WorkbenchError as exc:  # no process could be started: the run ends here, as a failure
            failure = RunFailed(kind=exc.kind, message=str(exc), hint=exc.hint)
            return self._submit(None, lambda forward, _stop: _failed(forward, failure))
        return self._submit(process, lambda forward, stop: start_run(request, forward, stop, process=process))

    def start_across(self, request: RunRequest, hosts: list[Remote], checked: Preflight, slots: int) -> bool:
        """Start a run across `hosts` after their green preflight `checked` (core/run/hosts/across.py: one torchrun
        a host, the first streaming the events); False while one is alive. Stop stops every rank on every host."""
        if self.training or self.closing:
            return False
        across = AcrossRun(hosts, checked, slots, db=request.db)
        return self._submit(across, lambda forward, stop: across.run(request, forward, stop))

    def attach(self, key: str, db: str | Path | None = None) -> bool:
        """Follow the host's run `key` as a run of this window: its events from the first (the plots show what
        it has done so far, then live), recorded in the history `db`. False when not connected or one is alive."""
        if self.remote is None or self.training or self.closing:
            return False
        process = RemoteRun(self.remote, db=None if db is None else str(db))
        return self._submit(process, lambda forward, stop: process.attach(key, forward, stop))

    def _process_for(self, request: RunRequest) -> ChildProcess | RemoteRun:
        if self.remote is not None:
            spare, self.spare = self.spare, None
            return RemoteRun(self.remote, db=request.db, spare=spare if isinstance(spare, RemoteSpare) else None)
        if request.launch.distributed:
            return start_distributed(request)
        process, self.spare = (self.spare or ChildProcess()), None
        return process

    def _submit(self, process: ChildProcess | RemoteRun | AcrossRun | None,
                job: Callable[[EventForwarder, threading.Event], RunFinished | RunFailed]) -> bool:
        """`job(forward, stop)` in the run slot: its events forwarded to the GUI thread, and whatever happens,
        a terminal event last."""
        stop = threading.Event()
        forward = EventForwarder(self.events.emit)

        def run():
            try:
                return job(forward, stop)
            except Exception as exc:  # whatever happens, the window hears that the run ended
                result = RunFailed(kind="internal", message=f"{type(exc).__name__}: {first_line(exc)}",
                                   hint="this looks like a bug in Workbench; the log has details")
                forward(result)
                return result
            finally:
                forward.close()

        self.process, self.stop_flag = process, stop
        self.run_remote = process.remote if isinstance(process, RemoteRun) else None
        return self.tasks.submit(SLOT, run, self._finished, self._crashed, exclusive=True)

    def stop(self) -> None:
        if self.stop_flag is not None:
            self.stop_flag.set()

    @property
    def host_out_dir(self) -> str | None:
        """The running run's folder on its host, once the host has started it; None for a run on this computer."""
        started = self.process.started if isinstance(self.process, RemoteRun) else None
        return started.out_dir if started is not None else None

    @property
    def profilable(self) -> bool:
        """A run is training in one process: it can be asked for a profile (several processes plan their steps
        together, and only rank 0 hears the window)."""
        return self.training and self.process is not None and self.process.ranks == 1

    @property
    def stackable(self) -> bool:
        """A run of several processes is training: its ranks can be asked for their stacks."""
        return self.training and self.process is not None and self.process.ranks > 1

    def collect_stacks(self) -> list[RankStack]:
        """Every rank's stack and last collectives (off the GUI thread: it may ask hosts over SSH); none when no
        run of several processes trains."""
        process = self.process
        return process.collect_stacks() if process is not None and process.ranks > 1 else []

    def request_profile(self, steps: int) -> bool:
        """Ask the training kernel to profile its next `steps` steps; False when no run can be asked."""
        if not self.profilable:
            return False
        self.process.profile(steps)
        return True

    def _crashed(self, error: BaseException) -> None:
        """run() catches everything: this is a bug, but the run ends visibly."""
        self._finished(RunFailed(kind="internal", message=f"{type(error).__name__}: {first_line(error)}"))

    def _finished(self, result: RunFinished | RunFailed) -> None:
        self.process = self.stop_flag = None
        if self.closing:
            return
        self.runFinished.emit(result)  # first: whatever happens next, the window hears that the run ended
        self._prestart()  # the next run starts warm

    def shutdown(self, grace_ms: int = 10_000, *, leave: bool = False) -> bool:
        """Stop the run and wait for it; a kernel that does not stop within `grace_ms` (it may be compiling) is
        terminated with its process group. `leave`: a run on a host is left training there instead (this side
        stops following it; no cancel is sent). True when no run thread or process is left."""
        self.closing = True
        self._drop_spare()
        if not self.training:
            return True
        if leave and isinstance(self.process, RemoteRun):
            self.process.terminate()
        else:
            self.stop()
        if not self.tasks.wait(grace_ms):
            if self.process is not None:
                self.process.terminate()  # the run then ends as RunFailed("crashed"), and its thread returns
            if not self.tasks.wait(grace_ms):
                return False
        return True


def _failed(forward: EventForwarder, failure: RunFailed) -> RunFailed:
    """A run that could not start: its failure is its only event."""
    forward(failure)
    return failure
