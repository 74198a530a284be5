"""The typed handle on the service kernel: one documented method per job, each returning a Future of its answer.

The jupyter_client way (one method per message): a caller never spells a job name, never builds an argument dict
and never reads an answer by key. Each method builds its request (ground/job_requests.py), checks it before anything
is sent (a wrong type is a TypeError here, not a refusal from the kernel), and returns a Future that resolves to the
job's answer type (protocol.SERVICES), fails with the job's JobError (NeedsConsent when a model file needs the
user's consent), or is cancelled (a job dropped before it ran). Torch-free: this is how the window reaches PyTorch.
"""

from __future__ import annotations

from concurrent.futures import Future
from pathlib import Path
from typing import Any, Callable, Sequence

from ..ground import job_requests, pixels
from ..ground.answers import (CheckpointInfo, DatasetPreview, Doing, EvaluationView, FullgraphCheck, ParityTable,
                              Predictions, Score, Written)
from ..ground.capabilities import Capabilities
from ..ground.config import TrainConfig
from ..ground.events import CompileReport
from ..ground.finder_results import BatchFinding, BatchPoint, LrFinding, LrPoint
from ..ground.numerics import NumericsReport
from .client import KernelClient
from .protocol import SERVICE_OF_REQUEST, JobError

Paths = str | Path


class Answer(Future):
    """A job's answer to come; `wire` is the kernel call it is waiting on (what cancel() asks the kernel about)."""

    def __init__(self, wire: Future):
        super().__init__()
        self.wire = wire


class ServiceClient:
    """Typed jobs over a KernelClient (which starts, supervises and restarts the kernel)."""

    def __init__(self, kernel: KernelClient):
        self.kernel = kernel

    # -- the jobs ------------------------------------------------------------------------------------------------
    def capabilities(self) -> Future[Capabilities]:
        """What this machine can run: its devices and the backends that work, with why the others do not."""
        return self.submit(job_requests.AskCapabilities())

    def explain(self, config: TrainConfig) -> Future[CompileReport]:
        """torch._dynamo.explain on the configured model: its graphs and every graph break with its frames."""
        return self.submit(job_requests.Explain(config))

    def check_fullgraph(self, config: TrainConfig) -> Future[FullgraphCheck]:
        """Whether the configured model compiles as one graph, and if not its first break."""
        return self.submit(job_requests.CheckFullgraph(config))

    def compare_numerics(self, config: TrainConfig) -> Future[NumericsReport]:
        """One batch forward and backward, eager against compiled: each layer's and op's largest difference
        against its tolerance, and where the first exceeds it."""
        return self.submit(job_requests.CompareNumerics(config))

    def load_checkpoint(self, path: Paths, *, trust_model_code: bool = False) -> Future[CheckpointInfo]:
        """What a checkpoint holds. Its network's Python file is imported only with `trust_model_code`."""
        return self.submit(job_requests.LoadCheckpoint(str(path), trust_model_code))

    def predict(self, checkpoint: Paths, images: Sequence[Any], *,
                trust_model_code: bool = False) -> Future[Predictions]:
        """Class probabilities of each 28×28 uint8 image (numpy arrays, as the window decoded them)."""
        return self.submit(job_requests.Predict(str(checkpoint), tuple(pixels.encode(image) for image in images),
                                            trust_model_code))

    def evaluate(self, checkpoint: Paths, *, dataset: str | None = None, data_root: str | None = None,
                 split: str | None = None, device: str = "auto", trust_model_code: bool = False) -> Future[Score]:
        """Accuracy, loss and confusion matrix on a split (its dataset's test split, else validation)."""
        return self.submit(job_requests.Evaluate(str(checkpoint), dataset, data_root, split, device, trust_model_code))

    def evaluate_view(self, checkpoint: Paths, *, trust_model_code: bool = False) -> Future[EvaluationView]:
        """The Evaluate dock's data: scores and every sample's answer, with the split's pixels."""
        return self.submit(job_requests.EvaluateView(str(checkpoint), trust_model_code))

    def export_checkpoint(self, source: Paths, target: Paths, *, trust_model_code: bool = False) -> Future[Written]:
        """The checkpoint written to `target` atomically, with its .safetensors twin."""
        return self.submit(job_requests.ExportCheckpoint(str(source), str(target), trust_model_code))

    def export_model(self, source: Paths, out: Paths, *, fmt: str, compile_backend: str, trust_model_code: bool = False,
                     on_step: Callable[[Doing], None] | None = None) -> Future[ParityTable]:
        """The checkpoint's model exported into `out` behind its parity gate; `on_step` hears each step as it starts
        (on the client's reader thread)."""
        return self.submit(job_requests.ExportModel(str(source), str(out), fmt, compile_backend, trust_model_code),
                           on_step)

    def write_report(self, run_ids: Sequence[int], out: Paths, *, db: Paths | None = None,
                     trust_model_code: bool = False) -> Future[Written]:
        """An HTML report of the runs and its JSON twin (each checkpoint evaluated in the kernel)."""
        return self.submit(job_requests.WriteReport(tuple(run_ids), str(out), None if db is None else str(db),
                                                trust_model_code))

    def preview_dataset(self, dataset: str, data_root: str | None = None) -> Future[DatasetPreview]:
        """What a dataset holds before training: samples per class, counts, format, problems."""
        return self.submit(job_requests.PreviewDataset(dataset, data_root))

    def find_lr(self, config: TrainConfig, on_point: Callable[[LrPoint], None]) -> Future[LrFinding]:
        """The LR range test; each point as it is measured (on the client's reader thread). cancel() ends it."""
        return self.submit(job_requests.FindLr(config), on_point)

    def find_batch_size(self, config: TrainConfig,
                        on_point: Callable[[BatchPoint], None]) -> Future[BatchFinding]:
        """The batch-size finder; each batch size's point as it is measured. cancel() ends it."""
        return self.submit(job_requests.FindBatchSize(config), on_point)

    # -- the mechanics -------------------------------------------------------------------------------------------
    def submit(self, request: Any, on_progress: Callable[[Any], None] | None = None) -> Answer:
        """Send a request (queued while the kernel starts); its typed answer arrives in the returned Future."""
        service = SERVICE_OF_REQUEST.get(type(request))
        if service is None:
            raise TypeError(f"{type(request).__name__} is not a service request")
        args = request.to_dict()
        try:
            service.request.from_dict(args)  # the arguments' types, checked before anything is sent
        except ValueError as exc:
            raise TypeError(f"{service.job}: {exc}") from None
        relay = None
        if on_progress is not None and service.progress is not None:
            relay = lambda data: on_progress(service.progress.from_dict(data))  # noqa: E731
        wire = self.kernel.call(service.job, relay, **args)
        answer = Answer(wire)
        wire.add_done_callback(lambda done: _settle(answer, done, service.decode))
        return answer

    def cancel(self, answer: Future) -> bool:
        """Ask the job behind `answer` to end early: one still queued is dropped (the answer is cancelled), one
        that can stop early (the finders) answers with what it has. False when it has already been answered."""
        return isinstance(answer, Answer) and self.kernel.cancel(answer.wire)


def _settle(answer: Answer, wire: Future, decode: Callable[[Any], Any]) -> None:
    if wire.cancelled():
        answer.cancel()
        return
    error = wire.exception()
    if error is not None:
        answer.set_exception(error)
        return
    try:
        answer.set_result(decode(wire.result()))
    except ValueError as exc:  # a kernel of another version, or a bug: said, never trusted half-way
        answer.set_exception(JobError("protocol", f"an answer this window cannot read: {exc}",
                                      "the kernel and the window must be the same Workbench version"))
