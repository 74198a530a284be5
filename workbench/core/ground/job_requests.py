"""The service kernel's jobs, as plain data: one frozen request type per job (run/protocol.py's table pairs each with
its answer type). The window and the CLI build these, never an argument dict; the kernel reads them back typed."""

from __future__ import annotations

from dataclasses import dataclass

from .config import TrainConfig
from .codec import Record


@dataclass(frozen=True)
class AskCapabilities(Record):
    """What this machine can run: devices and the backends that work (answer: Capabilities)."""


@dataclass(frozen=True)
class Explain(Record):
    """torch._dynamo.explain on the configured model (answer: CompileReport). It resets Dynamo in the kernel."""

    config: TrainConfig


@dataclass(frozen=True)
class CheckFullgraph(Record):
    """Does the configured model compile as one graph? (answer: FullgraphCheck)"""

    config: TrainConfig


@dataclass(frozen=True)
class CompareNumerics(Record):
    """One batch forward and backward, eager against compiled, per layer and per op (answer: NumericsReport). It
    resets Dynamo in the kernel, as Explain does."""

    config: TrainConfig


@dataclass(frozen=True)
class LoadCheckpoint(Record):
    """What a checkpoint holds (answer: CheckpointInfo). A network defined in a Python file is imported only with
    `trust_model_code`; without it the answer is a NeedsConsent error naming the file."""

    path: str
    trust_model_code: bool = False


@dataclass(frozen=True)
class Predict(Record):
    """Class probabilities of each image (answer: Predictions): base64 of its 28×28 uint8 pixels
    (ground/pixels.py encodes them)."""

    checkpoint_path: str
    images: tuple[str, ...]
    trust_model_code: bool = False


@dataclass(frozen=True)
class Evaluate(Record):
    """Accuracy, loss and confusion matrix of a checkpoint on a split (answer: Score)."""

    checkpoint_path: str
    dataset: str | None = None  # the checkpoint's own when None
    data_root: str | None = None
    split: str | None = None  # test, else validation, when None
    device: str = "auto"
    trust_model_code: bool = False


@dataclass(frozen=True)
class EvaluateView(Record):
    """The Evaluate dock's data for a checkpoint (answer: EvaluationView), computed on the CPU."""

    checkpoint_path: str
    trust_model_code: bool = False
    dataset: str | None = None
    data_root: str | None = None
    split: str | None = None


@dataclass(frozen=True)
class ExportCheckpoint(Record):
    """Write a checkpoint elsewhere, atomically, with its .safetensors twin (answer: Written)."""

    source: str
    target: str
    trust_model_code: bool = False


@dataclass(frozen=True)
class ExportModel(Record):
    """Export a checkpoint (.pt2, ONNX, AOTInductor) behind its parity gate (answer: ParityTable)."""

    source: str
    out: str
    fmt: str = "pt2"
    compile_backend: str = "inductor"
    trust_model_code: bool = False


@dataclass(frozen=True)
class WriteReport(Record):
    """A self-contained HTML report of runs and its JSON twin (answer: Written: the HTML, then the JSON)."""

    run_ids: tuple[int, ...]
    out: str
    db: str | None = None
    trust_model_code: bool = False


@dataclass(frozen=True)
class PreviewDataset(Record):
    """What a dataset holds, before training (answer: DatasetPreview)."""

    dataset: str
    data_root: str | None = None


@dataclass(frozen=True)
class FindLr(Record):
    """The LR range test (answer: LrFinding; each point as progress: LrPoint). Cancellable: it then answers with
    what it measured. None: the finder's own default."""

    config: TrainConfig
    steps: int | None = None
    lr_min: float | None = None
    lr_max: float | None = None


@dataclass(frozen=True)
class FindBatchSize(Record):
    """The batch-size finder (answer: BatchFinding; each point as progress: BatchPoint). Cancellable."""

    config: TrainConfig
    largest: int | None = None
