"""The loop's instrument interface: each hook is called at its moment, what an instrument puts on the ride comes back
with the block's losses, and an instrument is closed however the run ends."""

import contextlib

import torch

from tests.helpers import SMALL, run, steps
from workbench.core.engine import standard_instruments
from workbench.core.engine.instruments.base import Instrument
from workbench.core.ground.events import RunFailed, RunFinished


class Recorder(Instrument):
    """Writes down every hook it hears, and rides each step's number along with the losses."""

    def __init__(self):
        self.heard: list[str] = []
        self.ridden: list[float] = []
        self.first_steps: list[int] = []

    def started(self, run):
        self.heard.append("started")

    def model_built(self, run, model, example, labels):
        self.heard.append(f"model_built {type(model).__name__} {tuple(example.shape)}")

    def prepared(self, run):
        self.heard.append(f"prepared compiled={run.session.compiled}")

    def step_context(self, run, kind):
        self.heard.append(f"step {run.step} {kind}")
        return contextlib.nullcontext()

    def riders(self, run, n):
        first = run.totals.steps - n + 1
        return torch.arange(first, first + n, dtype=torch.float32, device=run.device)

    def read_back(self, run, back, index):
        self.ridden += back.riders[index]
        self.first_steps.append(back.first_step)

    def phase_changed(self, run):
        self.heard.append(f"phase {run.phase}")

    def ending(self, run):
        self.heard.append("ending")

    def section(self, run):
        self.heard.append("section")
        return {}

    def close(self, run):
        self.heard.append("close")


def _with(recorder):
    """A run's standard instruments and `recorder` last: one more entry is all a new instrument takes."""
    standard = standard_instruments()
    return lambda: [*standard(), recorder]


def test_every_hook_is_called_at_its_moment_and_the_riders_come_back_with_their_steps(monkeypatch):
    recorder = Recorder()
    events, result = run(SMALL.replace(epochs=1, max_steps=6), instruments=_with(recorder))
    assert isinstance(result, RunFinished) and len(steps(events)) == 6
    heard = recorder.heard
    assert heard[0] == "started" and heard[1].startswith("model_built SandwichNet (")
    assert heard[2] == "prepared compiled=False"
    assert heard[3:9] == [f"step {i} steady" for i in range(1, 7)]
    assert heard[9:] == ["phase eval", "phase train", "ending", "section", "close"]
    assert recorder.ridden == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]  # each block's values, in step order, none lost
    assert recorder.first_steps[0] == 1


def test_an_instrument_is_closed_when_the_run_fails(monkeypatch):
    recorder = Recorder()
    monkeypatch.setattr("workbench.core.engine.steps.train_step", lambda *args: 1 / 0)
    _, result = run(SMALL.replace(max_steps=3), instruments=_with(recorder))
    assert isinstance(result, RunFailed) and result.kind == "internal"
    assert recorder.heard[-1] == "close" and "ending" not in recorder.heard
