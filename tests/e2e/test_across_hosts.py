"""`workbench train --hosts`: one torchrun per host over SSH (core/run/hosts/across.py), on "hosts" that are OpenSSH
servers on 127.0.0.2 and 127.0.0.3, training on the CPU with Gloo. Two hosts of one process each train as one host of
two processes does, and their ranks keep identical weights; the run is recorded here once, with its first host."""

from __future__ import annotations

import json
import socket
from pathlib import Path

from workbench.core.history.runs import RunStore

from ..helpers import shell

TRAIN = ("--device", "cpu", "--epochs", "1", "--max-steps", "40", "--batch-size", "64", "--hidden-dim", "16",
         "--seed", "3")


def _port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.2", 0))
        return probe.getsockname()[1]


def _metrics(out: str, host_address: str) -> dict:
    folder = out.split("its files are there, in ")[1].split()[0] if "its files are there, in " in out else None
    assert folder, out
    return json.loads((Path(folder) / "metrics.json").read_text())["metrics"]


def test_two_hosts_of_one_process_train_as_one_host_of_two(loopback_hosts, tmp_path):
    a, b, _old = loopback_hosts
    env = {"WORKBENCH_SSH": a.ssh_command}
    db = tmp_path / "local.sqlite"
    hostfile = tmp_path / "hosts"
    hostfile.write_text(f"{a.address} python={a.remote_python}\n{b.address} python={b.remote_python}\n")
    across = shell("train", "--hostfile", hostfile, "--rdzv-port", _port(), "--db", db, *TRAIN, cwd=tmp_path,
                   env_extra=env)
    assert across.returncode == 0, across.stderr
    assert "rendezvous port" in across.stdout and "✗" not in across.stdout  # the preflight matrix, all green
    assert "finished: 40 steps" in across.stdout and f"the run's files are on {a.address} (node 0)" in across.stdout
    one = shell("train", "--host", a.address, "--remote-python", a.remote_python, "--nproc-per-node", "2",
                "--db", db, *TRAIN, cwd=tmp_path, env_extra=env)
    assert one.returncode == 0, one.stderr
    two_hosts, one_host = _metrics(across.stderr, a.address), _metrics(one.stderr, a.address)
    assert abs(two_hosts["val_accuracy"] - one_host["val_accuracy"]) <= 0.01
    assert len(two_hosts["replica_checksums"]) == 2 and len(set(two_hosts["replica_checksums"])) == 1
    nodes = [json.loads(line) for run in (b.host_data / "remote-runs").iterdir()
             for line in (run / "events.jsonl").read_text().splitlines()]
    assert nodes[-1]["type"] == "RunFinished" and nodes[-1]["metrics"]["node_exit_code"] == 0  # node 1 on host b
    with RunStore(db) as store:
        assert [(r.host, r.status) for r in store.list()] == [(a.address, "finished")] * 2
