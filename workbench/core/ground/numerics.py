"""Compare numerics, as plain data: one batch forward and backward, eager against compiled, row by row.

`domain/numerics.py` measures (with torch); this module holds what crosses the process boundary (a
`NumericsReport`, the kernel's answer to `requests.CompareNumerics`) and the words every front end shows for it —
the CLI's table, the window's dialog — so that both say the same. Torch-free.

A row is a layer of the model (its output, and the gradients of its own parameters: the compiled model against the
eager one, everything before it included), an op of a compiled graph (its output, computed from the same inputs on
both sides: what that op does differently), or the loss. Each value is held to a tolerance stated per dtype,
torch.testing's rule: |compiled − eager| ≤ atol + rtol·|eager| for every element — the tolerance of the least
precise dtype it was computed from: a value computed from bf16 values carries their rounding even when it is stored
in fp32. So an op is held to the loosest dtype among its inputs in its graph and itself, a layer's output to the
loosest the forward computed up to it, gradients and the loss (which depend on the whole forward) to the loosest of
all; under AMP, every row to at least the AMP dtype's. With AMP the compiled model is also held against the model
run eagerly in fp32 (`FP32_RULE`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .codec import Record

LAYER, OP, LOSS = "layer", "op", "loss"  # NumericsRow.kind

# dtype → (atol, rtol). fp32 and fp16 are torch.testing's defaults. bf16 keeps torch.testing's rtol (1.6e-2: two
# of its 8 mantissa bits) with a wider atol: torch.testing's 1e-5 is below one bf16 step of any value over 0.003,
# so two correct implementations that round a near-zero sum differently (a matmul and its bias added in another
# order) would fail it; 1e-3 is a quarter step at 0.5.
TOLERANCES: dict[str, tuple[float, float]] = {
    "float64": (1e-7, 1e-7),
    "float32": (1e-5, 1.3e-6),
    "bfloat16": (1e-3, 1.6e-2),
    "float16": (1e-5, 1e-3),
}
TOLERANCE_RULE = ("a value passes when every element is within atol + rtol·|eager| of eager (torch.testing's rule), "
                  "by the least precise dtype it was computed from (fp32: 1e-05 + 1.3e-06, bf16: 1e-03 + 1.6e-02, "
                  "fp16: 1e-05 + 1.0e-03)")
FP32_RULE = ("against fp32: the compiled AMP model may be at most 3× as far from the fp32 model as the eager AMP "
             "model is (largest absolute difference), the multiplier Inductor's own accuracy check "
             "(torch._dynamo.utils.same) allows low precision")
FP32_MULTIPLIER = 3.0


@dataclass(frozen=True)
class NumericTolerance(Record):
    dtype: str  # "float32", "bfloat16", "float16"
    atol: float
    rtol: float

    def text(self) -> str:
        return f"{_short_dtype(self.dtype)}: {self.atol:.0e} + {self.rtol:.1e}·|eager|"


def tolerance_for(dtype: str) -> NumericTolerance:
    """The tolerance of a floating dtype by its name; a dtype without one of its own is held to fp32's."""
    name = dtype if dtype in TOLERANCES else "float32"
    atol, rtol = TOLERANCES[name]
    return NumericTolerance(name, atol, rtol)


def looser(a: NumericTolerance, b: NumericTolerance) -> NumericTolerance:
    """The more forgiving of two tolerances (the lower precision's)."""
    return a if (a.rtol, a.atol) >= (b.rtol, b.atol) else b


@dataclass(frozen=True)
class Difference(Record):
    """One tensor (or a layer's parameter gradients together) compiled against its reference."""

    max_abs: float  # inf where one side is not finite and the other is (or differs)
    max_rel: float  # over the elements whose reference is not 0; inf where a 0 became something else
    beyond: int  # elements beyond the tolerance
    elements: int

    @property
    def exceeded(self) -> bool:
        return self.beyond > 0

    def text(self) -> str:
        """'3.1e-03 (rel 2.0e-01; 37 of 4,096 beyond)', or '0' when the two are identical."""
        if self.max_abs == 0:
            return "0"
        beyond = f"; {self.beyond:,} of {self.elements:,} beyond" if self.beyond else ""
        return f"{_number(self.max_abs)} (rel {_number(self.max_rel)}{beyond})"

    def merged(self, other: "Difference") -> "Difference":
        """Both differences as one (a graph run twice, a layer called twice)."""
        return Difference(max(self.max_abs, other.max_abs), max(self.max_rel, other.max_rel),
                          self.beyond + other.beyond, self.elements + other.elements)


@dataclass(frozen=True)
class Fp32Check(Record):
    """AMP: how far the compiled and the eager AMP models are from the fp32 eager model (largest |Δ|)."""

    compiled: float
    eager: float

    def exceeded(self, atol: float) -> bool:
        """FP32_RULE, with the row's atol as the floor Inductor's check adds (a layer eager gets exactly right)."""
        return self.compiled > FP32_MULTIPLIER * self.eager + atol

    def text(self) -> str:
        return f"compiled {_number(self.compiled)}, eager {_number(self.eager)}"


@dataclass(frozen=True)
class NumericsRow(Record):
    kind: str  # LAYER, OP or LOSS
    name: str  # a layer's path in the model ("core_block.fc1"; the model's class name for itself), an op's name
    # ("linear", "exp"), "loss"
    module: str  # a layer's path ("" for the model itself); the layer an op ran in ("" when at the top)
    dtype: str  # the compiled value's dtype
    tolerance: NumericTolerance
    output: Difference | None  # None: the compiled model never produced it (e.g. a layer it skipped)
    gradient: Difference | None = None  # a layer's own parameters' gradients (None: it has none)
    gradient_tolerance: NumericTolerance | None = None  # the gradient's, when it has one (see NumericsReport)
    fp32_output: Fp32Check | None = None  # AMP: both models against the fp32 eager model
    fp32_gradient: Fp32Check | None = None
    graph: int = 0  # an op's compiled graph, from 1; 0 for layers and the loss
    file: str = ""  # the user's source line that ran it ("" when unknown)
    line: int = 0
    code: str = ""

    @property
    def output_exceeded(self) -> bool:
        return self.output is not None and self.output.exceeded

    @property
    def gradient_exceeded(self) -> bool:
        return self.gradient is not None and self.gradient.exceeded

    @property
    def fp32_exceeded(self) -> bool:
        """AMP: further from the fp32 model than FP32_RULE allows (output or gradient)."""
        checks = ((self.fp32_output, self.tolerance), (self.fp32_gradient, self.gradient_tolerance or self.tolerance))
        return any(check is not None and check.exceeded(tolerance.atol) for check, tolerance in checks)

    def tolerance_text(self) -> str:
        """'fp32: 1e-05 + 1.3e-06·|eager|', and the gradient's after it when that is another."""
        text = self.tolerance.text()
        if self.gradient_tolerance is not None and self.gradient_tolerance != self.tolerance:
            text += f"; gradient {self.gradient_tolerance.text()}"
        return text

    @property
    def exceeded(self) -> bool:
        return self.output_exceeded or self.gradient_exceeded or self.fp32_exceeded

    @property
    def source(self) -> str:
        """'model.py:47', or '' when unknown."""
        return f"{Path(self.file).name}:{self.line}" if self.file else ""

    @property
    def label(self) -> str:
        """'exp in core_block' for an op, the path for a layer, 'loss'."""
        where = f" in {self.module}" if self.kind == OP and self.module else ""
        graph = f" (graph {self.graph})" if self.kind == OP and self.graph else ""
        return f"{self.name}{where}{graph}"

    @property
    def verdict(self) -> str:
        if self.output is None:
            return "not compared"
        if not self.exceeded:
            return "pass"
        parts = [what for what, hit in (("output", self.output_exceeded), ("gradient", self.gradient_exceeded),
                                        ("vs fp32", self.fp32_exceeded)) if hit]
        return "exceeds: " + ", ".join(parts)


@dataclass(frozen=True)
class NumericsReport(Record):
    """One batch forward and backward, eager and compiled from the same weights, compared row by row in the order
    the forward ran them (layers, then each compiled graph's ops, then the loss)."""

    model: str
    backend: str
    mode: str
    amp: str
    device: str
    batch: int
    rows: tuple[NumericsRow, ...]
    graphs: int  # compiled graphs the forward ran
    seconds: float
    torch_version: str
    notes: tuple[str, ...] = ()  # what was left out, and why

    @property
    def first_exceeding(self) -> int | None:
        """The index of the row where the drift starts: the first row (in forward order) whose output exceeds; if
        no output does, the last row whose gradient does (backward runs the layers in reverse, so that is where
        the gradients' drift starts); None when every row passes."""
        for i, row in enumerate(self.rows):
            if row.output_exceeded or row.fp32_exceeded:
                return i
        for i in reversed(range(len(self.rows))):
            if self.rows[i].gradient_exceeded:
                return i
        return None

    @property
    def passed(self) -> bool:
        return self.first_exceeding is None

    @property
    def setup(self) -> str:
        """'inductor · default · bf16 on cpu'."""
        mode = f" · {self.mode}" if self.backend == "inductor" else ""
        return f"{self.backend}{mode} · {self.amp if self.amp != 'off' else 'fp32'} on {self.device}"

    def verdict(self) -> str:
        """One line: whether the compiled model matches, and where it first does not."""
        compared = sum(row.output is not None for row in self.rows)
        first = self.first_exceeding
        if first is None:
            return (f"PASS: compiled matches eager within tolerance on all {compared} rows "
                    f"({self.setup}, batch of {self.batch})")
        row = self.rows[first]
        exceeding = sum(r.exceeded for r in self.rows)
        where = f" at {row.source}" if row.source else ""
        why = ("it computes differently from eager on the same inputs" if row.kind == OP else
               "no op differs from eager on its own inputs beyond tolerance: rounding differences add up"
               if any(r.kind == OP for r in self.rows) else "")
        return (f"EXCEEDS: {exceeding} of {len(self.rows)} rows beyond tolerance; the drift starts at "
                f"{row.kind} {row.label}{where} ({row.verdict.removeprefix('exceeds: ')}; {self.setup})"
                + (f": {why}" if why else ""))


# -- text -------------------------------------------------------------------------------------------------------
def table_headers(report: NumericsReport) -> tuple[str, ...]:
    """The table's columns; with AMP, two more: both models' distance from the fp32 model."""
    fp32 = ("output vs fp32", "gradient vs fp32") if report.amp != "off" else ()
    return ("layer / op", "source", "output |Δ|", "gradient |Δ|", *fp32, "tolerance", "verdict")


def table_cells(report: NumericsReport, row: NumericsRow) -> tuple[str, ...]:
    """One row's cells, as `table_headers` names them."""
    fp32 = (_fp32(row.fp32_output), _fp32(row.fp32_gradient)) if report.amp != "off" else ()
    return (f"{row.kind} {row.label}", row.source, _difference(row.output), _difference(row.gradient), *fp32,
            row.tolerance_text(), row.verdict)


def headline(report: NumericsReport) -> str:
    return (f"{report.model} · {report.setup} · one batch of {report.batch} · {report.graphs} compiled graph(s) · "
            f"{report.seconds:.1f} s · torch {report.torch_version}")


def rule_lines(report: NumericsReport) -> list[str]:
    """How the rows are judged, in words (below the table)."""
    lines = [TOLERANCE_RULE]
    if report.amp != "off":
        lines.append(FP32_RULE)
    return lines + [f"note: {note}" for note in report.notes]


def first_exceeding_line(report: NumericsReport) -> str:
    """'first exceeding: /path/model.py:28: h = …', or '' when every row passes (or its line is unknown)."""
    first = report.first_exceeding
    row = report.rows[first] if first is not None else None
    return f"first exceeding: {row.file}:{row.line}: {row.code}" if row is not None and row.file else ""


def format_numerics(report: NumericsReport, marker: str = "▶") -> str:
    """The table of `workbench numerics`: its first exceeding row marked with `marker`, the verdict line last."""
    first = report.first_exceeding
    cells = [("", *table_headers(report)),
             *((marker if i == first else "", *table_cells(report, row)) for i, row in enumerate(report.rows))]
    widths = [max(len(row[i]) for row in cells) for i in range(len(cells[0]))]
    lines = [f"numerics: {headline(report)}"]
    lines += ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in cells]
    lines += rule_lines(report)
    lines += [line for line in (first_exceeding_line(report),) if line]
    lines.append(report.verdict())
    return "\n".join(lines)


def _difference(difference: Difference | None) -> str:
    return difference.text() if difference is not None else "—"


def _fp32(check: Fp32Check | None) -> str:
    return check.text() if check is not None else "—"


def _number(value: float) -> str:
    return "inf" if value == float("inf") else f"{value:.1e}"


def _short_dtype(dtype: str) -> str:
    return {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16", "float64": "fp64"}.get(dtype, dtype)
