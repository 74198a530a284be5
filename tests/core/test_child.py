"""The parent side of a kernel process (the train job and its cancel on the wire, stops, failures, start-up
errors), and which rank caused a torchrun failure, read from what torchrun and the ranks print (formats as torch 2.14
prints them; the end-to-end runs in tests/e2e/test_distributed.py cannot force every ordering of a failure)."""

from __future__ import annotations

import errno
import json
import signal
import sys
import threading

import pytest

from workbench.core.run import process as run_process
from workbench.core.run import protocol
from workbench.core.run.process import ChildError, ChildProcess, torchrun_culprit
from workbench.core.ground.events import Notice, RunFailed, RunFinished
from workbench.core.run.run_request import RunRequest

from ..support.fake_kernel import FAKE_KERNEL, REQUEST


def entry(index: int, rank: int, exitcode: str) -> str:
    return (f"[{index}]:\n  time      : 2026-11-29_16:34:41\n  host      : localhost\n"
            f"  rank      : {rank} (local_rank: {rank})\n  exitcode  : {exitcode}\n  error_file: <N/A>\n"
            f"  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html\n")


def summary(failures: list[str], root: str) -> str:
    return ("torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n" + "=" * 60 + "\ntrain FAILED\n"
            + "-" * 60 + "\nFailures:\n" + "".join(failures) + "-" * 60
            + "\nRoot Cause (first observed failure):\n" + root + "=" * 60 + "\n")


def test_a_rank_torchrun_terminated_is_not_the_cause_of_the_failure():
    # Rank 1 raised; torchrun then sent SIGTERM to rank 0 before rank 0 noticed anything (the CI failure).
    stderr = ("rank 1 failed (crashed): RuntimeError: planted failure on rank 1\n"
              + summary([entry(1, 0, "-15 (pid: 16460)  (SIGTERM)")], entry(0, 1, "3 (pid: 16461) ")))
    assert torchrun_culprit(stderr) == (1, "crashed: RuntimeError: planted failure on rank 1")


def test_a_rank_killed_from_outside_is_the_cause_even_when_its_peer_spoke_last():
    stderr = ("rank 0 failed (crashed): RuntimeError: Connection closed by peer [127.0.0.1]:29500\n"
              + summary([entry(1, 0, "1 (pid: 10)")], entry(0, 1, "-9 (pid: 11)  (SIGKILL)")))
    assert torchrun_culprit(stderr) == (1, "killed by SIGKILL")


def test_only_peers_complaining_about_a_vanished_rank_are_symptoms():
    stderr = ("rank 0 failed (crashed): RuntimeError: Connection reset by peer\n"
              + summary([entry(1, 0, "1 (pid: 10)")], entry(0, 1, "7 (pid: 11) ")))
    assert torchrun_culprit(stderr) == (1, "exited with code 7")  # torchrun's root cause, nothing better known


def test_a_root_cause_terminated_from_outside_is_named_as_such():
    stderr = summary([], entry(0, 1, "-15 (pid: 11)  (SIGTERM)"))
    assert torchrun_culprit(stderr) == (1, "killed by SIGTERM")


def test_no_summary_means_no_culprit():
    assert torchrun_culprit("W1129 some warning\nTraceback (most recent call last):\n") is None


def test_when_every_rank_was_killed_torchrun_s_root_cause_decides():
    stderr = summary([entry(1, 0, "-9 (pid: 10)  (SIGKILL)")], entry(0, 1, "-9 (pid: 11)  (SIGKILL)"))
    assert torchrun_culprit(stderr) == (1, "killed by SIGKILL")


# -- the child process ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("ranks", [1, 2])
def test_a_stop_while_the_child_starts_ends_it_at_once_as_a_stopped_run(ranks):
    process = ChildProcess(["sleep", "100"], ranks=ranks)  # never connects: still "starting"
    stop = threading.Event()
    stop.set()
    events = []
    result = process.run(None, events.append, stop)
    assert isinstance(result, RunFinished) and result.stopped and result.steps == 0
    assert events[-1] == result and isinstance(events[0], Notice)
    assert "stopped while the training process was starting" in events[0].message
    assert process.process.poll() == -signal.SIGTERM  # ended, not left running


GARBLED = f"""
import json, os, socket, time
host, port = os.environ["{protocol.ADDRESS_ENV}"].rsplit(":", 1)
conn = socket.create_connection((host, int(port)))
conn.sendall((json.dumps({{"hello": os.environ["{protocol.TOKEN_ENV}"]}}) + "\\nnot json\\n").encode())
time.sleep(100)
"""


def test_a_failing_child_that_keeps_running_is_ended_before_the_failure_is_reported():
    process = ChildProcess([sys.executable, "-c", GARBLED], ranks=2)
    seen = []
    result = process.run(None, lambda event: seen.append((event, process.process.poll())), threading.Event())
    assert isinstance(result, RunFailed) and result.kind == "crashed"
    assert seen == [(result, -signal.SIGTERM)]  # torchrun is not waited for while it keeps running


def test_a_run_is_sent_as_one_train_job_and_a_stop_as_its_cancel():
    process = ChildProcess([sys.executable, "-c", FAKE_KERNEL, "echo"])
    stop = threading.Event()
    events = []

    def emit(event):
        events.append(event)
        stop.set()  # after the first event (a Step): the parent must answer with a cancel of that job

    result = process.run(REQUEST, emit, stop)
    assert isinstance(result, RunFinished) and result.stopped and result.steps == 3
    job, cancel = (json.loads(e.message) for e in events[1:3])
    assert job == {"id": protocol.RUN_JOB_ID, "job": "train", "args": {"request": REQUEST.to_dict()}}
    assert RunRequest.from_dict(job["args"]["request"]) == REQUEST  # the request arrives whole
    assert cancel == {"cancel": protocol.RUN_JOB_ID}
    assert events[3:] == [result]
    assert process.process.poll() == 0  # it ended on its own, after its terminal event


def test_a_train_job_the_kernel_refuses_is_a_failed_run_with_its_reason():
    events = []
    result = ChildProcess([sys.executable, "-c", FAKE_KERNEL, "refuse"]).run(REQUEST, events.append,
                                                                          threading.Event())
    assert result == RunFailed(kind="config", message="planted refusal", hint="h")
    assert events == [result]


def test_a_kernel_that_dies_mid_run_is_a_crashed_run_naming_how_and_its_last_words():
    process = ChildProcess([sys.executable, "-c", FAKE_KERNEL, "die"])
    events = []
    result = process.run(REQUEST, events.append, threading.Event())
    assert isinstance(result, RunFailed) and result.kind == "crashed"
    assert f"killed by signal {signal.SIGKILL.value}" in result.message
    assert "planted last words" in result.message
    assert events == [result] and process.process.poll() == -signal.SIGKILL


TORCHRUN_FAILED = ("import sys; sys.stderr.write(" + repr(
    "rank 1 failed (crashed): RuntimeError: planted\n"
    + summary([entry(1, 0, "-15 (pid: 1)  (SIGTERM)")], entry(0, 1, "1 (pid: 2) "))) + "); sys.exit(1)")


def test_a_torchrun_that_exits_on_its_own_still_names_the_failing_rank():
    result = ChildProcess([sys.executable, "-c", TORCHRUN_FAILED], ranks=2).run(None, lambda e: None,
                                                                                 threading.Event())
    assert isinstance(result, RunFailed) and result.message.startswith("rank 1 of 2 failed: crashed: RuntimeError")


def test_no_listening_socket_is_a_child_error(monkeypatch):
    def refused(*args, **kwargs):
        raise OSError(errno.EADDRNOTAVAIL, "Cannot assign requested address")

    monkeypatch.setattr(run_process.socket, "create_server", refused)
    with pytest.raises(ChildError, match="cannot start the training process: Cannot assign requested address"):
        ChildProcess(["sleep", "100"])


def test_no_temp_file_for_its_log_is_a_child_error_and_closes_the_socket(monkeypatch):
    opened = []
    real_create_server = run_process.socket.create_server

    def create_server(*args, **kwargs):
        opened.append(real_create_server(*args, **kwargs))
        return opened[-1]

    def no_space(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(run_process.socket, "create_server", create_server)
    monkeypatch.setattr(run_process.tempfile, "TemporaryFile", no_space)
    with pytest.raises(ChildError, match="No space left on device"):
        ChildProcess(["sleep", "100"])
    assert [sock.fileno() for sock in opened] == [-1]  # closed


def test_the_child_leaves_one_core_to_the_process_driving_it(monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(run_process.os, "cpu_count", lambda: 16)
    assert run_process.child_threads() == {"OMP_NUM_THREADS": "15"}
    monkeypatch.setattr(run_process.os, "cpu_count", lambda: 1)
    assert run_process.child_threads() == {"OMP_NUM_THREADS": "1"}
    monkeypatch.setenv("OMP_NUM_THREADS", "3")  # the user's own choice stands
    assert run_process.child_threads() == {}
