"""Memory by category over time: from the profiler's [memory] events (hand-built and real) and from a CUDA allocator
snapshot in the documented format (hand-built: pure format tests, no GPU needed)."""

from __future__ import annotations

import json

import pytest
import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile, record_function

from workbench.core.ground.memory_trace import (CATEGORIES, MAX_POINTS, Allocation, downsample, from_profiler,
                                                from_snapshot)

PID = TID = 100
T0 = 5_000_000.0
BASELINE = {"parameters": 1000, "optimizer state": 2000}


def x(name: str, ts: float, dur: float, cat: str = "cpu_op", **args) -> dict:
    return {"ph": "X", "cat": cat, "name": name, "pid": PID, "tid": TID, "ts": T0 + ts, "dur": dur, "args": args}


def mem(ts: float, addr: int, nbytes: int, device_type: int = 0, device_id: int = -1) -> dict:
    return {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": PID, "tid": TID,
            "ts": T0 + ts, "args": {"Addr": addr, "Bytes": nbytes, "Total Allocated": 0, "Total Reserved": 0,
                                    "Device Type": device_type, "Device Id": device_id}}


def profiler_trace() -> dict:
    """One step (100…200 µs): a forward allocation, two in backward, one in the optimizer; frees; a free of memory
    from before the window inside and after the step; an allocation after the step; a CUDA event to ignore."""
    return {"traceEvents": [
        mem(50, 0xDEAD, -300),  # allocated before the window: "other" stays at 0
        x("ProfilerStep#1", 100, 100, cat="user_annotation"),
        x("aten::addmm", 110, 10, **{"Input Dims": [[128], [32, 784], [784, 128]]}),
        mem(112, 0xA, 400),
        x("autograd::engine::evaluate_function: AddmmBackward0", 130, 20),
        x("AddmmBackward0", 131, 18),
        x("aten::mm", 132, 5, **{"Input Dims": [[128, 32], [32, 784]]}),
        mem(133, 0xB, 100),
        x("autograd::engine::evaluate_function: torch::autograd::AccumulateGrad", 155, 2),
        mem(156, 0xC, 50),
        mem(158, 0xA, -400),
        x("Optimizer.step#AdamW.step", 165, 30, cat="user_annotation"),
        x("aten::sqrt", 170, 5, **{"Input Dims": [[128, 784]]}),
        mem(171, 0xD, 800),
        mem(171.5, 0xE, 999, device_type=1, device_id=0),  # another device
        mem(190, 0xD, -800),
        mem(250, 0xF, 10),
        mem(255, 0xBEEF, -5),  # before the window too: taken from "other" (10 → 5)
    ]}


def test_from_profiler_categories_over_time():
    result = from_profiler(profiler_trace(), BASELINE)
    assert result.source == "profiler" and result.device == "cpu" and result.time_unit == "us"
    assert result.times_us == (-50.0, 12.0, 33.0, 56.0, 58.0, 71.0, 90.0, 150.0, 155.0)  # from the first step
    c = result.categories
    assert list(c) == list(CATEGORIES)
    assert c["parameters"] == (1000,) * 9  # baseline: a constant layer
    assert c["optimizer state"] == (2000,) * 5 + (2800,) + (2000,) * 3
    assert c["activations"] == (0, 400, 400, 400, 0, 0, 0, 0, 0)
    assert c["gradients"] == (0, 0, 100, 150, 150, 150, 150, 150, 150)
    assert c["other"] == (0,) * 7 + (10, 5)


def test_from_profiler_peak_and_largest():
    result = from_profiler(profiler_trace(), BASELINE)
    assert result.peak_bytes == 1000 + 2800 + 150 and result.peak_us == 71.0
    largest = result.largest
    assert [a.bytes for a in largest] == [800, 400, 100, 50, 10]
    assert largest[0] == Allocation(bytes=800, category="optimizer state", where="aten::sqrt ([128, 784])",
                                    stack=("ProfilerStep#1", "Optimizer.step#AdamW.step", "aten::sqrt"),
                                    start_us=71.0, end_us=90.0)
    assert largest[2].where == "aten::mm ([128, 32], [32, 784])" and largest[2].end_us is None
    assert largest[4].where == "outside any op" and largest[4].category == "other"
    assert "Optimizer.step" in result.note


def test_from_profiler_other_device_and_no_events():
    cuda = from_profiler(profiler_trace(), {}, device_type=1, device_id=0)
    assert cuda.device == "cuda:0" and cuda.peak_bytes == 999
    assert cuda.categories["optimizer state"] == (999,)
    empty = from_profiler({"traceEvents": []}, BASELINE)
    assert empty.times_us == () and all(v == () for v in empty.categories.values())
    assert "no [memory] events" in empty.note


def test_downsampling_keeps_the_peak():
    events = [x("ProfilerStep#1", 0, 10_000, cat="user_annotation")]
    for i in range(5_000):  # a sawtooth with one spike in the middle
        size = 10_000 if i == 2_501 else 10
        events += [mem(1 + i * 1.5, i, size), mem(1.5 + i * 1.5, i, -size)]
    result = from_profiler({"traceEvents": events}, {})
    assert len(result.times_us) == MAX_POINTS
    assert all(len(v) == MAX_POINTS for v in result.categories.values())
    assert result.peak_bytes == 10_000 == max(result.categories["activations"])
    assert downsample([1, 5, 2, 2, 9, 1], max_points=3) == [1, 2, 4]
    assert downsample([3, 1], max_points=3) == [0, 1]


def test_from_a_real_profiler_trace(tmp_path):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Flatten(), nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))
    optimizer = torch.optim.AdamW(model.parameters())
    images, labels = torch.randn(32, 1, 28, 28), torch.randint(0, 10, (32,))

    def train_step():
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(images), labels).backward()
        optimizer.step()

    train_step()
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True, record_shapes=True) as prof:
        for n in range(3):
            with record_function(f"ProfilerStep#{n + 1}"):
                train_step()
    prof.export_chrome_trace(str(tmp_path / "trace.json"))
    trace = json.loads((tmp_path / "trace.json").read_text())
    weights = sum(p.numel() * p.element_size() for p in model.parameters())
    result = from_profiler(trace, {"parameters": weights, "optimizer state": 2 * weights})
    series = result.categories
    assert result.times_us and all(v >= 0 for values in series.values() for v in values)
    assert max(series["gradients"]) > 0 and max(series["activations"]) > 0
    assert set(series["parameters"]) == {weights}
    assert result.peak_bytes >= 3 * weights


# --- the CUDA allocator's snapshot --------------------------------------------------------------------------------

MODEL = {"filename": "/home/me/model.py", "line": 10, "name": "forward"}
MODULE = {"filename": "/venv/lib/python3.11/site-packages/torch/nn/modules/module.py", "line": 1775,
          "name": "_call_impl"}
TRAIN_LOSS = {"filename": "/home/me/train.py", "line": 19, "name": "step"}
BACKWARD = [{"filename": "/venv/site-packages/torch/autograd/graph.py", "line": 829, "name": "_engine_run_backward"},
            {"filename": "/venv/site-packages/torch/_tensor.py", "line": 625, "name": "backward"},
            {"filename": "/home/me/train.py", "line": 20, "name": "step"}]
OPTIM = [{"filename": "/venv/site-packages/torch/optim/adamw.py", "line": 100, "name": "_single_tensor_adamw"},
         {"filename": "/venv/site-packages/torch/optim/optimizer.py", "line": 485, "name": "wrapper"},
         {"filename": "/home/me/train.py", "line": 21, "name": "step"}]
TORCH_ONLY = [{"filename": "/venv/site-packages/torch/cuda/random.py", "line": 5, "name": "seed"}]
PARAM, ACT, PRE, OPT_STATE = 0x1000, 0x1400, 0x1500, 0x5000  # ACT, PRE: after PARAM's and a free block


def entry(action: str, addr: int | None, size: int | None, t: int | None, frames: list | None = None) -> dict:
    e = {"action": action, "addr": addr, "size": size, "stream": 0, "frames": frames or []}
    if addr is None:
        del e["addr"], e["size"]
    if t is not None:
        e["time_us"] = 1_700_000_000_000_000 + t
    return e


def snapshot(with_time: bool = True, completed: bool = True) -> dict:
    """Segments at the end (a known weight, an activation allocated in the trace, a block from before the trace)
    and the device's history: forward, backward, optimizer allocations, a known optimizer-state address, a block
    from before the trace freed in it, and actions the replay skips."""
    def t(n: int) -> int | None:
        return n if with_time else None

    frees = ("free_requested", "free_completed") if completed else ("free_requested",)
    trace = [entry("alloc", ACT, 256, t(0), [MODEL, MODULE, TRAIN_LOSS]),
             entry("alloc", 0x2000, 1024, t(10), BACKWARD),
             entry("segment_alloc", 0x9000_0000, 2 << 20, t(15)),
             entry("alloc", 0x3000, 2048, t(20), OPTIM)]
    trace += [entry(a, 0x3000, 2048, t(30 + i), OPTIM) for i, a in enumerate(frees)]
    trace += [entry(a, 0x9000, 4096, t(40 + i)) for i, a in enumerate(frees)]  # allocated before the trace
    trace += [entry("snapshot", 0, 0, t(45)), entry("some_future_action", None, None, t(46)),
              entry("alloc", OPT_STATE, 128, t(50), [TRAIN_LOSS]),  # its address is known: optimizer state
              entry("alloc", 0x6000, 64, t(55), TORCH_ONLY)]
    trace += [entry(a, 0x2000, 1024, t(60 + i), BACKWARD) for i, a in enumerate(frees)]
    blocks = [{"size": 512, "requested_size": 500, "state": "active_allocated", "frames": []},  # PARAM
              {"size": 512, "requested_size": 512, "state": "inactive", "frames": []},
              {"size": 256, "requested_size": 256, "state": "active_allocated", "frames": [MODEL]},  # ACT
              {"size": 256, "requested_size": 256, "state": "active_pending_free", "frames": TORCH_ONLY}]  # PRE
    return {"segments": [{"device": 0, "address": PARAM, "total_size": 1536, "stream": 0, "blocks": blocks},
                         {"device": 1, "address": 0x7000, "total_size": 512, "blocks": [
                             {"address": 0x7000, "size": 512, "state": "active_allocated", "frames": []}]}],
            "device_traces": [trace, []]}


KNOWN = {PARAM: "parameters", OPT_STATE: "optimizer state"}


def test_from_snapshot_replays_categories_over_time():
    result = from_snapshot(snapshot(), known=KNOWN)
    assert result.source == "cuda allocator" and result.device == "cuda:0" and result.time_unit == "us"
    # The start (before the first entry), then each alloc and free_completed.
    assert result.times_us == (0, 0, 10, 20, 31, 41, 50, 55, 61)
    c = result.categories
    assert c["parameters"] == (512,) * 9  # a block from before the trace at a known address
    assert c["activations"] == (0,) + (256,) * 8
    assert c["gradients"] == (0, 0, 1024, 1024, 1024, 1024, 1024, 1024, 0)
    assert c["optimizer state"] == (0, 0, 0, 2048, 0, 0, 128, 128, 128)
    # Before the trace: the pending-free block (256) and the block freed at 41 (4096); then a torch-only stack.
    assert c["other"] == (4352,) * 5 + (256, 256, 320, 320)


def test_from_snapshot_peak_and_largest_with_stacks():
    result = from_snapshot(snapshot(), known=KNOWN)
    assert result.peak_bytes == 512 + 256 + 1024 + 2048 + 4352 and result.peak_us == 20
    largest = result.largest
    assert [a.bytes for a in largest] == [4096, 2048, 1024, 512, 256, 256, 128, 64]
    assert largest[0] == Allocation(bytes=4096, category="other", where="allocated before the trace", stack=(),
                                    start_us=0, end_us=41)
    assert largest[1].category == "optimizer state" and largest[1].end_us == 31
    assert largest[1].where == "/home/me/train.py:21 step"  # the first frame outside torch
    assert largest[1].stack == ("/home/me/train.py:21 step",
                                "/venv/site-packages/torch/optim/optimizer.py:485 wrapper",
                                "/venv/site-packages/torch/optim/adamw.py:100 _single_tensor_adamw")
    torch_only = [a for a in largest if a.bytes == 64][0]
    assert torch_only.where == "/venv/site-packages/torch/cuda/random.py:5 seed"  # no frame outside torch
    assert "torch/optim" in result.note


def test_from_snapshot_without_times_or_free_completed():
    result = from_snapshot(snapshot(with_time=False, completed=False), known=KNOWN)
    assert result.time_unit == "event"
    assert result.times_us == (0, 0, 1, 3, 4, 5, 8, 9, 10)  # entry indices; free_requested frees
    assert result.categories["gradients"][-1] == 0 and result.peak_bytes == 8192
    other_device = from_snapshot(snapshot(), device=1)
    assert other_device.times_us == () and "no allocator history" in other_device.note


@pytest.mark.parametrize("damaged, says", [
    (None, "not a dict"),
    ({}, "no device_traces"),
    ({"device_traces": "x", "segments": 5}, "no device_traces"),
    ({"device_traces": [None]}, "no trace for device 0"),
    ({"device_traces": []}, "no trace for device 0"),
])
def test_a_damaged_snapshot_says_what_is_wrong(damaged, says):
    result = from_snapshot(damaged)
    assert says in result.note and result.note.startswith("damaged snapshot")
    assert result.times_us == () and set(result.categories) == set(CATEGORIES)
    assert result.peak_bytes == 0 and result.largest == ()


def test_damaged_entries_and_blocks_are_skipped():
    damaged = {"device_traces": [[{"action": "alloc"}, 5, {"action": "alloc", "addr": "x", "size": 1},
                                  {"action": "alloc", "addr": 0x10, "size": 32, "frames": "?"},
                                  {"action": "free_completed", "addr": 0x10, "size": 32, "frames": [7]}]],
               "segments": [{"blocks": 7}, {"address": 1, "blocks": [{"size": "big"}, 9]}, "segment"]}
    result = from_snapshot(damaged, known={0x10: "not a category"})
    assert "3 malformed trace entries skipped" in result.note
    assert result.categories["other"] == (0, 32, 0) and result.largest[0].where == "no stack recorded"
