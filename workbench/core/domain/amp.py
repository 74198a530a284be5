"""Mixed precision, observed: which ops autocast really ran in bf16/fp16 (the census), which precision a device
should use (the recommendation), and which fp16 steps GradScaler skipped and why (without a sync per step).

The census and the recommendation feed the run's `AmpReport`; `grad_norms` and `step_record` are taken on the
device every fp16 step (two ops) and read back with the losses, where `first_nonfinite` and `skipped_steps` turn
them into `AmpSkipped` events and the Steps' `loss_scale`; `amp_summary` is the run's results' `amp`.

Op names are the overload packet's qualified name, namespace included and overload left out: "aten.addmm",
"aten._to_copy", "aten.nll_loss_forward" (what `str(func.overloadpacket)` prints).
"""

from __future__ import annotations

import math
from collections import Counter
from contextlib import AbstractContextManager
from typing import Any, Iterable

import torch
from torch import nn
from torch.nn import functional as F
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from ..ground.amp_census import GROUPS, AmpCensus, CallsByGroup, CensusRow
from ..ground.events import AmpSkipped
from ..ground.results import AmpSummary, NonFinite

SKIPPED_LISTED = 100  # amp_summary lists at most this many skipped step numbers


# -- the census -------------------------------------------------------------------------------------------------
class _OpRecorder(TorchDispatchMode):
    """Counts every aten call below autocast (the Python dispatch key comes after the Autocast keys), so it sees
    the ops autocast chose and the casts it inserted, each with the dtype it produced."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: Counter[tuple[str, str]] = Counter()  # (op, dtype) → calls, in first-seen order

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        tensors = [t for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor)]
        floating = [t for t in tensors if t.is_floating_point()]
        # The first floating output decides (nll_loss_forward's two outputs share one dtype); an op with none is
        # "other", named by its first tensor output's dtype (int64, bool, uint8) or "" when it returns no tensor.
        dtype = (floating or tensors)[0].dtype if tensors else None
        self.calls[(str(func.overloadpacket), _dtype_name(dtype))] += 1
        return out


def _dtype_name(dtype: torch.dtype | None) -> str:
    return "" if dtype is None else str(dtype).removeprefix("torch.")


def _group(dtype_name: str) -> str:
    """low = a floating dtype narrower than fp32 (bf16, fp16, fp8); fp32 = fp32 or wider; other = not floating."""
    dtype = getattr(torch, dtype_name, None) if dtype_name else None
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        return "other"
    return "low" if dtype.itemsize < 4 else "fp32"


def dtype_census(model: nn.Module, x: torch.Tensor, y: torch.Tensor, autocast: AbstractContextManager) -> AmpCensus:
    """One training-mode forward and cross-entropy of `model` on (x, y) under `autocast`, every aten op recorded
    with the dtype it ran in: the proof of what autocast did, not the documentation's lists. Leaves no trace on the
    run: no autograd graph and no .grad (no_grad casts exactly as training does), a forked random stream (dropout
    draws nothing from the run's), buffers (BatchNorm statistics) and train/eval mode put back.

    One row per (op, dtype), low first, then fp32, then other, each by calls, most first; casts (aten._to_copy)
    are rows of their own, the price autocast pays."""
    was_training = model.training
    buffers = [(b, b.detach().clone()) for b in model.buffers()]
    cuda = sorted({t.device for t in [x, *model.parameters(), *model.buffers()] if t.device.type == "cuda"},
                  key=str)
    recorder = _OpRecorder()
    model.train()
    try:
        with torch.no_grad(), torch.random.fork_rng(devices=cuda), autocast, recorder:
            F.cross_entropy(model(x), y)
    finally:
        model.train(was_training)
        with torch.no_grad():
            for buffer, saved in buffers:
                buffer.copy_(saved)
    rows = [CensusRow(op, calls, dtype, _group(dtype)) for (op, dtype), calls in recorder.calls.items()]
    rows.sort(key=lambda row: (GROUPS.index(row.group), -row.calls))  # stable: ties keep call order
    groups = CallsByGroup(**{group: sum(row.calls for row in rows if row.group == group) for group in GROUPS})
    return AmpCensus(ops=tuple(rows), groups=groups)


# -- the recommendation -----------------------------------------------------------------------------------------
def recommend(kind: str, bf16_hw: bool, fp16_hw: bool, capability_text: str) -> str:
    """The advice as a function of facts only, so every branch is testable without the hardware. `kind` is the
    device type; `fp16_hw` matters on the CPU (AMX-FP16), while every GPU torch supports runs fp16."""
    if kind == "cuda":
        if bf16_hw:
            return (f"bf16: {capability_text} computes bf16 natively, and bf16 keeps fp32's range: no loss scaling, "
                    "no skipped steps")
        return (f"fp16 with GradScaler: {capability_text} has no native bf16; fp16's narrow range needs loss "
                "scaling, and an overflowing step is skipped")
    if kind == "cpu":
        if bf16_hw:
            return (f"bf16: this CPU ({capability_text}) has bf16 instructions, and bf16 keeps fp32's range: "
                    "no loss scaling, no skipped steps")
        if fp16_hw:
            return (f"fp16 with GradScaler: this CPU ({capability_text}) has AMX-FP16 but no bf16 instructions; "
                    "fp16 needs loss scaling, and an overflowing step is skipped")
        return (f"off (fp32): this CPU ({capability_text}) has no bf16 or fp16 instructions, so autocast only adds "
                "casts (slower, not faster)")
    return f"off (fp32): no mixed-precision advice for {kind} devices; measure bf16 against fp32 before using it"


def _cpu_flag(name: str) -> bool:
    """A private torch.cpu probe (`_is_avx512_bf16_supported`, …), False where this torch lacks it."""
    probe = getattr(torch.cpu, name, None)
    try:
        return bool(probe()) if callable(probe) else False
    except Exception:  # a probe that cannot answer is no instruction set
        return False


def device_facts(device: torch.device) -> dict[str, Any]:
    """What `recommend` needs to know about `device`: {"kind", "bf16_hw", "fp16_hw", "capability_text"}."""
    if device.type == "cuda":
        with torch.cuda.device(device):
            major, minor = torch.cuda.get_device_capability()
            name = torch.cuda.get_device_name()
            bf16 = torch.cuda.is_bf16_supported(including_emulation=False)
        return {"kind": "cuda", "bf16_hw": bf16, "fp16_hw": True,
                "capability_text": f"compute capability {major}.{minor} ({name})"}
    if device.type == "cpu":
        bf16 = _cpu_flag("_is_avx512_bf16_supported") or _cpu_flag("_is_amx_tile_supported")
        return {"kind": "cpu", "bf16_hw": bf16, "fp16_hw": _cpu_flag("_is_amx_fp16_supported"),
                "capability_text": torch.backends.cpu.get_cpu_capability()}
    return {"kind": device.type, "bf16_hw": False, "fp16_hw": False, "capability_text": device.type}


def recommendation(device: torch.device) -> str:
    """One line: the AMP precision `device` should use, and why."""
    return recommend(**device_facts(device))


# -- fp16 step health, on the device ----------------------------------------------------------------------------
def grad_norms(params: list[torch.Tensor], zero: torch.Tensor) -> list[torch.Tensor]:
    """Each parameter's gradient 2-norm, as 0-dim fp32 tensors on the device (`zero`, a 0-dim fp32 tensor of the
    run's, for a parameter without a grad): one multi-tensor kernel, no sync. Taken after the scaled backward,
    before `scaler.step` unscales in place; `step_record` stacks them with the scale after the update.

    A 2-norm is inf or NaN exactly when an element is, for fp16 training: a finite gradient out of fp16 ops is at
    most 65504 per element, whose squares sum far below fp32's maximum (an fp32 2-norm overflows only once
    elements pass 1.8e19). On the CPU it is 8× cheaper than the inf-norm (22 against 182 µs, built-in model)."""
    present = [p.grad for p in params if p.grad is not None]
    norms = iter(torch._foreach_norm(present)) if present else iter(())
    return [_fp32(next(norms)) if p.grad is not None else zero for p in params]


def step_record(scaler: torch.amp.GradScaler, norms: list[torch.Tensor]) -> torch.Tensor:
    """[scale after the update, the gradient norms…] as one fp32 vector on the device: a single stack (which
    copies the scale before the next update rewrites it in place), read back with the block's losses."""
    return torch.stack([_fp32(scale_tensor(scaler, copy=False)), *norms])


def first_nonfinite(norms: Iterable[float]) -> int:
    """The index of the first parameter whose gradient norm (read back from `step_record`) is inf or NaN; −1 when
    every one is finite."""
    return next((i for i, norm in enumerate(norms) if not math.isfinite(norm)), -1)


def _fp32(tensor: torch.Tensor) -> torch.Tensor:
    return tensor if tensor.dtype == torch.float32 else tensor.float()


def scale_tensor(scaler: torch.amp.GradScaler, copy: bool = True) -> torch.Tensor:
    """The scaler's current scale as a 0-dim float tensor on its device, without `get_scale()`'s sync. A copy
    unless `copy` is off (the caller copies it, as `step_record`'s stack does): `update()` rewrites `_scale` in
    place, and every step's value must survive until the block is read back."""
    scale = getattr(scaler, "_scale", None)
    if scale is not None and scaler.is_enabled():
        view = scale.detach().reshape(())
        return view.clone() if copy else view
    value = scaler.get_scale()  # not initialised yet (its init_scale) or disabled (1.0): no device value to sync
    return torch.full((), value, dtype=torch.float32, device=getattr(scaler, "_device", "cpu"))


def skipped_steps(first_step: int, scales_after: list[float], bad_index: list[int], scale_before_first: float,
                  names: list[str]) -> list[AmpSkipped]:
    """The skipped steps of a block read back from the device. GradScaler halves the scale exactly when it skips
    a step (and only ever grows it otherwise), so step i was skipped iff its scale after the update is below the
    one it ran with: the previous step's scale after, or `scale_before_first` for the block's first step."""
    events = []
    ran_with = scale_before_first
    for i, after in enumerate(scales_after):
        if after < ran_with:
            index = bad_index[i] if i < len(bad_index) else -1
            param = names[index] if 0 <= index < len(names) else ""
            events.append(AmpSkipped(step=first_step + i, scale=ran_with, param=param))
        ran_with = after
    return events


def amp_summary(dtype: str, recommendation: str, census: AmpCensus, skipped: list[AmpSkipped],
                final_scale: float | None, steps: int) -> AmpSummary:
    """The run's results' `amp`: the precision, the advice, the census's group totals and the skipped steps."""
    ordered = sorted(skipped, key=lambda event: event.step)
    first = ordered[0] if ordered else None
    return AmpSummary(dtype=dtype, recommendation=recommendation, census_groups=census.groups.to_dict(),
                      skipped=len(ordered), skipped_steps=tuple(event.step for event in ordered[:SKIPPED_LISTED]),
                      first_nonfinite=NonFinite(step=first.step, param=first.param) if first is not None else None,
                      final_scale=final_scale, skipped_share=len(ordered) / steps if steps > 0 else 0.0)
