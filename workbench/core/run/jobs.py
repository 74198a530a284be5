"""What a kernel does for each job (see protocol.JOBS): plain data in, plain data out, torch in between.

The CLI calls the same functions in its own process (`workbench evaluate`, `predict`, `explain`), so a job's
answer is the same wherever it runs. Images travel as base64 of the 28×28 uint8 pixels the window decoded.
"""

from __future__ import annotations

import base64
import binascii
import functools
import os
import threading
from pathlib import Path
from typing import Callable

import numpy as np
import torch

from ..domain import checkpoint, devices, distributed
from ..domain.inspect import explain as explain_config
from ..domain.predict import predict_pixels
from ..ground.capabilities import Capabilities, DeviceInfo
from ..ground.config import TrainConfig
from ..ground.errors import WorkbenchError
from ..ground.events import RunFailed, RunFinished, to_dict, to_json
from .protocol import JobError
from .recorder import run_recorded
from .request import RunRequest

PIXELS = 28 * 28


def quiet_torch_logs() -> None:
    """PyTorch's compiler logs warnings and stack dumps to stderr; Workbench reports the same findings as
    events (graph breaks, failures), so keep the terminal readable. TORCH_LOGS=… still turns them back on."""
    if not os.environ.get("TORCH_LOGS"):
        import logging

        import torch._logging

        torch._logging.set_logs(all=logging.CRITICAL)


# -- train ------------------------------------------------------------------------------------------------------
def train(request: RunRequest, send_line: Callable[[str], None] | None,
          stop: threading.Event) -> RunFinished | RunFailed:
    """A run in this kernel (rank 0 streams its events as JSON lines; other ranks only train)."""
    config = request.config
    try:
        cuda = devices.uses_cuda(config.device)
        dist = distributed.from_environment(cuda)
        if dist.active and cuda:  # one GPU per rank, whatever single device the config named
            request = request.replace(config=config.replace(device=f"cuda:{dist.local_rank}"))
        return run_recorded(request, line_sinks=(send_line,) if send_line else (), stop=stop, distributed=dist,
                            capture_prints=True)
    except WorkbenchError as exc:  # e.g. an output folder that cannot be written: nothing was trained
        result = RunFailed(kind=exc.kind, message=str(exc), hint=exc.hint)
        if send_line is not None:
            send_line(to_json(result))
        return result


def shutdown_distributed() -> None:
    distributed.shutdown()


# -- short jobs -------------------------------------------------------------------------------------------------
def capabilities() -> dict:
    """Devices with names, memory and compute capability, and which backends work here (and why not). Reading
    the device properties initialises CUDA in this kernel, never in the window."""
    gpus = []
    for i in range(devices.cuda_device_count()):
        props = torch.cuda.get_device_properties(i)
        gpus.append(DeviceInfo(f"cuda:{i}", props.name, props.total_memory / devices.MIB,
                               f"{props.major}.{props.minor}"))
    cpu = DeviceInfo("cpu", devices.device_name(torch.device("cpu")))
    problems = {kind: devices.backend_availability(torch.device(kind)) for kind in ("cpu", "cuda")}
    return Capabilities(known=True, torch_version=str(torch.__version__), cuda_version=torch.version.cuda,
                        devices=(*gpus, cpu), backend_problems=problems).to_dict()


def explain(config: dict) -> dict:
    """torch._dynamo.explain on the configured model (it resets Dynamo: never in a process that trains)."""
    return to_dict(explain_config(TrainConfig.from_dict(config)))


def load_checkpoint(path: str, trust_model_code: bool = False) -> dict:
    """What a checkpoint holds, loaded safely (weights_only); a user-defined network's file is imported only
    with the caller's consent — without it the answer is an `untrusted_code` error naming the file."""
    ckpt = _checkpoint(path, trust_model_code)
    return {"path": str(Path(path).resolve()), "config": ckpt.config.to_dict(), "metrics": _plain(ckpt.metrics),
            "classes": list(ckpt.classes), "versions": ckpt.versions}


def predict(checkpoint_path: str, images: list[str], trust_model_code: bool = False) -> dict:
    """Class probabilities of each image: base64 of 784 uint8 pixels (what the window decoded)."""
    model, classes = _model(checkpoint_path, trust_model_code)
    probabilities = []
    for text in images:
        try:
            raw = base64.b64decode(text, validate=True)
        except (binascii.Error, TypeError):
            raise JobError("input", "an image is not base64 of its 28×28 pixels") from None
        if len(raw) != PIXELS:
            raise JobError("input", f"an image has {len(raw)} pixels, not {PIXELS} (28×28)")
        pixels = np.frombuffer(raw, dtype=np.uint8).reshape(28, 28).copy()  # writable: torch warns otherwise
        probabilities.append(list(predict_pixels(model, pixels)))
    return {"probabilities": probabilities, "classes": list(classes)}


def evaluate(checkpoint_path: str, dataset: str | None = None, data_root: str | None = None,
             split: str | None = None, device: str = "auto", trust_model_code: bool = False) -> dict:
    """Accuracy, loss and confusion matrix of a checkpoint on a split (`workbench evaluate`)."""
    from ..domain.evaluation_view import evaluate_checkpoint

    ckpt = _checkpoint(checkpoint_path, trust_model_code)
    name, split_name, data, result = evaluate_checkpoint(ckpt, dataset, data_root, split, device)
    return {"dataset": name, "split": split_name, "images": len(data), "accuracy": result.accuracy,
            "loss": result.loss, "confusion": result.confusion().tolist(), "classes": list(ckpt.classes)}


def evaluate_view(checkpoint_path: str, trust_model_code: bool = False, dataset: str | None = None,
                  data_root: str | None = None, split: str | None = None) -> dict:
    """The Evaluate view's data: scores, the confusion matrix, per-sample answers and the split's pixels, so that
    every click in the window is answered without another call. On the CPU: no GPU memory taken from a run."""
    from ..domain.evaluation_view import evaluate_checkpoint, view_answer

    ckpt = _checkpoint(checkpoint_path, trust_model_code)
    name, split_name, data, result = evaluate_checkpoint(ckpt, dataset, data_root, split, "cpu")
    return {"checkpoint": str(Path(checkpoint_path).resolve()), "dataset": name, "split": split_name,
            **view_answer(result, data, ckpt.classes)}


def export_checkpoint(source: str, target: str, trust_model_code: bool = False) -> str:
    """Write a checkpoint elsewhere through the same atomic save (and its .safetensors twin)."""
    return str(checkpoint.export(_checkpoint(source, trust_model_code), target))


def export_model(source: str, out: str, fmt: str = "pt2", compile_backend: str = "inductor",
                 trust_model_code: bool = False) -> dict:
    """Export a checkpoint (.pt2 or ONNX) behind its parity gate: the gate's table (domain.export)."""
    from ..domain.export import export_model as export

    return export(_checkpoint(source, trust_model_code), out, fmt=fmt, compile_backend=compile_backend)


def report(run_ids: list[int], out: str, db: str | None = None, trust_model_code: bool = False) -> list[str]:
    """A self-contained HTML report of the runs and its JSON twin (each checkpoint is evaluated here; a run's own
    model file is imported only with `trust_model_code`)."""
    from ..history.runs import RunStore
    from .reports import write_report

    with RunStore(db, recover=False) as store:
        written = write_report(store, [int(i) for i in run_ids], Path(out), trust_model_code=bool(trust_model_code))
        return [str(p) for p in written]


def dataset_preview(dataset: str, data_root: str | None = None) -> dict:
    """The Dataset preview's data (samples per class, class counts, image format, problems), before training."""
    from ..domain.preview import dataset_preview as build

    return build(dataset, data_root)


def check_fullgraph(config: dict) -> dict:
    """A fix-it card's Check with fullgraph: does the configured model compile as one graph? (Resets Dynamo, as
    explain does: never in a process that trains.)"""
    from ..domain.fullgraph import check_fullgraph as check

    return check(TrainConfig.from_dict(config))


def lr_find(config: dict, progress: Callable[[dict], None], stop: threading.Event, **options) -> dict:
    """The LR range test (run.lr_finder; `options`: its steps, lr_min, lr_max)."""
    from .lr_finder import find_lr

    return _finder(find_lr, config, progress, stop, **options)


def batch_find(config: dict, progress: Callable[[dict], None], stop: threading.Event, **options) -> dict:
    """The batch-size finder (run.batch_finder; `options`: its largest batch)."""
    from .batch_finder import find_batch_size

    return _finder(find_batch_size, config, progress, stop, **options)


def _finder(find: Callable[..., object], config: dict, progress: Callable[[dict], None], stop: threading.Event,
            **options) -> dict:
    """A finder's every point as it is measured, then its finding (a cancel ends it early with what it has).
    Dynamo is reset after it, so this service kernel keeps nothing of what it compiled."""
    from dataclasses import asdict

    try:
        return find(TrainConfig.from_dict(config), on_point=lambda point: progress(asdict(point)), stop=stop,
                    **options).to_dict()
    finally:
        torch._dynamo.reset()


HANDLERS: dict[str, Callable[..., object]] = {
    "capabilities": capabilities, "explain": explain, "load_checkpoint": load_checkpoint, "predict": predict,
    "evaluate": evaluate, "export_checkpoint": export_checkpoint, "export_model": export_model, "report": report,
    "evaluate_view": evaluate_view, "dataset_preview": dataset_preview, "check_fullgraph": check_fullgraph,
    "lr_find": lr_find, "batch_find": batch_find,
}


# -- helpers ----------------------------------------------------------------------------------------------------
def _checkpoint(path: str, trust_model_code: bool) -> checkpoint.Checkpoint:
    try:
        return checkpoint.load(path, trust_model_code=trust_model_code)
    except checkpoint.UntrustedModelCode as exc:
        raise JobError("untrusted_code", str(exc), "open it again and confirm that you trust that file",
                       {"model_spec": exc.model_spec}) from None


@functools.lru_cache(maxsize=4)
def _cached_model(path: str, stamp: tuple[int, int], trust_model_code: bool):
    ckpt = _checkpoint(path, trust_model_code)
    return ckpt.build_model("cpu"), ckpt.classes


def _model(path: str, trust_model_code: bool):
    """The eager CPU model of a checkpoint, loaded once per file version (a prediction is a 28×28 forward)."""
    resolved = Path(path).resolve()
    try:
        info = resolved.stat()
    except OSError as exc:
        raise JobError("input", f"cannot read {path}: {exc.strerror or exc}") from None
    return _cached_model(str(resolved), (info.st_mtime_ns, info.st_size), trust_model_code)


def _plain(value):
    """Checkpoint metrics as JSON-able values (tensors and numpy scalars become numbers)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "item"):
        return value.item()
    return value
