"""Did compiling pay for itself? Compile seconds against the time a compiled step saves over an eager one.

"Compiled is slower than eager" and "the first epoch is slow" are the most common complaints about
`torch.compile`, and no tool answers the question behind them: with this model, on this device, after how many
steps does the compile time come back? The engine measures both step times side by side in the run's own process
(see `engine.payback.PaybackCalibration`); this module is the arithmetic and the words, free of torch so the history,
the report and the window read it too.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

# A compiled step this close to eager (2 %) is within what the paired calibration can resolve on a shared machine:
# its break-even (often millions of steps) is a property of the noise, not of the compile.
MEASURABLE_SPEEDUP = 1.02
METHOD = ("paired calibration after training: {rounds} rounds of {block} compiled steps and {block} eager steps "
          "(torch.compiler.set_stance('force_eager')) on the same batches, alternating which goes first, timed to a "
          "device sync; medians per step; the model, optimizer and random state restored afterwards")


@dataclass(frozen=True)
class Payback:
    eager_step_s: float  # median eager step, measured beside the compiled one
    compiled_step_s: float
    compile_s: float  # every compile phase of the run (first step, first validation, CUDA-graph recording)
    steps: int  # optimizer steps this run took
    method: str = ""

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
        if self.saved_per_step_s <= 0:
            return None
        return max(1, math.ceil(self.compile_s / self.saved_per_step_s))

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

    def short(self) -> str:
        """The break-even in a table cell: "1,240 steps", "never (0.73×)", "no gain (1.00×)"."""
        even = self.break_even_step
        if even is None:
            return f"never ({self.speedup:.2f}×)"
        if self.speedup < MEASURABLE_SPEEDUP:
            return f"no gain ({self.speedup:.2f}×)"
        return f"{even:,} steps"

    def to_dict(self) -> dict:
        return {**asdict(self), "speedup": self.speedup, "break_even_step": self.break_even_step,
                "verdict": self.verdict()}

    @classmethod
    def from_dict(cls, data: object) -> Payback | None:
        """A recorded payback (run metrics); None for anything that is not one (older runs have none)."""
        if not isinstance(data, dict):
            return None
        try:
            values = {name: data[name] for name in ("eager_step_s", "compiled_step_s", "compile_s", "steps")}
            if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values.values()):
                return None
            return cls(eager_step_s=float(values["eager_step_s"]), compiled_step_s=float(values["compiled_step_s"]),
                       compile_s=float(values["compile_s"]), steps=int(values["steps"]),
                       method=str(data.get("method", "")))
        except KeyError:
            return None

