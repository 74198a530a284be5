"""One definition per figure the app shows, and how it was measured, in words: the headline, the Runs table, the
status bar and `runs show` name a figure the same way and explain it on hover with the same text.

Figures that sound alike but measure different things get different names: a run's steady samples/s (its own
training speed), the payback's "compiled vs eager" (two step times measured side by side in one process, after the
run) and the report's "samples/s vs the first run" (two runs' own figures, measured at different times)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable


@dataclass(frozen=True)
class Figure:
    name: str  # as a caption or column header
    method: str  # how it is measured: the hover text


SAMPLES_PER_S = Figure(
    "samples/s", "Steady training speed: samples trained in steady steps divided by their wall time. Left out: the "
                 "compiling first step, CUDA warm-up and graph-recording steps, profiled steps and validation. While "
                 "a run trains, the same figure so far; at its end, the run's own.")
BEST_VAL_ACCURACY = Figure("best val accuracy", "The highest accuracy on the validation split at the end of an "
                                                "epoch, over the run's epochs.")
FINAL_VAL_ACCURACY = Figure("final val accuracy", "The accuracy on the validation split at the end of the last "
                                                  "epoch: the checkpoint's, which Predict and exports use.")
COMPILE = Figure("compile", "Seconds spent compiling: the first step (forward and backward graphs), the first "
                            "validation (the eval graph) and, with CUDA graphs, the recording steps.")
PEAK_MEMORY = Figure("peak memory", "The most memory the run held: the CUDA allocator's peak on a GPU, the training "
                                    "process's resident memory on the CPU.")
ETA = Figure("ETA", "Time left: the steps left times the mean steady step so far.")
PAYBACK = Figure("compiled vs eager", "Eager step time over compiled step time, measured side by side in the run's "
                                      "process after it trained (alternating rounds on the same batches): how much "
                                      "faster a compiled step is, not counting the compile.")
RUN_SPEEDUP = Figure("samples/s vs the first run", "This run's steady samples/s over the first run's in the "
                                                   "comparison: each run's own figure, measured at its own time.")


def steady_rate(block_rates: Iterable[float]) -> float | None:
    """A run's steady samples/s from its steady Step events' `samples_per_s` (one per step, each its read-back
    block's rate): steps over the sum of 1/rate, which is exactly the engine's steady samples over steady seconds
    (a block of n steps at rate r took n·batch/r seconds). None without a steady step."""
    steps, inverse = 0, 0.0
    for rate in block_rates:
        if rate > 0:
            steps += 1
            inverse += 1.0 / rate
    return steps / inverse if steps else None
