"""The compile timeline: each marker kind from a recorded structured-trace record, and from a real compiled run."""

from __future__ import annotations

import dataclasses
import logging
import shutil

import pytest
import torch

from workbench.core import engine
from workbench.core.domain import compile_trace
from workbench.core.domain.compile_trace import (CUDAGRAPH_LOGGER, TRACE_LOGGER, CompileTracer, parse_cudagraph_skip,
                                                 parse_record, plain_guard, render_trace)
from workbench.core.engine import Trainer, standard_instruments
from workbench.core.ground.config import TrainConfig
from workbench.core.ground.events import (COMPILE_EVENT_KINDS, CompileEvent, CompileReport, RunFinished, Step,
                                          from_json, to_json)

# Recorded from torch 2.14.1 (a Linear + .item() + print module, batch sizes 4, 4, 3, then eval under no_grad).
BREAK_PAYLOAD = '''Graph break in user code at /home/u/model.py:15
Graph Break Reason: Encountered graph break when attempting to trace CALL: a function call, e.g. f(x, y):

Unsupported Tensor.item() call with capture_scalar_outputs=False
  Explanation: Dynamo does not support tracing `Tensor.item()` with config.capture_scalar_outputs=False.
  Hint: Set `torch._dynamo.config.capture_scalar_outputs = True` or `export TORCHDYNAMO_CAPTURE_SCALAR_OUTPUTS=1` \
to include these operations in the captured graph.

  Developer debug context: call_method TensorVariable() item () {}

 For more details about this graph break, please visit: \
https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0124.html

Stack variable source attribution:
  NullVariable originated from:
    File "/home/u/model.py", line 15

User code traceback:
  File "/home/u/train.py", line 20, in <module>
    out = m(torch.randn(bs,8)); out.sum().backward(); opt.step(); opt.zero_grad()
          ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/venv/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1781, in _wrapped_call_impl
    return self._compiled_call_impl(*args, **kwargs)  # type: ignore[misc]
  File "/home/u/model.py", line 15, in forward
    if y.sum().item() > 0: print("pos")
       ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^

Traceback (most recent call last):
  File "/venv/lib/python3.11/site-packages/torch/_dynamo/symbolic_convert.py", line 1105, in wrapper
    return inner_fn(self, inst)
torch._dynamo.exc.Unsupported: Unsupported Tensor.item() call with capture_scalar_outputs=False
'''
# From torch/_inductor/cudagraph_utils.py's messages (a GPU run of a model that updates a buffer in place).
CUDAGRAPH_SKIP = ('skipping cudagraphs due to mutated inputs (1 instances). Found from : \n'
                  '   File "/home/u/planted.py", line 31, in forward\n'
                  '    self.seen.add_(1)\n')


def ids(frame: int, attempt: int) -> dict:
    return {"frame_id": frame, "frame_compile_id": attempt, "attempt": 0}


@pytest.mark.parametrize("key, graph", [("aot_forward_graph", "forward graph"),
                                        ("aot_backward_graph", "backward graph"),
                                        ("aot_inference_graph", "inference graph (no gradients needed)")])
def test_each_compiled_graph_is_a_marker(key, graph):
    [event] = parse_record({key: {}, **ids(0, 1)}, "graph code")
    assert event.kind == "graph" and event.title == f"{graph} compiled (frame 0/1)"
    assert event.compile_id == "0/1"


@pytest.mark.parametrize("reason, words", [
    ("0/0: tensor 'x' size mismatch at index 0. expected 32, actual 16", "input x changed size (dim 0: 32 → 16)"),
    ("0/1: GLOBAL_STATE changed: grad_mode ", "gradients were switched off (validation runs under no_grad)"),
    ("1/0: ___stack0 == 6.52  # if y.sum().item() > 0:  # model.py:15", "a Python value the graph depends on"),
])
def test_a_recompile_says_which_guard_failed_in_plain_words(reason, words):
    metrics = {"co_name": "forward", "co_filename": __file__, "co_firstlineno": 1, "recompile_reason": reason}
    [event] = parse_record({"compilation_metrics": metrics, **ids(0, 1)}, None)
    assert event.kind == "recompile" and words in event.title and event.title.startswith("forward recompiled")
    assert event.detail == reason.strip()  # Dynamo's own words stay in the details
    assert event.frames[0].file == __file__ and event.frames[0].source  # the user's source line
    assert plain_guard(reason).startswith(words[:20])


def test_a_first_compile_is_no_recompile_and_a_resumed_frame_says_where_it_resumed():
    first = {"co_name": "forward", "co_filename": "/m.py", "co_firstlineno": 3, "recompile_reason": None}
    assert parse_record({"compilation_metrics": first, **ids(0, 0)}, None) == []
    resumed = {**first, "co_name": "torch_dynamo_resume_in_forward_at_15", "recompile_reason": "1/0: grad_mode"}
    [event] = parse_record({"compilation_metrics": resumed, **ids(1, 1)}, None)
    assert event.title.startswith("forward (after the break at line 15) recompiled")


def test_a_graph_break_marker_has_the_break_type_its_explanation_and_the_users_line():
    [event] = parse_record({"artifact": {"name": "dynamo_graph_break_reason", "encoding": "string"}, **ids(0, 0)},
                           BREAK_PAYLOAD)
    assert event.kind == "graph_break"
    assert event.title == "graph break: Unsupported Tensor.item() call with capture_scalar_outputs=False"
    assert "Explanation: Dynamo does not support tracing `Tensor.item()`" in event.detail
    assert "gb0124.html" in event.detail and "Developer debug context" not in event.detail
    assert "symbolic_convert" not in event.detail  # Dynamo's own traceback is not the user's business
    assert "Stack variable source attribution" not in event.detail
    # The script that called the training loop is above PyTorch's frames: not where the break is.
    assert [(f.file, f.line) for f in event.frames] == [("/home/u/model.py", 15)]
    assert event.frames[-1].source == 'if y.sum().item() > 0: print("pos")'
    assert event.where == "/home/u/model.py:15"


def test_a_break_whose_type_is_on_dynamos_reason_line_is_titled_by_it():
    """Recorded from torch 2.14.1 (resources/examples/planted_branch.py): here the type is on the reason line."""
    payload = ("Graph break in user code at /home/u/planted_branch.py:23\n"
               "Graph Break Reason: Data-dependent branching\n"
               "  Explanation: Detected data-dependent branching (e.g. `if my_tensor.sum() > 0:`).\n"
               "  Hint: Use `torch.cond` to express dynamic control flow.\n")
    [event] = parse_record({"artifact": {"name": "dynamo_graph_break_reason"}, **ids(0, 0)}, payload)
    assert event.title == "graph break: Data-dependent branching"
    assert event.detail.startswith("Data-dependent branching\nExplanation: Detected data-dependent branching")


@pytest.mark.parametrize("name, kind, words", [
    ("fx_graph_cache_hit", "cache_hit", "FX-graph cache hit"),
    ("fx_graph_cache_miss", "cache_miss", "FX-graph cache miss"),
    ("aotautograd_cache_hit", "cache_hit", "AOTAutograd cache hit"),
    ("aotautograd_cache_miss", "cache_miss", "AOTAutograd cache miss"),
])
def test_cache_hits_and_misses_are_markers(name, kind, words):
    payload = '{"cache_status_detailed": "full_miss", "key": "fkdzmvdtk", "components": []}'
    [event] = parse_record({"artifact": {"name": name, "encoding": "json"}, **ids(2, 0)}, payload)
    assert event.kind == kind and event.title.startswith(words) and event.detail == "cache key fkdzmvdtk"


def test_a_cudagraph_skip_is_explained_with_its_reason_and_the_line_that_mutated_the_input():
    skip = parse_cudagraph_skip(CUDAGRAPH_SKIP)
    assert skip.kind == "cudagraph_skip"
    assert skip.title == "CUDA graphs skipped: an input is changed in place (mutated)"
    assert [(f.file, f.line, f.source) for f in skip.frames] == [("/home/u/planted.py", 31, "self.seen.add_(1)")]
    cpu = parse_cudagraph_skip("skipping cudagraphs due to cpu device (arg3_1)")
    assert cpu.title == "CUDA graphs skipped: the graph uses a CPU tensor"
    assert parse_cudagraph_skip("recording cudagraph tree for graph 0") is None


def test_other_records_are_no_markers():
    assert parse_record({"dynamo_start": {"stack": []}, **ids(0, 0)}, None) == []
    assert parse_record({"artifact": {"name": "fx_graph_runnable", "encoding": "string"}}, "code") == []


def test_the_tracer_stamps_events_with_the_engines_step_and_phase_and_logs_each_break_once():
    tracer = CompileTracer().install()
    try:
        trace, cudagraphs = logging.getLogger(TRACE_LOGGER), logging.getLogger(CUDAGRAPH_LOGGER)
        brk = {"metadata": {"artifact": {"name": "dynamo_graph_break_reason"}, **ids(0, 0)}, "payload": BREAK_PAYLOAD}
        tracer.step = 7
        trace.debug("", extra={"metadata": {"aot_forward_graph": {}, **ids(0, 0)}, "payload": None})
        trace.debug("", extra=brk)
        trace.debug("", extra=brk)  # the same break, logged again when its frame recompiles
        tracer.step, tracer.phase = 9, "eval"
        cudagraphs.warning(CUDAGRAPH_SKIP)
        events = tracer.drain()
    finally:
        tracer.remove()
    assert [(e.step, e.phase, e.kind) for e in events] == [(7, "train", "graph"), (7, "train", "graph_break"),
                                                           (9, "eval", "cudagraph_skip")]
    assert tracer.drain() == []
    assert tracer not in logging.getLogger(TRACE_LOGGER).handlers
    assert tracer not in logging.getLogger(CUDAGRAPH_LOGGER).handlers


def test_skips_reach_the_timeline_but_not_the_terminal_when_pytorchs_logs_are_quieted():
    """The CLI and the kernels quiet PyTorch's loggers (CRITICAL): Inductor's skip warning would be dropped before
    any handler saw it."""
    torch_log, cudagraphs = logging.getLogger("torch"), logging.getLogger(CUDAGRAPH_LOGGER)
    printed: list = []

    class Terminal(logging.Handler):
        def emit(self, record):
            printed.append(record)

    terminal, before = Terminal(), (torch_log.level, cudagraphs.level, cudagraphs.propagate)
    torch_log.addHandler(terminal)
    torch_log.setLevel(logging.CRITICAL)
    try:
        tracer = CompileTracer().install()
        cudagraphs.warning(CUDAGRAPH_SKIP)
        tracer.remove()
        assert [e.kind for e in tracer.drain()] == ["cudagraph_skip"] and printed == []
        assert (cudagraphs.level, cudagraphs.propagate) == before[1:]  # put back as it was
    finally:
        torch_log.removeHandler(terminal)
        torch_log.setLevel(before[0])


def test_a_compile_event_survives_its_json_line():
    [event] = parse_record({"artifact": {"name": "dynamo_graph_break_reason"}, **ids(0, 0)}, BREAK_PAYLOAD)
    stamped = dataclasses.replace(event, step=3)
    assert from_json(to_json(stamped)) == stamped
    assert set(COMPILE_EVENT_KINDS) >= {"graph", "recompile", "graph_break", "fallback", "cache_hit", "cache_miss",
                                        "cudagraph_skip"}


# -- a real compiled run ----------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def compiled_run(tmp_path_factory):
    """One short aot_eager run with the compile trace recorded: (its events, its result, its trace folder)."""
    torch._dynamo.reset()
    trace_dir = tmp_path_factory.mktemp("trace")
    events: list = []
    config = TrainConfig(epochs=1, max_steps=30, hidden_dim=16, backend="aot_eager")
    result = Trainer(instruments=standard_instruments(trace_dir=trace_dir)).run(config, events.append)
    return events, result, trace_dir


@pytest.mark.slow
def test_a_compiled_run_puts_its_graphs_and_the_eval_recompile_on_the_step_axis(compiled_run):
    events, result, _ = compiled_run
    assert isinstance(result, RunFinished)
    timeline = [e for e in events if isinstance(e, CompileEvent)]
    first = [(e.kind, e.title.split(" graph")[0]) for e in timeline if e.step == 1]
    assert first == [("graph", "forward"), ("graph", "backward")]  # step 1 compiles forward and backward
    last_step = max(e.step for e in events if isinstance(e, Step))
    evals = [e for e in timeline if e.phase == "eval"]
    assert {e.kind for e in evals} == {"graph", "recompile"} and all(e.step == last_step for e in evals)
    recompile = next(e for e in evals if e.kind == "recompile")
    assert "no_grad" in recompile.title
    assert recompile.frames[-1].file.endswith("model.py") and recompile.frames[-1].function == "forward"
    # Each marker comes after the Step it belongs to (the plots have its x by then).
    for event in timeline:
        position = events.index(event)
        assert any(isinstance(e, Step) and e.step == event.step for e in events[:position])
    # The final report's recompiles (Dynamo's metrics) are the timeline's recompiles.
    report = [e for e in events if isinstance(e, CompileReport)][-1]
    assert len(report.recompiles) == len([e for e in timeline if e.kind == "recompile"])


def test_a_recorded_trace_is_written_and_rendered_by_tlparse(compiled_run):
    _, result, trace_dir = compiled_run
    log = trace_dir / compile_trace.TRACE_FILE
    assert log.is_file() and b"compilation_metrics" in log.read_bytes()
    if shutil.which("tlparse") is None and compile_trace._beside_python("tlparse") is None:
        assert result.results.compile_trace.problem == compile_trace.TLPARSE_HINT
        pytest.skip("tlparse is not installed")
    assert result.results.compile_trace.path == str(trace_dir / "html" / "index.html")
    assert not result.results.compile_trace.problem
    assert (trace_dir / "html" / "index.html").read_text().count("<html") == 1


def test_without_tlparse_one_line_says_how_to_get_it(tmp_path, monkeypatch):
    (tmp_path / compile_trace.TRACE_FILE).write_text("V1201 trace line\n")
    monkeypatch.setattr(compile_trace.shutil, "which", lambda name: None)
    monkeypatch.setattr(compile_trace, "_beside_python", lambda name: None)
    assert render_trace(tmp_path) == (None, "install tlparse (pip install tlparse) to render the compile trace as "
                                            "HTML")
    assert render_trace(tmp_path / "none")[1].startswith("no compile trace was recorded")


def test_a_compile_failure_is_a_fallback_marker(monkeypatch):
    from torch._dynamo.exc import TorchDynamoException

    real = engine.steps.train_step

    def step(session, x, y, config, device):
        if session.compiled:
            raise TorchDynamoException("injected compile failure")
        return real(session, x, y, config, device)

    monkeypatch.setattr(engine.steps, "train_step", step)
    events: list = []
    Trainer().run(TrainConfig(epochs=1, max_steps=3, hidden_dim=8, backend="aot_eager", allow_eager_fallback=True),
                  events.append)
    [fallback] = [e for e in events if isinstance(e, CompileEvent) and e.kind == "fallback"]
    assert fallback.step == 1 and "injected compile failure" in fallback.detail


@pytest.mark.slow
@pytest.mark.parametrize("record", [True, False])
def test_the_compile_trace_setting_decides_whether_a_run_records_its_trace(tmp_path, record):
    from workbench.core.kernel.launch import start_run
    from workbench.core.run.run_request import Launch, RunRequest

    torch._dynamo.reset()
    config = TrainConfig(epochs=1, max_steps=3, hidden_dim=8, backend="aot_eager", compile_trace=record)
    result = start_run(RunRequest(config, out_dir=str(tmp_path / "run"), record=False, launch=Launch(where="here")),
                       lambda event: None)
    assert isinstance(result, RunFinished)
    log = tmp_path / "run" / "compile-trace" / compile_trace.TRACE_FILE
    assert log.is_file() == record and (result.results.compile_trace is not None) == record
