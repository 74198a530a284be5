"""The per-layer statistics instrument (config.stats_every; 0 = off): the model's layer table once (ModelSummary,
before anything compiles it), then every `config.stats_every` steps, and at a few early steps for a history to
compare against, each layer's norms, update ratio, dead inputs and histograms (LayerStats, domain.layer_stats). The
numbers are taken on the device inside the sampled step and ride along with the block's losses: no sync of their
own."""

from __future__ import annotations

import contextlib
from typing import Iterator

import torch
from torch import nn

from ...domain.layer_stats import LayerProbe, decode, model_summary
from ...ground.layer_stats import EARLY_STEPS
from .base import Instrument
from ..state import ReadBack, RunState

UNSAMPLED_KINDS = ("recording", "profiling")  # CUDA-graph recording and the profiler's window stay undisturbed


def sampled(step: int, every: int) -> bool:
    """Whether step `step` is sampled at an interval of `every` steps (0: never)."""
    return bool(every) and (step in EARLY_STEPS or step % every == 0)  # the early ones whatever the interval


class LayerStatistics(Instrument):
    def __init__(self) -> None:
        self.every = 0
        self.probe = LayerProbe()
        self.contents: list[tuple[int, list[str]]] = []  # what the last riders hold

    def started(self, run: RunState) -> None:
        self.every = run.config.stats_every

    def model_built(self, run: RunState, model: nn.Module, example: torch.Tensor, labels: torch.Tensor) -> None:
        if self.every:
            run.emit(model_summary(model, example))

    def step_context(self, run: RunState, kind: str) -> contextlib.AbstractContextManager | None:
        if kind in UNSAMPLED_KINDS or not sampled(run.step, self.every):
            return None
        return self._sampling(run)

    @contextlib.contextmanager
    def _sampling(self, run: RunState) -> Iterator[None]:
        self.probe.step = run.step
        session = run.session
        session.watches = (self.probe,)
        try:
            yield
        finally:
            session.watches = ()  # the session the step started with (a fallback to eager replaces it)

    def riders(self, run: RunState, steps: int) -> torch.Tensor | None:
        if not steps:
            return None
        values, self.contents = self.probe.flat()
        return values

    def read_back(self, run: RunState, back: ReadBack, index: int) -> None:
        """Emitted at once, before the block's Step events: a block whose loss blew up fails the run before they
        go out, and its statistics are what tells why (the alerts read them first)."""
        values = back.riders.get(index)
        contents, self.contents = self.contents, []
        for stats in decode(values, contents) if values else ():
            run.emit(stats)
