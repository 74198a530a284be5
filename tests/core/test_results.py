"""A run's results: typed everywhere, and stored in the flat "metrics" layout every version has written (metrics.json,
event logs, the run history, checkpoints). The codec writes that layout exactly, reads every older one, and refuses
what it cannot trust."""

from __future__ import annotations

import json

import pytest

from workbench.core.ground.answers import CheckpointInfo
from workbench.core.ground.config import TrainConfig
from workbench.core.ground.forecast import EVAL_MODE, NOT_PREDICTED
from workbench.core.ground.results import CompileTrace, RunResults

from ..support.full_results import FULL, PAYBACK

# FULL as the engine has always written it: flat, each part under its own key, in this order.
FULL_LAYOUT = {
    "train_loss": 0.41, "val_loss": 0.32, "val_accuracy": 0.91, "best_val_accuracy": 0.92, "samples_per_s": 5123.5,
    "compile_seconds": 1.5, "compile_breakdown": {"train": 1.25, "eval": 0.25}, "peak_memory_mib": 812.0,
    "backend_used": "aot_eager", "epochs_completed": 2,
    "system": {"samples": 4, "cpu_process_mean": 180.0, "cpu_machine_mean": 45.5, "rss_peak_mib": 900.0,
               "cuda:0": {"util_mean": 87.0, "memory_peak_mib": 30512.0, "power_peak_w": 412.5, "temp_peak_c": 61.0}},
    "amp": {"dtype": "fp16", "recommendation": "bf16: …", "census_groups": {"low": 2, "fp32": 3, "other": 0},
            "skipped": 2, "skipped_steps": [3, 9], "first_nonfinite": {"step": 3, "param": "core.fc1.weight"},
            "final_scale": 16384.0, "skipped_share": 0.05},
    "profile": {"first_step": 12, "last_step": 31, "trace": "/runs/r/profile/trace.json.gz", "trace_bytes": 81_234,
                "trimmed": "memory events", "snapshot": "",
                "top_ops": [{"name": "aten::addmm", "region": "", "calls": 40, "self_cpu_us": 812.5, "cpu_us": 900.0,
                             "self_device_us": 0.0, "device_us": 0.0, "shapes": "[[64, 784]]"}],
                "cost": {"profiled_step_ms": 2.5, "steady_step_ms": 2.0}, "memory_peak_bytes": 4096,
                "memory_source": "profiler", "problem": ""},
    "payback": {"eager_step_s": 0.010, "compiled_step_s": 0.008, "compile_s": 0.05, "steps": 30,
                "method": "paired test", "speedup": PAYBACK.speedup, "break_even_step": 25,
                "verdict": PAYBACK.verdict()},
    "recompile_forecast": [
        {"cause": EVAL_MODE, "phase": "eval", "when": "at the first validation (after step 125)",
         "text": "forward recompiles for validation", "fix": "expected: no fix needed", "expected": True, "count": 1,
         "batch": None, "verdict": "confirmed", "observed": ["forward: 0/1: GLOBAL_STATE changed: grad_mode"]},
        {"verdict": NOT_PREDICTED, "observed": ["forward: 0/2: size mismatch"]}],
    "compile_trace": "/runs/r/compile-trace", "compile_trace_problem": "install tlparse",
    "replica_checksums": ["ab12", "ab12"],
    "checkpoint": "/runs/r/checkpoint.pt",
}

# What every run has written since the first version (its keys in order); the rest only when the run had it.
ALWAYS = ["best_val_accuracy", "samples_per_s", "compile_seconds", "compile_breakdown", "peak_memory_mib",
          "backend_used", "epochs_completed"]


def test_the_layout_is_the_one_every_version_wrote():
    data = FULL.to_dict()
    assert data == FULL_LAYOUT
    assert list(data) == list(FULL_LAYOUT)  # metrics.json is written in this order too
    assert list(RunResults().to_dict()) == ALWAYS  # nothing measured: the parts a run did not have are absent


def test_round_trip_through_json():
    line = json.dumps(FULL.to_dict(), allow_nan=True)
    assert RunResults.from_dict(json.loads(line)) == FULL
    eager = RunResults(val_accuracy=0.5, recompile_forecast=())  # checked, and nothing to say: an empty list
    assert eager.to_dict()["recompile_forecast"] == [] and RunResults.from_dict(eager.to_dict()) == eager
    assert "recompile_forecast" not in RunResults().to_dict()  # not compiled: nothing checked


def test_layouts_older_versions_wrote_are_read_with_defaults():
    first = {"train_loss": 0.5, "val_loss": 0.4, "val_accuracy": 0.9, "best_val_accuracy": 0.9,
             "samples_per_s": 4000, "compile_seconds": 0.0, "peak_memory_mib": 700.0, "backend_used": "eager",
             "epochs_completed": 1, "checkpoint": "/runs/a/checkpoint.pt"}  # before compile phases were counted
    results = RunResults.from_dict(first)
    assert results.samples_per_s == 4000.0 and results.compile_breakdown == {}
    assert results.system is None and results.amp is None and results.profile is None and results.payback is None
    assert results.recompile_forecast is None and results.compile_trace is None and results.checkpoint_error == ""
    assert RunResults.from_dict({}) == RunResults()  # a run stopped before it started
    assert RunResults.from_dict({"node_exit_code": 0}).node_exit_code == 0  # a multi-node run's other node
    no_epoch = RunResults.from_dict({"best_val_accuracy": None, "epochs_completed": 0})
    assert no_epoch.val_accuracy is None and "val_accuracy" not in no_epoch.to_dict()


def test_a_trace_that_was_not_rendered_and_a_gpu_problem_travel_beside_their_parts():
    results = RunResults.from_dict({"system_gpu_problem": "GPU metrics unavailable: no NVML",
                                    "compile_trace_problem": "install tlparse"})
    assert results.system_gpu_problem == "GPU metrics unavailable: no NVML"
    assert results.compile_trace == CompileTrace(path="", problem="install tlparse")
    assert results.to_dict()["compile_trace_problem"] == "install tlparse" and "compile_trace" not in results.to_dict()


@pytest.mark.parametrize("change,where", [
    ({"samples_per_s": "fast"}, "RunResults.samples_per_s"),
    ({"epochs_completed": True}, "RunResults.epochs_completed"),  # a bool is not a number
    ({"backend_used": 3}, "RunResults.backend_used"),
    ({"accuracy_at_dawn": 0.5}, "accuracy_at_dawn"),  # a key this version does not know
    ({"amp": {**FULL_LAYOUT["amp"], "skipped": "two"}}, "RunResults.amp.skipped"),
    ({"amp": {"dtype": "fp16"}}, "RunResults.amp.recommendation is missing"),
    ({"system": {**FULL_LAYOUT["system"], "cuda:1": 87.0}}, "RunResults.system.gpus.cuda:1"),
    ({"profile": {**FULL_LAYOUT["profile"], "cost": []}}, "RunResults.profile.cost"),
    ({"recompile_forecast": [{"verdict": "confirmed", "observed": ["x"], "cause": 1}]},
     r"RunResults.recompile_forecast\[0\]"),
    ({"recompile_forecast": "none"}, "RunResults.recompile_forecast"),
    ({"payback": {"eager_step_s": 0.01}}, "RunResults.payback.compiled_step_s is missing"),
    ({"payback": {"eager_step_s": 0.01, "compiled_step_s": "fast", "compile_s": 1.0, "steps": 9}},
     "RunResults.payback.compiled_step_s"),
    ({"compile_trace": 7}, "RunResults.compile_trace.path"),
    ({"replica_checksums": [1, 2]}, r"RunResults.replica_checksums\[0\]"),
])
def test_what_cannot_be_trusted_is_refused_saying_where(change, where):
    with pytest.raises(ValueError, match=where):
        RunResults.from_dict({**FULL_LAYOUT, **change})


def test_only_an_object_is_a_runs_results():
    for value in ([1, 2], "metrics", None):
        with pytest.raises(ValueError, match="not an object"):
            RunResults.from_dict(value)


def test_records_that_hold_results_read_them_in_their_layout():
    info = CheckpointInfo(path="/runs/r/checkpoint.pt", config=TrainConfig(), results=FULL, classes=("a", "b"),
                          versions={"torch": "2.x"})
    data = json.loads(json.dumps(info.to_dict()))
    assert data["results"] == FULL_LAYOUT
    assert CheckpointInfo.from_dict(data) == info
    with pytest.raises(ValueError, match=r"CheckpointInfo.results.samples_per_s"):
        CheckpointInfo.from_dict({**data, "results": {"samples_per_s": "fast"}})
