"""Faults in the user's own model code: named as the user's (kind "model", with the file:line in their file), not
"a bug in Workbench"; a model calling sys.exit is a failed run; and a model whose constructor never returns can
still be stopped at once, since nothing has been trained before the first step."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from workbench.core.engine import Trainer
from workbench.core.ground.config import TrainConfig
from workbench.core.ground.events import Notice, RunFailed, RunFinished, RunStarted
from workbench.core.run.launch import start_run
from workbench.core.run.process import ChildProcess
from workbench.core.run.run_request import RunRequest

HEADER = """import sys, time
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self, input_dim, hidden_dim, output_dim, dropout):
        super().__init__()
        self.layer = nn.Linear(input_dim, output_dim)
"""
FORWARD = """
    def forward(self, x):
        return self.layer(x.flatten(1))
"""
BAD_FORWARD = """
    def forward(self, x):
        raise ValueError("planted forward failure")  # PLANTED
"""
EXIT_FORWARD = """
    def forward(self, x):
        sys.exit(7)  # PLANTED
"""
BAD_INIT = """        raise ValueError("planted constructor failure")  # PLANTED
""" + FORWARD
HANGING_INIT = """        while True:  # PLANTED
            time.sleep(0.05)
""" + FORWARD


def model_file(folder: Path, body: str) -> tuple[str, int]:
    """Write the model; return its spec and the 1-based line of the planted fault."""
    path = folder / "user_model.py"
    text = HEADER + body
    path.write_text(text, encoding="utf-8")
    line = next((i for i, text_line in enumerate(text.splitlines(), 1) if "# PLANTED" in text_line), 0)
    return f"{path}:Net", line


def config_for(spec: str) -> TrainConfig:
    return TrainConfig(model=spec, epochs=1, max_steps=3, hidden_dim=16)


@pytest.mark.parametrize("body, error", [(BAD_FORWARD, "planted forward failure"),
                                         (BAD_INIT, "planted constructor failure")], ids=["forward", "init"])
def test_an_exception_in_the_user_s_model_is_named_as_theirs_with_its_file_and_line(tmp_path, body, error):
    spec, line = model_file(tmp_path, body)
    events = []
    result = Trainer().run(config_for(spec), events.append)
    assert isinstance(result, RunFailed) and events[-1] == result
    assert result.kind == "model", result
    assert result.message.startswith("your model Net raised ValueError") and error in result.message
    assert f"{tmp_path / 'user_model.py'}:{line}" in result.hint
    assert "bug in Workbench" not in result.hint


def test_an_exception_outside_the_user_s_file_is_still_internal(tmp_path, monkeypatch):
    spec, _ = model_file(tmp_path, FORWARD)

    def broken(*args, **kwargs):
        raise RuntimeError("planted workbench bug")

    monkeypatch.setattr("workbench.core.engine.trainer.check_outputs", broken)
    result = Trainer().run(config_for(spec), lambda event: None)
    assert isinstance(result, RunFailed) and result.kind == "internal", result


def test_a_model_calling_sys_exit_is_a_failed_run_not_an_exit(tmp_path):
    spec, line = model_file(tmp_path, EXIT_FORWARD)
    events = []
    result = Trainer().run(config_for(spec), events.append)  # a SystemExit escaping here would end pytest's test
    assert isinstance(result, RunFailed) and events[-1] == result
    assert result.kind == "model" and "the model called sys.exit(7)" in result.message, result
    assert f"{tmp_path / 'user_model.py'}:{line}" in result.hint


@pytest.mark.slow
def test_a_model_calling_sys_exit_in_a_run_kernel_is_a_failed_run(tmp_path):
    spec, _ = model_file(tmp_path, EXIT_FORWARD)
    request = RunRequest(config=config_for(spec), out_dir=str(tmp_path / "run"), record=False)
    result = start_run(request, lambda event: None)
    assert isinstance(result, RunFailed) and result.kind == "model", result
    assert "sys.exit(7)" in result.message


def test_a_stop_while_the_user_s_constructor_hangs_ends_the_kernel_at_once(tmp_path):
    """No Step event yet: nothing is trained, so the stop does not wait STOP_GRACE_S for a step to end."""
    spec, _ = model_file(tmp_path, HANGING_INIT)
    request = RunRequest(config=config_for(spec), out_dir=str(tmp_path / "run"), record=False)
    stop = threading.Event()
    events = []
    stopped_at = []

    def emit(event):
        events.append(event)
        if isinstance(event, RunStarted):  # the kernel is now in the constructor, which never returns
            stopped_at.append(time.monotonic())
            stop.set()

    process = ChildProcess()
    result = start_run(request, emit, stop, process=process)
    assert stopped_at, events
    assert time.monotonic() - stopped_at[0] < 15  # far below the 60 s grace
    assert isinstance(result, RunFinished) and result.stopped and result.steps == 0, result
    notices = [e for e in events if isinstance(e, Notice)]
    assert notices and notices[-1].message == "stopped before the first step; nothing was trained"
    assert events[-1] == result
    assert process.process.poll() is not None  # the kernel is gone, not left looping
