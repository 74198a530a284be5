"""The planted examples do what their docstrings say under torch 2.14, and the fix-it cards and the fullgraph check
name their breaks at the user's source line. Traced with aot_eager: the same Dynamo graphs as inductor, in a
fraction of the time."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from ..helpers import REPO_ROOT
from workbench.core.domain.fullgraph import check_fullgraph
from workbench.core.domain.compile_explain import explain
from workbench.core.domain.model import SandwichNet, model_for
from workbench.core.ground.answers import FullgraphCheck
from workbench.core.ground.config import TrainConfig
from workbench.core.ground.fixit import fixit_cards

EXAMPLES = REPO_ROOT / "resources" / "examples"


@pytest.fixture(autouse=True)
def clean_dynamo():
    import torch._dynamo

    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def example(name: str, cls: str) -> tuple[str, Path]:
    path = EXAMPLES / f"{name}.py"
    return f"{path}:{cls}", path


def line_of(path: Path, text: str) -> int:
    """The 1-based line of `path` whose code starts with `text`, read from the file (never hard-coded)."""
    hits = [i for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
            if line.strip().startswith(text)]
    assert len(hits) == 1, f"expected one line with {text!r} in {path}, found {hits}"
    return hits[0]


def batch(size: int) -> torch.Tensor:
    return torch.randint(0, 256, (size, 1, 28, 28), dtype=torch.uint8, generator=torch.Generator().manual_seed(0))


def explained_cards(spec: str):
    return fixit_cards(explain(TrainConfig(model=spec, backend="aot_eager", hidden_dim=8)).breaks)


def test_planted_break_card_points_at_the_print(planted_break_spec, planted_break_line, capsys):
    [card] = explained_cards(planted_break_spec)
    assert card.type == "Unsupported Tensor.item() call with capture_scalar_outputs=False"
    assert card.category == "item" and not card.inside_pytorch
    assert [(Path(f.file).name, f.line) for f in card.frames] == [("planted_break.py", planted_break_line)]
    assert "mean input" in capsys.readouterr().out  # the rest of forward ran eagerly


def test_planted_branch_breaks_at_its_if():
    spec, path = example("planted_branch", "PlantedBranchNet")
    [card] = explained_cards(spec)
    assert (card.type, card.category) == ("Data-dependent branching", "data_dependent_branch")
    [where] = card.frames
    assert (where.file, where.line) == (str(path), line_of(path, "if (h.abs() > CLIP).any():"))
    assert where.source.startswith("if (h.abs() > CLIP).any():")


def test_planted_library_break_is_inside_torchvision():
    import torch._dynamo
    import torchvision

    spec, path = example("planted_library_break", "PlantedLibraryBreakNet")
    model = model_for(TrainConfig(model=spec, hidden_dim=8), output_dim=10)
    with torch.no_grad():
        reasons = torch._dynamo.explain(model)(batch(8)).break_reasons
    library = Path(torchvision.__file__).parent / "transforms" / "v2" / "_transform.py"
    assert reasons and all(Path(r.user_stack[-1].filename) == library for r in reasons)  # not the model's file
    call = line_of(path, "h = self.augment(")
    assert (str(path), call) in {(fs.filename, fs.lineno) for r in reasons for fs in r.user_stack}

    [card] = explained_cards(spec)
    assert card.type == "Data-dependent branching" and card.count == 2
    assert (str(path), call) in {(f.file, f.line) for f in card.frames}  # the user's line that calls it
    assert not card.inside_pytorch


def test_planted_library_break_gets_the_library_recipe():
    [card] = explained_cards(example("planted_library_break", "PlantedLibraryBreakNet")[0])
    assert card.category == "library_call"


@pytest.mark.slow
def test_planted_recompile_recompiles_where_automatic_dynamic_shapes_would_not():
    from torch._dynamo.utils import clear_compilation_metrics, get_compilation_metrics

    spec, _ = example("planted_recompile", "PlantedRecompileNet")

    def compiles(model: torch.nn.Module) -> list:
        torch._dynamo.reset()
        clear_compilation_metrics()
        compiled = torch.compile(model, backend="aot_eager")
        with torch.no_grad():
            for size in (8, 16, 300):  # 16: the batch dimension becomes dynamic; 300: over CHUNK
                compiled(batch(size))
        return get_compilation_metrics()

    plain = compiles(SandwichNet(hidden_dim=8))
    planted = compiles(model_for(TrainConfig(model=spec, hidden_dim=8), output_dim=10))
    assert len(plain) == 2  # static for 8, dynamic from 16 on: 300 reuses it
    assert len(planted) == 3
    assert "size mismatch at index 0" in planted[1].recompile_reason
    guard = planted[2].recompile_reason
    assert "x.size()[0] <= 256" in guard and "if x.shape[0] > CHUNK:" in guard  # the planted line's guard
    assert explained_cards(spec) == ()  # one traced batch: no graph break to show


def test_planted_cudagraph_skip_writes_into_its_input_inside_the_graph():
    """What makes Inductor skip CUDA graphs ("mutated inputs"), checked without a GPU: the forward graph that a
    compiler receives (with Inductor's keep_inference_input_mutations) copies a result into the batch input,
    and the compiled model changes the caller's tensor exactly as the eager one does."""
    from torch._dynamo.backends.common import aot_autograd
    from torch._functorch.aot_autograd import make_boxed_func

    spec, _ = example("planted_cudagraph_skip", "PlantedCudagraphSkipNet")

    def input_writes(model: torch.nn.Module, x: torch.Tensor) -> list:
        torch._dynamo.reset()
        graphs = []

        def keep(gm, _inputs):
            graphs.append(gm)
            return make_boxed_func(gm.forward)

        backend = aot_autograd(fw_compiler=keep, bw_compiler=keep, keep_inference_input_mutations=True)
        torch.compile(model, backend=backend)(x).sum().backward()
        forward = graphs[0].graph
        return [n.args[0].meta["val"].dtype for n in forward.nodes
                if n.target is torch.ops.aten.copy_.default and n.args[0].op == "placeholder"]

    planted = model_for(TrainConfig(model=spec, hidden_dim=8), output_dim=10)
    compiled, eager = batch(8), batch(8)
    assert input_writes(planted, compiled) == [torch.uint8]
    planted(eager)
    assert not torch.equal(eager, batch(8))  # faint pixels were zeroed in the caller's tensor
    assert torch.equal(compiled, eager)
    assert input_writes(SandwichNet(hidden_dim=8), batch(8)) == []
    assert explained_cards(spec) == ()  # no graph break: on the CPU it compiles and trains normally


@pytest.mark.cuda
def test_planted_cudagraph_skip_skips_cuda_graphs_on_cuda():
    from torch._dynamo.utils import counters

    spec, _ = example("planted_cudagraph_skip", "PlantedCudagraphSkipNet")

    def skips(model: torch.nn.Module) -> int:
        torch._dynamo.reset()
        counters.clear()
        compiled = torch.compile(model.cuda(), backend="inductor", mode="reduce-overhead")
        for _ in range(3):
            compiled(batch(32).cuda()).sum().backward()
        return counters["inductor"]["cudagraph_skips"]

    assert skips(model_for(TrainConfig(model=spec), output_dim=10)) >= 1
    assert skips(SandwichNet()) == 0


def _mutation_line(path: Path) -> int:
    return line_of(path, "x.masked_fill_(")


def test_the_planted_cudagraph_skip_is_explained_from_a_recorded_log_record():
    """No GPU here: the warning Inductor logs for this model on CUDA (its format, from
    torch/_inductor/cudagraph_utils.py, with the node's stack trace) goes through the timeline's tracer."""
    import logging

    from workbench.core.domain.compile_trace import CUDAGRAPH_LOGGER, CompileTracer

    _, path = example("planted_cudagraph_skip", "PlantedCudagraphSkipNet")
    line = _mutation_line(path)
    source = path.read_text(encoding="utf-8").splitlines()[line - 1].strip()
    record = (f"skipping cudagraphs due to mutated inputs (1 instances). Found from : \n"
              f'   File "{path}", line {line}, in forward\n    {source}\n')
    tracer = CompileTracer().install()
    try:
        tracer.step = 2
        logging.getLogger(CUDAGRAPH_LOGGER).warning(record)
        [event] = tracer.drain()
    finally:
        tracer.remove()
    assert event.kind == "cudagraph_skip" and event.step == 2
    assert event.title == "CUDA graphs skipped: an input is changed in place (mutated)"
    assert (event.frames[-1].file, event.frames[-1].line) == (str(path), line)
    assert event.frames[-1].source.startswith("x.masked_fill_(")


@pytest.mark.cuda
def test_a_cuda_run_of_the_planted_skip_puts_the_skip_and_its_line_on_the_timeline():
    from workbench.core.engine import Trainer
    from workbench.core.ground.events import CompileEvent

    spec, path = example("planted_cudagraph_skip", "PlantedCudagraphSkipNet")
    events: list = []
    Trainer().run(TrainConfig(model=spec, device="cuda", backend="inductor", mode="reduce-overhead", epochs=1,
                              max_steps=6), events.append)
    skips = [e for e in events if isinstance(e, CompileEvent) and e.kind == "cudagraph_skip"]
    assert skips, [e for e in events if isinstance(e, CompileEvent)]
    assert "mutated" in skips[0].title
    assert any(f.line == _mutation_line(path) for f in skips[0].frames)


def test_fullgraph_check_passes_for_the_built_in_network():
    result = check_fullgraph(TrainConfig(hidden_dim=8))
    assert isinstance(result, FullgraphCheck)
    assert result.ok is True and result.backend == "aot_eager"
    assert (result.type, result.message, result.frames) == ("", "", ()) and result.seconds > 0  # no break to name


def test_fullgraph_check_names_the_first_break_at_the_users_line(planted_break_spec, planted_break_line, capsys):
    result = check_fullgraph(TrainConfig(model=planted_break_spec, hidden_dim=8))
    assert result.ok is False
    # fullgraph=True traces .item() (it implies capture_scalar_outputs), so the print itself is the break.
    assert result.type == "Failed to trace builtin operator"
    assert result.message.startswith("Failed to trace builtin operator\n")
    assert "Developer debug context" not in result.message and "from user code" not in result.message
    [where] = result.frames
    assert (Path(where.file).name, where.line, where.function) == ("planted_break.py", planted_break_line, "forward")
    assert where.source.startswith("print(")
    assert FullgraphCheck.from_dict(json.loads(json.dumps(result.to_dict()))) == result  # crosses the socket
    assert "mean input" not in capsys.readouterr().out  # stopped at the break: the print never ran


def test_fullgraph_check_of_a_model_that_cannot_be_built(tmp_path):
    from workbench.core.ground.errors import WorkbenchError

    with pytest.raises(WorkbenchError, match="does not exist"):
        check_fullgraph(TrainConfig(model=f"{tmp_path / 'missing.py'}:Net"))
