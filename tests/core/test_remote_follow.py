"""Following a remote run through an outage, with sessions that fail on cue (no network, no host): reconnection
goes on past its back-off table until RECONNECT_S and ends as detached; a stop while reconnecting ends the follow
at once, saying the stop could not be sent. And a copy that arrives a byte at a time is whole."""

from __future__ import annotations

import threading
import time

import pytest

from workbench.core.ground.events import Notice, RunFailed
from workbench.core.run.remote import kernels as remote_module
from workbench.core.run.remote.kernels import RemoteRun
from workbench.core.run.remote.wire import RunStart
from workbench.core.run.remote.ssh import Remote, RemoteError


class DroppedSession:
    """A session whose connection has dropped: every read says so."""

    def __init__(self):
        self.closed = False

    def read(self, timeout, when):
        raise RemoteError("session", f"the session was cut {when}")

    def send(self, message) -> bool:
        return False

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def outage(monkeypatch, tmp_path):
    """A run being followed whose host cannot be reached again: every attempt to attach is refused, timed."""
    monkeypatch.setattr(remote_module, "RECONNECT_DELAYS", (0.01, 0.02, 0.04))
    monkeypatch.setattr(remote_module, "RECONNECT_S", 1.0)
    run = RemoteRun(Remote.parse("gpu-box"), db=str(tmp_path / "local.sqlite"))
    run.started = RunStart("20261205-010203", "/host/runs/1", "gpu-box")
    attempts: list[float] = []

    def refused(*args, **kwargs):
        attempts.append(time.monotonic())
        raise RemoteError("connection", "cannot reach gpu-box: Connection refused")

    monkeypatch.setattr(run.remote.__class__, "open", refused)
    return run, attempts


def test_an_outage_longer_than_the_back_off_table_keeps_trying_until_the_bound_then_ends_detached(outage):
    run, attempts = outage
    events: list = []
    started = time.monotonic()
    result = run.follow(DroppedSession(), events.append, threading.Event())
    assert isinstance(result, RunFailed) and result.kind == "detached"
    assert "lost the connection for 1 s" in result.message and "the run goes on on gpu-box" in result.message
    assert "workbench attach gpu-box 20261205-010203" in result.hint
    assert time.monotonic() - started >= remote_module.RECONNECT_S  # it gave up at the bound, not before
    assert len(attempts) > len(remote_module.RECONNECT_DELAYS) + 2  # past the table: its last delay, repeated
    last_gaps = [b - a for a, b in zip(attempts[-3:], attempts[-2:])]
    assert all(gap >= remote_module.RECONNECT_DELAYS[-1] for gap in last_gaps)
    assert events[-1] == result and any("reconnecting" in e.message for e in events if isinstance(e, Notice))


def test_a_stop_while_reconnecting_ends_the_follow_at_once_saying_it_could_not_be_sent(outage):
    run, attempts = outage
    stop = threading.Event()
    events: list = []

    def emit(event):
        events.append(event)
        if isinstance(event, Notice) and "reconnecting" in event.message:
            stop.set()  # SIGTERM, or Stop in the window, while the host is out of reach

    started = time.monotonic()
    result = run.follow(DroppedSession(), emit, stop)
    assert time.monotonic() - started < remote_module.RECONNECT_S  # not held for the whole bound
    assert isinstance(result, RunFailed) and result.kind == "detached"
    assert "the stop could not be sent" in result.message and "the run goes on on gpu-box" in result.message


class Trickle:
    """A connection that delivers one byte per read, as a slow network may."""

    def __init__(self, data: bytes):
        self.data = data

    def settimeout(self, timeout) -> None:
        pass

    def recv(self, n: int) -> bytes:
        chunk, self.data = self.data[:1], self.data[1:]
        return chunk


def test_a_copy_that_arrives_a_byte_at_a_time_is_whole_with_its_progress():
    import io

    from workbench.core.run.protocol import Lines
    from workbench.core.run.remote.kernels import _Bytes

    data = bytes(range(256)) * 3
    seen: list[tuple[int, int]] = []
    out = io.BytesIO()
    _Bytes(Lines(Trickle(data[5:]), buffer=data[:5]), len(data), lambda done, whole: seen.append((done, whole))
           ).copy_to(out)
    assert out.getvalue() == data  # the part already read with the header, then every byte after it
    assert seen[-1] == (len(data), len(data)) and [d for d, _ in seen] == sorted(d for d, _ in seen)
