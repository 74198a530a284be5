"""Export behind a parity gate: the .pt2 program agrees with eager on the validation split, says what it expects,
runs without Workbench, and an export that disagrees or cannot be made says so."""

from __future__ import annotations

import copy
import json
import subprocess
import sys

import pytest
import torch

from workbench.core.domain import checkpoint
from workbench.core.domain import export
from workbench.core.domain.export import TOLERANCE, ExportError, _compare, _run, export_model
from workbench.core.ground.answers import ParityTable, Tolerance



def fresh_interpreter(script: str) -> dict:
    """What `script` prints last (JSON), run by `python -I`: no site folder of ours, nothing imported beforehand."""
    done = subprocess.run([sys.executable, "-I", "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def assert_torch_alone_predicts_as_eager(load: str, trained, tmp_path) -> None:
    """The model `load` (a Python expression) gives, in a fresh interpreter with only torch, predicts as eager does
    on a batch of 7 (the batch is dynamic)."""
    images = torch.randint(0, 256, (7, 1, 28, 28), dtype=torch.uint8)
    torch.save(images, tmp_path / "images.pt")
    script = ("import json, sys, torch\n"
              f"model = {load}\n"
              f"images = torch.load({str(tmp_path / 'images.pt')!r}, weights_only=True)\n"
              "print(json.dumps({'classes': model(images).argmax(-1).tolist(),\n"
              "                  'workbench': any(m.startswith('workbench') for m in sys.modules)}))\n")
    answer = fresh_interpreter(script)
    assert not answer["workbench"]
    assert answer["classes"] == trained.build_model()(images).argmax(-1).tolist()


@pytest.fixture(scope="module")
def trained(trained_run):
    return checkpoint.load(trained_run.checkpoint)


@pytest.fixture(scope="module")
def exported(trained, tmp_path_factory):
    out = tmp_path_factory.mktemp("export")
    return out, export_model(trained, out, compile_backend="aot_eager")


def test_the_export_agrees_with_eager_and_writes_its_contract_and_table(exported, trained):
    out, table = exported
    assert isinstance(table, ParityTable) and table.tolerance == Tolerance(**TOLERANCE)
    assert table.passed and table.images == 1000
    rows = {row.name: row for row in table.rows}
    assert set(rows) == {"eager", "compiled (aot_eager)", "exported (.pt2, reloaded)"}
    for row in rows.values():
        assert row.passed and row.top1_agreement == 1.0 and row.max_abs <= TOLERANCE["atol"]
        assert row.ms_per_batch > 0
    parity = json.loads((out / "parity.json").read_text())
    assert parity == json.loads(json.dumps(table.to_dict()))
    assert ParityTable.from_dict(parity) == table  # the file reads back as the very table
    contract = json.loads((out / "contract.json").read_text())
    assert contract["input"]["dtype"] == "uint8" and contract["input"]["shape"] == ["batch", 1, 28, 28]
    assert contract["output"]["classes"] == list(trained.classes)
    assert table.bytes == (out / "model.pt2").stat().st_size > 0


@pytest.mark.slow
def test_the_pt2_runs_in_a_fresh_interpreter_with_only_torch(exported, trained, tmp_path):
    out, _ = exported
    assert_torch_alone_predicts_as_eager(f"torch.export.load({str(out / 'model.pt2')!r}).module()", trained, tmp_path)


def test_a_drifting_program_fails_the_gate_and_says_by_how_much(trained):
    model = trained.build_model()
    images = torch.randint(0, 256, (300, 1, 28, 28), dtype=torch.uint8, generator=torch.Generator().manual_seed(0))
    reference, _ = _run(model, images)
    shift = torch.zeros(len(trained.classes))
    shift[3] = 1e-2
    row = _compare("drifted", lambda batch: model(batch) + shift, images, reference, trained.classes)
    # On noise, a logit 3 within 0.01 of the top one flips: what agrees is counted, not assumed
    agreeing = ((reference + shift).argmax(-1) == reference.argmax(-1)).float().mean().item()
    assert not row.passed and row.max_abs == pytest.approx(1e-2, rel=1e-3)
    assert row.top1_agreement == pytest.approx(agreeing)
    assert row.drift.startswith(f"output logit 3 (class {trained.classes[3]!r}) drifts most, by 1.00e-02")
    assert row.drift.endswith("300 of 300 images differ by more than 0.0001")


def test_an_export_whose_program_drifts_is_written_failed_and_names_the_layer(trained, tmp_path, monkeypatch):
    traced = export._exported

    def drifting(model, example):  # a program whose last Linear computes something else than eager's
        program = traced(copy.deepcopy(model), example)  # (torch.export shares the model's parameters)
        with torch.no_grad():
            program.state_dict["core_block.fc2.bias"].add_(0.5)
        return program

    monkeypatch.setattr(export, "_exported", drifting)
    table = export_model(trained, tmp_path, compile_backend="aot_eager")
    rows = {row.name: row for row in table.rows}
    assert not table.passed and (tmp_path / "model.pt2").is_file()
    assert rows["compiled (aot_eager)"].passed and not rows["exported (.pt2, reloaded)"].passed
    drift = rows["exported (.pt2, reloaded)"].drift
    assert "1000 of 1000 images differ" in drift
    assert "the first layer that drifts in the exported program is core_block.fc2 (Linear), by 5.00e-01" in drift
    assert json.loads((tmp_path / "parity.json").read_text())["passed"] is False


def test_a_model_torch_export_cannot_trace_names_the_failure_and_draft_export(trained, tmp_path, monkeypatch):
    def refuse(*args, **kwargs):
        raise RuntimeError("Could not guard on data-dependent expression u0 > 0")

    monkeypatch.setattr(torch.export, "export", refuse)
    with pytest.raises(ExportError) as info:
        export_model(trained, tmp_path)
    assert "data-dependent expression" in str(info.value) and "draft_export" in info.value.hint
    assert not (tmp_path / "model.pt2").exists()


# -- ONNX -------------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def exported_onnx(trained, tmp_path_factory):
    pytest.importorskip("onnxruntime")
    out = tmp_path_factory.mktemp("onnx")
    return out, export_model(trained, out, fmt="onnx", compile_backend="aot_eager")


@pytest.mark.slow
def test_the_onnx_export_agrees_in_onnx_runtime(exported_onnx):
    out, table = exported_onnx
    rows = {row.name: row for row in table.rows}
    assert table.passed and table.file == str(out / "model.onnx")
    assert set(rows) == {"eager", "compiled (aot_eager)", "exported program (in process)", "ONNX Runtime (CPU)"}
    assert rows["ONNX Runtime (CPU)"].top1_agreement == 1.0 and rows["ONNX Runtime (CPU)"].max_abs < 1e-4


def test_the_onnx_file_runs_in_a_fresh_interpreter_with_only_onnxruntime_and_numpy(exported_onnx, trained, tmp_path):
    import numpy as np

    out, _ = exported_onnx
    images = torch.randint(0, 256, (5, 1, 28, 28), dtype=torch.uint8)
    np.save(tmp_path / "images.npy", images.numpy())
    script = ("import json, sys, numpy, onnxruntime\n"
              f"session = onnxruntime.InferenceSession({str(out / 'model.onnx')!r}, "
              "providers=['CPUExecutionProvider'])\n"
              f"logits = session.run(None, {{'x': numpy.load({str(tmp_path / 'images.npy')!r})}})[0]\n"
              "print(json.dumps({'classes': logits.argmax(-1).tolist(),\n"
              "                  'torch': 'torch' in sys.modules, 'workbench': 'workbench' in sys.modules}))\n")
    answer = fresh_interpreter(script)
    assert not answer["torch"] and not answer["workbench"]
    assert answer["classes"] == trained.build_model()(images).argmax(-1).tolist()


# -- AOTInductor ------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def exported_aoti(trained, tmp_path_factory):
    out = tmp_path_factory.mktemp("aoti")
    return out, export_model(trained, out, fmt="aoti", compile_backend="aot_eager")


@pytest.mark.slow
def test_the_aoti_package_agrees_and_runs_in_a_fresh_interpreter_with_only_torch(exported_aoti, trained, tmp_path):
    out, table = exported_aoti
    rows = {row.name: row for row in table.rows}
    assert table.passed and table.file == str(out / "model-aoti.pt2")
    assert set(rows) == {"eager", "compiled (aot_eager)", "exported program (in process)",
                         "AOTInductor (.pt2, reloaded)"}
    assert rows["AOTInductor (.pt2, reloaded)"].top1_agreement == 1.0
    assert_torch_alone_predicts_as_eager(f"torch._inductor.aoti_load_package({table.file!r})", trained, tmp_path)


def test_an_aoti_compile_failure_is_an_export_error_that_names_the_compiler(trained, tmp_path, monkeypatch):
    def fail(*args, **kwargs):
        raise RuntimeError("C++ compile error: g++: command not found")

    monkeypatch.setattr(torch._inductor, "aoti_compile_and_package", fail)
    with pytest.raises(ExportError, match="AOTInductor could not compile the program: RuntimeError: C") as info:
        export_model(trained, tmp_path, fmt="aoti")
    assert "g++" in info.value.hint and not (tmp_path / "model-aoti.pt2").exists()
    assert not list(tmp_path.glob(".model-aoti*"))  # no temp file left behind


def test_an_unknown_format_is_refused(trained, tmp_path):
    with pytest.raises(ExportError, match="unknown export format 'tflite'"):
        export_model(trained, tmp_path, fmt="tflite")


def test_without_the_export_extra_onnx_says_how_to_get_it(trained, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "onnxscript", None)  # as if not installed: its import fails
    with pytest.raises(ExportError, match="ONNX export is not installed") as info:
        export_model(trained, tmp_path, fmt="onnx")
    assert "pip install 'workbench[export]'" in info.value.hint


def test_a_row_that_passed_on_atol_alone_says_so():
    """'max rel 5.63e-03 … ok' under rtol 1e-4 reads like a mistake: the verdict says it passed within atol."""
    from workbench.core.ground.answers import ParityRow, Tolerance, row_verdict

    tolerance = Tolerance(atol=1e-3, rtol=1e-4, top1=1.0)
    small_logits = ParityRow("exported (.pt2)", max_abs=2e-4, max_rel=5.63e-3, top1_agreement=1.0,
                             ms_per_batch=1.0, passed=True)
    assert row_verdict(small_logits, tolerance) == "ok (within atol)"
    assert row_verdict(ParityRow("eager", 0.0, 0.0, 1.0, 1.0, True), tolerance) == "ok"
    assert row_verdict(ParityRow("onnx", 1.0, 1.0, 0.5, 1.0, False), tolerance) == "FAILED"
