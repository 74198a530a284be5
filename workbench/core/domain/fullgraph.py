"""Check with fullgraph: does the configured model compile as one graph? If not, the first break that stops it.

`torch._dynamo.explain` lists every break but goes on past each one; `torch.compile(fullgraph=True)` is what a
user who wants one graph runs, and it stops at the first break with that break's own stack. Running it on a
random batch, without training, answers "would fullgraph work?" before a run fails on it — as a FullgraphCheck
that travels to the window.

Like `inspect.explain`, it starts with `torch._dynamo.reset()`, which wipes every compiled cache of the process:
it runs on the thread that owns compilation and never in a process that is training.
"""

from __future__ import annotations

import time
import traceback

import torch
import torch._dynamo

from ..ground.answers import FullgraphCheck
from ..ground.config import TrainConfig
from ..ground.events import Frame
from ..ground.fixit import parse_break
from .compile_explain import example_batch, frame_of, inside_torch
from .model import model_for

_MESSAGE_LINES = 8  # enough for Dynamo's type, explanation and hints; its stack is in "frames"


def check_fullgraph(config: TrainConfig) -> FullgraphCheck:
    """Compile the config's model with fullgraph=True and run one forward without gradients on a random batch of
    the config's shape (no data is loaded). An eager config is checked with aot_eager (Dynamo's tracing and
    AOTAutograd without a compiler: the same breaks, in about a second). A model that cannot be built raises its
    WorkbenchError (a ModelSpecError); one that fails to compile or run is the answer (ok False, with its first
    break's type, message and frames), never an exception."""
    backend = config.backend if config.compiled else "aot_eager"
    model = model_for(config, output_dim=10)  # the graph's structure does not depend on the class count
    example = example_batch(config)
    options = {"mode": config.mode} if backend == "inductor" else {}
    torch._dynamo.reset()
    start = time.perf_counter()
    try:
        compiled = torch.compile(model, backend=backend, fullgraph=True, dynamic=config.dynamic, **options)
        with torch.no_grad():
            compiled(example)
    except Exception as exc:  # the model's first graph break (or failure) is the answer
        return FullgraphCheck(ok=False, backend=backend, seconds=time.perf_counter() - start,
                              type=parse_break(str(exc)).type, message=_message(exc), frames=tuple(_user_frames(exc)))
    finally:
        torch._dynamo.reset()  # nothing compiled for this throw-away model stays in the process
    return FullgraphCheck(ok=True, backend=backend, seconds=time.perf_counter() - start)


def _message(exc: Exception) -> str:
    """The error's first lines, up to Dynamo's debug context or the user stack (reported as frames)."""
    lines = []
    for line in str(exc).strip().splitlines():
        if line.strip().startswith(("Developer debug context", "from user code:")) or len(lines) == _MESSAGE_LINES:
            break
        if line.strip():
            lines.append(line.rstrip())
    return "\n".join(lines) or type(exc).__name__


def _user_frames(exc: Exception) -> list[Frame]:
    """The user's frames, innermost last. Dynamo traces forward without running it as Python, so the frames it
    traced are in the error's `real_stack`; an error without one (raised while running) has them in its
    traceback. Frames inside torch, and this module's own call, are left out."""
    stack = getattr(exc, "real_stack", None) or traceback.extract_tb(exc.__traceback__)
    return [frame_of(fs) for fs in stack if not inside_torch(fs.filename) and fs.filename != __file__]
