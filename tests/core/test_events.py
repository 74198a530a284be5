"""Events are plain frozen data: one JSON line each, rebuilt exactly, and picklable across processes."""

from __future__ import annotations

import dataclasses
import json
import pickle

import pytest

from workbench.core.ground import events as ev
from workbench.core.ground.alerts import Alert
from workbench.core.ground.amp_census import AmpCensus, CallsByGroup, CensusRow
from workbench.core.ground.layer_stats import Histogram, LayerRow, LayerStat, LayerStats, ModelSummary
from workbench.core.ground.config import TrainConfig
from workbench.core.ground.memory_trace import MemoryTimeline
from workbench.core.ground.profile_trace import OpRow, ProfileTables, StepTime
from workbench.core.ground.results import RunResults, SystemSummary

from ..helpers import VERSIONS

BREAK = ev.GraphBreak(
    reason="Unsupported Tensor.item() call\nHint: set capture_scalar_outputs",
    frames=(ev.Frame(file="/x/model.py", line=12, function="forward", source="h = self.a(x)"),
            ev.Frame(file="/x/planted_break.py", line=17, function="forward", source='print("m", h.mean().item())')))

SAMPLES = [
    ev.RunStarted(config=TrainConfig(epochs=2), device="cpu", device_name="CPU (x86_64, 2 cores)",
                  versions=VERSIONS, train_size=4000, val_size=1000,
                  steps_per_epoch=125, total_steps=250),
    ev.CompileStarted(backend="aot_eager", mode="default"),
    ev.CompileFinished(backend="aot_eager", mode="default", seconds=1.25),
    ev.Step(step=1, epoch=1, loss=2.30, samples_per_s=1234.5, step_seconds=0.02, memory=ev.MemorySample(rss=900.5),
            compiling=True),
    ev.Step(step=2, epoch=1, loss=2.1, samples_per_s=5e4, step_seconds=0.001,
            memory=ev.MemorySample(allocated=1.0, reserved=2.0, peak=3.0)),
    ev.EpochEnd(epoch=1, train_loss=0.5, val_loss=0.4, val_accuracy=0.91, seconds=3.5),
    ev.CompileReport(compiled=True, backend="aot_eager", mode="default", graph_count=2, graph_break_count=1,
                     breaks=(BREAK, ev.GraphBreak(reason="no frames")), op_count=7, compile_seconds=0.7,
                     recompiles=("forward: tensor 'x' size mismatch",), warnings=("fell back",),
                     source="explain"),
    ev.CompileReport(compiled=False, backend="inductor", mode="max-autotune"),
    ev.Notice(level="warning", message="fell back to eager", hint="choose aot_eager"),
    ev.RunFinished(steps=250, epochs=2, seconds=4.0, stopped=False,
                   results=RunResults(val_accuracy=0.93, backend_used="eager", compile_breakdown={"train": 1.5},
                                      system=SystemSummary(samples=3, cpu_process_mean=90.0, cpu_machine_mean=40.0,
                                                           rss_peak_mib=800.0))),
    ev.RunFinished(steps=3, epochs=0, seconds=0.1, stopped=True),
    ev.RunFailed(kind="diverged", message="loss is nan at step 4", hint="lower the learning rate"),
    ev.CompileFinished(backend="inductor", mode="reduce-overhead", seconds=0.4, phase="cudagraph recording"),
    ev.Step(step=3, epoch=1, loss=2.0, samples_per_s=900.0, step_seconds=0.03, memory=ev.MemorySample(peak=3.0),
            warmup=True),
    ev.CompileEvent(step=125, kind="recompile", title="forward recompiled: gradients were switched off",
                    detail="0/0: GLOBAL_STATE changed: grad_mode", phase="eval", frames=BREAK.frames, compile_id="0/1"),
    ev.CompileEvent(step=1, kind="cache_miss", title="FX-graph cache miss: compiled from scratch"),
    ev.SystemSample(seconds=1.5, cpu_process=180.0, cpu_machine=92.5, rss_mib=812.0,
                    gpu={"cuda:0": ev.GpuReading(util=87.0, memory_mib=30512.0, power_w=412.5, temp_c=61.0)}),
    ev.Step(step=40, epoch=1, loss=1.5, samples_per_s=800.0, step_seconds=0.04, memory=ev.MemorySample(rss=900.0),
            loss_scale=32768.0, profiled=True),
    ev.ProfileReport(first_step=12, last_step=31, device="cpu",
                     summary=ProfileTables(ops=(OpRow(name="aten::addmm", region="", calls=40, self_cpu_us=812.5,
                                                      cpu_us=812.5, self_device_us=0.0, device_us=0.0),),
                                           steps=(StepTime(step=12, start_us=0.0, dur_us=2100.0),)),
                     memory=MemoryTimeline(source="profiler", device="cpu", times_us=(0.0, 5.0),
                                           categories={"activations": (0.0, 4096.0)}),
                     trace="/runs/r/profile/trace.json.gz", trace_bytes=81_234, trimmed="memory events"),
    ev.AmpReport(dtype="bf16", device="cpu",
                 census=AmpCensus(ops=(CensusRow(op="aten.addmm", calls=2, dtype="bfloat16", group="low"),),
                                  groups=CallsByGroup(low=2, fp32=1, other=0)),
                 recommendation="bf16: this CPU has bf16 instructions"),
    ev.AmpSkipped(step=7, scale=2.0**100, param="core.0.weight"),
    ModelSummary(batch=32, rows=(LayerRow(name="core_block.fc1", kind="Linear", depth=2, output_shape=(32, 128),
                                          params=100_480, trainable=True, mult_adds=3_211_264),)),
    LayerStats(step=50, layers=(LayerStat(
        name="core_block.fc1", weight_norm=9.7, grad_norm=1.3, update_ratio=1.5e-3, dead_fraction=0.0,
        weights=Histogram(lo=-0.1, hi=0.1, counts=(3.0, 5.0)), grads=Histogram(lo=-1e-3, hi=2e-3, counts=(1.0, 7.0)),
        activations=Histogram(lo=-2.0, hi=3.5, counts=(10.0, 0.0))),)),
    Alert(step=8, rule="grad_exploding", severity="warning", title="the gradient norm is 56 at step 8",
          advice="lower the learning rate", panel="setting:lr"),
    ev.RankTimes(step=40, forward_seconds=(0.0005, 0.031), hosts=("gpu-a", "gpu-b"), between_seconds=(0.002, 0.001),
                 memory_mib=(700.5, 702.0)),
]


def test_samples_cover_every_event_type():
    assert {type(e) for e in SAMPLES} == set(ev.EVENT_TYPES.values())


@pytest.mark.parametrize("event", SAMPLES, ids=lambda e: type(e).__name__)
def test_json_round_trip(event):
    line = ev.to_json(event)
    assert "\n" not in line  # one event, one line
    assert json.loads(line)["type"] == type(event).__name__
    again = ev.from_json(line)
    assert type(again) is type(event)
    assert again == event


@pytest.mark.parametrize("event", SAMPLES + [ev.Step(step=3, epoch=1, loss=float("nan"), samples_per_s=float("inf"),
                                                     step_seconds=0.0, memory=ev.MemorySample())],
                         ids=lambda e: type(e).__name__)
def test_the_json_line_is_exactly_to_dicts_content(event):
    """to_json skips dataclasses.asdict for speed: the line must not change by a character."""
    assert ev.to_json(event) == json.dumps(ev.to_dict(event), separators=(",", ":"), allow_nan=True)


@pytest.mark.parametrize("event", SAMPLES, ids=lambda e: type(e).__name__)
def test_pickle_round_trip(event):
    assert pickle.loads(pickle.dumps(event)) == event


@pytest.mark.parametrize("event", SAMPLES, ids=lambda e: type(e).__name__)
def test_events_are_frozen(event):
    name = dataclasses.fields(event)[0].name
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(event, name, None)


def test_compile_report_round_trip_rebuilds_nested_types():
    report = ev.from_json(ev.to_json(SAMPLES[6]))
    assert isinstance(report.breaks, tuple) and isinstance(report.breaks[0], ev.GraphBreak)
    assert isinstance(report.breaks[0].frames[1], ev.Frame)
    assert report.breaks[0].where == "/x/planted_break.py:17"  # innermost frame last
    assert report.breaks[1].where == "(no user frame)"
    assert isinstance(report.recompiles, tuple) and isinstance(report.warnings, tuple)


def test_from_dict_rejects_unknown_type():
    with pytest.raises(ValueError, match="unknown event type"):
        ev.from_dict({"type": "Explosion", "x": 1})
    with pytest.raises(ValueError):
        ev.from_dict({"step": 1})


def test_is_terminal():
    terminal = [e for e in SAMPLES if ev.is_terminal(e)]
    assert {type(e) for e in terminal} == {ev.RunFinished, ev.RunFailed}


def test_events_logged_before_compile_phases_and_warmup_steps_still_load():
    """Old event logs and database rows have no CompileFinished.phase and no Step.warmup: the defaults read them."""
    old_compile = {"type": "CompileFinished", "backend": "aot_eager", "mode": "default", "seconds": 1.5}
    old_step = {"type": "Step", "step": 1, "epoch": 1, "loss": 2.3, "samples_per_s": 10.0, "step_seconds": 1.5,
                "memory": {"rss": 1.0}, "compiling": True}
    compiled = ev.from_dict(old_compile)
    assert compiled == ev.CompileFinished("aot_eager", "default", 1.5) and compiled.phase == "train"
    step = ev.from_json(json.dumps(old_step))
    assert step.compiling and step.warmup is False
    assert json.loads(ev.to_json(ev.Step(2, 1, 2.0, 9.0, 0.1, ev.MemorySample(), warmup=True)))["warmup"] is True


def test_a_run_finished_line_carries_its_results_as_metrics_and_old_lines_load_typed():
    """RunFinished.results travels under the key every stored line has used, "metrics", in the flat layout."""
    line = json.loads(ev.to_json(next(e for e in SAMPLES if isinstance(e, ev.RunFinished))))
    assert "results" not in line and line["metrics"]["val_accuracy"] == 0.93
    assert line["metrics"]["system"]["samples"] == 3
    old = {"type": "RunFinished", "steps": 125, "epochs": 1, "seconds": 3.0, "stopped": False,
           "metrics": {"train_loss": 0.4, "val_loss": 0.3, "val_accuracy": 0.9, "best_val_accuracy": 0.9,
                       "samples_per_s": 5000.0, "compile_seconds": 0.0, "peak_memory_mib": 812.0,
                       "backend_used": "eager", "epochs_completed": 1, "checkpoint": "/runs/a/checkpoint.pt"}}
    finished = ev.from_dict(old)
    assert isinstance(finished.results, RunResults)
    assert finished.results.val_accuracy == 0.9 and finished.results.checkpoint == "/runs/a/checkpoint.pt"
    assert finished.results.compile_breakdown == {} and finished.results.payback is None  # not written back then
    nothing = ev.from_dict({"type": "RunFinished", "steps": 0, "epochs": 0, "seconds": 0.1, "stopped": True,
                            "metrics": {}})
    assert nothing.results == RunResults()
    with pytest.raises(ValueError, match="samples_per_s"):
        ev.from_dict({**old, "metrics": {**old["metrics"], "samples_per_s": "fast"}})
    with pytest.raises(ValueError):  # the field's own name is not its wire name
        ev.from_dict({**old, "results": {}})


STEP = {"type": "Step", "step": 1, "epoch": 1, "loss": 2.3, "samples_per_s": 10.0, "step_seconds": 1.5,
        "memory": {"rss": 1.0}}


@pytest.mark.parametrize("field,declared", [("step", "int"), ("epoch", "int"), ("loss", "float"),
                                            ("samples_per_s", "float"), ("accuracy", "float"), ("loss_scale", "float")])
@pytest.mark.parametrize("value", [True, False])
def test_from_dict_refuses_a_bool_where_a_number_is_declared(field, declared, value):
    # JSON's true is Python's True, and isinstance(True, int) holds: a bool must still not pass for a number.
    with pytest.raises(ValueError, match=rf"Step\.{field} is bool {value}, not {declared}"):
        ev.from_dict({**STEP, field: value})


def test_from_dict_still_reads_numbers_and_bools_where_they_are_declared():
    step = ev.from_dict({**STEP, "loss": 2, "accuracy": 1, "compiling": True})  # an int is a float's value
    assert step.loss == 2 and step.accuracy == 1 and step.compiling is True
    assert ev.from_dict({"type": "RunFinished", "steps": 3, "epochs": 1, "seconds": 0, "stopped": False}).steps == 3
    with pytest.raises(ValueError, match=r"RunFinished\.stopped is int 1, not a bool"):  # and a number is no bool
        ev.from_dict({"type": "RunFinished", "steps": 3, "epochs": 1, "seconds": 0.5, "stopped": 1})
    with pytest.raises(ValueError, match=r"RunFinished\.steps is bool True, not int"):
        ev.from_json('{"type": "RunFinished", "steps": true, "epochs": 1, "seconds": 0.5, "stopped": true}')


@pytest.mark.parametrize("field,value,where,held", [("recompiles", [1], "[0]", "int 1"),
                                                    ("warnings", ["fell back", None], "[1]", "NoneType None"),
                                                    ("recompiles", [["nested"]], "[0]", r"list \['nested'\]")])
def test_from_dict_refuses_anything_but_text_in_a_list_of_text(field, value, where, held):
    data = {**ev.to_dict(ev.CompileReport(compiled=True, backend="aot_eager", mode="default")), field: value}
    with pytest.raises(ValueError, match=rf"CompileReport\.{field}\{where} is {held}, not text"):
        ev.from_dict(data)
