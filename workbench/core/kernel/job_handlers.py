"""What a kernel does for each job: `train` (a run kernel's one job), and for each service job a handler that takes
its typed request and returns its typed answer (protocol.SERVICES pairs them; each handler registers itself with
@handles, under its request's type), torch in between.

The CLI calls the same handlers in its own process (`workbench evaluate`), so a job's answer is the same wherever
it runs. Images travel as the 28×28 uint8 pixels the window decoded (ground/pixels.py).
"""

from __future__ import annotations

import functools
import os
import threading
import typing
from pathlib import Path
from typing import Callable

import torch

from ..domain import checkpoint, devices, distributed
from ..domain.compile_explain import explain as explain_config
from ..domain.predict import predict_pixels
from ..ground import answers, job_requests, pixels
from ..ground.capabilities import Capabilities, DeviceInfo
from ..ground.config import TrainConfig
from ..ground.errors import WorkbenchError
from ..ground.events import CompileReport, RunFailed, RunFinished, to_json
from ..ground.finder_results import BatchFinding, BatchPoint, LrFinding, LrPoint
from ..ground.numerics import NumericsReport
from ..run.protocol import JobError, NeedsConsent
from ..run.run_request import RunRequest
from .run_files import run_recorded

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


# -- short jobs: a typed request in, a typed answer out (protocol.SERVICES pairs them) ---------------------------
HANDLERS: dict[type, Callable[..., object]] = {}  # request type → its handler, filled by @handles


def handles(handler: Callable[..., object]) -> Callable[..., object]:
    """Register a service job's handler, where it is written: under the request type its first parameter is
    annotated with. (A test holds this table and protocol.SERVICES equal, answers and progress types too.)"""
    request_type = next(iter(typing.get_type_hints(handler).values()))
    if request_type in HANDLERS:
        raise TypeError(f"{request_type.__name__} has two handlers: {HANDLERS[request_type].__name__}, "
                        f"{handler.__name__}")
    HANDLERS[request_type] = handler
    return handler


@handles
def capabilities(request: job_requests.AskCapabilities) -> Capabilities:
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
                        devices=(*gpus, cpu), backend_problems=problems)


@handles
def explain(request: job_requests.Explain) -> CompileReport:
    """torch._dynamo.explain on the configured model (it resets Dynamo: never in a process that trains)."""
    request.config.check_runnable(devices.cuda_available())  # a CUDA config on a machine without: said, not tried
    return explain_config(request.config)


@handles
def load_checkpoint(request: job_requests.LoadCheckpoint) -> answers.CheckpointInfo:
    """What a checkpoint holds, loaded safely (weights_only); a user-defined network's file is imported only
    with the caller's consent — without it the answer is a NeedsConsent error naming the file."""
    ckpt = _checkpoint(request.path, request.trust_model_code)
    return answers.CheckpointInfo(path=str(Path(request.path).resolve()), config=ckpt.config,
                                  results=ckpt.results, classes=tuple(ckpt.classes), versions=ckpt.versions)


@handles
def predict(request: job_requests.Predict) -> answers.Predictions:
    """Class probabilities of each image (the 28×28 pixels the window decoded)."""
    model, classes = _model(request.checkpoint_path, request.trust_model_code)
    probabilities = []
    for text in request.images:
        try:
            image = pixels.decode_one(text)
        except pixels.PixelError as exc:
            raise JobError("input", str(exc)) from None
        probabilities.append(tuple(predict_pixels(model, image)))
    return answers.Predictions(probabilities=tuple(probabilities), classes=tuple(classes))


@handles
def evaluate(request: job_requests.Evaluate) -> answers.Score:
    """Accuracy, loss and confusion matrix of a checkpoint on a split (`workbench evaluate`)."""
    from ..domain.evaluation_view import evaluate_checkpoint

    ckpt = _checkpoint(request.checkpoint_path, request.trust_model_code)
    name, split_name, data, result = evaluate_checkpoint(ckpt, request.dataset, request.data_root, request.split,
                                                         request.device)
    return answers.Score(dataset=name, split=split_name, images=len(data), accuracy=result.accuracy,
                         loss=result.loss, confusion=tuple(tuple(row) for row in result.confusion().tolist()),
                         classes=tuple(ckpt.classes))


@handles
def evaluate_view(request: job_requests.EvaluateView) -> answers.EvaluationView:
    """The Evaluate view's data: scores, the confusion matrix, per-sample answers and the split's pixels, so that
    every click in the window is answered without another call. On the CPU: no GPU memory taken from a run."""
    from ..domain.evaluation_view import evaluate_checkpoint, view_answer

    ckpt = _checkpoint(request.checkpoint_path, request.trust_model_code)
    name, split_name, data, result = evaluate_checkpoint(ckpt, request.dataset, request.data_root, request.split,
                                                         "cpu")
    return view_answer(str(Path(request.checkpoint_path).resolve()), name, split_name, result, data, ckpt.classes)


@handles
def export_checkpoint(request: job_requests.ExportCheckpoint) -> answers.Written:
    """Write a checkpoint elsewhere through the same atomic save (and its .safetensors twin)."""
    written = checkpoint.export(_checkpoint(request.source, request.trust_model_code), request.target)
    twin = written.with_suffix(".safetensors")
    return answers.Written((str(written), *((str(twin),) if twin.is_file() else ())))


@handles
def export_model(request: job_requests.ExportModel, progress: Callable[[answers.Doing], None]) -> answers.ParityTable:
    """Export a checkpoint (.pt2, ONNX, AOTInductor) behind its parity gate: the gate's table (domain.export); each
    step said as it starts (an AOTInductor export takes half a minute)."""
    from ..domain.export import export_model as export

    return export(_checkpoint(request.source, request.trust_model_code), request.out, fmt=request.fmt,
                  compile_backend=request.compile_backend, progress=lambda text: progress(answers.Doing(text)))


@handles
def report(request: job_requests.WriteReport) -> answers.Written:
    """A self-contained HTML report of the runs and its JSON twin (each checkpoint is evaluated here; a run's own
    model file is imported only with `trust_model_code`)."""
    from ..history.runs import RunStore
    from .reports import write_report

    with RunStore(request.db, recover=False) as store:
        written = write_report(store, list(request.run_ids), Path(request.out),
                               trust_model_code=request.trust_model_code)
        return answers.Written(tuple(str(p) for p in written))


@handles
def dataset_preview(request: job_requests.PreviewDataset) -> answers.DatasetPreview:
    """The Dataset preview's data (samples per class, class counts, image format, problems), before training."""
    from ..domain.preview import dataset_preview as build

    return build(request.dataset, request.data_root)


@handles
def check_fullgraph(request: job_requests.CheckFullgraph) -> answers.FullgraphCheck:
    """A fix-it card's Check with fullgraph: does the configured model compile as one graph? (Resets Dynamo, as
    explain does: never in a process that trains.)"""
    from ..domain.fullgraph import check_fullgraph as check

    return check(request.config)


@handles
def numerics(request: job_requests.CompareNumerics) -> NumericsReport:
    """Compare numerics: one batch forward and backward, eager against compiled, per layer and per op (resets
    Dynamo, as explain does: never in a process that trains)."""
    from ..domain.numerics import compare_numerics

    request.config.check_runnable(devices.cuda_available())
    return compare_numerics(request.config)


@handles
def lr_find(request: job_requests.FindLr, progress: Callable[[LrPoint], None], stop: threading.Event) -> LrFinding:
    """The LR range test (run.lr_finder); a cancel ends it early with what it has."""
    from .lr_finder import find_lr

    options = {name: value for name in ("steps", "lr_min", "lr_max")
               if (value := getattr(request, name)) is not None}
    return _finder(find_lr, request.config, progress, stop, **options)


@handles
def batch_find(request: job_requests.FindBatchSize, progress: Callable[[BatchPoint], None],
               stop: threading.Event) -> BatchFinding:
    """The batch-size finder (run.batch_finder); a cancel ends it early with what it has."""
    from .batch_finder import find_batch_size

    options = {"largest": request.largest} if request.largest is not None else {}
    return _finder(find_batch_size, request.config, progress, stop, **options)


def _finder(find: Callable[..., object], config: TrainConfig, progress: Callable, stop: threading.Event,
            **options):
    """A finder's every point as it is measured, then its finding. Dynamo is reset after it, so this service
    kernel keeps nothing of what it compiled."""
    try:
        return find(config, on_point=progress, stop=stop, **options)
    finally:
        torch._dynamo.reset()




# -- helpers ----------------------------------------------------------------------------------------------------
def _checkpoint(path: str, trust_model_code: bool) -> checkpoint.Checkpoint:
    try:
        return checkpoint.load(path, trust_model_code=trust_model_code)
    except checkpoint.UntrustedModelCode as exc:
        raise NeedsConsent(exc.model_spec, str(exc), "open it again and confirm that you trust that file") from None


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
