"""domain.amp: the dtype census under real CPU autocast, the precision advice, and fp16 skipped-step detection
proved end to end with a real GradScaler on the CPU."""

from __future__ import annotations

import contextlib

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from workbench.core.domain.amp import (amp_summary, device_facts, dtype_census, first_nonfinite, grad_norms,
                                       recommend, recommendation, scale_tensor, skipped_steps, step_record)
from workbench.core.domain.evaluate import autocast_context
from workbench.core.domain.model import model_for
from workbench.core.ground.amp_census import AmpCensus, CallsByGroup, CensusRow
from workbench.core.ground.config import TrainConfig
from workbench.core.ground.events import AmpSkipped
from workbench.core.ground.results import AmpSummary, NonFinite

CPU = torch.device("cpu")
CONFIG = TrainConfig(hidden_dim=16, dropout=0.2)


def _batch(size: int = 8, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    x = torch.randint(0, 256, (size, 1, 28, 28), dtype=torch.uint8, generator=generator)
    return x, torch.randint(0, 10, (size,), generator=generator)


def _model(seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    return model_for(CONFIG, 10)


def _rows(census: AmpCensus, op: str) -> list[CensusRow]:
    return [row for row in census.ops if row.op == op]


# -- the census -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("amp, low", [("bf16", "bfloat16"), ("fp16", "float16")])
def test_census_matmuls_run_low_and_the_loss_stays_fp32(amp, low):
    x, y = _batch()
    census = dtype_census(_model(), x, y, autocast_context(TrainConfig(amp=amp), CPU))
    assert [(r.dtype, r.group, r.calls) for r in _rows(census, "aten.addmm")] == [(low, "low", 2)]
    for op in ("aten._log_softmax", "aten.nll_loss_forward"):  # cross_entropy's parts
        assert [(r.dtype, r.group) for r in _rows(census, op)] == [("float32", "fp32")]
    casts = {r.dtype: r.calls for r in _rows(census, "aten._to_copy")}
    assert casts[low] == 5  # fc1's input and both layers' weight and bias cast down: autocast's price, counted
    assert casts["float32"] == 2  # the model's own uint8 → float, and the logits cast back up for the loss
    assert census.groups == CallsByGroup(**{g: sum(r.calls for r in census.ops if r.group == g)
                                            for g in ("low", "fp32", "other")})
    assert census.groups.low > 0 and census.groups.other >= 1  # aten.view of the uint8 images
    assert {r.group for r in census.ops if r.dtype == low} == {"low"}
    ranks = [("low", "fp32", "other").index(r.group) for r in census.ops]
    assert ranks == sorted(ranks)
    for group in ("low", "fp32", "other"):
        calls = [r.calls for r in census.ops if r.group == group]
        assert calls == sorted(calls, reverse=True)
    assert len({(r.op, r.dtype) for r in census.ops}) == len(census.ops)  # one row per (op, dtype)


def test_census_without_autocast_has_nothing_low():
    """The test that fails if the autocast argument were ignored (or entered from somewhere else)."""
    x, y = _batch()
    census = dtype_census(_model(), x, y, contextlib.nullcontext())
    assert census.groups.low == 0
    assert [(r.dtype, r.group) for r in _rows(census, "aten.addmm")] == [("float32", "fp32")]
    assert {r.dtype for r in _rows(census, "aten._to_copy")} == {"float32"}  # only the model's own cast


def test_census_leaves_no_trace():
    x, y = _batch()
    model = _model().eval()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    torch.manual_seed(123)
    census = dtype_census(model, x, y, autocast_context(TrainConfig(amp="bf16"), CPU))
    after_census = torch.rand(8)
    torch.manual_seed(123)
    assert torch.equal(after_census, torch.rand(8))  # dropout drew from a forked stream
    assert _rows(census, "aten.bernoulli_")  # … and it did draw: the census ran the training-mode forward
    assert model.training is False
    assert all(p.grad is None for p in model.parameters())
    assert all(torch.equal(v, before[k]) for k, v in model.state_dict().items())
    model.train()
    dtype_census(model, x, y, contextlib.nullcontext())
    assert model.training is True


def test_census_puts_buffers_back():
    """BatchNorm in training mode updates its running statistics; the census must not."""
    model = nn.Sequential(nn.Flatten(), nn.Linear(784, 8), nn.BatchNorm1d(8), nn.Linear(8, 10))
    x, y = _batch()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    census = dtype_census(model, x.float(), y, autocast_context(TrainConfig(amp="bf16"), CPU))
    assert any("batch_norm" in r.op for r in census.ops)
    assert all(torch.equal(v, before[k]) for k, v in model.state_dict().items())


# -- the recommendation -----------------------------------------------------------------------------------------
def test_recommend_every_branch():
    cuda_bf16 = recommend("cuda", True, True, "compute capability 9.0 (NVIDIA H100)")
    assert cuda_bf16.startswith("bf16") and "9.0" in cuda_bf16 and "no loss scaling, no skipped steps" in cuda_bf16
    assert "fp32's range" in cuda_bf16
    cuda_fp16 = recommend("cuda", False, True, "compute capability 7.5 (Tesla T4)")
    assert cuda_fp16.startswith("fp16 with GradScaler") and "7.5" in cuda_fp16
    cpu_bf16 = recommend("cpu", True, False, "AVX512")
    assert cpu_bf16.startswith("bf16") and "AVX512" in cpu_bf16
    assert recommend("cpu", True, True, "AVX512").startswith("bf16")  # AMX-FP16 CPUs have AMX-BF16 too: bf16
    cpu_fp16 = recommend("cpu", False, True, "AVX512")
    assert cpu_fp16.startswith("fp16 with GradScaler") and "AMX-FP16" in cpu_fp16
    cpu_off = recommend("cpu", False, False, "AVX2")
    assert cpu_off.startswith("off (fp32)") and "no bf16 or fp16 instructions" in cpu_off
    assert "slower, not faster" in cpu_off
    assert recommend("mps", False, False, "mps").startswith("off (fp32)")
    for line in (cuda_bf16, cuda_fp16, cpu_bf16, cpu_fp16, cpu_off):
        assert "\n" not in line


def test_recommendation_matches_this_cpu():
    def flag(name: str) -> bool:
        probe = getattr(torch.cpu, name, None)
        return bool(probe()) if probe is not None else False

    bf16 = flag("_is_avx512_bf16_supported") or flag("_is_amx_tile_supported")
    fp16 = flag("_is_amx_fp16_supported")
    facts = device_facts(CPU)
    assert facts == {"kind": "cpu", "bf16_hw": bf16, "fp16_hw": fp16,
                     "capability_text": torch.backends.cpu.get_cpu_capability()}
    line = recommendation(CPU)
    assert line == recommend(**facts)
    assert line.startswith("bf16" if bf16 else "fp16" if fp16 else "off (fp32)")
    assert torch.backends.cpu.get_cpu_capability() in line


# -- grad_norms and first_nonfinite -----------------------------------------------------------------------------
def _params(grads: list[list[float] | None]) -> list[torch.Tensor]:
    params = []
    for grad in grads:
        p = nn.Parameter(torch.zeros(len(grad) if grad is not None else 2))
        if grad is not None:
            p.grad = torch.tensor(grad)
        params.append(p)
    return params


def _index(grads: list[list[float] | None]) -> int:
    norms = grad_norms(_params(grads), torch.zeros(()))
    assert len(norms) == len(grads) and all(n.dim() == 0 and n.dtype == torch.float32 for n in norms)
    return first_nonfinite(torch.stack(norms).tolist() if norms else [])


def test_the_first_nonfinite_gradient_is_found_by_position():
    inf, nan = float("inf"), float("nan")
    assert _index([[1.0, 2.0], [3.0], [-4.0, 5.0], [6.0]]) == -1
    assert _index([[1.0, 2.0], [3.0], [1.0, inf], [6.0]]) == 2
    assert _index([[1.0, 2.0], [3.0], [-inf, 1.0], [nan]]) == 2  # the first one, not the last
    assert _index([[1.0, 2.0], [nan, 1.0], [1.0], [6.0]]) == 1  # NaN first in its tensor
    assert _index([[1.0, 2.0], [1.0, nan], [1.0], [6.0]]) == 1  # NaN last in its tensor
    # As large as a finite fp16-produced gradient gets (fp16's maximum, 65504), summed over many elements: fine.
    assert _index([[65504.0] * 1000, [-65504.0]]) == -1
    assert _index([None, None, [1.0, inf], [1.0]]) == 2  # positions are the params list's, grads or not
    assert _index([[1.0], None, [nan], None]) == 2
    assert _index([None, [1.0], None]) == -1
    assert _index([None, None]) == -1
    assert _index([]) == -1


# -- fp16 end to end on the CPU ---------------------------------------------------------------------------------
def _fp16_run(init_scale: float, steps: int = 4) -> tuple[nn.Module, list[AmpSkipped], dict, list[str]]:
    """The engine's fp16 step, recording what the engine will record on the device, read back once at the end
    (as a block is); the reference is taken on the host, per step, the slow way."""
    model = _model(seed=1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cpu", init_scale=init_scale)
    autocast = torch.autocast("cpu", dtype=torch.float16)
    names, params = zip(*model.named_parameters())
    scale_before_first = float(scale_tensor(scaler))  # not initialised yet: the init_scale
    records, expected = [], []
    for step in range(steps):
        x, y = _batch(seed=step)
        with autocast:
            loss = F.cross_entropy(model(x), y)
        scaler.scale(loss).backward()
        norms = grad_norms(list(params), torch.zeros(()))
        expected.append(next((n for n, p in zip(names, params) if not torch.isfinite(p.grad).all()), None))
        scaler.step(optimizer)
        scaler.update()
        records.append(step_record(scaler, norms))
        optimizer.zero_grad(set_to_none=True)
    rows = torch.stack(records).tolist()  # the block's one read-back
    scales_after = [row[0] for row in rows]
    bad_index = [first_nonfinite(row[1:]) for row in rows]
    events = skipped_steps(1, scales_after, bad_index, scale_before_first, list(names))
    reference = {"expected": expected, "scales_after": scales_after, "final": scaler.get_scale(),
                 "scale_before_first": scale_before_first}
    return model, events, reference, list(names)


def test_fp16_overflow_is_detected_with_the_scale_and_the_parameter():
    before = {k: v.clone() for k, v in _model(seed=1).state_dict().items()}
    model, events, reference, names = _fp16_run(init_scale=2.0 ** 100)
    assert reference["scale_before_first"] == 2.0 ** 100
    assert reference["scales_after"] == [2.0 ** 99, 2.0 ** 98, 2.0 ** 97, 2.0 ** 96]
    assert reference["final"] == 2.0 ** 96
    assert [e.step for e in events] == [1, 2, 3, 4]
    assert [e.scale for e in events] == [2.0 ** 100, 2.0 ** 99, 2.0 ** 98, 2.0 ** 97]  # the scale each ran with
    assert all(e.param in names for e in events)
    assert [e.param for e in events] == reference["expected"]
    assert all(torch.equal(v, before[k]) for k, v in model.state_dict().items())  # every step really skipped


def test_fp16_with_a_sane_scale_skips_nothing():
    _, events, reference, _ = _fp16_run(init_scale=2.0 ** 8)
    assert events == []
    assert reference["scales_after"] == [2.0 ** 8] * 4
    assert reference["expected"] == [None] * 4


def test_scale_tensor_is_a_copy_on_the_device():
    scaler = torch.amp.GradScaler("cpu", init_scale=8.0)
    assert float(scale_tensor(scaler)) == 8.0  # before the first scale(): the init_scale
    scaler.scale(torch.ones(()))
    kept = scale_tensor(scaler)
    assert kept.dim() == 0 and kept.dtype == torch.float32 and float(kept) == 8.0
    record = step_record(scaler, [torch.tensor(1.5)])
    scaler._scale.mul_(0.5)  # update() works in place: an earlier reading must not follow it
    assert float(kept) == 8.0 and float(scale_tensor(scaler)) == 4.0
    assert record.tolist() == [8.0, 1.5]  # the record's stack copied the scale it was taken with
    assert float(scale_tensor(torch.amp.GradScaler("cpu", enabled=False))) == 1.0


@pytest.mark.cuda
def test_step_health_does_not_sync_on_cuda():
    device = torch.device("cuda")
    params = [nn.Parameter(torch.zeros(3, device=device)) for _ in range(3)]
    for p in params[1:]:
        p.grad = torch.ones(3, device=device)
    params[2].grad[1] = float("inf")
    scaler = torch.amp.GradScaler("cuda", init_scale=4.0)
    scaler.scale(torch.ones((), device=device))
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        record = step_record(scaler, grad_norms(params, torch.zeros((), device=device)))
    finally:
        torch.cuda.set_sync_debug_mode("default")
    assert record.device.type == "cuda" and record[0].item() == 4.0 and first_nonfinite(record[1:].tolist()) == 2


# -- the arithmetic ---------------------------------------------------------------------------------------------
def test_skipped_steps_arithmetic():
    names = ["fc1.weight", "fc1.bias", "fc2.weight"]
    # The block's first step compares with the scale before it: halved → skipped, with the scale it ran with.
    assert skipped_steps(11, [512.0], [2], 1024.0, names) == [AmpSkipped(step=11, scale=1024.0, param="fc2.weight")]
    assert skipped_steps(11, [1024.0], [-1], 1024.0, names) == []
    # Growth (doubling after growth_interval clean steps) is not a skip; a skip after growth compares with it.
    events = skipped_steps(5, [1024.0, 2048.0, 2048.0, 1024.0, 512.0], [-1, -1, -1, 0, 7], 1024.0, names)
    assert events == [AmpSkipped(step=8, scale=2048.0, param="fc1.weight"),
                      AmpSkipped(step=9, scale=1024.0, param="")]  # index out of range: no name
    assert skipped_steps(1, [8.0], [-1], 16.0, names) == [AmpSkipped(step=1, scale=16.0, param="")]
    assert skipped_steps(1, [8.0, 4.0], [1], 16.0, names)[1] == AmpSkipped(step=2, scale=8.0, param="")
    assert skipped_steps(1, [], [], 16.0, names) == []


def test_amp_summary():
    census = AmpCensus(ops=(CensusRow(op="aten.addmm", calls=2, dtype="float16", group="low"),),
                       groups=CallsByGroup(low=2, fp32=3, other=1))
    skipped = [AmpSkipped(step=3, scale=65536.0, param="core_block.fc2.weight"), AmpSkipped(step=9, scale=32768.0)]
    summary = amp_summary("fp16", "fp16 with GradScaler: …", census, skipped, 16384.0, steps=40)
    assert summary == AmpSummary(dtype="fp16", recommendation="fp16 with GradScaler: …",
                                 census_groups={"low": 2, "fp32": 3, "other": 1}, skipped=2, skipped_steps=(3, 9),
                                 first_nonfinite=NonFinite(step=3, param="core_block.fc2.weight"),
                                 final_scale=16384.0, skipped_share=0.05)
    # Stored as it always was (the run's results' "amp").
    assert summary.to_dict() == {"dtype": "fp16", "recommendation": "fp16 with GradScaler: …",
                                 "census_groups": {"low": 2, "fp32": 3, "other": 1}, "skipped": 2,
                                 "skipped_steps": [3, 9],
                                 "first_nonfinite": {"step": 3, "param": "core_block.fc2.weight"},
                                 "final_scale": 16384.0, "skipped_share": 0.05}
    many = [AmpSkipped(step=s, scale=2.0 ** 20) for s in range(1, 151)]
    summary = amp_summary("fp16", "", census, many, 1.0, steps=300)
    assert summary.skipped == 150 and summary.skipped_steps == tuple(range(1, 101))
    assert summary.skipped_share == 0.5 and summary.first_nonfinite == NonFinite(step=1, param="")
    clean = amp_summary("bf16", "bf16: …", census, [], None, steps=0)
    assert clean.skipped == 0 and clean.skipped_steps == () and clean.first_nonfinite is None
    assert clean.final_scale is None and clean.skipped_share == 0.0
