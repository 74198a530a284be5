"""The profiler trace summary: self times, nesting, regions, shapes, CUDA attribution, steps and spans on hand-built
traces; the capped trace file; and one real trace of a compiled model."""

from __future__ import annotations

import copy
import gzip
import json

import pytest
import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile, record_function

from workbench.core.domain.profiler import TOP_OPS, profile_metrics
from workbench.core.ground import profile_trace
from workbench.core.ground.events import ProfileReport
from workbench.core.ground.profile_trace import (OpRow, ProfileTables, Span, StepTime, summarise, window_origin,
                                                 write_trace)

PID = TID = 100
T0 = 5_000_000.0  # absolute µs, like the profiler's
ADDMM_DIMS = [[128], [32, 784], [784, 128]]


def x(name: str, ts: float, dur: float, cat: str = "cpu_op", tid: int = TID, pid: int = PID, **args) -> dict:
    """A complete ("X") event at T0 + ts."""
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": T0 + ts, "dur": dur, "args": args}


def memory(ts: float, addr: int, nbytes: int) -> dict:
    return {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": PID, "tid": TID,
            "ts": T0 + ts, "args": {"Addr": addr, "Bytes": nbytes, "Total Allocated": 0, "Total Reserved": 0,
                                    "Device Type": 0, "Device Id": -1}}


def step(n: int, start: float) -> list[dict]:
    """One training step of 100 µs: a compiled forward, a compiled backward, an eager op, the optimizer.

    Self times: addmm 10-2=8, CompiledFunction 28-10-4=14, the region 30-28=2, mm 8, the backward's wrapper
    18-8=10, the engine's 20-18=2, add 3, Optimizer.step 25-5=20, mul_ 5."""
    s = start
    return [
        x(f"ProfilerStep#{n}", s, 100, cat="user_annotation"),
        x("Torch-Compiled Region: 0/0", s + 5, 30),
        x("CompiledFunction", s + 6, 28, **{"Input Dims": [[32, 1, 28, 28], [128, 784]]}),
        x("aten::addmm", s + 8, 10, **{"Input Dims": ADDMM_DIMS, "Input type": ["float"] * 3}),
        x("aten::copy_", s + 9, 2, **{"Input Dims": [[32, 128], [32, 128]]}),
        x("aten::relu", s + 20, 4, **{"Input Dims": [[32, 128]]}),
        x("autograd::engine::evaluate_function: CompiledFunctionBackward", s + 40, 20),
        x("CompiledFunctionBackward", s + 41, 18),
        x("aten::mm", s + 42, 8, **{"Input Dims": [[128, 32], [32, 784]]}),
        x("aten::add", s + 62, 3),
        x("Optimizer.step#AdamW.step", s + 70, 25, cat="user_annotation"),
        x("aten::mul_", s + 72, 5, **{"Input Dims": [[128, 784], []]}),
    ]


def build_trace(*events: dict) -> dict:
    """A trace dict as `export_chrome_trace` writes it (metadata first, then the events)."""
    meta = [{"ph": "M", "name": "thread_name", "pid": PID, "tid": TID, "ts": T0 - 10, "args": {"name": "python"}}]
    return {"schemaVersion": 1, "deviceProperties": [], "traceEvents": meta + list(events)}


def three_steps() -> dict:
    return build_trace(*step(1, 0), *step(2, 110), *step(3, 220))


def row(summary: ProfileTables, name: str, region: str | None = None) -> OpRow:
    [found] = [r for r in summary.ops if r.name == name and (region is None or r.region == region)]
    return found


def test_self_time_is_duration_minus_direct_children_summed_over_calls():
    summary = summarise(three_steps())
    addmm = row(summary, "aten::addmm")
    assert addmm.calls == 3 and addmm.self_cpu_us == pytest.approx(3 * 8) and addmm.cpu_us == 30
    assert row(summary, "CompiledFunction").self_cpu_us == pytest.approx(3 * 14)  # 28 - addmm 10 - relu 4
    assert row(summary, "Torch-Compiled Region: 0/0").self_cpu_us == pytest.approx(3 * 2)
    assert row(summary, "Optimizer.step#AdamW.step").self_cpu_us == pytest.approx(3 * 20)
    assert row(summary, "aten::copy_").self_cpu_us == pytest.approx(3 * 2)  # a leaf: all its time is self
    assert not [r for r in summary.ops if r.name.startswith("ProfilerStep#")]  # steps are not ops
    selfs = [r.self_cpu_us + r.self_device_us for r in summary.ops]
    assert selfs == sorted(selfs, reverse=True)


def test_equal_timestamps_and_float_noise_nest_as_the_code_ran():
    trace = build_trace(
        x("aten::child", 0, 4),  # listed first, same start as its parent: the longer one is the parent
        x("aten::parent", 0, 10),
        x("aten::overruns", 6, 4.002),  # ends 0.002 µs after its parent (rounding): still its child
        x("aten::sibling", 9.999, 5),  # starts 0.001 µs before the parent's end: a sibling, not a child
    )
    summary = summarise(trace)
    assert row(summary, "aten::parent").self_cpu_us == pytest.approx(10 - 4 - 4)
    assert row(summary, "aten::overruns").self_cpu_us == pytest.approx(4.002)
    assert row(summary, "aten::sibling").self_cpu_us == pytest.approx(5)


def test_regions_forward_backward_optimizer_and_eager():
    summary = summarise(three_steps())
    assert row(summary, "aten::addmm").region == "compiled 0/0"
    assert row(summary, "CompiledFunction").region == "compiled 0/0"
    assert row(summary, "aten::mm").region == "compiled backward"
    assert row(summary, "CompiledFunctionBackward").region == "compiled backward"
    assert row(summary, "autograd::engine::evaluate_function: CompiledFunctionBackward").region == ""
    assert row(summary, "aten::mul_").region == "optimizer"
    assert row(summary, "aten::add").region == ""
    regions = {r.region: r for r in summary.regions}
    assert set(regions) == {"compiled 0/0", "compiled backward", "optimizer", ""}
    assert regions["optimizer"].calls == 6 and regions["optimizer"].self_cpu_us == pytest.approx(3 * 25)
    assert regions["compiled 0/0"].self_cpu_us == pytest.approx(3 * 30)  # the whole region's time


def test_the_same_op_in_two_regions_or_with_two_shapes_is_two_rows():
    trace = build_trace(*step(1, 0), x("aten::addmm", 150, 3, **{"Input Dims": [[10], [32, 128], [128, 10]]}),
                        x("aten::addmm", 160, 3, **{"Input Dims": ADDMM_DIMS}))
    rows = [(r.region, r.shapes) for r in summarise(trace).ops if r.name == "aten::addmm"]
    assert sorted(rows) == [("", "[10], [32, 128], [128, 10]"), ("", "[128], [32, 784], [784, 128]"),
                            ("compiled 0/0", "[128], [32, 784], [784, 128]")]


def test_shapes_are_a_compact_string_and_empty_without_record_shapes():
    summary = summarise(three_steps())
    assert row(summary, "aten::addmm").shapes == "[128], [32, 784], [784, 128]"
    assert row(summary, "aten::mul_").shapes == "[128, 784], []"
    assert row(summary, "aten::add").shapes == ""


def cuda_step() -> dict:
    """A CUDA step: addmm launches a kernel (correlation 7) and, inside its copy_, a memcpy (8); a memset has no
    launcher in the trace."""
    gpu = {"pid": 0, "tid": 7}
    return build_trace(
        x("ProfilerStep#5", 0, 100, cat="user_annotation"),
        x("CompiledFunction", 5, 60),
        x("aten::addmm", 10, 40, **{"Input Dims": ADDMM_DIMS}),
        x("aten::copy_", 12, 10),
        x("cudaMemcpyAsync", 13, 6, cat="cuda_runtime", correlation=8),
        x("cudaLaunchKernel", 30, 5, cat="cuda_runtime", correlation=7),
        x("void gemm_kernel<float>", 60, 50, cat="kernel", **gpu, device=0, stream=7, correlation=7),
        x("Memcpy HtoD (Pageable -> Device)", 20, 4, cat="gpu_memcpy", **gpu, device=0, stream=7, correlation=8),
        x("Memset (Device)", 120, 1, cat="gpu_memset", pid=0, tid=9, device=0, stream=9, correlation=99),
    )


def test_cuda_kernel_time_goes_to_the_op_that_launched_it():
    summary = summarise(cuda_step())
    addmm, copy_ = row(summary, "aten::addmm"), row(summary, "aten::copy_")
    assert addmm.self_device_us == 50 and addmm.device_us == 54
    assert copy_.self_device_us == 4 and copy_.device_us == 4
    compiled = row(summary, "CompiledFunction")
    assert compiled.self_device_us == 0 and compiled.device_us == 54
    assert addmm.self_cpu_us == pytest.approx(30)  # runtime calls are not ops: their time stays the op's own
    assert not [r for r in summary.ops if r.name.startswith("cuda")]
    assert summary.device == "cuda" and summarise(three_steps()).device == "cpu"
    kernels = [s for s in summary.spans if s.kind == "kernel"]
    assert {(s.lane, s.name) for s in kernels} == {
        ("GPU 0 stream 7", "void gemm_kernel<float>"), ("GPU 0 stream 7", "Memcpy HtoD (Pageable -> Device)"),
        ("GPU 0 stream 9", "Memset (Device)")}
    assert summary.ops[0].name == "aten::addmm"  # most self device + CPU time


def test_steps_origin_and_window():
    trace = three_steps()
    summary = summarise(trace)
    assert summary.steps == (StepTime(step=1, start_us=0.0, dur_us=100.0),
                             StepTime(step=2, start_us=110.0, dur_us=100.0),
                             StepTime(step=3, start_us=220.0, dur_us=100.0))
    assert summary.origin_us == T0 == window_origin(trace)
    assert summary.window_us == 320.0
    no_steps = build_trace(x("aten::add", 40, 5), x("aten::mul", 50, 10))
    assert window_origin(no_steps) == T0 + 40  # the first event (the metadata is not one)
    assert summarise(no_steps).window_us == 20.0


def test_spans_keep_steps_regions_and_shallow_ops_with_their_depth():
    trace = three_steps()
    trace["traceEvents"].append(x("aten::fill_", 300, 2, tid=200))  # another thread, during step 3
    spans = summarise(trace).spans
    first = [(s.name, s.kind, s.depth) for s in spans if s.start_us < 100]
    assert first == [("ProfilerStep#1", "step", 0), ("Torch-Compiled Region: 0/0", "region", 1),
                     ("CompiledFunction", "region", 2),
                     ("autograd::engine::evaluate_function: CompiledFunctionBackward", "op", 1),
                     ("CompiledFunctionBackward", "region", 2), ("aten::add", "op", 1),
                     ("Optimizer.step#AdamW.step", "region", 1), ("aten::mul_", "op", 2)]
    assert {s.lane for s in spans} == {"CPU", "CPU thread 200"}
    other = [s for s in spans if s.lane == "CPU thread 200"]
    assert other == [Span(lane="CPU thread 200", start_us=300.0, dur_us=2.0, name="aten::fill_", kind="op", depth=1)]


def test_the_span_cap_drops_the_shortest_ops_and_never_a_step_or_region():
    trace = three_steps()
    full = summarise(trace)
    fixed = [s for s in full.spans if s.kind in ("step", "region")]
    capped = summarise(trace, max_spans=len(fixed) + 3)
    ops = [s for s in capped.spans if s.kind == "op"]
    assert [s for s in capped.spans if s.kind in ("step", "region")] == fixed
    assert len(ops) == 3 and {s.name for s in ops} == {"autograd::engine::evaluate_function: "
                                                          "CompiledFunctionBackward"}  # the longest (20 µs)
    assert capped.spans_left_out == len(full.spans) - len(capped.spans)
    assert [s for s in summarise(trace, max_spans=0).spans] == fixed


def test_the_results_keep_the_first_rows_as_the_top_ops():
    summary = summarise(three_steps())
    top = profile_metrics(ProfileReport(first_step=1, last_step=3, device="cpu", summary=summary)).top_ops
    assert top == summary.ops[:TOP_OPS] and len(top) == min(TOP_OPS, len(summary.ops))


# --- the trace file ------------------------------------------------------------------------------------------------


def loaded(path) -> dict:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return json.load(fh)


def test_write_trace_round_trips_gzipped(tmp_path):
    trace = three_steps()
    path = tmp_path / "trace.json.gz"
    written, words = write_trace(trace, path)
    assert loaded(path) == trace and words == ""
    assert written == path.stat().st_size > 0


def heavy_trace() -> dict:
    """Three steps with python_function events, many [memory] events, flows and ops nested 4 deep."""
    events = []
    for n, start in ((1, 0), (2, 110), (3, 220)):
        events += step(n, start)
        events += [x("aten::a", start + 96, 3.5), x("aten::b", start + 96.5, 2.5), x("aten::c", start + 97, 1.5),
                   x("aten::d", start + 97.5, 0.5)]  # depths 1..4 under the step: aten::d and copy_ are deeper than 3
        events += [x("nn.Module: Linear", start + 7, 12, cat="python_function")]
        events += [memory(start + 8 + i * 0.01, 1000 + i, 64) for i in range(200)]
        events += [{"ph": "s", "cat": "fwdbwd", "name": "fwdbwd", "id": n, "pid": PID, "tid": TID, "ts": T0 + start}]
    return build_trace(*events)


def json_size(trace: dict, drop=lambda e: False) -> int:
    return len(json.dumps({**trace, "traceEvents": [e for e in trace["traceEvents"] if not drop(e)]}))


def test_a_trace_over_the_cap_loses_python_events_then_memory_events_first(tmp_path):
    trace = heavy_trace()
    before = copy.deepcopy(trace)
    cap = json_size(trace, lambda e: e.get("cat") == "python_function" or e["name"] == "[memory]") + 600
    path = tmp_path / "trace.json.gz"
    written, words = write_trace(trace, path, max_bytes=cap)
    out = loaded(path)
    assert trace == before  # the caller's dict is left alone
    assert words == ("left out 3 python_function events, 600 [memory] events to keep the trace under "
                     f"{cap:,} bytes")
    assert out["workbench"] == {"trimmed": words} and len(json.dumps(out)) <= cap
    names = [e["name"] for e in out["traceEvents"]]
    assert "[memory]" not in names and "fwdbwd" in names and "aten::d" in names
    assert [n for n in names if n.startswith("ProfilerStep#")] == ["ProfilerStep#1", "ProfilerStep#2",
                                                                   "ProfilerStep#3"]
    assert written == path.stat().st_size


def test_a_tiny_cap_drops_deep_ops_then_whole_steps_from_the_end_keeping_one(tmp_path):
    trace = heavy_trace()
    path = tmp_path / "trace.json.gz"
    _, words = write_trace(trace, path, max_bytes=1_000)
    out = loaded(path)
    assert words.startswith("left out 3 python_function events, 600 [memory] events, 3 flow events, 6 cpu_ops "
                            "nested deeper than 3 under a step, the last 2 of 3 steps")
    names = [e["name"] for e in out["traceEvents"]]
    assert [n for n in names if n.startswith("ProfilerStep#")] == ["ProfilerStep#1"]  # at least one stays
    assert "aten::c" in names and "aten::d" not in names
    assert all(e["ts"] < T0 + 110 for e in out["traceEvents"])

    two = heavy_trace()
    cap = json_size(two, lambda e: e.get("cat") == "python_function" or e["ph"] == "s" or e["name"] in (
        "[memory]", "aten::d", "aten::copy_") or e["ts"] >= T0 + 220) + 600
    _, words = write_trace(two, path, max_bytes=cap)
    assert words.endswith(f"the last 1 of 3 steps to keep the trace under {cap:,} bytes")
    assert len(json.dumps(loaded(path))) <= cap


def test_write_trace_is_atomic(tmp_path, monkeypatch):
    path = tmp_path / "trace.json.gz"
    write_trace(three_steps(), path)
    write_trace(three_steps(), path)
    assert [p.name for p in tmp_path.iterdir()] == ["trace.json.gz"]

    def fails(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(profile_trace.json, "dump", fails)
    with pytest.raises(OSError):
        write_trace(heavy_trace(), path)
    assert loaded(path) == three_steps()  # the old file, whole; no temp file beside it
    assert [p.name for p in tmp_path.iterdir()] == ["trace.json.gz"]


# --- a real trace ------------------------------------------------------------------------------------------------


def real_trace(tmp_path) -> dict:
    """Three profiled steps of a compiled MLP (aot_eager: compiles in seconds) trained with AdamW. Dynamo is reset
    first: its frame ids count up across a process, and the region of this test's graph is then "compiled 0/0"."""
    torch._dynamo.reset()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Flatten(), nn.Linear(784, 128), nn.ReLU(), nn.Dropout(), nn.Linear(128, 10))
    optimizer = torch.optim.AdamW(model.parameters())
    compiled = torch.compile(model, backend="aot_eager")
    images, labels = torch.randn(32, 1, 28, 28), torch.randint(0, 10, (32,))

    def train_step():
        optimizer.zero_grad()
        nn.functional.cross_entropy(compiled(images), labels).backward()
        optimizer.step()

    train_step()  # the compile stays out of the window
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True, profile_memory=True) as prof:
        for n in range(3):
            with record_function(f"ProfilerStep#{n + 1}"):
                train_step()
    prof.export_chrome_trace(str(tmp_path / "trace.json"))
    return json.loads((tmp_path / "trace.json").read_text())


def test_a_real_trace_of_a_compiled_model(tmp_path):
    summary = summarise(real_trace(tmp_path))
    assert [s.step for s in summary.steps] == [1, 2, 3]
    regions = {r.region for r in summary.regions}
    assert {"compiled 0/0", "optimizer"} <= regions
    matmuls = [r for r in summary.ops if r.name in ("aten::addmm", "aten::mm") and r.shapes]
    assert any("784" in r.shapes and r.region == "compiled 0/0" for r in matmuls)
    assert summary.device == "cpu" and summary.window_us > 0
