"""Which of a run's first steps stay off the steady figures, and why (compiling, recording CUDA graphs, warming up,
profiled): the loop reads each kind back in blocks of its own, and only steady steps count toward throughput."""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass

import torch

from ..ground.config import TrainConfig, uses_cuda_graphs
from ..ground.events import Notice

# CUDA's first steps load kernels (lazily, on first use), create the cuBLAS handle and grow the caching allocator;
# the optimizer's state appears at step 1. A fixed count rather than "the first read-back block": on CUDA a block
# spans FLUSH_SECONDS, hundreds of steps of a small network, whose average would still carry step 1's cost.
CUDA_WARMUP_STEPS = 5
# CUDA graph trees (mode "reduce-overhead"/"max-autotune", backend "cudagraphs") run each graph once eagerly in the
# graph pool (step 1, with the compile), record it on its second call (step 2) and replay it from the third.
CUDAGRAPH_RECORDING_STEPS = 1
# CUDA graph trees assert when compiled and replayed from a thread Python created (pytorch/pytorch#123177);
# fixed by pytorch/pytorch#184357, first released in torch 2.13.0 (2.12.1 still asserts).
CUDAGRAPH_THREADS_FIXED = (2, 13)


@dataclass(frozen=True)
class WarmupPlan:
    """Which of a run's first steps stay off the steady figures, and why. Each kind is read back in blocks of its
    own (never mixed with steady steps: on CUDA a block's steps share its average time)."""

    warmup_steps: int = 0  # steps 1…warmup_steps are warm-up (step 1 is "compiling" instead when it compiles)
    recording_steps: int = 0  # steps 2…1+recording_steps record CUDA graphs (while the model is compiled)
    profile: tuple[int, int] | None = None  # steps first…last run under torch.profiler (domain.profiler)
    start: int = 0  # steps trained before this run (a continued run): its own first step is start + 1
    # The run's own step that compiles: its first, or its second when the first runs eagerly (eager_first_call:
    # set_stance("eager_then_compile"); the first is then a warm-up step).
    compile_step: int = 1

    def kind(self, step: int, compiled: bool) -> str:
        """'compiling', 'recording', 'warmup', 'profiling' or 'steady' for 1-based `step` of a (still) compiled
        model or not."""
        own = step - self.start  # compiling and warming up happen in this run's first steps
        if own == self.compile_step and compiled:
            return "compiling"
        if compiled and self.compile_step < own <= self.compile_step + self.recording_steps:
            return "recording"
        if own <= self.warmup_steps:
            return "warmup"
        if self.profile is not None and self.profile[0] <= step <= self.profile[1]:
            return "profiling"
        return "steady"

    def first_steady(self, compiled: bool) -> int:
        """The first step that is neither compiling, recording nor warm-up."""
        return self.start + max(self.warmup_steps, self.compile_step + self.recording_steps if compiled else 0) + 1


def warmup_plan(config: TrainConfig, device_type: str, start: int = 0) -> WarmupPlan:
    """On the CPU no step but a compiling first one is special; on CUDA the first CUDA_WARMUP_STEPS are warm-up,
    among them, under CUDA graphs, the recording steps. `start`: steps a continued run's checkpoint had. With
    `eager_first_call` the first step runs eagerly (a warm-up step) and the second compiles."""
    compile_step = 2 if config.compiled and config.eager_first_call else 1
    if device_type != "cuda":
        return WarmupPlan(warmup_steps=compile_step - 1, start=start, compile_step=compile_step)
    recording = CUDAGRAPH_RECORDING_STEPS if config.compiled and uses_cuda_graphs(config.to_dict()) else 0
    return WarmupPlan(warmup_steps=max(CUDA_WARMUP_STEPS, compile_step + recording), recording_steps=recording,
                      start=start, compile_step=compile_step)


def cudagraph_thread_notice(config: TrainConfig) -> Notice | None:
    """A warning for a CUDA-graph run trained on a thread other than the main one (an in-process run: the app's
    kernel trains on its main thread) with a torch that asserts there (pytorch/pytorch#123177)."""
    if not (config.compiled and uses_cuda_graphs(config.to_dict())):
        return None
    if threading.current_thread() is threading.main_thread():
        return None
    found = re.match(r"(\d+)\.(\d+)", str(torch.__version__))
    if found is None or (int(found[1]), int(found[2])) >= CUDAGRAPH_THREADS_FIXED:
        return None
    fixed = ".".join(map(str, CUDAGRAPH_THREADS_FIXED))
    return Notice("warning", f"CUDA graphs ({config.backend}"
                             f"{' · ' + config.mode if config.backend == 'inductor' else ''}) on a worker thread: "
                             f"torch {torch.__version__} may fail with an AssertionError in cudagraph_trees "
                             f"(pytorch/pytorch#123177, fixed in torch {fixed})",
                  f"upgrade to torch ≥ {fixed}, train in a run process (the app's default), or choose a mode "
                  f"without CUDA graphs (default, max-autotune-no-cudagraphs)")
