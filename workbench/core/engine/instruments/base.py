"""The loop's plug-in interface (fastai's callbacks): an instrument watches a run without the loop knowing what it
measures. The loop calls each hook at its moment, in the order the instruments were registered
(instruments/standard.py); every hook does nothing unless overridden. An instrument keeps its own state, emits its
own events through `run.emit`, and hands back its own typed section of the run's results at the end (`section`).

Adding an instrument: a subclass in its own module, and one entry in `standard_instruments`. It reaches the step
through these hooks only (inside an optimizer step: steps.UpdateWatch, which a `step_context` sets)."""

from __future__ import annotations

import contextlib
from typing import Any

import torch
from torch import nn

from ...ground.signals import RunSignals
from ..state import ReadBack, RunState


class Instrument:
    def started(self, run: RunState) -> None:
        """RunStarted is out; nothing is built yet."""

    def model_built(self, run: RunState, model: nn.Module, example: torch.Tensor, labels: torch.Tensor) -> None:
        """The eager model and a first batch, before anything traces or compiles it."""

    def prepared(self, run: RunState) -> None:
        """The session is ready (compiled or not); no step has run."""

    def step_context(self, run: RunState, kind: str) -> contextlib.AbstractContextManager | None:
        """Before step `run.step` (of WarmupPlan kind `kind`): a context to run the step in, or None. Called per step
        only on the instruments that override it, so the others cost the step nothing."""
        return None

    def riders(self, run: RunState, steps: int) -> torch.Tensor | None:
        """Values on the device to read back with the block's `steps` losses (one sync for all): a flat tensor, or
        None. What was read comes back in `read_back` as `back.riders[index]`."""
        return None

    def read_back(self, run: RunState, back: ReadBack, index: int) -> None:
        """A block was read back; its Step events go out after every instrument has seen it."""

    def phase_ended(self, run: RunState, kind: str) -> None:
        """The last step of a run of `kind` steps (compiling, recording, warmup, profiling) was read back."""

    def phase_changed(self, run: RunState) -> None:
        """`run.phase` changed (train ↔ eval)."""

    def requests(self, run: RunState, signals: RunSignals) -> None:
        """At a read-back: what the user asked for during the run."""

    def drain(self, run: RunState) -> None:
        """Emit what was gathered off the run's thread since the last call (after the steps it happened in)."""

    def ending(self, run: RunState) -> None:
        """The last step and validation are done; before the final compile report."""

    def section(self, run: RunState) -> dict[str, Any]:
        """This instrument's fields of the run's results (RunResults), typed."""
        return {}

    def close(self, run: RunState) -> None:
        """The run is over, however it ended: release what the instrument holds."""
