"""Ship a trained model: a `torch.export` program saved as `.pt2`, ONNX through the Dynamo exporter, or an
AOTInductor package (the program compiled ahead of time for this CPU), each behind a parity gate.

TorchScript is deprecated in favour of `torch.export`, and an export can silently compute something else (a
specialised shape, a dropped branch), so nothing is called exported until it agrees with the eager model on real
data: the validation split, compared logit by logit (max absolute and relative difference), by top-1 agreement and
by latency per batch, against a stated tolerance. The gate's table is written beside the file (parity.json), and so
is the input contract (contract.json): what a program outside Workbench must feed it. A row that fails says where
it drifted: which output logit, and for the torch.export program the first layer whose output differs from eager's.
ONNX needs the `export` extra (onnx, onnxscript and onnxruntime, which runs its parity row); AOTInductor needs only
the C++ compiler torch.compile already uses.
"""

from __future__ import annotations

import json
import statistics
import time
from dataclasses import replace
from pathlib import Path
from typing import Callable

import torch

from ..ground.answers import ParityRow, ParityTable, Tolerance
from ..ground.atomic import atomic_path, write_text_atomic
from ..ground.errors import WorkbenchError, first_line
from ..ground.export_formats import EXPORT_FORMATS
from .checkpoint import Checkpoint
from .data import load_splits
from .devices import versions
from .model import PIXEL_MEAN, PIXEL_STD

Runner = Callable[[torch.Tensor], torch.Tensor]
ONNX_HINT = "ONNX export needs onnx, onnxscript and onnxruntime: pip install 'workbench[export]'"
# fp32 against eager on the CPU: the same kernels reordered by a compiler differ in the last bits, never more.
TOLERANCE = {"atol": 1e-4, "rtol": 1e-4, "top1": 1.0}
PARITY_IMAGES = 1000  # of the validation split
PARITY_BATCH = 250
CONTRACT_FILE, PARITY_FILE = "contract.json", "parity.json"


class ExportError(WorkbenchError):
    kind = "export"


def export_model(ckpt: Checkpoint, out_dir: str | Path, *, fmt: str = "pt2", compile_backend: str = "inductor",
                 progress: Callable[[str], None] = lambda text: None) -> ParityTable:
    """Export `ckpt` in format `fmt` into `out_dir` with its contract and parity table; returns the table.
    An export that cannot be made raises ExportError naming what failed; one that disagrees is written, marked
    failed, and its rows say where it drifted."""
    if fmt not in EXPORT_FORMATS:
        raise ExportError(f"unknown export format {fmt!r}", f"one of {', '.join(EXPORT_FORMATS)}")
    out = Path(out_dir)
    model = ckpt.build_model()
    images = _parity_images(ckpt)
    progress("exporting with torch.export…")
    started = time.perf_counter()
    program = _exported(model, images[:2])
    path = out / EXPORT_FORMATS[fmt].file
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ExportError(f"cannot write into {out}: {exc.strerror or first_line(exc)}",
                          "choose another folder") from None
    candidates = _WRITERS[fmt](program, path, progress)
    export_seconds = time.perf_counter() - started
    progress("checking parity on the validation split…")
    reference, eager_ms = _run(model, images)
    rows = [ParityRow("eager", 0.0, 0.0, 1.0, eager_ms, True),
            _compare(f"compiled ({compile_backend})", torch.compile(model, backend=compile_backend), images,
                     reference, ckpt.classes)]
    for name, load, program_of in candidates:
        row = _compare(name, load(), images, reference, ckpt.classes)
        if not row.passed:
            row = replace(row, drift=f"{row.drift}; {_drifting_layer(model, program_of(), images[:PARITY_BATCH])}")
        rows.append(row)
    table = ParityTable(format=fmt, file=str(path), bytes=path.stat().st_size, export_seconds=export_seconds,
                        images=len(images), batch=PARITY_BATCH, tolerance=Tolerance(**TOLERANCE),
                        passed=all(row.passed for row in rows), rows=tuple(rows), versions=versions())
    write_text_atomic(out / PARITY_FILE, json.dumps(table.to_dict(), indent=2))
    write_text_atomic(out / CONTRACT_FILE, json.dumps(contract(ckpt), indent=2))
    return table


# A writer saves the program in its format and names the ways of running what it wrote: (row name, a loader of the
# runner, the torch.export program that runner came from, whose layers locate a drift).
Candidates = list[tuple[str, Callable[[], Runner], Callable[[], torch.export.ExportedProgram]]]


def _write_pt2(program: torch.export.ExportedProgram, path: Path, progress: Callable[[str], None]) -> Candidates:
    with atomic_path(path) as tmp:
        torch.export.save(program, str(tmp))
    return [("exported (.pt2, reloaded)", lambda: torch.export.load(str(path)).module(),
             lambda: torch.export.load(str(path)))]


def _write_onnx(program: torch.export.ExportedProgram, path: Path, progress: Callable[[str], None]) -> Candidates:
    """ONNX through the Dynamo exporter (the default since PyTorch 2.9), from the same exported program."""
    try:
        import onnxscript  # noqa: F401 - the exporter needs it; say so plainly instead of deep in torch.onnx
    except ImportError:
        raise ExportError("ONNX export is not installed", ONNX_HINT) from None
    progress("translating to ONNX…")
    try:
        onnx_program = torch.onnx.export(program, dynamo=True, input_names=["x"], output_names=["logits"],
                                         verbose=False)
    except Exception as exc:  # noqa: BLE001 - the exporter's refusal, with the op it could not translate
        raise ExportError(f"the ONNX exporter failed: {type(exc).__name__}: {first_line(exc)}",
                          "its report names the op; torch.onnx.export(..., report=True) writes it as Markdown") \
            from None
    with atomic_path(path) as tmp:
        onnx_program.save(str(tmp))
    return [("exported program (in process)", program.module, lambda: program),
            ("ONNX Runtime (CPU)", lambda: _onnx_runner(path), lambda: program)]


def _write_aoti(program: torch.export.ExportedProgram, path: Path, progress: Callable[[str], None]) -> Candidates:
    """The program compiled ahead of time by Inductor into a package a C++ or Python process loads without
    tracing or compiling again (torch._inductor.aoti_load_package)."""
    progress("compiling ahead of time with AOTInductor (C++; about half a minute)…")
    try:
        with atomic_path(path) as tmp, open(tmp, "wb") as fh:
            torch._inductor.aoti_compile_and_package(program, package_path=fh)
    except Exception as exc:  # noqa: BLE001 - a compiler or lowering failure, said with its first line
        raise ExportError(f"AOTInductor could not compile the program: {type(exc).__name__}: {first_line(exc)}",
                          "it needs the C++ compiler torch.compile uses (g++); TORCH_LOGS=output_code shows the "
                          "generated code") from None
    return [("exported program (in process)", program.module, lambda: program),
            ("AOTInductor (.pt2, reloaded)", lambda: torch._inductor.aoti_load_package(str(path)), lambda: program)]


_WRITERS = {"pt2": _write_pt2, "onnx": _write_onnx, "aoti": _write_aoti}


def _exported(model: torch.nn.Module, example: torch.Tensor) -> torch.export.ExportedProgram:
    """The model traced by torch.export with a dynamic batch; what it cannot trace is an ExportError."""
    try:
        return torch.export.export(model, (example,), dynamic_shapes=({0: torch.export.Dim.DYNAMIC},))
    except Exception as exc:  # noqa: BLE001 - whatever torch.export refuses is the answer
        raise ExportError(f"torch.export could not trace the model: {type(exc).__name__}: {first_line(exc)}",
                          "torch.export.draft_export(model, args) reports every problem at once, with its op "
                          "and source line") from None


def _onnx_runner(path: Path) -> Runner:
    try:
        import onnxruntime
    except ImportError:
        raise ExportError("ONNX Runtime is not installed: the ONNX file cannot be checked", ONNX_HINT) from None
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return lambda batch: torch.from_numpy(session.run(None, {"x": batch.numpy()})[0])


def contract(ckpt: Checkpoint) -> dict:
    """What a program outside Workbench must feed the exported model, and what it gets back."""
    return {"input": {"name": "x", "dtype": "uint8", "shape": ["batch", 1, 28, 28], "range": [0, 255],
                      "preprocessing": "grayscale 28×28 images, one channel, the dataset's own polarity (MNIST: a "
                                       "white digit on black); no scaling: the model divides by 255 and normalises "
                                       f"with mean {PIXEL_MEAN} and std {PIXEL_STD} itself"},
            "output": {"dtype": "float32", "shape": ["batch", len(ckpt.classes)],
                       "meaning": "logits: softmax gives the probabilities, argmax the class",
                       "classes": list(ckpt.classes)},
            "batch": "any size from 1 (a dynamic dimension)"}


def _parity_images(ckpt: Checkpoint) -> torch.Tensor:
    """The first PARITY_IMAGES of the checkpoint's validation split, as the contract's (N, 1, 28, 28) uint8."""
    try:
        _, val = load_splits(ckpt.config.dataset, ckpt.config.data_root)
    except WorkbenchError as exc:
        raise ExportError(f"the parity check needs the run's validation data: {exc}", exc.hint) from None
    return val.images[:PARITY_IMAGES].unsqueeze(1).contiguous()


def _batches(images: torch.Tensor) -> list[torch.Tensor]:
    return list(images.split(PARITY_BATCH))


def _run(model: Runner, images: torch.Tensor) -> tuple[torch.Tensor, float]:
    """The logits for every image and the median milliseconds a batch took (a warm-up batch first)."""
    batches = _batches(images)
    with torch.inference_mode():
        model(batches[0])  # first-call costs (a compile) stay out of the latency
        outputs, times = [], []
        for batch in batches:
            started = time.perf_counter()
            outputs.append(model(batch).float())
            times.append((time.perf_counter() - started) * 1000)
    return torch.cat(outputs), statistics.median(times)


def _compare(name: str, model: Runner, images: torch.Tensor, reference: torch.Tensor,
             classes: tuple[str, ...] | list[str]) -> ParityRow:
    logits, ms = _run(model, images)
    diff = (logits - reference).abs()
    max_abs = float(diff.max())
    max_rel = float((diff / reference.abs().clamp_min(1e-6)).max())
    top1 = float((logits.argmax(-1) == reference.argmax(-1)).float().mean())
    passed = _within(logits, reference) and top1 >= TOLERANCE["top1"]
    return ParityRow(name, max_abs, max_rel, top1, ms, passed, "" if passed else _drifting_output(diff, classes))


def _within(tensor: torch.Tensor, reference: torch.Tensor) -> bool:
    return bool(torch.allclose(tensor, reference, atol=TOLERANCE["atol"], rtol=TOLERANCE["rtol"]))


def _drifting_output(diff: torch.Tensor, classes: tuple[str, ...] | list[str]) -> str:
    """Which output logit drifted most, and on how many images anything drifted beyond the tolerance."""
    worst = int(diff.max(0).values.argmax())
    beyond = int((diff > TOLERANCE["atol"]).any(-1).sum())
    return (f"output logit {worst} (class {classes[worst]!r}) drifts most, by {float(diff[:, worst].max()):.2e}; "
            f"{beyond} of {len(diff)} images differ by more than {TOLERANCE['atol']:g}")


def _drifting_layer(model: torch.nn.Module, program: torch.export.ExportedProgram, batch: torch.Tensor) -> str:
    """The first of the model's layers, in the order they finish, whose output in the exported program differs
    from eager's beyond the tolerance: the unflattened program keeps the model's module names, so the same forward
    hooks read both."""
    expected = _layer_outputs(model, batch)
    got = _layer_outputs(torch.export.unflatten(program), batch)
    for name, output in expected.items():
        if name in got and not _within(got[name], output):
            return (f"the first layer that drifts in the exported program is {name} "
                    f"({type(model.get_submodule(name)).__name__}), by {float((got[name] - output).abs().max()):.2e}")
    return "every layer of the exported program agrees with eager: the drift is in how this runtime computes it"


def _layer_outputs(module: torch.nn.Module, batch: torch.Tensor) -> dict[str, torch.Tensor]:
    """Each named submodule's tensor output for `batch`, in the order the submodules finished."""
    outputs: dict[str, torch.Tensor] = {}

    def keep(name: str):
        def hook(_module, _args, output):
            if isinstance(output, torch.Tensor):
                outputs.setdefault(name, output.detach().float())
        return hook

    handles = [sub.register_forward_hook(keep(name)) for name, sub in module.named_modules() if name]
    try:
        with torch.inference_mode():
            module(batch)
    finally:
        for handle in handles:
            handle.remove()
    return outputs
