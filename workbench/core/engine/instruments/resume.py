"""Continuing a stopped run: the instrument that puts a checkpoint's weights and training state back (its
optimizer, schedule and scaler, its figures, its place in the epochs and its random streams), so that stopping and
continuing trains what one run would; and `training_snapshot`, what a checkpoint keeps for that."""

from __future__ import annotations

import torch
from torch import nn

from ...domain import checkpoint
from ...ground.config import ConfigError
from ...ground.errors import first_line
from .base import Instrument
from ..state import RunState


class Resume(Instrument):
    """Registered last: its `prepared` puts the random streams back, so nothing after it may draw from them."""

    def __init__(self, ckpt: checkpoint.Checkpoint):
        self.ckpt = ckpt

    def model_built(self, run: RunState, model: nn.Module, example: torch.Tensor, labels: torch.Tensor) -> None:
        model.load_state_dict(self.ckpt.state_dict)  # the weights before anything traces or compiles the model

    def prepared(self, run: RunState) -> None:
        session, totals, state = run.session, run.totals, self.ckpt.training_state
        try:
            session.optimizer.load_state_dict(state["optimizer"])
            if session.scheduler is not None and state.get("scheduler") is not None:
                session.scheduler.load_state_dict(state["scheduler"])
            if session.scaler is not None and state.get("scaler") is not None:
                session.scaler.load_state_dict(state["scaler"])
            totals.steps, totals.epochs_ended = int(state["step"]), int(state["epochs_ended"])
            totals.best_val_accuracy, totals.first_loss = state["best_val_accuracy"], state["first_loss"]
            run.epoch, run.skip_batches = int(state["epoch"]), int(state["epoch_step"])
            totals.epoch_loss_sum = float(state["epoch_loss_sum"])
            torch.set_rng_state(state["rng"]["cpu"])
            if run.device.type == "cuda" and state["rng"].get("cuda") is not None:
                torch.cuda.set_rng_state(state["rng"]["cuda"], run.device)
        except (KeyError, TypeError, ValueError, RuntimeError) as exc:
            raise ConfigError("resume", f"the training state in {run.config.resume} is damaged or from another "
                                        f"version: {type(exc).__name__}: {first_line(exc)}") from None


def training_snapshot(run: RunState) -> dict:
    """What continuing this run needs besides its weights (checkpoint.training_state; see Resume). Taken at the end:
    nothing after the last step draws from the random streams (the payback calibration forks them)."""
    session, totals = run.session, run.totals
    epoch, done, loss_sum = run.epoch, totals.epoch_steps, totals.epoch_loss_sum
    if done >= len(run.batches):  # the epoch's steps are all trained: continuing starts the next one
        epoch, done, loss_sum = epoch + 1, 0, 0.0
    cuda = run.device.type == "cuda"
    return {"step": totals.steps, "epoch": epoch, "epoch_step": done, "epoch_loss_sum": loss_sum,
            "epochs_ended": totals.epochs_ended, "best_val_accuracy": totals.best_val_accuracy,
            "first_loss": totals.first_loss, "optimizer": session.optimizer.state_dict(),
            "scheduler": session.scheduler.state_dict() if session.scheduler is not None else None,
            "scaler": session.scaler.state_dict() if session.scaler is not None else None,
            "rng": {"cpu": torch.get_rng_state(), "cuda": torch.cuda.get_rng_state(run.device) if cuda else None}}
