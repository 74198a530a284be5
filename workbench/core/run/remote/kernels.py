"""Kernels and runs on another machine, seen from this one. Torch-free: the window and the CLI use it.

- `RemoteKernel`: a service kernel on the host, bridged over one SSH session. To the KernelClient it is a
  ChildProcess like any other (the same messages; a dropped session is a crash, and the client starts another).
- `RemoteRun`: a run on the host under a supervisor of its own there, so it trains on when this side goes (the
  laptop sleeps, the Wi-Fi drops, the window closes). Its events stream here as a local run's do; a session that
  drops is re-attached from the first event not yet seen (no gap, no duplicate); every event is recorded in this
  computer's run history with the host's name (the host keeps its own record too).
- `host_runs`, `fetch`: the host's runs, and a file or folder copied back with progress.
"""

from __future__ import annotations

import itertools
import json
import os
import queue
import shutil
import tarfile
import tempfile
import threading
import time
import dataclasses
from pathlib import Path
from typing import Callable

from ...ground.atomic import commit, temp_beside
from ...ground.events import Event, Notice, RunFailed, RunStarted, from_dict, is_terminal, to_dict
from ...ground.codec import R
from ...ground.errors import first_line
from ...ground.stacks import RankStack
from ...history.recording import RunRecorder
from ...history.runs import RunStore, RunStoreError
from ..process import ChildError, ChildProcess
from ..protocol import RUN_JOB_ID, Cancel, Lines, Profile
from .wire import HostPath, RunInfo, RunStart, SpareRun
from ..run_request import RunRequest
from ..stacks import RankStacks
from .ssh import INSTALL_HINT, Remote, RemoteError, Session

RECONNECT_S = 120.0  # how long a dropped run is re-attached for before this side gives up (the run goes on there)
RECONNECT_DELAYS = (1.0, 2.0, 4.0, 8.0, 15.0)  # between attempts, the last repeated
START_TIMEOUT_S = 60.0  # from ssh's start to the host's answer that the run is started


class RemoteKernel(ChildProcess):
    """A service kernel on `remote`, reached over one SSH session instead of a loopback listener (no token: SSH has
    authenticated the session, and the socketpair is this process's alone)."""

    def __init__(self, remote: Remote):
        self.name = f"the PyTorch kernel on {remote.name}"
        self.remote = remote
        self.ranks = 1
        self.temp_dir = None
        self.requests = queue.SimpleQueue()
        self.ready = False
        self.terminated = False
        try:
            self.session = remote.open("kernel")
        except RemoteError as exc:
            raise ChildError(with_step(exc)) from None
        self.process, self.stderr = self.session.process, self.session.stderr
        self.conn, self.lines = self.session.conn, self.session.lines

    def _exit_text(self, when: str) -> str:
        return with_step(self.session.failure(when))

    def read_message(self, timeout: float, when: str) -> dict | None:
        """As a local kernel's, read as the session reads: an ended session, a login's banner or a line that is not
        the protocol is a ChildError that says which (never a ValueError out of the client's thread)."""
        try:
            return self.session.read(timeout, when)
        except RemoteError as exc:
            raise ChildError(with_step(exc)) from None


def with_step(error: RemoteError) -> str:
    return f"{error} ({error.step} failed)" + (f"; {error.hint}" if error.hint else "")


class RemoteRun:
    """One run on `remote`, driven as ChildProcess.run drives a local one (start_run calls `run`)."""

    ranks = 1  # the window asks a run for a profile through rank 0's parent: here, the host's supervisor

    def __init__(self, remote: Remote, *, db: str | None = None, spare: RemoteSpare | None = None):
        """`spare`: a run kernel started ahead there, which `run` trains in (and then lets go of)."""
        self.remote = remote
        self.db = db  # this computer's run history (None: the default)
        self.spare = spare
        self.requests: queue.SimpleQueue[Profile] = queue.SimpleQueue()
        self.started: RunStart | None = None
        self.received = 0  # events seen from the host's log: where a re-attach resumes
        self.resumed_from = 0  # of those, the ones an attach read from this computer's record, not the wire
        self._session: Session | None = None
        self._detached = threading.Event()

    def profile(self, steps: int) -> None:
        """Ask the run to profile its next `steps` steps, sent at the next poll of `run`'s thread."""
        self.requests.put(Profile(steps))

    def collect_stacks(self) -> list[RankStack]:
        """Every rank of the run on the host: its stack and last collectives, named by this host's address (none
        before the host has started the run). Its own SSH session: the run's may be the one that is stuck."""
        if self.started is None:
            return []
        stacks = answer_as(RankStacks, ask_host(self.remote, "stacks", self.started.key, when="asking for stacks"),
                         f"{self.remote} did not send its ranks' stacks").stacks
        return [dataclasses.replace(stack, host=str(self.remote)) for stack in stacks]

    def detach(self) -> None:
        """Leave the run training on the host and stop following it (the window closes, leaving it running)."""
        self._detached.set()

    def terminate(self) -> None:
        """Stop following the run at once (its session is closed); the run itself goes on on the host."""
        self.detach()
        session = self._session
        if session is not None:
            session.hang_up()

    def run(self, request: RunRequest, emit: Callable[[Event], None], stop: threading.Event) -> Event:
        """Start the request on the host (in the spare's kernel, if given) and follow it to its end."""
        spare, self.spare = self.spare, None
        self.ranks = request.launch.world_size  # torchrun's ranks there answer `stacks` too
        try:
            session = self._session_to("start", *([spare.key] if spare else []), emit=emit,
                                       first_line=request.to_json())
        finally:
            if spare is not None:  # claimed by now, or of no use: an unclaimed one ends there
                spare.close()
        if isinstance(session, RunFailed):
            return session
        emit(Notice("info", f"training on {self.remote} ({self.started.hostname}) as run {self.started.key}; its "
                            f"files are there, in {self.started.out_dir}"))
        return self.follow(session, emit, stop)

    def attach(self, key: str, emit: Callable[[Event], None], stop: threading.Event) -> Event:
        """Follow the host's run `key` again. Where this computer's history records it already (a run followed
        before, then left or cut off), the run so far is replayed from that record and only the events after it
        come over the wire, recorded into the same record: a cursor. Otherwise from the host's first event, this
        computer's record written afresh."""
        recorded = self._recorded(key)
        start = len(recorded[1]) if recorded else 0
        session = self._session_to("attach", key, str(max(start - 1, 0)), emit=emit)
        if not isinstance(session, RunFailed) and recorded is not None and not self._goes_on(session, recorded[1]):
            session.close()  # this computer's record is not the host's log up to there: written afresh
            recorded, start = None, 0
            session = self._session_to("attach", key, "0", emit=emit)
        self.resumed_from = start
        if isinstance(session, RunFailed) or recorded is None:
            return session if isinstance(session, RunFailed) else self.follow(session, emit, stop, replace=True)
        run_id, events = recorded
        for event in events:
            emit(event)
        if is_terminal(events[-1]):  # recorded to its end: nothing more to come
            session.close()
            return events[-1]
        self.received = start
        return self.follow(session, emit, stop, resume=(run_id, start, events[0]))

    def _goes_on(self, session: Session, events: list[Event]) -> bool:
        """Whether the host's log, sent from the record's last event on, starts with that same event: a record that
        left events out (a history that could not keep up) or holds others is not resumed."""
        try:
            message = session.read(START_TIMEOUT_S, "while attaching")
        except RemoteError:
            return False
        return message is not None and message.get("event") == to_dict(events[-1])

    def _recorded(self, key: str) -> tuple[int, list[Event]] | None:
        """This computer's record of the host's run `key` (found by its folder there), as its id and events, when it
        has one that starts with the run's RunStarted; None otherwise (or when the host cannot say)."""
        try:
            with RunStore(self.db, recover=False) as store:
                info = next((info for info in host_runs(self.remote) if info.key == key), None)
                known = store.id_for_out_dir(info.out_dir) if info is not None else None
                if known is None or store.get(known).host != str(self.remote):
                    return None
                events = store.get(known, with_events=True).events
        except (RunStoreError, RemoteError):
            return None
        return (known, events) if events and isinstance(events[0], RunStarted) else None

    def _session_to(self, *args: str, emit: Callable[[Event], None], first_line: str | None = None
                    ) -> Session | RunFailed:
        """A session running the host's `args` whose header says the run is there (`started`); else the failure,
        emitted, that says which step failed."""
        try:
            session = self.remote.open(*args, first_line=first_line)
            self.started = self._header(session)
            return session
        except RemoteError as exc:
            failed = RunFailed(kind="remote", message=f"{exc} ({exc.step} failed)", hint=exc.hint)
            emit(failed)
            return failed

    def _header(self, session: Session) -> RunStart:
        """The host's answer that the run is started (or found); the session is closed when it is anything else."""
        try:
            message = session.read(START_TIMEOUT_S, "while starting the run")
            if message is None:
                raise RemoteError("remote start",
                                  f"{self.remote} did not start the run within {START_TIMEOUT_S:.0f} s")
            if "error" in message:
                raise RemoteError("remote start", str(message["error"]))
            try:
                return RunStart.from_dict(message)
            except ValueError as exc:
                raise RemoteError("version", f"{self.remote} answered in a way this Workbench cannot read: "
                                             f"{exc}") from None
        except BaseException:
            session.close()
            raise

    def follow(self, session: Session, emit: Callable[[Event], None], stop: threading.Event, *,
               replace: bool = False, resume: tuple[int, int, RunStarted] | None = None) -> Event:
        """Pass the run's events to `emit` (and this computer's history) until its terminal event; a session that
        drops is re-attached from the first event not yet seen. `resume`: (run id, seq, its RunStarted) of this
        computer's record to go on with."""
        recorder = self._recorder(emit, replace)
        if recorder is not None and resume is not None:
            recorder.resume(*resume)
        cancel_sent = False
        self._session = session
        try:
            while True:
                if self._detached.is_set():
                    return self._left(recorder)
                if stop.is_set() and not cancel_sent:
                    cancel_sent = session.send(Cancel(RUN_JOB_ID).to_dict())
                while not self.requests.empty():
                    session.send(self.requests.get().to_dict())
                try:
                    message = session.read(0.1, "during the run")
                    event = _event(message, self.remote) if message is not None and "event" in message else None
                except RemoteError as exc:
                    session.close()
                    if self._detached.is_set():
                        return self._left(recorder)
                    if exc.step == "protocol":  # another session would meet the same
                        return self._left(recorder, lost=exc, emit=emit)
                    again = self._reattach(exc, emit, stop)
                    if again is None:
                        return self._left(recorder, lost=exc, emit=emit, stopped=stop.is_set())
                    self._session, session, cancel_sent = again, again, False
                    continue
                if event is None:
                    continue
                self.received += 1
                if recorder is not None:
                    recorder(event)
                emit(event)
                if is_terminal(event):
                    return event
        finally:
            session.close()
            self._session = None
            if recorder is not None:
                recorder.store.close()

    def _reattach(self, lost: RemoteError, emit: Callable[[Event], None], stop: threading.Event) -> Session | None:
        """Sessions to the run again, until one answers or RECONNECT_S has passed (None: given up)."""
        emit(Notice("warning", f"lost the connection to {self.remote} ({lost}); the run goes on there: "
                               "reconnecting…"))
        deadline = time.monotonic() + RECONNECT_S
        for attempt in itertools.count():
            if self._detached.is_set() or stop.is_set() or time.monotonic() > deadline:
                return None  # stopped meanwhile: the stop cannot reach the run, and nobody waits for it here
            try:
                session = self.remote.open("attach", self.started.key, str(self.received))
                self._header(session)
            except RemoteError as exc:
                if exc.step == "protocol":
                    return None
                delay = RECONNECT_DELAYS[min(attempt, len(RECONNECT_DELAYS) - 1)]
                self._detached.wait(min(delay, max(0.0, deadline - time.monotonic())))
                continue
            emit(Notice("info", f"reconnected to {self.remote}: following the run again from event "
                                f"{self.received + 1}"))
            return session
        return None

    def _left(self, recorder: RunRecorder | None, lost: RemoteError | None = None,
              emit: Callable[[Event], None] | None = None, stopped: bool = False) -> RunFailed:
        """This side stops following a run that goes on on the host: its record here stays "running" until it is
        attached again (which writes it afresh). `lost`: why (the connection, for RECONNECT_S; or the host's
        output, which no reconnection mends: a failure of kind "remote"); `stopped`: a stop came while reconnecting,
        and could not be sent."""
        if recorder is not None:
            recorder.flush()
        key = self.started.key if self.started else "?"
        attach = f"attach to it again with Kernel → Connect to…, or `workbench attach {self.remote} {key}`"
        if lost is None:
            how, hint = "left running", attach
        elif lost.step == "protocol":
            how, hint = f"stopped following it: {lost}", f"{lost.hint}; then {attach}"
        elif stopped:
            how, hint = f"stopped while the connection was lost ({lost}): the stop could not be sent", attach
        else:
            how, hint = f"lost the connection for {RECONNECT_S:.0f} s ({lost})", attach
        failed = RunFailed(kind="remote" if lost is not None and lost.step == "protocol" else "detached",
                           message=f"{how}: the run goes on on {self.remote}", hint=hint)
        if emit is not None:
            emit(failed)
        return failed

    def _recorder(self, emit: Callable[[Event], None], replace: bool) -> RunRecorder | None:
        """This computer's record of the run, with the host's name; attaching again replaces the earlier one."""
        def note(exc: RunStoreError) -> None:
            emit(Notice("warning", f"this run is not recorded in this computer's run history: {exc}", exc.hint))

        try:
            store = RunStore(self.db, writing=True)
            if replace:
                known = store.id_for_out_dir(self.started.out_dir)
                if known is not None and store.get(known).host == str(self.remote):
                    store.delete(known)
            return RunRecorder(store, out_dir=self.started.out_dir, host=str(self.remote), on_error=note,
                               on_notice=emit)
        except RunStoreError as exc:
            note(exc)
            return None


def _event(message: dict, remote: Remote) -> Event:
    """An event message's event; a RemoteError (protocol) for one this Workbench cannot read."""
    try:
        return from_dict(message["event"])
    except ValueError as exc:
        raise RemoteError("protocol", f"{remote} sent an event this Workbench cannot read ({first_line(exc)})",
                          INSTALL_HINT.format(python=remote.python)) from None


def host_runs(remote: Remote) -> list[RunInfo]:
    """The host's detached runs (running and finished), oldest first."""
    message = ask_host(remote, "runs", when="while listing the runs")
    if not message or not isinstance(message.get("runs"), list):
        raise RemoteError("version", f"{remote} did not list its runs")
    try:
        return [RunInfo.from_dict(item) for item in message["runs"]]
    except ValueError as exc:
        raise RemoteError("version", f"{remote} listed its runs in a way this Workbench cannot read: {exc}") from None


def fetch(remote: Remote, source: str, target: str | Path,
          progress: Callable[[int, int], None] | None = None) -> Path:
    """Copy the host's file or folder `source` to `target` here, over the same kind of session, with
    `progress(bytes done, bytes in all)`. Atomic: a copy cut short leaves `target` as it was."""
    target = Path(target)
    session = remote.open("fetch", first_line=source)
    try:
        header = session.read(START_TIMEOUT_S, "while starting the copy")
        if header is None or "error" in header:
            raise RemoteError("session", (header or {}).get("error") or f"{remote} did not start the copy")
        size = int(header.get("size", 0))
        reader = _Bytes(session.lines, size, progress)
        if header.get("kind") == "tar":
            return _unpack(reader, target)
        fd, tmp = temp_beside(target)
        try:
            with os.fdopen(fd, "wb") as out:
                reader.copy_to(out)
            commit(tmp, target)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        return target
    except (OSError, EOFError) as exc:
        raise RemoteError("session", f"copying {source} from {remote} failed: {first_line(exc)}") from None
    except tarfile.TarError as exc:  # a member that would leave the folder (../, absolute, a link out), or damage
        raise RemoteError("protocol", f"copying {source} from {remote} was refused: {first_line(exc)}; nothing was "
                                      f"written", "the host sent a folder that would write outside its copy here; "
                                                  "look at what that folder holds on the host") from None
    finally:
        session.close()


def send(remote: Remote, source: str | Path, progress: Callable[[int, int], None] | None = None) -> str:
    """Copy this computer's file `source` to a new transfer folder on the host; the path it has there."""
    source = Path(source)
    size = source.stat().st_size
    session = remote.open("receive", first_line=json.dumps({"name": source.name, "size": size}))
    try:
        with open(source, "rb") as data:
            done = 0
            for chunk in iter(lambda: data.read(1 << 20), b""):
                session.conn.sendall(chunk)
                done += len(chunk)
                if progress is not None:
                    progress(done, size)
        answer = session.read(START_TIMEOUT_S, "while copying")
    except OSError as exc:
        raise RemoteError("session", f"copying {source} to {remote} failed: {first_line(exc)}") from None
    finally:
        session.close()
    return answer_as(HostPath, answer, f"copying {source} to {remote} failed").path


def staging(remote: Remote) -> str:
    """A new empty folder on the host for a job's output, which is then copied back here."""
    answer = ask_host(remote, "staging", when="while making a folder")
    return answer_as(HostPath, answer, f"{remote} did not make a folder for the copy").path


class RemoteSpare:
    """A run kernel started ahead on the host (`remote.host spare`): the next RemoteRun there trains in it, so its
    first step comes as soon as it would here (no PyTorch import in between). Held by its session: closing it
    ends a spare that no run has claimed."""

    def __init__(self, remote: Remote):
        self.remote = remote
        self.session = remote.open("spare")
        try:
            answer = self.session.read(START_TIMEOUT_S, "while starting a spare run kernel")
            self.key = answer_as(SpareRun, answer, f"{remote} did not start a spare run kernel").key
        except BaseException:
            self.session.close()
            raise

    def close(self) -> None:
        self.session.close()


def answer_as(record: type[R], message: dict | None, failure: str) -> R:
    """The host's answer as `record`; a RemoteError (`failure`: the host's own words, or that it did not
    answer) otherwise."""
    if message is not None and "error" in message:
        raise RemoteError("session", f"{failure}: {message['error']}")
    try:
        return record.from_dict(message)
    except ValueError:
        raise RemoteError("session", f"{failure}: " + ("no answer" if message is None else
                                                      f"an answer this Workbench cannot read ({message!r:.200})"))


def ask_host(remote: Remote, *args: str, when: str, first_line: str | None = None) -> dict | None:
    """The host's one-line answer to the remote.host command `args` (None: none within START_TIMEOUT_S);
    `first_line`: what it reads on stdin first."""
    session = remote.open(*args, first_line=first_line)
    try:
        return session.read(START_TIMEOUT_S, when)
    finally:
        session.close()


def _inside_only(member: tarfile.TarInfo, path: str) -> tarfile.TarInfo:
    """tarfile's "data" filter (no `../`, no links out of the folder, no devices), and an absolute name refused
    rather than made relative as that filter does: a host that sends one is not sending a run's folder."""
    if member.name.startswith("/") or os.path.isabs(member.name):
        raise tarfile.AbsolutePathError(member)
    return tarfile.data_filter(member, path)


class _Bytes:
    """The raw bytes after a session's header line (some may already sit in its reader's buffer), as a file."""

    def __init__(self, lines: Lines, size: int, progress: Callable[[int, int], None] | None):
        self.lines, self.size, self.progress, self.done = lines, size, progress, 0

    def read(self, n: int = -1) -> bytes:
        if self.lines.buffer:
            data = bytes(self.lines.buffer[:n] if n > 0 else self.lines.buffer)
            del self.lines.buffer[:len(data)]
        else:
            self.lines.conn.settimeout(None)
            data = self.lines.conn.recv(n if n > 0 else 1 << 20)
        self.done += len(data)
        if self.progress is not None and data:
            self.progress(min(self.done, self.size), self.size)
        return data

    def copy_to(self, out) -> None:
        while self.done < self.size:
            data = self.read(min(1 << 20, self.size - self.done))
            if not data:
                raise EOFError(f"the copy ended after {self.done} of {self.size} bytes")
            out.write(data)


def _unpack(reader: _Bytes, target: Path) -> Path:
    """A folder's tar stream unpacked beside `target`, then put in its place (an existing one is replaced). The host
    may be compromised: a member that would land outside the folder (`../`, an absolute path, a link pointing out,
    a device) is refused (`_inside_only`), and nothing of the stream is kept."""
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        with tarfile.open(fileobj=reader, mode="r|") as tar:
            tar.extractall(staging, filter=_inside_only)
        if target.exists():
            shutil.rmtree(target)
        os.replace(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return target

