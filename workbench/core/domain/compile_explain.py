"""What the compiler did: graphs, graph breaks (with the user's source lines), ops, recompiles, compile time.

`torch.compile` falls back to eager at a graph break without a word, so these figures are the only way a user
learns that half of the model never reached the backend. Two sources feed one `CompileReport`:
- `explain_model` runs `torch._dynamo.explain`, which traces the model once and keeps each break's reason and
  user stack. It starts with `torch._dynamo.reset()` (every compiled cache is wiped), so it runs on the thread that
  owns compilation, before a run starts, never during one.
- `RunCompileLog` reads Dynamo's compilation metrics after a run: recompiles and the guard failures behind them.
"""

from __future__ import annotations

import linecache
import os
import time
from typing import Any

import torch

from ..ground.config import TrainConfig
from ..ground.errors import WorkbenchError, first_line
from ..ground.events import CompileReport, Frame, GraphBreak

_TORCH_DIR = os.path.dirname(torch.__file__)


def explain_model(model: torch.nn.Module, example: torch.Tensor, config: TrainConfig) -> CompileReport:
    """Trace `model(example)` with Dynamo and report every graph and break. Wipes Dynamo's caches first."""
    import torch._dynamo

    start = time.perf_counter()
    with torch.no_grad():
        output = torch._dynamo.explain(model)(example)
    seconds = time.perf_counter() - start
    breaks = tuple(_graph_break(reason) for reason in output.break_reasons)
    return CompileReport(
        compiled=output.graph_count > 0,
        backend=config.backend,
        mode=config.mode,
        graph_count=output.graph_count,
        graph_break_count=output.graph_break_count,
        breaks=_unique(breaks),
        op_count=output.op_count,
        compile_seconds=seconds,
        source="explain",
    )


class ExplainError(WorkbenchError):
    kind = "compile"


def explain(config: TrainConfig) -> CompileReport:
    """Explain the network a config describes, on a random batch of the config's shape (no data is loaded).
    Explain is about compiling: an eager config is explained as inductor would see it."""
    from .model import model_for

    if not config.compiled:
        config = config.replace(backend="inductor")
    model = model_for(config, output_dim=10)  # the graph's structure does not depend on the class count
    example = example_batch(config)
    try:
        return explain_model(model, example, config)
    except Exception as exc:  # the user's forward() failed while being traced: that is the answer to report
        raise ExplainError(f"could not trace {type(model).__name__}: {type(exc).__name__}: {first_line(exc)}",
                           "run the model eagerly first (backend eager) to see the error in full") from None


def example_batch(config: TrainConfig) -> torch.Tensor:
    """A random batch of the config's shape, as the data would give it (uint8 28×28 images): no data is loaded."""
    return torch.randint(0, 256, (config.batch_size, 1, 28, 28), dtype=torch.uint8,
                         generator=torch.Generator().manual_seed(0))


def _graph_break(reason: Any) -> GraphBreak:
    frames = tuple(frame_of(fs) for fs in (reason.user_stack or ()) if not inside_torch(fs.filename))
    return GraphBreak(reason=_short_reason(reason.reason), frames=frames)


def frame_of(fs: Any) -> Frame:
    """A traceback FrameSummary as an event Frame, its source line read from the file when the summary has none."""
    source = (fs.line or linecache.getline(fs.filename, fs.lineno) or "").strip()
    return Frame(file=fs.filename, line=int(fs.lineno or 0), function=fs.name, source=source)


def inside_torch(filename: str) -> bool:
    """In torch's own package (not torchvision's, whose folder starts with the same letters)."""
    return filename.startswith(_TORCH_DIR + os.sep)


def _short_reason(text: str) -> str:
    """Dynamo's reason text without its 'Developer debug context' (Dynamo's internals). The type (first line),
    explanation, hints — "Please report an issue to PyTorch" included: it marks a break inside PyTorch — and the
    link to the break type's page stay: the fix-it cards are made of them."""
    return "\n".join(line.strip() for line in str(text).strip().splitlines()
                     if line.strip() and not line.strip().startswith("Developer debug context"))


def _unique(breaks: tuple[GraphBreak, ...]) -> tuple[GraphBreak, ...]:
    seen, out = set(), []
    for b in breaks:
        key = (b.reason.splitlines()[0] if b.reason else "", b.where)
        if key not in seen:
            seen.add(key)
            out.append(b)
    return tuple(out)


class RunCompileLog:
    """Dynamo's per-frame compilation metrics for one run, read on the thread that compiled."""

    def __init__(self) -> None:
        from torch._dynamo.utils import clear_compilation_metrics, counters

        clear_compilation_metrics()
        counters.clear()

    def recompiles(self) -> tuple[str, ...]:
        from torch._dynamo.utils import get_compilation_metrics

        reasons = []
        for metric in get_compilation_metrics():
            reason = getattr(metric, "recompile_reason", None)
            if reason:
                expected = " (expected: validation runs without gradients)" if "grad_mode" in reason else ""
                reasons.append(f"{metric.co_name}: {reason.strip()}{expected}")
        return tuple(reasons)

    def break_reasons(self) -> dict[str, int]:
        from torch._dynamo.utils import counters

        return {_short_reason(k): v for k, v in counters["graph_break"].items()}

    def cudagraph_skips(self) -> int:
        from torch._dynamo.utils import counters

        return int(counters["inductor"].get("cudagraph_skips", 0))

    def graph_count(self) -> int:
        from torch._dynamo.utils import counters

        return int(counters["stats"].get("unique_graphs", 0))
