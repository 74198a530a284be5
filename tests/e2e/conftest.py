from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid

import pytest

from ..conftest import processes_with_env


@pytest.fixture(autouse=True)
def _one_torch_thread(one_torch_thread):
    """See tests/conftest.py: fast, contention-proof CPU training."""


def marked_processes(mark: str) -> list[tuple[int, str]]:
    return processes_with_env("WORKBENCH_TEST_MARK", mark)


class TrainStarter:
    """Starts `workbench train *args --db <db>` in subprocesses; see start_train. `env`: added to each one's."""

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


@pytest.fixture
def start_train(tmp_path):
    """`start_train(*args)` starts `workbench train *args --db tmp_path/runs.sqlite` in a subprocess and returns
    (process, mark); every process of the run inherits WORKBENCH_TEST_MARK=mark. A test checks itself that nothing
    is left; when it fails or times out first, teardown SIGKILLs whatever the run left running (the CLI's own
    session, and the session its children get), so no training process outlives the test."""
    starter = TrainStarter(tmp_path / "runs.sqlite")
    yield starter.start
    starter.kill_leftovers()


def wait_for_epoch(proc: subprocess.Popen) -> str:
    """Read stderr until the first epoch line (the run is training on every rank by then)."""
    seen = []
    for line in proc.stderr:
        seen.append(line)
        if line.startswith("epoch 1/"):
            return "".join(seen)
    raise AssertionError("the run ended before its first epoch:\n" + "".join(seen))

