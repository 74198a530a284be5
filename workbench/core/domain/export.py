"""Ship a trained model: a `torch.export` program saved as `.pt2`, or ONNX through the Dynamo exporter, each behind
a parity gate.

TorchScript is deprecated in favour of `torch.export`, and an export can silently compute something else (a
specialised shape, a dropped branch), so nothing is called exported until it agrees with the eager model on real
data: the validation split, compared logit by logit (max absolute and relative difference), by top-1 agreement and
by latency per batch, against a stated tolerance. The gate's table is written beside the file (parity.json), and so
is the input contract (contract.json): what a program outside Workbench must feed it. `FORMATS` lists what this
version writes (AOTInductor packages are not written yet). ONNX needs the `export` extra (onnx, onnxscript and
onnxruntime, which runs its parity row).
"""

from __future__ import annotations

import json
import statistics
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

import torch

from ..ground.atomic import atomic_path, write_text_atomic
from ..ground.errors import WorkbenchError, first_line
from .checkpoint import Checkpoint
from .data import load_splits
from .devices import versions
from .model import PIXEL_MEAN, PIXEL_STD

FORMATS = ("pt2", "onnx")
FILES = {"pt2": "model.pt2", "onnx": "model.onnx"}
ONNX_HINT = "ONNX export needs onnx, onnxscript and onnxruntime: pip install 'workbench[export]'"
# fp32 against eager on the CPU: the same kernels reordered by a compiler differ in the last bits, never more.
TOLERANCE = {"atol": 1e-4, "rtol": 1e-4, "top1": 1.0}
PARITY_IMAGES = 1000  # of the validation split
PARITY_BATCH = 250
CONTRACT_FILE, PARITY_FILE = "contract.json", "parity.json"


class ExportError(WorkbenchError):
    kind = "export"


@dataclass(frozen=True)
class ParityRow:
    """One way of running the model, held against eager on the same images."""

    name: str  # "eager", "compiled (inductor)", "exported (.pt2)"
    max_abs: float
    max_rel: float
    top1_agreement: float  # share of images whose predicted class equals eager's
    ms_per_batch: float  # median over the batches
    passed: bool


def export_model(ckpt: Checkpoint, out_dir: str | Path, *, fmt: str = "pt2", compile_backend: str = "inductor",
                 progress: Callable[[str], None] = lambda text: None) -> dict:
    """Export `ckpt` in format `fmt` into `out_dir` with its contract and parity table; returns the table's dict.
    An export that cannot be made raises ExportError naming what failed; one that disagrees is written, marked
    failed, and the table says by how much."""
    if fmt not in FORMATS:
        raise ExportError(f"unknown export format {fmt!r}", f"one of {', '.join(FORMATS)}")
    out = Path(out_dir)
    model = ckpt.build_model()
    images = _parity_images(ckpt)
    progress("exporting with torch.export…")
    started = time.perf_counter()
    program = _exported(model, images[:2])
    path = out / FILES[fmt]
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ExportError(f"cannot write into {out}: {exc.strerror or first_line(exc)}",
                          "choose another folder") from None
    if fmt == "pt2":
        with atomic_path(path) as tmp:
            torch.export.save(program, str(tmp))
        candidates = [("exported (.pt2, reloaded)", lambda: torch.export.load(str(path)).module())]
    else:
        _write_onnx(program, path)
        candidates = [("exported program (in process)", program.module),
                      ("ONNX Runtime (CPU)", lambda: _onnx_runner(path))]
    export_seconds = time.perf_counter() - started
    progress("checking parity on the validation split…")
    reference, eager_ms = _run(model, images)
    rows = [ParityRow("eager", 0.0, 0.0, 1.0, eager_ms, True),
            _compare(f"compiled ({compile_backend})", torch.compile(model, backend=compile_backend), images,
                     reference)]
    rows += [_compare(name, load(), images, reference) for name, load in candidates]
    table = {"format": fmt, "file": str(path), "bytes": path.stat().st_size, "export_seconds": export_seconds,
             "images": len(images), "batch": PARITY_BATCH, "tolerance": TOLERANCE,
             "passed": all(row.passed for row in rows), "rows": [asdict(row) for row in rows],
             "versions": versions()}
    write_text_atomic(out / PARITY_FILE, json.dumps(table, indent=2))
    write_text_atomic(out / CONTRACT_FILE, json.dumps(contract(ckpt), indent=2))
    return table


def _exported(model: torch.nn.Module, example: torch.Tensor) -> torch.export.ExportedProgram:
    """The model traced by torch.export with a dynamic batch; what it cannot trace is an ExportError."""
    try:
        return torch.export.export(model, (example,), dynamic_shapes=({0: torch.export.Dim.DYNAMIC},))
    except Exception as exc:  # noqa: BLE001 - whatever torch.export refuses is the answer
        raise ExportError(f"torch.export could not trace the model: {type(exc).__name__}: {first_line(exc)}",
                          "torch.export.draft_export(model, args) reports every problem at once, with its op "
                          "and source line") from None


def _write_onnx(program: torch.export.ExportedProgram, path: Path) -> None:
    """ONNX through the Dynamo exporter (the default since PyTorch 2.9), from the same exported program."""
    try:
        import onnxscript  # noqa: F401 - the exporter needs it; say so plainly instead of deep in torch.onnx
    except ImportError:
        raise ExportError("ONNX export is not installed", ONNX_HINT) from None
    try:
        onnx_program = torch.onnx.export(program, dynamo=True, input_names=["x"], output_names=["logits"],
                                         verbose=False)
    except Exception as exc:  # noqa: BLE001 - the exporter's refusal, with the op it could not translate
        raise ExportError(f"the ONNX exporter failed: {type(exc).__name__}: {first_line(exc)}",
                          "its report names the op; torch.onnx.export(..., report=True) writes it as Markdown") \
            from None
    with atomic_path(path) as tmp:
        onnx_program.save(str(tmp))


def _onnx_runner(path: Path) -> Callable[[torch.Tensor], torch.Tensor]:
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


def _run(model: Callable[[torch.Tensor], torch.Tensor], images: torch.Tensor) -> tuple[torch.Tensor, float]:
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


def _compare(name: str, model: Callable[[torch.Tensor], torch.Tensor], images: torch.Tensor,
             reference: torch.Tensor) -> ParityRow:
    logits, ms = _run(model, images)
    diff = (logits - reference).abs()
    max_abs = float(diff.max())
    max_rel = float((diff / reference.abs().clamp_min(1e-6)).max())
    top1 = float((logits.argmax(-1) == reference.argmax(-1)).float().mean())
    within = bool(torch.allclose(logits, reference, atol=TOLERANCE["atol"], rtol=TOLERANCE["rtol"]))
    return ParityRow(name, max_abs, max_rel, top1, ms, within and top1 >= TOLERANCE["top1"])


def format_table(table: dict) -> str:
    """The parity table as the CLI prints it."""
    lines = [f"{'':28} {'max |Δ|':>10} {'max rel':>10} {'top-1':>8} {'ms/batch':>9}  verdict"]
    for row in table["rows"]:
        lines.append(f"{row['name']:28} {row['max_abs']:10.2e} {row['max_rel']:10.2e} {row['top1_agreement']:8.2%} "
                     f"{row['ms_per_batch']:9.2f}  {'ok' if row['passed'] else 'FAILED'}")
    tol = table["tolerance"]
    lines.append(f"method: {table['images']} validation images in batches of {table['batch']}, each against eager; "
                 f"passes within atol {tol['atol']:g} and rtol {tol['rtol']:g} with every top-1 the same; latency "
                 f"is the median batch after a warm-up one")
    return "\n".join(lines)
