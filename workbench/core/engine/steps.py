"""What a run trains with (`Session`) and one optimizer step (`train_step`), at module level: the loop, the payback
calibration and the benchmark time exactly these functions."""

from __future__ import annotations

import contextlib
import copy
import math
from dataclasses import dataclass, field
from typing import Callable, Protocol

import torch
from torch import nn
from torch.nn import functional as F

from ..domain import amp
from ..domain.evaluate import autocast_context
from ..ground.config import TrainConfig


class UpdateWatch(Protocol):
    """An instrument's eyes inside an optimizer step: the true gradients (unscaled under fp16) before the update,
    and the weights after it. A step calls each watch once, at one place, whatever the precision."""

    def before_update(self, model: nn.Module, x: torch.Tensor, autocast: contextlib.AbstractContextManager) -> None:
        ...

    def after_update(self) -> None:
        ...


@dataclass
class Session:
    """What a run trains with; replaced as a whole when a compile failure falls back to eager."""

    model: nn.Module  # the module holding the weights (compiled in place when a backend is used)
    train_model: nn.Module  # what forward is called on (the DDP wrapper in a multi-process run)
    optimizer: torch.optim.Optimizer
    scaler: torch.amp.GradScaler | None
    compiled: bool
    autocast: contextlib.AbstractContextManager  # built once, entered every step (torch.autocast is reusable)
    scheduler: torch.optim.lr_scheduler.LRScheduler | None = None
    # fp16 health (domain.amp): per step, [scale after the update, each parameter's gradient norm], on the device
    # until the block's read-back. None: not recorded (no scaler, or the benchmark's bare steps).
    health: list[torch.Tensor] | None = None
    params: list[torch.Tensor] = field(default_factory=list)  # the model's parameters, in named_parameters order
    zero: torch.Tensor | None = None  # the norm of a parameter without a gradient (made once, on the device)
    # What watches the update of this step (the per-layer statistics' probe, set only for the steps it samples).
    watches: tuple[UpdateWatch, ...] = ()


def new_session(model: nn.Module, config: TrainConfig, device: torch.device, total_steps: int, *, compiled: bool,
                wrap: Callable[[nn.Module], nn.Module], lr_factor: Callable[[int], float] | None = None,
                record_health: bool = False, carried: Session | None = None) -> Session:
    """Optimizer, schedule and scaler for `model` on `device`; with `carried`, continuing from that session's state.
    `lr_factor` replaces the config's schedule (the LR range test); `record_health`: fp16's per-step record."""
    optimizer = make_optimizer(model.parameters(), config, device.type)
    # The schedule first: building LambdaLR sets the learning rate to the first step's, which the carried
    # optimizer state (its learning rate included) must then overwrite.
    scheduler = (torch.optim.lr_scheduler.LambdaLR(optimizer, lr_factor) if lr_factor is not None
                 else lr_schedule(optimizer, config, total_steps))
    scaler = torch.amp.GradScaler(device.type, init_scale=config.loss_scale) if config.amp == "fp16" else None
    health = scaler is not None and record_health
    if carried is not None:
        optimizer.load_state_dict(carried.optimizer.state_dict())
        if scheduler is not None and carried.scheduler is not None:
            scheduler.load_state_dict(carried.scheduler.state_dict())
        if scaler is not None and carried.scaler is not None:
            scaler.load_state_dict(carried.scaler.state_dict())
    return Session(model=model, train_model=wrap(model), optimizer=optimizer, scaler=scaler, compiled=compiled,
                   scheduler=scheduler, autocast=autocast_context(config, device), health=[] if health else None,
                   params=list(model.parameters()), zero=torch.zeros((), device=device) if health else None)


def make_optimizer(params, config: TrainConfig, device_type: str) -> torch.optim.Optimizer:
    """The run's optimizer. On CUDA the fused implementation: one kernel for the whole update, and under a
    GradScaler (fp16) it reads the scaler's found_inf on the device, where a non-fused step calls found_inf.item(),
    a host sync every step (pytorch/pytorch#80167). Not on the CPU: fused CPU kernels are recent (absent from
    older torch versions the project allows) and no faster there than the default foreach path."""
    fused = {"fused": True} if device_type == "cuda" else {}
    if config.optimizer == "adamw":
        return torch.optim.AdamW(params, lr=config.lr, weight_decay=config.weight_decay, **fused)
    return torch.optim.SGD(params, lr=config.lr, momentum=0.9, weight_decay=config.weight_decay, **fused)


def lr_schedule(optimizer: torch.optim.Optimizer, config: TrainConfig,
                total_steps: int) -> torch.optim.lr_scheduler.LRScheduler | None:
    """Cosine decay to zero over the planned steps, after a short linear warm-up (5%)."""
    if config.lr_schedule == "constant":
        return None
    warmup = max(1, total_steps // 20)

    def factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        progress = min(1.0, (step - warmup) / max(1, total_steps - warmup))
        return 0.5 * (1.0 + math.cos(math.pi * progress))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


def train_step(session: Session, x: torch.Tensor, y: torch.Tensor, config: TrainConfig,
               device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """One optimizer step: its loss and its count of right predictions, both still on the device. Backward and the
    optimizer stay outside the compiled region and outside autocast. The count is taken from the logits at once,
    before anything else runs the model: under CUDA graphs the next replay overwrites the graph's outputs."""
    with session.autocast:
        logits = session.train_model(x)
        loss = F.cross_entropy(logits, y)
    correct = (logits.detach().argmax(-1) == y).sum()
    scaler, watches, norms = session.scaler, session.watches, None
    (scaler.scale(loss) if scaler is not None else loss).backward()
    if scaler is not None:
        norms = amp.grad_norms(session.params, session.zero) if session.health is not None else None
        if watches:  # a watch reads true gradients: unscaled here, so step() does not unscale again
            scaler.unscale_(session.optimizer)
    for watch in watches:
        watch.before_update(session.model, x, session.autocast)
    if scaler is not None:
        scaler.step(session.optimizer)
        scaler.update()
        if norms is not None:
            session.health.append(amp.step_record(scaler, norms))
    else:
        session.optimizer.step()
    for watch in watches:
        watch.after_update()
    session.optimizer.zero_grad(set_to_none=True)
    if session.scheduler is not None:
        session.scheduler.step()
    return loss.detach(), correct


def training_state(session: Session) -> dict:
    """Copies of everything a training step changes: weights, optimizer, schedule, scaler."""
    return {"model": {k: v.detach().clone() for k, v in session.model.state_dict().items()},
            "optimizer": copy.deepcopy(session.optimizer.state_dict()),
            "scheduler": session.scheduler.state_dict() if session.scheduler is not None else None,
            "scaler": session.scaler.state_dict() if session.scaler is not None else None}


def restore_training_state(session: Session, state: dict) -> None:
    """Put `training_state`'s copies back, in place (CUDA graphs keep the parameters' addresses)."""
    with torch.no_grad():
        for name, value in session.model.state_dict().items():
            value.copy_(state["model"][name])
    session.optimizer.load_state_dict(state["optimizer"])
    if session.scheduler is not None:
        session.scheduler.load_state_dict(state["scheduler"])
    if session.scaler is not None:
        session.scaler.load_state_dict(state["scaler"])


def rank_seed(seed: int, rank: int) -> int:
    """The seed of a rank's training stream (dropout) once the shared-seed model is built: its own per rank."""
    return seed + rank
