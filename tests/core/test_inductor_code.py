"""The code Inductor wrote, read from a run's recorded trace: each graph's listings, the provenance from the model's
lines to graph blocks and kernels and back, and each kernel's profiled time. A recorded trace
(tests/support/recorded_inductor.py) for the details; one real CPU Inductor run, with its trace and a profile, for the
whole way (and for the compile time by stage it reports)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from workbench.core.domain.compile_trace import TRACE_LOGGER, CompileTracer
from workbench.core.ground.errors import WorkbenchError
from workbench.core.ground.events import CompileReport, ProfileReport, RunFinished
from workbench.core.ground.inductor_code import TRACE_FILE, kernel_times, read_inductor_code, trace_log
from workbench.core.ground.profile_trace import OpRow, ProfileTables

from ..support.recorded_inductor import recorded_profile, recorded_trace, strip_provenance

FC_LINE = "return self.fc2(self.dropout(F.relu(self.fc1(x))))"  # the recorded model's fc1 → ReLU → dropout → fc2


def _line(model, text: str) -> int:
    """The 1-based line of `text` in the model file (read, never hard-coded)."""
    lines = model.read_text(encoding="utf-8").splitlines()
    return next(i for i, line in enumerate(lines, 1) if line.strip() == text)


@pytest.fixture
def recorded(tmp_path):
    folder, model = recorded_trace(tmp_path / "compile-trace")
    return read_inductor_code(folder), model


def test_each_graph_has_its_listings_in_order(recorded):
    code, model = recorded
    assert [(g.compile_id, g.function, g.passes) for g in code.graphs] == [
        ("0/0", "forward", "forward + backward"), ("0/1", "forward", "inference")]
    train, evaluation = code.graphs
    assert [item.kind for item in train.listings] == ["dynamo", "aot_forward", "aot_backward", "code_forward",
                                                      "code_backward"]
    assert [item.kind for item in evaluation.listings] == ["dynamo", "aot_inference", "code_inference"]
    assert train.listing("dynamo").text.startswith("class GraphModule(torch.nn.Module):")
    assert "# AOT ID: ['0_backward']" in train.listing("code_backward").text
    assert code.files() == (str(model),)
    # The compile time by stage of the recorded run, from the trace's own metrics.
    assert [t.label for t in train.times] == ["forward 0/0", "forward 0/0 · backward"]


def test_a_model_line_leads_to_the_graph_blocks_and_kernels_it_became(recorded):
    code, model = recorded
    line = _line(model, FC_LINE)
    train = code.graphs[0]
    dynamo = train.listing("dynamo")
    block = dynamo.lines_from(str(model), line)
    text = dynamo.text.splitlines()
    assert text[block[0] - 1].strip().startswith(f"# File: {model}:{line} in forward")
    assert any("torch.nn.functional.relu" in text[i - 1] for i in block)
    scale = _line(model, "return (x - PIXEL_MEAN) / PIXEL_STD")
    before_fc = dynamo.lines_from(str(model), scale)
    assert before_fc[-1] + 2 == block[0] and not text[before_fc[-1]].strip()  # a block ends at its blank line
    forward = train.listing("code_forward")
    kernels = forward.kernels_from(str(model), line)
    names = [k.name for k in kernels]
    assert "extern_kernels.addmm" in names and any(k.generated and k.name.startswith("cpp_fused") for k in kernels)
    fused = next(k for k in kernels if k.generated and "relu" in k.name)
    code_lines = forward.text.splitlines()
    assert code_lines[fused.lines[0] - 1].startswith(f"{fused.name} = async_compile.")  # its definition
    assert code_lines[fused.lines[-1] - 1].strip().startswith(f"{fused.name}(")  # its call
    assert set(fused.lines) <= set(forward.lines_from(str(model), line))
    assert "relu" in fused.nodes
    assert any(f.line == line and f.source == FC_LINE for f in fused.sources)
    # Its FX nodes, in the AOT forward graph.
    aot = train.listing("aot_forward")
    assert any(" = torch.ops.aten.relu.default(" in aot.text.splitlines()[i - 1]
               for i in aot.node_lines(fused.nodes))
    # The normalisation lines became a kernel of their own, not the fc kernels.
    assert fused not in forward.kernels_from(str(model), scale) and forward.kernels_from(str(model), scale)


def test_a_backward_kernel_knows_its_line_though_inductor_maps_no_nodes_for_it(recorded):
    code, model = recorded
    backward = code.graphs[0].listing("code_backward")
    assert backward.provenance and backward.kernels
    assert all(k.sources and not k.nodes for k in backward.kernels)
    assert {k.op for k in backward.kernels if not k.generated} == {"aten::mm"}


def test_profiled_kernels_get_their_time_in_their_own_graph(recorded):
    code, _ = recorded
    profile = recorded_profile()
    train, evaluation = code.graphs
    forward = train.listing("code_forward")
    times = kernel_times(train, forward, profile)
    fused = [k for k in forward.kernels if k.generated]
    assert all(times[k.key].us > 0 and times[k.key].calls == 1 for k in fused)  # profiled as graph_0_<name>
    addmm = [k for k in forward.kernels if k.op == "aten::addmm"]
    assert len(addmm) == 2 and {times[k.key].shared for k in addmm} == {2}  # one profiler row, both calls
    assert kernel_times(train, train.listing("code_backward"), profile)  # region "compiled backward"
    # Validation was not profiled: the inference graph's kernels, named like the forward's, get no time.
    assert kernel_times(evaluation, evaluation.listing("code_inference"), profile) == {}


def test_gpu_kernels_are_timed_on_the_device(recorded):
    code, _ = recorded
    train = code.graphs[0]
    forward = train.listing("code_forward")
    kernel = next(k for k in forward.kernels if k.generated)
    rows = (OpRow(name=kernel.name, region="compiled 0/0", calls=4, self_cpu_us=10.0, cpu_us=10.0, self_device_us=80.0,
                  device_us=80.0),
            OpRow(name=kernel.name, region="compiled 0/1", calls=4, self_cpu_us=10.0, cpu_us=10.0, self_device_us=999.0,
                  device_us=999.0),
            OpRow(name="graph_x_" + kernel.name, region="compiled 0/0", calls=4, self_cpu_us=9.0, cpu_us=9.0,
                  self_device_us=0.0, device_us=0.0))
    profile = ProfileReport(first_step=5, last_step=6, device="cuda:0", summary=ProfileTables(ops=rows, device="cuda"))
    [(key, time)] = kernel_times(train, forward, profile).items()
    assert key == kernel.key and (time.us, time.calls) == (40.0, 2.0)  # per profiled step


def test_a_trace_without_provenance_lists_the_generated_kernels_alone(tmp_path):
    folder, _ = recorded_trace(tmp_path / "t")
    strip_provenance(folder)
    forward = read_inductor_code(folder).graphs[0].listing("code_forward")
    assert not forward.provenance
    assert forward.kernels and all(k.generated and not k.sources and not k.handle for k in forward.kernels)


def test_output_code_without_its_aot_id_header_is_placed_by_order(tmp_path):
    """Inductor heads its output code with "# AOT ID: ['0_forward']"; without it, the forward comes first."""
    folder, _ = recorded_trace(tmp_path / "t")
    log = folder / TRACE_FILE
    log.write_text("".join(line for line in log.read_text(encoding="utf-8").splitlines(keepends=True)
                           if not line.startswith("\t# AOT ID:")), encoding="utf-8")
    train, evaluation = read_inductor_code(folder).graphs
    assert [item.kind for item in train.listings][-2:] == ["code_forward", "code_backward"]
    assert "cpp_fused_sum" in train.listing("code_backward").text
    assert evaluation.listings[-1].kind == "code_inference"


def test_a_trace_cut_short_gives_what_it_holds(tmp_path):
    folder, _ = recorded_trace(tmp_path / "t")
    log = folder / TRACE_FILE
    text = log.read_text(encoding="utf-8")
    log.write_text(text[:text.index("aot_inference_graph")] + "\n", encoding="utf-8")  # a torn record line last
    code = read_inductor_code(folder)
    assert [g.compile_id for g in code.graphs] == ["0/0", "0/1"]
    assert [item.kind for item in code.graphs[1].listings] == ["dynamo"]


def test_the_trace_is_found_from_the_runs_compile_trace_path_and_a_missing_one_says_what_to_do(tmp_path):
    folder = tmp_path / "compile-trace"
    assert trace_log(folder / "html" / "index.html") == folder / TRACE_FILE  # rendered by tlparse
    assert trace_log(folder) == folder / TRACE_FILE  # not rendered
    assert trace_log(folder / TRACE_FILE) == folder / TRACE_FILE
    with pytest.raises(WorkbenchError, match="cannot read the compile trace") as error:
        read_inductor_code(folder)
    assert "record compile trace" in error.value.hint


def test_the_tracer_turns_provenance_on_while_it_records_and_puts_everything_back(tmp_path):
    import torch._inductor.config as inductor_config

    before = (inductor_config.trace.provenance_tracking_level, inductor_config.cpp.enable_kernel_profile)
    untraced = CompileTracer().install()
    assert inductor_config.trace.provenance_tracking_level == before[0]  # no trace, no provenance
    untraced.remove()
    tracer = CompileTracer(tmp_path).install()
    try:
        assert inductor_config.trace.provenance_tracking_level == 1 and inductor_config.cpp.enable_kernel_profile
    finally:
        tracer.remove()
    assert (inductor_config.trace.provenance_tracking_level, inductor_config.cpp.enable_kernel_profile) == before
    assert tracer._raw not in logging.getLogger(TRACE_LOGGER).handlers


# -- one real Inductor run ----------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def inductor_run(tmp_path_factory):
    """A short CPU Inductor run of the built-in model with its compile trace and a profile: (events, result). The
    suite's one run that compiles C++ kernels (Inductor's cache makes later sessions quicker)."""
    import torch

    from workbench.core.engine import Trainer, standard_instruments
    from workbench.core.ground.config import TrainConfig

    import torch._functorch.config as functorch_config
    import torch._inductor.config as inductor_config

    torch._dynamo.reset()
    events: list = []
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    # Lowered here, not served by the FX-graph or AOTAutograd cache an earlier test of the suite filled: provenance
    # is recorded while a graph is lowered (the full suite's run found no kernels for the model's line).
    try:
        with inductor_config.patch(fx_graph_cache=False), functorch_config.patch(enable_autograd_cache=False):
            config = TrainConfig(epochs=1, max_steps=10, hidden_dim=16, backend="inductor", device="cpu",
                                 profile_steps=2)
            traced = standard_instruments(trace_dir=tmp_path_factory.mktemp("compile-trace"))
            result = Trainer(instruments=traced).run(config, events.append)
    finally:
        torch.set_num_threads(threads)
    assert isinstance(result, RunFinished), result
    return events, result


@pytest.mark.slow
def test_a_real_run_reports_each_graphs_compile_time_by_stage(inductor_run):
    events, result = inductor_run
    report = [e for e in events if isinstance(e, CompileReport)][-1]
    rows = [(t.compile_id, t.graph) for t in report.graph_times]
    # Compiled from scratch, the backward compiles at the first backward, a row of its own; served by the
    # AOTAutograd cache (an earlier session's), it is loaded with its frame.
    assert rows in ([("0/0", "frame"), ("0/0", "backward"), ("0/1", "frame")], [("0/0", "frame"), ("0/1", "frame")])
    assert all(t.total > 0 and t.function == "forward" for t in report.graph_times)
    frame = report.graph_times[0]
    assert frame.dynamo > 0 and frame.aot > 0
    # The first step's wall time holds its forward's and backward's compiles.
    first_step = sum(t.total for t in report.graph_times if t.compile_id == "0/0")
    assert first_step <= result.results.compile_breakdown["train"]


@pytest.mark.slow
def test_a_real_runs_trace_has_its_code_with_provenance_and_kernel_times(inductor_run):
    from workbench.core.domain import model as builtin

    events, result = inductor_run
    code = read_inductor_code(result.results.compile_trace.path)
    assert [g.compile_id for g in code.graphs] == ["0/0", "0/1"]
    train = code.graphs[0]
    forward = train.listing("code_forward")
    assert forward.provenance
    file = builtin.__file__
    assert file in code.files()
    line = _line(Path(file), FC_LINE)
    assert forward.kernels_from(file, line) and train.listing("dynamo").lines_from(file, line)
    report = [e for e in events if isinstance(e, CompileReport)][-1]
    assert train.times + code.graphs[1].times == report.graph_times  # the trace's metrics are the report's
    [profile] = [e for e in events if isinstance(e, ProfileReport)]
    times = kernel_times(train, forward, profile)
    assert any(k.generated and times.get(k.key) and times[k.key].us > 0 for k in forward.kernels)
