"""Multi-process data-parallel training (torchrun + DDP, gloo on the CPU), end to end through the CLI.

Every test marks its processes with an environment variable that all descendants inherit, and checks at the end
that none of them is left: no process may outlive a finished, stopped or failed run. (The start_train fixture
kills whatever is left when a test fails before that check.)
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from workbench.core.run.process import TORCHRUN_TEMP_ENV
from workbench.core.run.run_request import Launch, LaunchError, check_launch
from workbench.core.history.runs import RunStore

from ..helpers import TrainStarter, descendants, marked_processes, wait_for_epoch

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="reads /proc to find leftover processes")
BAD_RANK_MODEL = '''
import os
from workbench.core.domain.model import SandwichNet

class FailsOnRankOne(SandwichNet):
    calls = 0

    def forward(self, x):
        FailsOnRankOne.calls += 1
        if os.environ.get("RANK") == "1" and FailsOnRankOne.calls == 30:
            raise RuntimeError("planted failure on rank 1")
        return super().forward(x)
'''


def test_two_processes_match_one_process_and_keep_identical_weights(tmp_path, start_train):
    # Both runs at once: each spends its first seconds in one thread (the CLI, then torchrun, importing torch), so
    # on a small machine the second core is otherwise idle. Nothing either run computes depends on the other.
    runs = {n: start_train("--epochs", "2", "--batch-size", "64", "--nproc-per-node", str(n),
                           "--out", str(tmp_path / f"n{n}")) for n in (1, 2)}
    results = {}
    for n, (proc, mark) in runs.items():
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        assert marked_processes(mark) == []
        results[n] = json.loads((tmp_path / f"n{n}" / "metrics.json").read_text())["metrics"]
    assert abs(results[1]["val_accuracy"] - results[2]["val_accuracy"]) <= 0.01
    checksums = results[2]["replica_checksums"]
    assert len(checksums) == 2 and checksums[0] == checksums[1]  # DDP kept the replicas identical
    # Rank 0 alone wrote the files and the run record; the record knows it was a 2-process run.
    assert (tmp_path / "n2" / "checkpoint.pt").is_file()
    events = [json.loads(line) for line in (tmp_path / "n2" / "events.jsonl").read_text().splitlines()]
    assert events[0]["type"] == "RunStarted" and events[0]["world_size"] == 2
    assert not [e for e in events if e["type"] == "Alert" and e["rule"] == "straggler"]  # healthy: none named
    assert [r.status for r in RunStore(tmp_path / "runs.sqlite").list()] == ["finished", "finished"]


@pytest.fixture(scope="module")
def stopped_run(tmp_path_factory):
    """One CLI run on two processes (no end: 100000 epochs), stopped with Ctrl+C once every rank trains, and what
    was seen of it while it trained and after: the stopping test and the loopback test both look at this one run
    (starting two processes costs ~10 s on 2 cores). Module-scoped, so the function-scoped autouse fixtures have
    not run yet: their environment (one torch thread, private data and cache folders) is given explicitly."""
    tmp = tmp_path_factory.mktemp("stopped-run")
    starter = TrainStarter(tmp / "runs.sqlite", env={
        "OMP_NUM_THREADS": "1", "WORKBENCH_DATA_DIR": str(tmp_path_factory.mktemp("wb-data")),
        "WORKBENCH_CACHE_DIR": str(tmp_path_factory.mktemp("wb-cache"))})
    try:
        temp_before = set(os.listdir(tempfile.gettempdir()))
        proc, mark = starter.start("--epochs", "100000", "--nproc-per-node", "2", "--out", str(tmp / "run"))
        wait_for_epoch(proc)  # every rank trains by now: every socket is open
        running = marked_processes(mark)
        listening = listening_addresses({proc.pid, *descendants(proc.pid)})
        torchrun_temp = {value for pid, _ in running if (value := environ_value(pid, TORCHRUN_TEMP_ENV))}
        proc.send_signal(signal.SIGINT)  # what Ctrl+C does: stop after the current step
        _, err = proc.communicate(timeout=120)
        yield SimpleNamespace(out=tmp / "run", db=tmp / "runs.sqlite", process=proc, err=err, running=running,
                              left=marked_processes(mark), listening=listening, torchrun_temp=torchrun_temp,
                              new_temp=set(os.listdir(tempfile.gettempdir())) - temp_before)
    finally:
        starter.kill_leftovers()


def environ_value(pid: int, name: str) -> str | None:
    try:
        env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:  # ended since
        return None
    return next((e.decode()[len(name) + 1:] for e in env if e.startswith(f"{name}=".encode())), None)


def test_stopping_a_run_ends_every_process_and_keeps_the_checkpoint(stopped_run):
    assert len(stopped_run.running) >= 4  # the CLI, torchrun and two ranks
    assert stopped_run.process.returncode == 130, stopped_run.err
    assert stopped_run.left == []
    assert (stopped_run.out / "checkpoint.pt").is_file()
    assert RunStore(stopped_run.db).list()[0].status == "stopped"


def test_a_killed_rank_is_named_and_nothing_is_left(tmp_path, start_train):
    proc, mark = start_train("--epochs", "100000", "--nproc-per-node", "2", "--out", str(tmp_path / "run"))
    wait_for_epoch(proc)
    [rank_one] = [pid for pid, rank in marked_processes(mark) if rank == "1"]
    os.kill(rank_one, signal.SIGKILL)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 3
    assert "rank 1 of 2 failed: killed by SIGKILL" in err and "Traceback" not in err
    # Epoch lines may still reach stderr before the kill: only the error lines are counted.
    errors = [line for line in err.splitlines() if line.startswith("workbench: error:")]
    assert len(errors) == 1 and err.count("the log has each rank's output") == 1
    assert marked_processes(mark) == []


def test_a_rank_that_raises_is_named_with_its_message(tmp_path, start_train):
    model = tmp_path / "bad.py"
    model.write_text(BAD_RANK_MODEL)
    proc, mark = start_train("--epochs", "3", "--nproc-per-node", "2", "--model", f"{model}:FailsOnRankOne",
                             "--out", str(tmp_path / "run"))
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 3, err
    assert "rank 1 of 2 failed" in err and "planted failure on rank 1" in err
    assert marked_processes(mark) == []


def test_a_port_in_use_is_refused_before_anything_starts(tmp_path, start_train):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        proc, mark = start_train("--nproc-per-node", "2", "--master-port", str(port), "--out", str(tmp_path))
        _, err = proc.communicate(timeout=120)
    assert proc.returncode == 2
    assert f"port {port} on 127.0.0.1 is already in use" in err and len(err.strip().splitlines()) == 1
    assert marked_processes(mark) == []


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for_torchrun(proc: subprocess.Popen, mark: str) -> None:
    """Until the CLI has started torchrun (which then waits for the other node: nothing is printed)."""
    started = time.monotonic()
    while not any(pid for pid, _ in marked_processes(mark) if pid != proc.pid):
        assert time.monotonic() - started < 60, "torchrun never started"
        time.sleep(0.1)  # polling /proc for a process to appear: there is no event to wait on


def test_stopping_during_rendezvous_ends_cleanly(tmp_path, start_train):
    port = free_port()  # for node 0; node 1 never comes
    proc, mark = start_train("--nproc-per-node", "1", "--nnodes", "2", "--node-rank", "0", "--master-port",
                             str(port), "--out", str(tmp_path / "run"))
    wait_for_torchrun(proc, mark)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode != 0
    assert "stopped while the training process was starting" in err and "Traceback" not in err
    assert marked_processes(mark) == []


def test_stopping_another_node_exits_as_interrupted(tmp_path, start_train):
    """Ctrl+C on node 1 ends its processes and exits 130, as on node 0 (not as a failed run)."""
    port = free_port()  # node 0 never comes
    proc, mark = start_train("--nproc-per-node", "1", "--nnodes", "2", "--node-rank", "1", "--master-port",
                             str(port), "--out", str(tmp_path / "run"))
    wait_for_torchrun(proc, mark)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "node 1: its 1 process(es) ended" in out and "Traceback" not in err
    assert marked_processes(mark) == []


def test_more_processes_than_gpus_is_refused():
    with pytest.raises(LaunchError, match="2 processes were asked for but this machine has 1 CUDA device"):
        check_launch(Launch(nproc_per_node=2), batch_size=64, device="auto", cuda_devices=1)
    check_launch(Launch(nproc_per_node=2), batch_size=64, device="cpu", cuda_devices=1)  # gloo on the CPU: fine
    check_launch(Launch(nproc_per_node=2), batch_size=64, device="auto", cuda_devices=0)  # no GPU: the CPU, gloo
    check_launch(Launch(nproc_per_node=2), batch_size=64, device="auto", cuda_devices=2)  # one GPU each


def listening_addresses(pids: set[int]) -> set[tuple[str, int]]:
    """(address, port) of every TCP socket the processes listen on, from /proc/net/tcp and tcp6."""
    inodes = set()
    for pid in pids:
        try:
            links = [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
        except OSError:  # ended since
            continue
        inodes |= {link[8:-1] for link in links if link.startswith("socket:[")}
    found = set()
    for table, family in (("tcp", socket.AF_INET), ("tcp6", socket.AF_INET6)):
        with open(f"/proc/net/{table}") as fh:
            for fields in (line.split() for line in list(fh)[1:]):
                if fields[3] != "0A" or fields[9] not in inodes:  # 0A: LISTEN
                    continue
                raw, port = (bytes.fromhex(part) for part in fields[1].split(":"))
                raw = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))  # host-order words
                found.add((socket.inet_ntop(family, raw), int.from_bytes(port, "big")))
    return found


def test_a_two_process_run_listens_on_loopback_only_and_leaves_no_temp_folder(stopped_run):
    """While every rank trains, the run's processes (the CLI, torchrun, the ranks) listen on loopback only; once
    stopped, torchrun's own temp folder is gone and no `torchelastic_*` folder was left in the usual one."""
    seen = stopped_run.listening
    assert seen, "nothing was seen listening: the stores were not found"
    assert {address for address, _ in seen} <= {"127.0.0.1", "::1"}, seen
    assert stopped_run.process.returncode == 130, stopped_run.err  # a clean stop, as Ctrl+C asks
    assert stopped_run.left == []  # torchrun and the ranks ended with it
    assert not {name for name in stopped_run.new_temp if name.startswith("torchelastic_")}
    assert len(stopped_run.torchrun_temp) == 1, stopped_run.torchrun_temp  # torchrun was given its own folder
    assert not any(os.path.exists(folder) for folder in stopped_run.torchrun_temp)
