"""`workbench train --hosts`: one torchrun per host over SSH (core/run/hosts/across.py), on "hosts" that are OpenSSH
servers on 127.0.0.2 and 127.0.0.3, training on the CPU with Gloo. Two hosts of one process each train as one host of
two processes does, and their ranks keep identical weights; the run is recorded here once, with its first host; a
rank planted to be slow is named, with its host, as the straggler; a rank planted to get stuck is found by every
rank's stack, and killed, is named with its host."""

from __future__ import annotations

import json
import re
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from workbench.core.ground.events import RunFinished, Step
from workbench.core.history.runs import RunStore

from ..helpers import descendants

TRAIN = ("--device", "cpu", "--epochs", "1", "--max-steps", "60", "--batch-size", "64", "--hidden-dim", "16",
         "--seed", "3")
SLOW_RANK_MODEL = '''
import os, time
from workbench.core.domain.model import SandwichNet

class SlowOnRankOne(SandwichNet):
    def forward(self, x):
        if os.environ.get("RANK") == "1":
            time.sleep(0.03)  # a rank on a busy machine: the math is the same, only later
        return super().forward(x)
'''


HANG_MODEL = '''
import os, time
from pathlib import Path
from workbench.core.domain.model import SandwichNet

class HangOnRankOne(SandwichNet):
    calls = 0

    def forward(self, x):
        self.calls += self.training  # training steps only
        if os.environ.get("RANK") == "1" and self.training and self.calls == 25:  # steps have come
            wait_for_release()
        return super().forward(x)

def wait_for_release():  # a rank stuck before a collective: the others wait in it
    while not Path(__file__).with_name("release").exists():
        time.sleep(0.05)
'''


def _port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.2", 0))
        return probe.getsockname()[1]


def _metrics(out: str, host_address: str) -> dict:
    folder = out.split("its files are there, in ")[1].split()[0] if "its files are there, in " in out else None
    assert folder, out
    return json.loads((Path(folder) / "metrics.json").read_text())["metrics"]


def test_two_hosts_of_one_process_train_as_one_host_of_two_and_name_the_straggler(loopback_hosts, tmp_path):
    from workbench.core.ground.straggler import WINDOW, WINDOWS

    a, b, _old = loopback_hosts
    env = {"WORKBENCH_SSH": a.ssh_command}
    db = tmp_path / "local.sqlite"
    model = tmp_path / "slow.py"
    model.write_text(SLOW_RANK_MODEL)
    hostfile = tmp_path / "hosts"
    hostfile.write_text(f"{a.address} python={a.remote_python}\n{b.address} python={b.remote_python}\n")
    # Both at once: most of each is starting interpreters and torch, and the machine has a core for each.
    across, one = (subprocess.Popen([sys.executable, "-m", "workbench", "train", *map(str, argv), "--db", str(db),
                                     *TRAIN, "--model", f"{model}:SlowOnRankOne"], cwd=tmp_path,
                                    env={**os.environ, **env}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    text=True)
                   for argv in (("--hostfile", hostfile, "--rdzv-port", _port()),
                                ("--host", a.address, "--remote-python", a.remote_python, "--nproc-per-node", "2")))
    across, one = (subprocess.CompletedProcess(p.args, p.wait(300), *p.communicate()) for p in (across, one))
    assert across.returncode == 0, across.stderr
    assert "rendezvous port" in across.stdout and "✗" not in across.stdout  # the preflight matrix, all green
    assert "finished: 60 steps" in across.stdout and f"the run's files are on {a.address} (node 0)" in across.stdout
    named = f"): rank 1 on {socket.gethostname()} is a straggler"  # the hosts' own name for themselves
    assert f"alert (warning, step {WINDOW * WINDOWS}{named}" in across.stderr  # as soon as the rule can
    assert one.returncode == 0, one.stderr
    two_hosts, one_host = _metrics(across.stderr, a.address), _metrics(one.stderr, a.address)
    assert abs(two_hosts["val_accuracy"] - one_host["val_accuracy"]) <= 0.01
    assert len(two_hosts["replica_checksums"]) == 2 and len(set(two_hosts["replica_checksums"])) == 1
    nodes = [json.loads(line) for run in (b.host_data / "remote-runs").iterdir()
             for line in (run / "events.jsonl").read_text().splitlines()]
    assert nodes[-1]["type"] == "RunFinished" and nodes[-1]["metrics"]["node_exit_code"] == 0  # node 1 on host b
    with RunStore(db) as store:
        records = store.list()
        assert [(r.host, r.status) for r in records] == [(a.address, "finished")] * 2
    shown = subprocess.run([sys.executable, "-m", "workbench", "runs", "--db", str(db), "show", str(records[0].id)],
                           capture_output=True, text=True, env={**os.environ, **env}, cwd=tmp_path)  # either run
    assert f"ranks:       0 on {socket.gethostname()} (" in shown.stdout and "straggler" in shown.stdout


def _port_users(port: int) -> list[str]:
    """Processes anywhere on this machine (every "host" is) whose command line names the run's rendezvous port."""
    users = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            args = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if f"--master-port={port}" in args:
            users.append(args)
    return users


def _across(loopback_hosts, monkeypatch, tmp_path, port: int, on_event):
    """A run across hosts a and b through the core API (the CLI's path without its terminal), every event handed
    to `on_event(event, stop)`."""
    from workbench.core.ground.config import TrainConfig
    from workbench.core.run.hosts.across import AcrossRun
    from workbench.core.run.hosts.preflight import preflight
    from workbench.core.run.remote.ssh import Remote
    from workbench.core.run.run_request import RunRequest

    a, b, _old = loopback_hosts
    monkeypatch.setenv("WORKBENCH_SSH", a.ssh_command)
    hosts = [Remote.parse(a.address, a.remote_python), Remote.parse(b.address, b.remote_python)]
    checked = preflight(hosts, port, slots=[1, 1], device="cpu")
    assert checked.ok
    stop = threading.Event()
    request = RunRequest(TrainConfig(device="cpu", epochs=50, hidden_dim=16), out_dir="")
    return AcrossRun(hosts, checked, 1, db=str(tmp_path / "local.sqlite")).run(
        request, lambda event: on_event(event, stop), stop)


def _wait_gone(port: int) -> list[str]:
    deadline = time.monotonic() + 30
    while _port_users(port) and time.monotonic() < deadline:
        time.sleep(0.2)
    return _port_users(port)


def test_a_connection_cut_mid_run_is_reattached_and_stop_ends_every_rank_on_every_host(loopback_hosts, monkeypatch,
                                                                                      tmp_path):
    a, _b, _old = loopback_hosts
    port = _port()
    steps: list[int] = []
    cut: list[int] = []

    def cut_at_step_20_stop_at_100(event, stop) -> None:
        if not isinstance(event, Step):
            return
        steps.append(event.step)
        if event.step == 20 and not cut:  # the laptop's network drops: the ssh client to the first host dies
            ssh = next(pid for pid in descendants(os.getpid()) if "remote.host start" in _args(pid)
                       and f"-p {a.port}" in _args(pid))
            cut.append(ssh)
            os.kill(ssh, signal.SIGKILL)
        if event.step == 100:
            stop.set()

    result = _across(loopback_hosts, monkeypatch, tmp_path, port, cut_at_step_20_stop_at_100)
    assert cut and isinstance(result, RunFinished) and result.stopped, result
    assert steps == list(range(1, len(steps) + 1)) and len(steps) >= 100  # every step once, in order
    assert _wait_gone(port) == []  # nothing of the run left on either host


def _args(pid) -> str:
    return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")


def test_a_stuck_rank_is_found_by_its_stack_beside_every_other_ranks_and_killed_is_named_with_its_host(
        loopback_hosts, tmp_path):
    """`train --hosts`: no step for --hang-after seconds, and every rank's stack on every host is printed side by
    side, naming the stuck rank, where it parts from the others and that it has not reached their collective. Then
    that rank is killed (on the second host): the run fails naming that host, and no process of it is left on
    either host."""
    a, b, _old = loopback_hosts
    model = tmp_path / "hang.py"
    model.write_text(HANG_MODEL)
    hostfile = tmp_path / "hosts"
    hostfile.write_text(f"{a.address} python={a.remote_python}\n{b.address} python={b.remote_python}\n")
    port = _port()
    train = subprocess.Popen([sys.executable, "-m", "workbench", "train", "--hostfile", str(hostfile), "--rdzv-port",
                              str(port), "--hang-after", "2", "--db", str(tmp_path / "local.sqlite"), *TRAIN[:4],
                              "--max-steps", "40", *TRAIN[6:], "--model", f"{model}:HangOnRankOne"], cwd=tmp_path,
                             env={**os.environ, "WORKBENCH_SSH": a.ssh_command}, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    release = threading.Timer(120, (tmp_path / "release").touch)  # whatever happens, the rank is let go then
    release.start()
    said = []
    for line in train.stderr:  # as train prints it: the report comes while the rank is stuck
        said.append(line)
        if "is the first that differs" in line:
            break
    torchrun = next((pid for pid in filter(str.isdigit, os.listdir("/proc"))
                     if "--node-rank=1" in _args(pid) and f"--master-port={port}" in _args(pid)), None)
    if torchrun is not None:
        os.kill(descendants(int(torchrun))[0], signal.SIGKILL)  # the stuck rank, on host b
    rest, out = train.stderr.read(), train.stdout.read()  # (the report's rest may be in the reader's buffer)
    train.wait(300)
    release.cancel()
    report = "".join(said) + rest
    assert re.search(r"no step for [2-9] s: collecting every rank's stack …\n2 rank\(s\) answered in", report), report
    summary = said[-1]
    assert summary.startswith(f"rank 1 on {b.address} is the first that differs: it is in wait_for_release "
                              "(hang.py:17)"), report
    assert "has not reached it" in summary
    assert f"rank 0@{a.address}" in report and "last collectives (Flight Recorder)" in report
    assert torchrun is not None and train.returncode != 0, report + out
    assert f"{b.address}: " in rest and "exited with code" in rest, rest
    assert _wait_gone(port) == []  # nothing of the run left on either host
