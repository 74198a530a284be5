"""Stopping a run that has not trained anything yet: a user model whose constructor never returns used to need a
second Ctrl+C (the first one waits for a step that never comes). Before the first step there is nothing to keep,
so the first Ctrl+C ends the command at once, with 130. And a model calling sys.exit fails the command (exit 3)."""

from __future__ import annotations

import signal
import subprocess
import time

from workbench.core.history.runs import RunStore

USER_MODEL = """import sys, time
from torch import nn


class Net(nn.Module):
    def __init__(self, input_dim, hidden_dim, output_dim, dropout):
        super().__init__()
        self.layer = nn.Linear(input_dim, output_dim)
        if {hang}:
            while True:
                time.sleep(0.05)

    def forward(self, x):
        if {exit}:
            sys.exit(5)
        return self.layer(x.flatten(1))
"""


def write_model(folder, *, hang=False, exit=False) -> str:
    path = folder / "user_model.py"
    path.write_text(USER_MODEL.format(hang=hang, exit=exit), encoding="utf-8")
    return f"{path}:Net"


def wait_for_row(db, proc: subprocess.Popen, timeout: float = 120) -> None:
    """Until the run's row exists (the CLI writes it as RunStarted arrives, before the model is built)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        if db.is_file():
            with RunStore(db, recover=False) as store:
                if store.list():
                    return
        time.sleep(0.1)  # polling a condition, bounded by the deadline
    raise AssertionError("the run never started")


def test_one_ctrl_c_ends_a_run_whose_model_constructor_never_returns(tmp_path, start_train):
    spec = write_model(tmp_path, hang=True)
    proc, _ = start_train("--model", spec, "--epochs", "1", "--out", str(tmp_path / "run"))
    wait_for_row(tmp_path / "runs.sqlite", proc)
    proc.send_signal(signal.SIGINT)
    sent = time.monotonic()
    out, err = proc.communicate(timeout=60)
    assert time.monotonic() - sent < 15, err
    assert proc.returncode == 130, err
    assert "Traceback" not in err


def test_a_model_calling_sys_exit_fails_the_command(tmp_path, start_train):
    spec = write_model(tmp_path, exit=True)
    proc, _ = start_train("--model", spec, "--epochs", "1", "--max-steps", "3", "--hidden-dim", "16",
                          "--out", str(tmp_path / "run"))
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 3, (out, err)
    assert "sys.exit(5)" in err and "Traceback" not in err
