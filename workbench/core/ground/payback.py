"""Did compiling pay for itself? Compile seconds against the time a compiled step saves over an eager one.

"Compiled is slower than eager" and "the first epoch is slow" are the most common complaints about
`torch.compile`, and no tool answers the question behind them: with this model, on this device, after how many
steps does the compile time come back? The engine measures both step times side by side in the run's own process
(`PaybackCalibration`); this module is the arithmetic and the words, free of torch so the history,
the report and the window read it too.

Cold and warm launches. A launch that loads an earlier run's compile cache before compiling (a warm start,
instruments.warm_start) pays less compile than one that compiles from scratch; the time a compiled step saves is the
same. So the break-even of either launch is its own compile seconds over the same saving per step, each figure
measured, none estimated: a cold run measures the cold compile, a warm run its warm compile and carries the cold
figure of the run its cache descends from (from the run history). `launch_lines` says both; a figure no run has
measured yet is said to be not measured, with how to measure it.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from .codec import Record

# A compiled step this close to eager (2 %) is within what the paired calibration can resolve on a shared machine:
# its break-even (often millions of steps) is a property of the noise, not of the compile.
MEASURABLE_SPEEDUP = 1.02
METHOD = ("paired calibration after training: {rounds} rounds of {block} compiled steps and {block} eager steps "
          "(torch.compiler.set_stance('force_eager')) on the same batches, alternating which goes first, timed to a "
          "device sync; medians per step; the model, optimizer and random state restored afterwards")


DERIVED = ("speedup", "break_even_step", "verdict")  # in its plain form, beside the measured fields


@dataclass(frozen=True)
class Payback(Record):
    eager_step_s: float  # median eager step, measured beside the compiled one
    compiled_step_s: float
    compile_s: float  # every compile phase of the run (first step, first validation, CUDA-graph recording)
    steps: int  # optimizer steps this run took
    method: str = ""
    # Cold and warm launches (see the module's docstring): whether this run started warm (loaded run warm_from's
    # compile cache), and the other kind of launch's compile seconds where a run measured it (None: not measured;
    # the run that did: cold_run, warm_run). compile_s is this run's own, cold or warm.
    warm_from: int | None = None
    cold_compile_s: float | None = None
    cold_run: int | None = None
    warm_compile_s: float | None = None
    warm_run: int | None = None

    @property
    def speedup(self) -> float:
        """Eager step time over compiled step time: 1.3 means compiled steps are 1.3× as fast."""
        return self.eager_step_s / self.compiled_step_s if self.compiled_step_s > 0 else math.inf

    @property
    def saved_per_step_s(self) -> float:
        return self.eager_step_s - self.compiled_step_s

    @property
    def break_even_step(self) -> int | None:
        """The step at which the compile seconds have come back; None when a compiled step saves nothing."""
        return self._break_even(self.compile_s)

    def _break_even(self, compile_s: float) -> int | None:
        if self.saved_per_step_s <= 0:
            return None
        return max(1, math.ceil(compile_s / self.saved_per_step_s))

    @property
    def paid_off(self) -> bool:
        return self.break_even_step is not None and self.break_even_step <= self.steps

    def verdict(self) -> str:
        """One line: "paid for itself at step 1,240", "pays off after 3,100 steps (this run has 625)", "never: …"."""
        ratio = f"{self.speedup:.2f}× as fast as eager"  # figures.PAYBACK: step times side by side
        even = self.break_even_step
        if even is None:
            return f"never: compiled steps are {ratio} on this device"
        if self.speedup < MEASURABLE_SPEEDUP:
            return f"not measurably faster: compiled steps are {ratio} on this device (break-even after {even:,} steps)"
        if even <= self.steps:
            return f"paid for itself at step {even:,} (compiled steps are {ratio})"
        return f"pays off after {even:,} steps (this run has {self.steps:,}; compiled steps are {ratio})"

    def launch_lines(self) -> tuple[str, str]:
        """What a cold launch and the next (warm) launch pay back: "cold launch: pays off at step 1,240 (compile
        16.3 s, measured in this run)", "next launch (warm): pays off at step 310 (compile 4.1 s, measured in run
        #5)"; a launch no run has measured yet says so, and how to measure it."""
        if self.warm_from is None:  # this run launched cold
            cold, warm = (self.compile_s, None), (self.warm_compile_s, self.warm_run)
        else:
            cold, warm = (self.cold_compile_s, self.cold_run), (self.compile_s, None)
        return (self._launch("cold launch", *cold, "not known: the cold run's compile time was not recorded"),
                self._launch("next launch (warm)", *warm,
                             "not measured yet: the next run with these settings starts warm from this run's "
                             "compile cache and measures it"))

    def _launch(self, name: str, compile_s: float | None, run: int | None, unknown: str) -> str:
        if compile_s is None:
            return f"{name}: {unknown}"
        measured = f"compile {compile_s:.1f} s, measured in {'this run' if run is None else f'run #{run}'}"
        even = self._break_even(compile_s)
        if even is None:
            return f"{name}: never pays off ({measured}; compiled steps are {self.speedup:.2f}× as fast as eager)"
        if self.speedup < MEASURABLE_SPEEDUP:
            return f"{name}: no measurable gain ({measured}; break-even after {even:,} steps)"
        return f"{name}: pays off at step {even:,} ({measured})"

    def with_warm_launch(self, run_id: int, compile_s: float) -> Payback:
        """A cold run's payback with the warm launch a later run measured from its cache
        (history.warm_starts.warm_measurement)."""
        return dataclasses.replace(self, warm_compile_s=compile_s, warm_run=run_id)

    def short(self) -> str:
        """The break-even in a table cell: "1,240 steps", "never (0.73×)", "no gain (1.00×)"."""
        even = self.break_even_step
        if even is None:
            return f"never ({self.speedup:.2f}×)"
        if self.speedup < MEASURABLE_SPEEDUP:
            return f"no gain ({self.speedup:.2f}×)"
        return f"{even:,} steps"

    def to_dict(self) -> dict:
        """Its fields (the launch figures only where known: a cold run's layout is the one every version wrote),
        with the figures derived from them."""
        data = {name: value for name, value in super().to_dict().items() if value is not None}
        return {**data, "speedup": self.speedup, "break_even_step": self.break_even_step, "verdict": self.verdict()}

    @classmethod
    def read(cls, data: object, where: str) -> Payback:
        """The codec's reading of its fields; the derived figures to_dict adds are worked out again, not read."""
        if isinstance(data, dict):
            data = {name: value for name, value in data.items() if name not in DERIVED}
        return super().read(data, where)

