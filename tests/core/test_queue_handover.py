"""A host's queued entries handed over to the host's own queue (run/queue_handover.py, remote/host_queue.py): the host
starts them one after another by itself, a cancel asked here reaches it, and the runs are taken back into this
computer's history, each entry ended as its run did. Every "host" is an OpenSSH server on a loopback address
(tests/conftest.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import pytest

from workbench.core.ground.config import TrainConfig
from workbench.core.history.queue import CANCELLED, FINISHED, QUEUED, RUNNING, RunQueue
from workbench.core.history.runs import RunStore
from workbench.core.run.queue_handover import collect, host_queue_state
from workbench.core.run.remote.ssh import Remote

TINY = TrainConfig(device="cpu", epochs=1, max_steps=20, hidden_dim=16)


@pytest.mark.slow  # two runs on a loopback host (a bad entry failing alone: tests/core/test_queue.py)
def test_a_hosts_entries_train_there_on_their_own_and_are_taken_back_here(loopback_hosts, tmp_path, monkeypatch):
    host = loopback_hosts[0]
    monkeypatch.setenv("WORKBENCH_SSH", host.ssh_command)
    db = str(tmp_path / "h.sqlite")
    with RunQueue(db) as queue:
        long = queue.add(TINY.replace(max_steps=1_000_000, epochs=100), place=host.address,
                         python=host.remote_python, label="long: cancelled from here")
        good = queue.add(TINY.replace(seed=3), place=host.address, python=host.remote_python)
        trial = queue.add(TINY, place=host.address, python=host.remote_python, sweep="s", label="sweep s · trial")
    handed = subprocess.run([sys.executable, "-m", "workbench", "queue", "--db", db, "handover", "--host",
                             host.address, "--remote-python", host.remote_python],
                            env={**os.environ, "WORKBENCH_SSH": host.ssh_command}, capture_output=True, text=True)
    assert handed.returncode == 0, handed.stderr
    assert handed.stdout.startswith(f"2 entries handed over to {host.address}, which trains them on its own")
    with RunQueue(db) as queue:
        entries = {entry.id: entry for entry in queue.entries()}
        assert [entries[i].state for i in (long, good)] == [RUNNING] * 2
        assert entries[trial].state == QUEUED  # a sweep's trial stays: its study is here
        key = entries[long].handed.rpartition(":")[0]
        remote = Remote.parse(host.address, host.remote_python)
        # Nothing of this computer's runs it: the host's own queue supervisor has started the first run by itself.
        there = host_queue_state(remote, key)
        assert there.runs[0], "the host started nothing on its own"
        assert there.runs[1:] == (None,)  # one at a time: the next waits for the long run's end
        queue.cancel(long)  # as the Queue dock's Cancel, or `workbench queue cancel`: passed on by collect
    said = []
    taken = collect(db, host.address, threading.Event(), say=said.append)
    assert taken.problem == ""
    assert [(entry.id, state) for entry, state in taken.ended] == [(long, CANCELLED), (good, FINISHED)]
    with RunQueue(db) as queue:
        entries = {entry.id: entry for entry in queue.entries()}
    assert entries[good].best_val_accuracy is not None
    with RunStore(db) as store:
        run = store.get(entries[good].run_id)
        assert run.status == "finished" and run.host == host.address and run.config["seed"] == 3
    assert not host_queue_state(remote, key).alive  # its queue supervisor has ended
    assert collect(db, host.address, threading.Event()).ended == []  # nothing left to take back
