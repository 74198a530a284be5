"""Compare numerics: eager against compiled on one batch, per layer and per op (domain/numerics.py), its report
(ground/numerics.py), the kernel job and `workbench numerics`.

Two Inductor compiles for the whole module (the planted drift is Inductor's own: aot_eager runs the ops one by one,
as eager does), shared by module fixtures; everything else compiles with aot_eager."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch

from ..helpers import REPO_ROOT, assert_one_error_line, call
from workbench.core.domain.numerics import NumericsError, compare_numerics, in_forward_order
from workbench.core.domain.numerics_ops import difference_of
from workbench.core.ground.config import TrainConfig
from workbench.core.ground.numerics import (LAYER, LOSS, OP, Difference, Fp32Check, NumericsReport, NumericsRow,
                                            format_numerics, tolerance_for)
from workbench.core.ground.job_requests import CompareNumerics
from workbench.core.kernel import job_handlers
from workbench.core.run.protocol import SERVICE_OF_REQUEST

PLANTED_DRIFT = REPO_ROOT / "resources" / "examples" / "planted_drift.py"
DRIFT_SPEC = f"{PLANTED_DRIFT}:PlantedDriftNet"
SMALL = dict(hidden_dim=32, batch_size=32)
BUILT_IN_LAYERS = ["input_adapter", "core_block.fc1", "core_block.dropout", "core_block.fc2", "core_block",
                   "SandwichNet"]

slow = pytest.mark.slow  # a compile


def planted_line() -> int:
    """The line of the planted ELU, read from the file (never hard-coded)."""
    lines = PLANTED_DRIFT.read_text(encoding="utf-8").splitlines()
    [line] = [i for i, text in enumerate(lines, 1) if text.strip().startswith("h = torch.where(")]
    return line


@pytest.fixture(scope="module")
def planted_report() -> NumericsReport:
    return compare_numerics(TrainConfig(model=DRIFT_SPEC, backend="inductor", **SMALL))


@pytest.fixture(scope="module")
def built_in_report() -> NumericsReport:
    return compare_numerics(TrainConfig(backend="inductor", **SMALL))


# -- what the comparison finds ----------------------------------------------------------------------------------
@slow
def test_the_planted_drift_exceeds_first_at_its_subtraction(planted_report):
    assert not planted_report.passed
    first = planted_report.rows[planted_report.first_exceeding]
    assert (first.kind, first.name, first.graph) == (OP, "sub", 1)
    assert (Path(first.file).name, first.line) == ("planted_drift.py", planted_line())
    assert "torch.exp(h) - 1" in first.code
    assert first.output.exceeded and first.output.max_abs > 10 * first.tolerance.atol  # well beyond, not by a hair
    assert first.tolerance == tolerance_for("bfloat16")  # the bf16 activations are held to bf16's tolerance
    before = planted_report.rows[:planted_report.first_exceeding]
    assert any(row.kind == OP for row in before) and not any(row.output_exceeded for row in before)
    assert f"planted_drift.py:{planted_line()}" in planted_report.verdict()
    assert planted_report.verdict().startswith("EXCEEDS")


@slow
def test_the_ops_after_the_drift_do_not_inherit_it_the_layers_do(planted_report):
    rows = planted_report.rows
    after = rows[planted_report.first_exceeding + 1:]
    assert not any(row.exceeded for row in after if row.kind == OP)  # each op is compared on the same inputs
    layers = {row.name: row for row in rows if row.kind == LAYER}
    assert layers["core_block.dropout"].output_exceeded  # the layer the ELU's output goes through next
    assert not layers["core_block.fc1"].output_exceeded  # before the drift
    assert layers["core_block.fc1"].gradient_tolerance == tolerance_for("bfloat16")  # backward ran through bf16
    assert "it computes differently from eager on the same inputs" in planted_report.verdict()


@slow
def test_the_built_in_network_in_fp32_passes_with_inductor(built_in_report):
    report = built_in_report
    assert report.passed, format_numerics(report)
    layers = [row.name for row in report.rows if row.kind == LAYER]
    assert layers == BUILT_IN_LAYERS
    ops = [row.name for row in report.rows if row.kind == OP]
    assert ops.count("linear") == 2 and "relu" in ops and "dropout" in ops  # the comparison ran per op
    assert all(row.output is not None for row in report.rows)
    gradients = {row.name for row in report.rows if row.gradient is not None}
    assert gradients == {"core_block.fc1", "core_block.fc2"}
    fc1 = next(row for row in report.rows if row.name == "core_block.fc1")
    assert (Path(fc1.file).name, fc1.code) == ("model.py", "return self.fc2(self.dropout(F.relu(self.fc1(x))))")
    assert report.rows[-1].kind == LOSS and report.graphs == 1
    assert report.verdict().startswith("PASS")


@slow
def test_the_planted_drift_is_inductors_own_aot_eager_matches_eager():
    report = compare_numerics(TrainConfig(model=DRIFT_SPEC, backend="aot_eager", **SMALL))
    assert report.passed
    assert {row.name for row in report.rows if row.kind == OP} >= {"exp", "sub", "where"}


@slow
def test_amp_is_also_held_against_fp32():
    report = compare_numerics(TrainConfig(backend="aot_eager", amp="bf16", **SMALL))
    assert report.passed
    fc1 = next(row for row in report.rows if row.name == "core_block.fc1")
    assert fc1.tolerance == tolerance_for("bfloat16")
    assert fc1.fp32_output.eager > 0 and fc1.fp32_output.compiled == fc1.fp32_output.eager  # bf16 is not fp32
    assert fc1.fp32_gradient is not None
    assert "vs fp32" in " ".join(format_numerics(report).splitlines()[1:2])  # the extra columns


@slow
def test_graph_breaks_give_ops_of_each_graph_and_a_note(planted_break_spec, capsys):
    report = compare_numerics(TrainConfig(model=planted_break_spec, backend="aot_eager", **SMALL))
    assert report.passed and report.graphs == 2
    assert {row.graph for row in report.rows if row.kind == OP} == {1, 2}
    assert any("2 compiled graphs" in note for note in report.notes)


@slow
def test_a_model_that_does_not_compile_is_one_clear_error(planted_break_spec, capsys):
    with pytest.raises(NumericsError, match=r"could not compile PlantedBreakNet with aot_eager: Unsupported") as err:
        compare_numerics(TrainConfig(model=planted_break_spec, backend="aot_eager", fullgraph=True, **SMALL))
    assert "workbench explain" in err.value.hint


@slow
def test_a_model_that_fails_eagerly_says_so(tmp_path):
    model = tmp_path / "broken.py"
    model.write_text("from workbench.core.domain.model import SandwichNet\n\n"
                     "class Broken(SandwichNet):\n    def forward(self, x):\n"
                     "        raise ValueError('no forward today')\n")
    with pytest.raises(NumericsError, match="Broken fails when run eagerly: ValueError: no forward today"):
        compare_numerics(TrainConfig(model=f"{model}:Broken", backend="aot_eager", **SMALL))


# -- the kernel job, the wire and the CLI ------------------------------------------------------------------------
@slow
def test_the_report_crosses_the_wire_unchanged(planted_report):
    service = SERVICE_OF_REQUEST[CompareNumerics]
    wire = json.loads(json.dumps(service.encode(planted_report)))  # what the kernel sends (infinities included)
    assert service.decode(wire) == planted_report
    assert any(math.isinf(row.output.max_rel) for row in planted_report.rows if row.output)
    assert NumericsReport.from_dict(planted_report.to_dict()) == planted_report
    assert job_handlers.HANDLERS[CompareNumerics] is job_handlers.numerics


@slow
def test_cli_prints_the_table_and_the_verdict_and_writes_json(capsys, tmp_path):
    out = tmp_path / "numerics.json"
    code, stdout, stderr = call(capsys, "numerics", "--backend", "aot_eager", "--hidden-dim", "16", "--json", out)
    assert code == 0, stderr
    lines = stdout.splitlines()
    assert lines[0].startswith("numerics: sandwich · aot_eager · fp32 on cpu")
    assert "layer / op" in lines[1] and "tolerance" in lines[1]
    assert any(line.lstrip().startswith("layer core_block.fc1") for line in lines)
    assert lines[-2].startswith("PASS: compiled matches eager") and lines[-1] == f"wrote {out}"
    assert NumericsReport.from_dict(json.loads(out.read_text()))


@slow
def test_cli_marks_the_first_exceeding_row_and_exits_3(capsys, monkeypatch, planted_report):
    asked = []
    monkeypatch.setattr(job_handlers, "numerics", lambda request: asked.append(request.config) or planted_report)
    code, stdout, _ = call(capsys, "numerics", "--model", DRIFT_SPEC)
    assert code == 3
    assert asked[0].backend == "inductor" and asked[0].model == DRIFT_SPEC  # comparing means compiling
    [marked] = [line for line in stdout.splitlines() if line.startswith("▶")]
    assert "op sub (graph 1)" in marked and f"planted_drift.py:{planted_line()}" in marked
    assert f"first exceeding: {PLANTED_DRIFT}:{planted_line()}:" in stdout
    assert stdout.splitlines()[-1].startswith("EXCEEDS:")


@slow
def test_cli_compile_failure_is_one_error_line(capsys, planted_break_spec):
    code, _, stderr = call(capsys, "numerics", "--backend", "aot_eager", "--model", planted_break_spec,
                           "--fullgraph", "--hidden-dim", "8")
    assert code == 2
    assert "could not compile PlantedBreakNet" in assert_one_error_line(stderr)


# -- the measurements, one by one ------------------------------------------------------------------------------
FP32 = tolerance_for("float32")


def test_difference_of_counts_elements_beyond_atol_plus_rtol():
    reference = torch.tensor([1.0, 0.0, -2.0, 100.0], dtype=torch.float64)
    # 2e-5 > 1e-5 at 0; 1e-4 ≤ 1e-5 + 1.3e-4 at 100
    value = reference + torch.tensor([0.0, 2e-5, 0.0, 1e-4], dtype=torch.float64)
    difference = difference_of(value, reference, FP32)
    assert difference.beyond == 1 and difference.elements == 4
    assert difference.max_abs == pytest.approx(1e-4, rel=1e-3) and difference.max_rel == math.inf  # 0 → 2e-5
    assert difference_of(reference, reference, FP32) == Difference(0.0, 0.0, 0, 4)


def test_difference_of_non_finite_values_and_shapes():
    nan, inf = float("nan"), float("inf")
    same = difference_of(torch.tensor([nan, inf, 1.0]), torch.tensor([nan, inf, 1.0]), FP32)
    assert same.max_abs == 0 and not same.exceeded
    worse = difference_of(torch.tensor([nan, 1.0]), torch.tensor([1.0, 1.0]), FP32)
    assert worse.max_abs == inf and worse.beyond == 1
    assert difference_of(torch.zeros(2), torch.zeros(3), FP32).exceeded


def row(kind: str, name: str, module: str = "", *, output: float = 0.0, gradient: float | None = None,
        tolerance=FP32) -> NumericsRow:
    def difference(value: float) -> Difference:
        return Difference(value, value, int(value > tolerance.atol), 10)

    return NumericsRow(kind=kind, name=name, module=module, dtype=tolerance.dtype, tolerance=tolerance,
                       output=difference(output), gradient=None if gradient is None else difference(gradient))


def test_ops_go_before_the_layer_that_ran_them():
    ops = [row(OP, "x", "a"), row(OP, "y", "b.c"), row(OP, "relu", "b"), row(OP, "z", "b.d"), row(OP, "top", "")]
    order = [item if isinstance(item, str) else item.name
             for item in in_forward_order(["a", "b.c", "b.d", "b", ""], ops)]
    assert order == ["x", "a", "y", "b.c", "relu", "z", "b.d", "b", "top", ""]


def test_the_drift_starts_at_the_first_output_else_the_last_gradient():
    def report(*rows) -> NumericsReport:
        return NumericsReport(model="m", backend="inductor", mode="default", amp="off", device="cpu", batch=4,
                              rows=rows, graphs=1, seconds=1.0, torch_version="2.14")

    outputs = report(row(LAYER, "a"), row(OP, "b", output=1.0), row(LAYER, "c", output=1.0, gradient=1.0))
    assert outputs.first_exceeding == 1
    assert outputs.verdict().endswith("it computes differently from eager on the same inputs")
    added_up = report(row(OP, "a"), row(LAYER, "b", output=1.0))
    assert added_up.first_exceeding == 1 and added_up.verdict().endswith("rounding differences add up")
    gradients = report(row(LAYER, "a", gradient=1.0), row(LAYER, "b", gradient=1.0), row(LAYER, "c", gradient=0.0))
    assert gradients.first_exceeding == 1  # backward runs b before a: b's gradients drift first
    assert report(row(LAYER, "a"), row(LOSS, "loss")).passed


def test_against_fp32_compiled_may_be_three_times_as_far_as_eager():
    assert not Fp32Check(compiled=3e-3, eager=1e-3).exceeded(atol=1e-5)
    assert Fp32Check(compiled=4e-3, eager=1e-3).exceeded(atol=1e-5)
    assert not Fp32Check(compiled=5e-6, eager=0.0).exceeded(atol=1e-5)  # the floor: eager exactly right
