"""Queued runs across a set of hosts (run/queue_worker.py): `workbench queue add --host a,b` queues one, its hosts
checked when its turn comes (the preflight, as `train --hosts` does) and then trained across them, one torchrun a
host; a red check (its rendezvous port held by something else) fails it alone with each red cell; and while any of
its hosts trains another entry, it waits. Every "host" is an OpenSSH server on a loopback address; the run itself
across hosts is tests/e2e/test_across_hosts.py's."""

from __future__ import annotations

import socket
import threading

import pytest

from workbench.cli import main
from workbench.core.ground.events import RunFinished
from workbench.core.ground.results import RunResults
from workbench.core.history.queue import FAILED, FINISHED, RunQueue
from workbench.core.run import queue_worker
from workbench.core.run.hosts.across import AcrossRun
from workbench.core.run.queue_worker import release_place, try_place, try_places



def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.2", 0))
        return probe.getsockname()[1]


@pytest.mark.slow  # a preflight of two hosts, twice
def test_a_host_set_entry_is_checked_then_trained_across_its_hosts_and_a_red_set_fails_alone(
        loopback_hosts, tmp_path, monkeypatch, capsys):
    a, b, _old = loopback_hosts
    monkeypatch.setenv("WORKBENCH_SSH", a.ssh_command)
    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path / "data"))
    db = str(tmp_path / "h.sqlite")
    tiny = ["--device", "cpu", "--epochs", "1", "--max-steps", "20", "--hidden-dim", "16"]
    taken = socket.socket()  # the first entry's rendezvous port, held by something else on the first host
    taken.bind(("127.0.0.2", 0))
    taken.listen()
    hosts = f"{a.address},{b.address}"
    for port, processes in ((taken.getsockname()[1], "1"), (_free_port(), "2")):
        assert main(["queue", "--db", db, "add", "--host", hosts, "--rdzv-port", str(port), "--processes", processes,
                     *tiny, "--remote-python", a.remote_python]) == 0
    assert f"queued entry 2 on {hosts}" in capsys.readouterr().out
    trained = []

    def start_run(request, emit, stop, process=None):  # what the worker asks to train, and on what
        trained.append((request, process))
        return RunFinished(steps=20, epochs=1, seconds=1.0, stopped=False, results=RunResults(samples_per_s=1.0))

    monkeypatch.setattr(queue_worker, "start_run", start_run)
    try:
        done = {entry.id: (state, entry.error) for entry, state in queue_worker.work(
            db, threading.Event(), cuda_devices=0, place=hosts, say=lambda line: None).ended}
    finally:
        taken.close()
    state, error = done[1]  # refused before anything started, with why; the queue goes on
    assert state == FAILED and "2 preflight check(s) failed" in error and f"{a.address} · rendezvous port" in error
    assert done[2] == (FINISHED, "")
    [(request, across)] = trained
    assert isinstance(across, AcrossRun) and [str(host) for host in across.hosts] == [a.address, b.address]
    assert across.slots == 2 and across.checked.ok and request.config.max_steps == 20  # --processes 2
    with RunQueue(db) as queue:
        assert queue.entry(2).across.processes == 2


def test_a_host_set_waits_while_any_of_its_hosts_trains_another_entry(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path / "data"))
    held = try_place("root@b:22")
    try:
        assert try_places("root@a:22,root@b:22") is None  # b is busy: the set takes none of its hosts
        first = try_place("root@a:22")
        assert first is not None  # a was not kept
        release_place(first)
    finally:
        release_place(held)
    both = try_places("root@a:22,root@b:22")
    assert both is not None and len(both) == 2
    for fd in both:
        release_place(fd)
