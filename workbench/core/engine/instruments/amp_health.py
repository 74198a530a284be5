"""AMP's instrument: which ops autocast runs in the low precision and the advice for this device (AmpReport, before
compiling), and under fp16 every step GradScaler skipped, with the gradient that overflowed first (AmpSkipped).
The scale and gradient norms of each step ride along with the block's losses: no extra sync."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from ...domain import amp
from ...domain.evaluate import autocast_context
from ...ground.events import AmpReport, AmpSkipped
from .base import Instrument
from ..state import ReadBack, RunState


class AmpHealth(Instrument):
    def __init__(self) -> None:
        self.report: AmpReport | None = None
        self.scale = 0.0  # fp16: the scale after the last step read back (the next step runs with it)
        self.skipped: list[AmpSkipped] = []
        self.pending: list[AmpSkipped] = []  # read back, emitted after the steps they happened in

    def started(self, run: RunState) -> None:
        run.record_amp_health = run.config.amp == "fp16"

    def model_built(self, run: RunState, model: nn.Module, example: torch.Tensor, labels: torch.Tensor) -> None:
        config, device = run.config, run.device
        if config.amp == "off":
            return
        census = amp.dtype_census(model, example, labels, autocast_context(config, device))
        self.report = AmpReport(dtype=config.amp, device=str(device), census=census,
                                recommendation=amp.recommendation(device))
        resumed = run.resume.training_state.get("scaler") if run.resume is not None else None
        self.scale = float(resumed["scale"]) if resumed else config.loss_scale
        run.emit(self.report)

    def riders(self, run: RunState, steps: int) -> torch.Tensor | None:
        health = run.session.health
        if health is None:
            return None
        rows = health[-steps:] if len(health) >= steps > 0 else []  # a fallback to eager cuts the record short
        health.clear()
        return torch.stack(rows).flatten() if rows else None

    def read_back(self, run: RunState, back: ReadBack, index: int) -> None:
        values = back.riders.get(index)
        if not values:
            return
        width = len(run.session.params) + 1  # a step's record: its scale, then each gradient's norm
        rows = [values[k * width:(k + 1) * width] for k in range(len(values) // width)]
        back.loss_scales = [row[0] for row in rows]
        bad_index = [amp.first_nonfinite(row[1:]) for row in rows]
        names = [name for name, _ in run.session.model.named_parameters()]
        found = amp.skipped_steps(back.first_step, back.loss_scales, bad_index, self.scale, names)
        self.skipped.extend(found)
        self.pending.extend(found)
        self.scale = back.loss_scales[-1]

    def drain(self, run: RunState) -> None:
        pending, self.pending = self.pending, []
        for skipped in pending:
            run.emit(skipped)

    def section(self, run: RunState) -> dict[str, Any]:
        if self.report is None:
            return {}
        return {"amp": amp.amp_summary(run.config.amp, self.report.recommendation, self.report.census, self.skipped,
                                       self.scale if run.session.scaler else None, run.totals.steps)}
