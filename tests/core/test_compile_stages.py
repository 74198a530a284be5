"""Compile time by stage: PyTorch's nested compile timers taken apart per graph, carried by the final compile report,
and shown in the HTML report. Recorded metrics here; a real compile in test_inductor_code.py."""

from __future__ import annotations

import json

import pytest

from workbench.core.ground.compile_stages import BACKWARD, FRAME, STAGES, GraphCompileTime, graph_compile_times
from workbench.core.ground.events import CompileReport, from_json, to_json
from workbench.core.history.report.compile_section import stages_html

from ..helpers import VERSIONS

# Recorded from torch 2.14.1 (a Linear-LayerNorm-Linear module compiled with inductor on the CPU, trained one step,
# then run under no_grad): the frame's record, its backward's (compiled at the first backward), the recompile's.
FRAME_0 = {"compile_id": "0/0", "co_name": "forward", "is_forward": True,
           "dynamo_cumulative_compile_time_us": 3682627, "aot_autograd_cumulative_compile_time_us": 3348581,
           "inductor_cumulative_compile_time_us": 2083032, "inductor_code_gen_cumulative_compile_time_us": 1926605,
           "triton_compile_time_us": 1384363, "joint_graph_pass_time_us": 269867}
BACKWARD_0 = {"compile_id": "0/0", "is_forward": False, "inductor_cumulative_compile_time_us": 4316936,
              "inductor_code_gen_cumulative_compile_time_us": 4180951, "triton_compile_time_us": 3880741,
              "backward_cumulative_compile_time_us": 4340170}
FRAME_1 = {"compile_id": "0/1", "co_name": "forward", "is_forward": True, "recompile_reason": "0/0: grad_mode",
           "dynamo_cumulative_compile_time_us": 2507829, "aot_autograd_cumulative_compile_time_us": 2340733,
           "inductor_cumulative_compile_time_us": 2227893, "inductor_code_gen_cumulative_compile_time_us": 2069247,
           "triton_compile_time_us": 1760740}


def test_a_frames_nested_timers_become_stages_that_add_up_to_its_compile():
    [frame, backward, eval_frame] = graph_compile_times([FRAME_0, BACKWARD_0, FRAME_1])
    assert (frame.compile_id, frame.function, frame.graph) == ("0/0", "forward", FRAME)
    assert frame.seconds() == pytest.approx({"dynamo": 3.682627 - 3.348581, "aot": 3.348581 - 2.083032,
                                             "lowering": 2.083032 - 1.926605, "codegen": 1.926605 - 1.384363,
                                             "kernel_compile": 1.384363, "autotune": 0.0})
    assert frame.total == pytest.approx(3.682627)  # the frame's whole compile, nothing counted twice
    assert list(frame.seconds()) == list(STAGES)  # the bar's order
    # The backward: no Dynamo, its own AOTAutograd time; named after its frame's function.
    assert (backward.graph, backward.function, backward.dynamo) == (BACKWARD, "forward", 0.0)
    assert backward.total == pytest.approx(4.340170) and backward.label == "forward 0/0 · backward"
    assert eval_frame.compile_id == "0/1" and eval_frame.label == "forward 0/1"


def test_autotuning_is_taken_from_lowering_first_then_from_code_generation():
    # max-autotune's template choices are benchmarked while lowering, fused kernels while generating code.
    record = {"compile_id": "1/0", "dynamo_cumulative_compile_time_us": 10_000_000,
              "aot_autograd_cumulative_compile_time_us": 9_000_000, "inductor_cumulative_compile_time_us": 8_000_000,
              "inductor_code_gen_cumulative_compile_time_us": 5_000_000, "triton_compile_time_us": 1_000_000,
              "compile_time_autotune_time_us": 4_000_000}
    [time] = graph_compile_times([record])
    assert (time.lowering, time.autotune, time.codegen) == pytest.approx((0.0, 4.0, 3.0))
    assert time.total == pytest.approx(10.0)


def test_runtime_autotuning_joins_its_graph_and_recordless_frames_give_no_row():
    runtime = {"compile_id": "0/0", "is_runtime": True, "is_forward": True, "runtime_triton_autotune_time_us": 500_000}
    skipped = {"compile_id": "1/0", "co_name": "helper", "dynamo_cumulative_compile_time_us": None}
    times = graph_compile_times([FRAME_0, runtime, skipped])
    assert [t.compile_id for t in times] == ["0/0"]
    assert times[0].autotune == pytest.approx(0.5)
    # A runtime record of a graph with no compile record (a cache served it): a row of its own.
    [alone] = graph_compile_times([runtime])
    assert alone.autotune == pytest.approx(0.5) and alone.total == pytest.approx(0.5)


def test_timers_that_round_past_each_other_never_give_a_negative_stage():
    record = {"compile_id": "0/0", "dynamo_cumulative_compile_time_us": 100, "aot_autograd_cumulative_compile_time_us":
              120, "inductor_cumulative_compile_time_us": 130, "inductor_code_gen_cumulative_compile_time_us": 140,
              "triton_compile_time_us": 150, "compile_time_autotune_time_us": 1000}
    [time] = graph_compile_times([record])
    assert all(seconds >= 0 for seconds in time.seconds().values())


def test_the_report_carries_the_stages_through_its_json_line_and_old_lines_still_load():
    report = CompileReport(compiled=True, backend="inductor", mode="default",
                           graph_times=graph_compile_times([FRAME_0, BACKWARD_0]))
    assert from_json(to_json(report)) == report
    old = json.loads(to_json(CompileReport(compiled=True, backend="inductor", mode="default")))
    del old["graph_times"]  # a line written before stages were timed
    assert from_json(json.dumps(old)).graph_times == ()
    bad = {**old, "graph_times": [{"compile_id": "0/0", "function": "f", "dynamo": "slow"}]}
    with pytest.raises(ValueError, match="dynamo"):
        from_json(json.dumps(bad))


def test_the_html_report_has_a_bar_and_a_row_per_graph():
    html = stages_html(graph_compile_times([FRAME_0, BACKWARD_0]))
    assert "Compile time by stage" in html
    assert html.count("<tr>") == 3  # the heading and two graphs
    assert "forward 0/0 · backward" in html and "3.68 s" in html and "4.34 s" in html
    for stage in STAGES.values():
        assert stage.name in html and stage.colour in html
    assert "C++ / Triton compile: 1.38 s (38%)" in html  # a segment's tooltip
    assert stages_html(()) == ""  # runs recorded before stages were timed


def test_a_recorded_runs_report_shows_its_stages(tmp_path):
    """Through the history: recorded by RunRecorder, read back, rendered by the run report."""
    from workbench.core.ground.config import TrainConfig
    from workbench.core.ground.events import RunFinished, RunStarted
    from workbench.core.history.recording import RunRecorder
    from workbench.core.history.report.build import build_report
    from workbench.core.history.runs import RunStore

    config = TrainConfig(backend="inductor", epochs=1)
    store = RunStore(tmp_path / "runs.sqlite")
    recorder = RunRecorder(store, out_dir=str(tmp_path / "run"), interval=0)
    for event in (RunStarted(config=config, device="cpu", device_name="cpu", versions=VERSIONS, train_size=10,
                             val_size=5, steps_per_epoch=1, total_steps=1),
                  CompileReport(compiled=True, backend="inductor", mode="default",
                                graph_times=graph_compile_times([FRAME_0, BACKWARD_0])),
                  RunFinished(steps=1, epochs=1, seconds=9.0, stopped=False)):
        recorder(event)
    text, _ = build_report([store.get(recorder.run_id, with_events=True)], {})
    assert "Compile time by stage" in text and "forward 0/0 · backward" in text


def test_a_graph_time_reads_back_from_its_plain_form():
    time = GraphCompileTime("0/0", "forward", BACKWARD, aot=0.5, kernel_compile=1.5)
    assert GraphCompileTime.from_dict(time.to_dict()) == time
