"""What tests share, in one place: the small configurations, the paths of bundled files, and helpers that run the
engine, the CLI and processes and read back what they did. Fixtures live in the conftest.py files; plain helpers
live here, so that no test module imports another."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
# The official MNIST test split (md5-checked), kept outside the repository and never bundled.
MNIST_TEST_DIR = REPO_ROOT.parent / "shared" / "data" / "mnist-test"
PLANTED_BREAK = REPO_ROOT / "resources" / "examples" / "planted_break.py"
SAMPLES_DIR = REPO_ROOT / "resources" / "samples"


def _config(**settings):
    from workbench.core.ground.config import TrainConfig

    return TrainConfig(**settings)


# A run of a moment: 20 steps of a 16-unit net (a few hundredths of a second each on one thread). Without the
# per-layer statistics (and so without the alerts they feed): the tests of those turn them on (STATS), and the
# others see the events they are about. A 16-unit net at full learning rate from its first step loses over half
# its ReLUs within a few steps, which the dead-unit alert rightly reports.
SMALL = _config(epochs=1, max_steps=20, hidden_dim=16, stats_every=0)
STATS = {"stats_every": 100}  # SMALL.replace(**STATS): the statistics as every run has them by default
# The same small net for the finders, which choose their own steps.
SMALL_NET = _config(hidden_dim=16)


def _versions():
    from workbench.core.ground.events import Versions

    return Versions(workbench="0.1.0", torch="x", python="3.11", cuda="none")


# What a made-up run ran on (RunStarted.versions), for the tests that build its events by hand.
VERSIONS = _versions()


@dataclass(frozen=True)
class TrainedRun:
    """A finished, recorded run shared by every test that only reads one (the `trained_run` fixture): treat its
    files as read-only; a test that writes beside them works on a copy (tests/ui/conftest.py::trained_checkpoint)."""

    config: object  # its TrainConfig
    out_dir: Path
    checkpoint: Path
    db: Path
    run_id: int
    events: tuple  # every event, as emitted
    result: object  # its RunFinished


# -- the engine, by its events ------------------------------------------------------------------------------------
def run(config, stop=None, **trainer_kwargs):
    """Train in this process; (every event emitted, the terminal one). Checks the one rule every run keeps."""
    from workbench.core.engine import Trainer
    from workbench.core.ground.events import is_terminal

    events: list = []
    result = Trainer(**trainer_kwargs).run(config, events.append, stop)
    # Every run, whatever happens, ends with exactly one terminal event: the one run() returns.
    assert [e for e in events if is_terminal(e)] == [result]
    assert events[-1] is result
    return events, result


def shape(events) -> list[str]:
    """Event type names with runs of Step collapsed into one 'Step'. System samples are left out: they come twice
    a second, so how many fall between two events depends on the machine (tests/core/test_system.py)."""
    out: list[str] = []
    for e in events:
        name = type(e).__name__
        if name == "SystemSample":
            continue
        if not (name == "Step" and out and out[-1] == "Step"):
            out.append(name)
    return out


def of(events, cls) -> list:
    return [e for e in events if isinstance(e, cls)]


def steps(events) -> list:
    from workbench.core.ground.events import Step

    return of(events, Step)


class StopAfter:
    """A stop flag that turns on after it has been asked `n` times."""

    def __init__(self, n: int):
        self.n, self.asked = n, 0

    def is_set(self) -> bool:
        self.asked += 1
        return self.asked > self.n


# -- the command line ---------------------------------------------------------------------------------------------
def call(capsys, *argv) -> tuple[int, str, str]:
    """Run the CLI in this process; argparse's own exits (--version, usage errors) become return codes."""
    from workbench import cli

    try:
        code = cli.main([str(a) for a in argv])
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    out, err = capsys.readouterr()
    return code, out, err


def shell(*argv, cwd: Path, env_extra: dict | None = None, timeout: int = 120) -> subprocess.CompletedProcess:
    """`python -m workbench ARGV` in a new interpreter, as a shell runs it."""
    env = {**os.environ, **(env_extra or {})}
    return subprocess.run([sys.executable, "-m", "workbench", *map(str, argv)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


def assert_one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, f"expected one line on stderr, got:\n{err}"
    assert lines[0].startswith("workbench: error:"), lines[0]
    assert "Traceback" not in err
    return lines[0]


class TrainStarter:
    """Starts `workbench train *args --db <db>` in subprocesses; see the e2e start_train fixture. `env`: added to
    each one's."""

    def __init__(self, db, env: dict[str, str] | None = None):
        self.db = db
        self.env = env or {}
        self.started: list[tuple[subprocess.Popen, str]] = []

    def start(self, *args: str) -> tuple[subprocess.Popen, str]:
        mark = uuid.uuid4().hex
        env = {**os.environ, **self.env, "WORKBENCH_TEST_MARK": mark, "PYTHONUNBUFFERED": "1"}
        argv = [sys.executable, "-m", "workbench", "train", *args, "--db", str(self.db)]
        proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=True)
        self.started.append((proc, mark))
        return proc, mark

    def kill_leftovers(self) -> None:
        for proc, mark in self.started:
            groups = {proc.pid}
            for pid, _ in marked_processes(mark):
                try:
                    groups.add(os.getpgid(pid))
                except ProcessLookupError:  # it ended since the /proc scan
                    pass
            for group in groups - {os.getpgrp()}:
                try:
                    os.killpg(group, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            proc.wait()
            proc.stdout.close()
            proc.stderr.close()


def wait_for_epoch(proc: subprocess.Popen) -> str:
    """Read stderr until the first epoch line (the run is training on every rank by then)."""
    seen = []
    for line in proc.stderr:
        seen.append(line)
        if line.startswith("epoch 1/"):
            return "".join(seen)
    raise AssertionError("the run ended before its first epoch:\n" + "".join(seen))


# -- processes ----------------------------------------------------------------------------------------------------
def processes_with_env(name: str, value: str) -> list[tuple[int, str]]:
    """(pid, RANK) of every live process, other than this one, whose environment has name=value. A variable set
    for a launch is inherited by every process it starts, so this finds whatever a run left behind."""
    needle = f"{name}={value}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            env = Path(f"/proc/{entry}/environ").read_bytes().split(b"\0")
            status = Path(f"/proc/{entry}/status").read_text()
        except OSError:
            continue
        if needle in env and "State:\tZ" not in status:
            rank = next((e.decode()[5:] for e in env if e.startswith(b"RANK=")), "")
            found.append((int(entry), rank))
    return found + forked_kernels_with_env(name, value)


def forked_kernels_with_env(name: str, value: str) -> list[tuple[int, str]]:
    """(pid, "") of the kernels this process forked (workbench/core/run/forkserver.py) that are still alive and
    were given name=value: /proc shows them with their fork server's environment, so the scan above misses them."""
    from workbench.core.run import forkserver

    return [(child.pid, "") for child in forkserver.live_children() if child.env.get(name) == value]


def marked_processes(mark: str) -> list[tuple[int, str]]:
    return processes_with_env("WORKBENCH_TEST_MARK", mark)


def descendants(pid: int) -> list[int]:
    """Every live process below `pid` (children, their children, …), from /proc."""
    parents = {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        parents[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
    found, frontier = [], [pid]
    while frontier:
        below = [child for child, parent in parents.items() if parent in frontier]
        found += below
        frontier = below
    return found


def alive(pid: int) -> bool:
    try:
        return "State:\tZ" not in Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False


# -- files --------------------------------------------------------------------------------------------------------
def read_only_medium(monkeypatch, folder: Path) -> None:
    """For this test, `folder` answers as a read-only mount does, to root as well (whom chmod does not stop, and the
    tests may run as root): the kernel says nothing there can be written (os.access), and SQLite cannot open a
    database there to write it ('unable to open database file': its -shm cannot be created). Only a read-only open
    (a URI with mode=ro) gets through."""
    import sqlite3

    folder = folder.resolve()
    real_access, real_connect = os.access, sqlite3.connect

    def access(path, mode, *args, **kwargs):
        resolved = Path(path).resolve()
        if mode & os.W_OK and (resolved == folder or folder in resolved.parents):
            return False
        return real_access(path, mode, *args, **kwargs)

    def connect(database, *args, uri=False, **kwargs):
        if not (uri and "mode=ro" in str(database)) and Path(database).resolve().parent == folder:
            raise sqlite3.OperationalError("unable to open database file")
        return real_connect(database, *args, uri=uri, **kwargs)

    monkeypatch.setattr(os, "access", access)
    monkeypatch.setattr(sqlite3, "connect", connect)


# -- the window ---------------------------------------------------------------------------------------------------
def set_config(window, **changes):
    """Put settings into the form the way a user would end up with them, through the panel's own API."""
    window.setup.set_config(_config(**changes))
