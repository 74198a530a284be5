"""The fork server: kernels forked from one process that has imported PyTorch, each as fresh as a new interpreter
where it matters (Dynamo state, environment, folder, thread count), each taking nothing else down when it dies."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from workbench.core.ground.config import TrainConfig
from workbench.core.ground.events import RunFailed, RunFinished, Step
from workbench.core.run import forkserver
from workbench.core.run.process import ChildError, ChildProcess
from workbench.core.run.run_request import RunRequest

from ..helpers import processes_with_env

PROBE_ENV = "WORKBENCH_TEST_PROBE"  # read at run time only: a spawn may set it without a new server
PROBE_MODEL = f"""import json, os
import numpy as np
import torch
from torch import nn


class Probe(nn.Module):
    \"\"\"Writes what its kernel looks like from the inside, then trains as a one-layer net.\"\"\"

    def __init__(self, input_dim, hidden_dim, output_dim, dropout):
        super().__init__()
        self.layer = nn.Linear(input_dim, output_dim)
        with open(os.environ["{PROBE_ENV}"], "w") as out:
            json.dump({{"pid": os.getpid(), "ppid": os.getppid(), "sid": os.getsid(0), "cwd": os.getcwd(),
                       "threads": torch.get_num_threads(), "numpy": int(np.random.randint(1 << 30)),
                       "cuda_initialized": torch.cuda.is_initialized()}}, out)

    def forward(self, x):
        return self.layer(x.flatten(1).float())
"""


def _train(config: TrainConfig, out: Path, process: ChildProcess | None = None, stop=None):
    events = []
    process = process or ChildProcess()
    result = process.run(RunRequest(config, out_dir=str(out), record=False), events.append,
                         stop or threading.Event())
    return process, result, events


def _probe(tmp_path: Path, monkeypatch, name: str) -> dict:
    spec = tmp_path / "probe_model.py"
    spec.write_text(PROBE_MODEL, encoding="utf-8")
    monkeypatch.setenv(PROBE_ENV, str(tmp_path / f"{name}.json"))
    _, result, _ = _train(TrainConfig(model=f"{spec}:Probe", epochs=1, max_steps=2), tmp_path / name)
    assert isinstance(result, RunFinished), result
    return json.loads((tmp_path / f"{name}.json").read_text())


def test_a_kernel_is_forked_with_its_own_environment_folder_session_threads_and_seed(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    first = _probe(tmp_path, monkeypatch, "first")
    monkeypatch.setenv("OMP_NUM_THREADS", "2")  # a thread count is applied after the fork, not at import
    second = _probe(tmp_path, monkeypatch, "second")
    server = next(s for s in forkserver._servers if s.key == forkserver.import_environment(os.environ))
    assert first["ppid"] == second["ppid"] == server.process.pid  # both forked by the one server
    assert first["pid"] != second["pid"]
    assert first["sid"] == first["pid"] and second["sid"] == second["pid"]  # each leads its own session
    assert first["cwd"] == second["cwd"] == str(tmp_path)  # the parent's folder at the spawn
    assert (first["threads"], second["threads"]) == (1, 2)  # tests/core/conftest.py gives one thread, then 2
    assert first["numpy"] != second["numpy"]  # reseeded as a new interpreter is, not a copy of the server's
    assert not first["cuda_initialized"] and not second["cuda_initialized"]


@pytest.mark.slow
def test_every_forked_run_compiles_from_fresh_dynamo_state(tmp_path):
    """The server never compiles: each run's first graph is Dynamo's frame 0/0 and pays its own compile."""
    config = TrainConfig(epochs=1, max_steps=3, hidden_dim=16, backend="aot_eager")
    for name in ("one", "two"):
        process, result, events = _train(config, tmp_path / name)
        assert isinstance(process.process, forkserver.ForkedProcess)
        assert isinstance(result, RunFinished), result
        assert result.results.compile_seconds > 0
        observed = [line for entry in result.results.recompile_forecast for line in entry.observed]
        assert any(line.startswith("forward: 0/0:") for line in observed), observed


def test_a_killed_kernel_is_a_crashed_run_and_the_server_forks_the_next(tmp_path):
    stop = threading.Event()
    process = ChildProcess()
    killed = {}

    def kill_at_first_step(event):
        if isinstance(event, Step) and not killed:
            killed["pid"] = process.process.pid
            os.kill(killed["pid"], signal.SIGKILL)

    result = process.run(RunRequest(TrainConfig(epochs=50), out_dir=str(tmp_path / "killed"), record=False),
                         kill_at_first_step, stop)
    assert isinstance(result, RunFailed) and result.kind == "crashed"
    assert f"killed by signal {signal.SIGKILL.value}" in result.message
    server = process.process._server
    assert server.alive and server.process.poll() is None  # the crash took nothing else down
    again, result, _ = _train(TrainConfig(epochs=1, max_steps=2), tmp_path / "next")
    assert isinstance(result, RunFinished) and again.process._server is server


@pytest.mark.slow
def test_a_server_that_dies_before_it_forks_fails_its_kernel_clearly_and_the_next_gets_a_new_one(monkeypatch,
                                                                                                  cold_kernels):
    process = ChildProcess()  # a new server, still importing torch: the kernel is not forked yet
    server = process.process._server
    assert process.process.poll() is None
    server.process.kill()
    with pytest.raises(ChildError, match="the fork server ended before it could start this kernel"):
        process.connect(timeout=60)
    process.close()
    later = ChildProcess()
    try:
        later.connect(timeout=180)
        assert later.process._server is not server and later.ready
    finally:
        later.close()


def test_a_variable_pytorch_reads_at_import_gets_its_own_server_one_read_at_run_time_does_not(monkeypatch):
    base = {"PATH": "/usr/bin", "TORCH_LOGS": "", "WORKBENCH_DATA_DIR": "/a", "OMP_NUM_THREADS": "1"}
    key = forkserver.import_environment(base)
    assert forkserver.import_environment({**base, "WORKBENCH_DATA_DIR": "/b", "OMP_NUM_THREADS": "3",
                                          "PYTEST_CURRENT_TEST": "x", "PYTHONUNBUFFERED": "1"}) == key
    for name, value in [("TORCH_LOGS", "+dynamo"), ("CXX", "/nonexistent/g++"), ("TORCHINDUCTOR_CACHE_DIR", "/c"),
                        ("PATH", "/opt/bin")]:
        assert forkserver.import_environment({**base, name: value}) != key, name


def test_stopping_a_kernel_not_yet_forked_ends_it_as_soon_as_it_is(cold_kernels, monkeypatch):
    monkeypatch.setenv("WORKBENCH_TEST_MARK", "not-yet-forked")
    process = ChildProcess()
    assert process.process.poll() is None and process.process._pid is None  # the server is importing torch
    process.terminate()  # never forked: the request had not left this process
    assert process.process.poll() == -signal.SIGTERM and process.process.pid is None
    assert process.process not in process.process._server.children()
    assert processes_with_env("WORKBENCH_TEST_MARK", "not-yet-forked") == []
    process.close()


@pytest.mark.slow
def test_without_the_fork_server_a_kernel_is_a_new_interpreter(monkeypatch, tmp_path):
    monkeypatch.setenv(forkserver.DISABLE_ENV, "0")
    process, result, _ = _train(TrainConfig(epochs=1, max_steps=2, hidden_dim=16), tmp_path / "run")
    assert isinstance(process.process, subprocess.Popen) and isinstance(result, RunFinished)


@pytest.mark.slow
def test_the_server_imports_without_touching_cuda_or_starting_a_thread():
    """A CUDA context or a running thread does not survive a fork: the preload must create neither."""
    script = """
import threading
import torch

def refuse(*args, **kwargs):
    raise AssertionError("the fork server asked CUDA")

for name in ("is_available", "device_count", "init", "_lazy_init", "current_device"):
    setattr(torch.cuda, name, refuse)
from workbench.core.kernel.forkserver_main import preload, preload_when_idle
preload()
preload_when_idle()
assert threading.active_count() == 1, threading.enumerate()
assert not torch.cuda.is_initialized()
print("ok")
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=180)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


CRASHING_MODEL = '''from torch import nn


class Planted(BaseException):
    """Not an Exception: nothing in the kernel catches it, as nothing catches a real crash."""


class Crasher(nn.Module):
    def __init__(self, input_dim, hidden_dim, output_dim, dropout):
        super().__init__()
        print("a print on stdout, not the cause", flush=True)
        raise Planted("planted crash in the model's constructor")
'''


def test_a_forked_kernel_that_crashes_reports_its_traceback_never_its_last_print(tmp_path):
    """Its stdout and stderr are the parent's two streams in that order: the crash's words are on stderr."""
    spec = tmp_path / "crasher.py"
    spec.write_text(CRASHING_MODEL, encoding="utf-8")
    process, result, _ = _train(TrainConfig(model=f"{spec}:Crasher", epochs=1, max_steps=2), tmp_path / "run")
    assert isinstance(process.process, forkserver.ForkedProcess)
    assert isinstance(result, RunFailed) and result.kind == "crashed"
    assert "exited with code 1" in result.message
    assert result.message.endswith(".Planted: planted crash in the model's constructor")  # the traceback's end
    assert "a print on stdout" not in result.message


def test_a_run_that_finishes_while_its_fork_server_is_frozen_still_finishes(tmp_path):
    """The server reaps its children and reports their exits; frozen (SIGSTOP, a debugger), it reports nothing.
    The kernel is seen to end all the same, and the finished run is not turned into a failure."""
    process = ChildProcess()
    frozen: list[int] = []

    def freeze_at_the_first_step(event):
        if isinstance(event, Step) and not frozen:
            frozen.append(process.process._server.process.pid)
            os.kill(frozen[0], signal.SIGSTOP)

    try:
        result = process.run(RunRequest(TrainConfig(epochs=1, max_steps=20), out_dir=str(tmp_path / "run"),
                                        record=False), freeze_at_the_first_step, threading.Event())
    finally:
        for pid in frozen:
            os.kill(pid, signal.SIGCONT)
    assert frozen and isinstance(result, RunFinished) and not result.stopped, result
    assert (tmp_path / "run" / "checkpoint.pt").is_file()
    assert process.process.returncode == forkserver.UNKNOWN_EXIT  # seen to end; its code was never reported


SPAWNING_MODEL = '''import os, subprocess
from torch import nn


class Spawner(nn.Module):
    """Starts a long-lived helper process of its own (as DataLoader workers or compile workers are), then trains."""

    def __init__(self, input_dim, hidden_dim, output_dim, dropout):
        super().__init__()
        helper = subprocess.Popen(["sleep", "600"])
        with open(os.environ["WORKBENCH_TEST_PROBE"], "w") as out:
            out.write(str(helper.pid))
        self.layer = nn.Linear(input_dim, output_dim)

    def forward(self, x):
        return self.layer(x.flatten(1).float())
'''


def test_ending_a_forked_kernel_ends_what_it_started_too(tmp_path, monkeypatch):
    """A stop is sent to the kernel's whole process group: a helper it started does not outlive it."""
    from ..helpers import alive

    spec, probe = tmp_path / "spawner.py", tmp_path / "helper.pid"
    spec.write_text(SPAWNING_MODEL, encoding="utf-8")
    monkeypatch.setenv(PROBE_ENV, str(probe))
    process = ChildProcess()

    def end_at_the_first_step(event):
        if isinstance(event, Step):
            process.terminate()

    process.run(RunRequest(TrainConfig(model=f"{spec}:Spawner", epochs=50), out_dir=str(tmp_path / "run"),
                           record=False), end_at_the_first_step, threading.Event())
    helper = int(probe.read_text())
    deadline = time.monotonic() + 30
    while alive(helper):  # SIGTERM to the group reaches it at once; its new parent reaps it
        assert time.monotonic() < deadline, "the kernel's helper outlived it"
        time.sleep(0.05)


class FakeServer:
    def __init__(self, name: str, children: int = 0):
        self.name, self.alive, self._children, self.closed = name, True, children, False

    def children(self):
        return [object()] * self._children

    def close(self):
        self.closed = True


def test_servers_beyond_the_kept_two_are_retired_least_recently_used_first_unless_they_have_children(monkeypatch):
    assert forkserver.KEPT_SERVERS == 2
    old, busy, recent, newest = (FakeServer("old"), FakeServer("busy", children=1), FakeServer("recent"),
                                 FakeServer("newest"))
    dead = FakeServer("dead")
    dead.alive = False
    monkeypatch.setattr(forkserver, "_servers", [dead, old, busy, recent, newest])
    forkserver._retire_extra_servers()
    # four alive, two too many: the least recently used without a child go; the busy one reports its child's exit
    assert [s.name for s in forkserver._servers] == ["busy", "newest"]
    assert dead.closed and old.closed and recent.closed and not busy.closed and not newest.closed
    forkserver._retire_extra_servers()
    assert [s.name for s in forkserver._servers] == ["busy", "newest"]  # within the two kept: none goes


def test_closing_a_server_still_importing_ends_it_at_once_not_after_its_imports(monkeypatch):
    """A window closed while its fork server imports PyTorch (half a minute on a loaded machine): the server has
    forked nothing and cannot read the EOF until its imports end, so it is killed, not waited for."""
    monkeypatch.setattr(forkserver, "server_command", lambda fd: [sys.executable, "-c", "import time; time.sleep(600)"])
    server = forkserver.ForkServer(dict(os.environ))
    calls, process = [], server.process
    real_wait, real_kill = process.wait, process.kill
    monkeypatch.setattr(process, "wait", lambda timeout=None: calls.append("wait") or real_wait(timeout))
    monkeypatch.setattr(process, "kill", lambda: calls.append("kill") or real_kill())
    server.close()
    assert calls[0] == "kill"  # before any grace is waited out: not five seconds, not its imports
    assert process.returncode == -signal.SIGKILL and not server.alive


def test_the_window_closes_every_fork_server_as_it_closes(monkeypatch):
    closed = []
    monkeypatch.setattr(forkserver, "_servers", [type("Server", (), {"close": lambda self: closed.append(self)})()])
    forkserver.close_all()
    assert len(closed) == 1 and forkserver._servers == []
