"""The kernel's handshake cannot be held up: any local process can connect to the parent's listener first, and
none may delay the real kernel's hello, a stop, or make the parent buffer without bound (issue 11, item 9)."""

from __future__ import annotations

import json
import os
import secrets
import socket
import sys
import threading
import time

import pytest

from workbench.core.ground.events import RunFinished
from workbench.core.run import process as run_process
from workbench.core.run import protocol
from workbench.core.run.process import ChildProcess
from workbench.core.run.protocol import MAX_LINE_BYTES, LineTooLong, Lines

from ..support.fake_kernel import FAKE_KERNEL, REQUEST

# The stand-in kernel, started only once the test has connected its intruder: it waits for a byte on a gate.
GATED_KERNEL = """
import os, socket, sys
gate = socket.create_connection(("127.0.0.1", int(os.environ["GATE_PORT"])))
gate.recv(1)
sys.argv = ["-c", "echo"]
exec(compile(os.environ["FAKE_KERNEL"], "fake_kernel", "exec"))
"""


# A stand-in kernel that says hello (and `after` in the same packet), then hangs as one importing torch would.
SAYS = ("import json, os, socket, time\n"
        f"host, port = os.environ['{protocol.ADDRESS_ENV}'].rsplit(':', 1)\n"
        "c = socket.create_connection((host, int(port)))\n"
        f"c.sendall((json.dumps({{{{'hello': os.environ['{protocol.TOKEN_ENV}']}}}}) + '\\n'{{after}}).encode())\n"
        "time.sleep(100)\n")


def address(process: ChildProcess) -> tuple[str, int]:
    return process.listener.getsockname()[:2]


class Trickler(threading.Thread):
    """A peer that connects and sends one byte every 0.5 s, never a newline (for at most 20 s)."""

    def __init__(self, where: tuple[str, int]):
        super().__init__(daemon=True)
        self.conn = socket.create_connection(where)  # connected (in the listener's backlog) before this returns
        self.done = threading.Event()

    def run(self):
        try:
            for _ in range(40):
                self.conn.sendall(b"x")
                if self.done.wait(0.5):  # pacing the intruder, not synchronising the test
                    return
        except OSError:
            pass  # dropped by the parent

    def close(self):
        self.done.set()
        self.join(5)
        self.conn.close()


@pytest.fixture
def patient_peers(monkeypatch):
    """A per-peer deadline far beyond the test: only serving peers together can keep these tests fast."""
    monkeypatch.setattr(run_process, "HELLO_DEADLINE_S", 60.0, raising=False)


def test_a_trickling_peer_that_connects_first_does_not_delay_the_kernel_s_hello(patient_peers):
    with socket.create_server(("127.0.0.1", 0)) as gate:
        gate.settimeout(30)
        process = ChildProcess([sys.executable, "-c", GATED_KERNEL],
                               env={"GATE_PORT": str(gate.getsockname()[1]), "FAKE_KERNEL": FAKE_KERNEL})
        gate_conn, _ = gate.accept()
    trickler = Trickler(address(process))
    trickler.start()
    try:
        with gate_conn:
            gate_conn.sendall(b"g")  # the kernel starts now; the trickler is already first in line
        stop = threading.Event()
        events = []

        def emit(event):
            events.append(event)
            stop.set()

        started = time.monotonic()
        process.connect(timeout=15)  # the old handshake waited for the trickler's newline: never
        result = process.run(REQUEST, emit, stop)
        assert time.monotonic() - started < 10
    finally:
        trickler.close()
        process.close()
    assert isinstance(result, RunFinished) and result.stopped and result.steps == 3


def _stop_after(process: ChildProcess, delay: float) -> tuple[RunFinished, float]:
    """Run `process` with a stop set `delay` seconds in: the result and how long after the stop the run ended."""
    stop = threading.Event()
    stopped_at = []
    timer = threading.Timer(delay, lambda: (stopped_at.append(time.monotonic()), stop.set()))
    timer.start()
    try:
        result = process.run(None, lambda event: None, stop)
        return result, time.monotonic() - stopped_at[0]
    finally:
        timer.cancel()


def test_a_stop_wins_within_a_second_while_a_trickling_peer_is_connected(patient_peers):
    process = ChildProcess(["sleep", "100"])  # the kernel never connects
    trickler = Trickler(address(process))
    trickler.start()
    try:
        result, after_stop = _stop_after(process, 0.5)
    finally:
        trickler.close()
        process.close()
    assert isinstance(result, RunFinished) and result.stopped and result.steps == 0
    assert after_stop < 3  # the poll is 0.2 s; the old handshake waited for the trickler (20 s)


def test_a_stop_while_the_kernel_loads_pytorch_ends_the_run_at_once():
    # A kernel that said hello but is still importing torch: the stop is not kept waiting for its "ready".
    process = ChildProcess([sys.executable, "-c", SAYS.format(after="")])
    try:
        result, after_stop = _stop_after(process, 1.0)
    finally:
        process.close()
    assert isinstance(result, RunFinished) and result.stopped
    assert after_stop < 3


def test_a_peer_sending_megabytes_without_a_newline_is_dropped_after_the_hello_limit():
    # the old handshake read (and buffered) for 10 s before closing
    assert _closed_after_sending(b"x" * (8 << 20), timeout=3)


def _closed_after_sending(payload: bytes, timeout: float) -> bool:
    """Whether a parent waiting for its kernel closes a peer that sent `payload` (and no newline) within
    `timeout` seconds; the waiting run is stopped and its thread joined afterwards."""
    process = ChildProcess(["sleep", "100"])
    stop = threading.Event()
    runner = threading.Thread(target=process.run, args=(None, lambda event: None, stop), daemon=True)
    runner.start()
    try:
        with socket.create_connection(address(process)) as peer:
            peer.settimeout(timeout)
            try:
                peer.sendall(payload)
                closed = peer.recv(1) == b""
            except TimeoutError:  # still open, its bytes buffered
                closed = False
            except OSError:  # reset: the parent closed it with the rest unread
                closed = True
    finally:
        stop.set()
        runner.join(10)
        process.close()
    assert not runner.is_alive()
    return closed


def test_a_peer_over_the_hello_limit_is_dropped_at_once_not_at_its_deadline(patient_peers):
    # 8 KiB without a newline: twice the 4 KiB a hello may take. The deadline is a minute away (patient_peers), so
    # only the byte limit can close this connection within the test's few seconds.
    assert run_process.HELLO_MAX_BYTES <= 4096  # a hello is ~100 bytes: a peer not yet ours gets little
    # 8 KiB fits the socket buffers: sent whatever the parent does. The 5 s bound is on a failure, not a wait: the
    # parent closes it as soon as it reads it.
    assert _closed_after_sending(b"x" * 8192, timeout=5)


def test_hello_and_ready_in_one_packet_are_both_read():
    both = SAYS.format(after=" + json.dumps({'ready': True}) + '\\n'")
    process = ChildProcess([sys.executable, "-c", both])
    try:
        process.connect(timeout=15)
        assert process.ready
    finally:
        process.close()


def test_lines_refuses_an_over_long_line_without_buffering_it():
    left, right = socket.socketpair()
    with left, right:
        lines = Lines(left, max_line=1024)
        right.sendall(b"x" * 4096)
        with pytest.raises(LineTooLong):
            while lines.read(timeout=5) is None:
                pass
        assert len(lines.buffer) == 0
        right.sendall(json.dumps({"pad": "y" * 2000}).encode() + b"\n")  # a whole line, but too long
        with pytest.raises(ValueError):
            lines.read(timeout=5)
        right.sendall(b'{"ok": 1}\n{"ok": 2}\n')
        assert lines.read(timeout=5) == {"ok": 1} and lines.read(timeout=5) == {"ok": 2}
    assert MAX_LINE_BYTES <= 64 << 20  # a bound for the kernel's own messages too


class Impostor(threading.Thread):
    """A peer that connects before the kernel starts and sends a well-formed hello with a token that is not ours,
    then ready, as a kernel would. What it then receives is kept: a job sent to it, or b"" once the parent drops
    it. Either way it then opens the gate, so the (gated) kernel starts only after the parent has decided."""

    def __init__(self, where: tuple[str, int], gate_conn: socket.socket, token: str):
        super().__init__(daemon=True)
        self.conn = socket.create_connection(where)  # first in the listener's backlog, before the kernel exists
        self.gate_conn = gate_conn
        self.token = token
        self.received = None

    def run(self):
        try:
            hello = {"hello": self.token, "pid": os.getpid(), "protocol": 1}
            self.conn.sendall((json.dumps(hello) + "\n" + json.dumps({"ready": True}) + "\n").encode())
            self.conn.settimeout(15)
            received = b""
            try:
                while not received.endswith(b"\n"):
                    chunk = self.conn.recv(65536)
                    if not chunk:
                        break
                    received += chunk
            except OSError:  # reset by the parent: dropped too
                pass
            self.received = received
        finally:
            with self.gate_conn:
                self.gate_conn.sendall(b"g")  # the kernel starts now
            self.conn.close()


def test_a_well_formed_hello_with_the_wrong_token_is_dropped_and_the_kernel_is_accepted():
    with socket.create_server(("127.0.0.1", 0)) as gate:
        gate.settimeout(30)
        process = ChildProcess([sys.executable, "-c", GATED_KERNEL],
                               env={"GATE_PORT": str(gate.getsockname()[1]), "FAKE_KERNEL": FAKE_KERNEL})
        gate_conn, _ = gate.accept()
    wrong = secrets.token_hex(16)  # as long as ours and hex like ours: only its value differs
    assert wrong != process.token
    impostor = Impostor(address(process), gate_conn, wrong)
    impostor.start()
    stop = threading.Event()
    events = []

    def emit(event):
        events.append(event)
        stop.set()

    try:
        result = process.run(REQUEST, emit, stop)
    finally:
        impostor.join(15)
        process.close()
    assert impostor.received == b""  # dropped unanswered: no job went to the impostor
    assert isinstance(result, RunFinished) and result.stopped and result.steps == 3, result
    job = json.loads(events[1].message)  # the fake kernel echoes the job it was sent: the run went to it
    assert job["job"] == "train" and job["args"]["request"] == REQUEST.to_dict()


def test_a_flood_of_silent_peers_drops_the_oldest_beyond_the_limit(patient_peers):
    """MAX_PENDING_PEERS silent connections are held (each until its deadline, a minute away here); one more, and
    the oldest is dropped at once, so the parent's open sockets stay bounded whatever connects."""
    process = ChildProcess(["sleep", "100"])
    stop = threading.Event()
    runner = threading.Thread(target=process.run, args=(None, lambda event: None, stop), daemon=True)
    runner.start()
    peers = [socket.create_connection(address(process)) for _ in range(run_process.MAX_PENDING_PEERS)]
    try:
        for peer in peers:
            peer.settimeout(0.2)
        oldest = peers[0]
        with pytest.raises(TimeoutError):
            oldest.recv(1)  # held: within the limit
        peers.append(socket.create_connection(address(process)))
        oldest.settimeout(10)
        assert oldest.recv(1) == b""  # dropped for the newcomer
        peers[1].settimeout(0.2)
        with pytest.raises(TimeoutError):
            peers[1].recv(1)  # the next oldest is still held
    finally:
        stop.set()
        runner.join(10)
        process.close()
        for peer in peers:
            peer.close()
