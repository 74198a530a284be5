"""The service kernel's answers, as plain data: each job of run/protocol.py's table answers with one of these (or
with an error). The kernel builds them (with torch), the window and the CLI read their fields: no answer is read by
string key, and one that does not fit its type is refused where it arrives (ground/records.py)."""

from __future__ import annotations

from dataclasses import dataclass

from .config import TrainConfig
from .events import Frame
from .codec import Record
from .results import RunResults


@dataclass(frozen=True)
class CheckpointInfo(Record):
    """What a checkpoint holds, read safely (weights_only) in the kernel."""

    path: str  # resolved
    config: TrainConfig
    results: RunResults  # the run's figures as it saved them
    classes: tuple[str, ...]
    versions: dict

    @property
    def val_accuracy(self) -> float | None:
        return self.results.val_accuracy


@dataclass(frozen=True)
class Predictions(Record):
    probabilities: tuple[tuple[float, ...], ...]  # one row per image, one column per class
    classes: tuple[str, ...]


@dataclass(frozen=True)
class Score(Record):
    """A checkpoint scored on a split (`workbench evaluate`)."""

    dataset: str
    split: str
    images: int
    accuracy: float
    loss: float
    confusion: tuple[tuple[int, ...], ...]  # rows: true class, columns: predicted
    classes: tuple[str, ...]


@dataclass(frozen=True)
class EvaluationView(Record):
    """The Evaluate dock's data: scores, the confusion matrix, every sample's answer and the split's pixels, so that
    every click in the window is answered without another call."""

    checkpoint: str
    dataset: str
    split: str
    classes: tuple[str, ...]
    size: int  # images in the split
    accuracy: float
    loss: float
    confusion: tuple[tuple[int, ...], ...]
    precision: tuple[float, ...]  # per class
    recall: tuple[float, ...]
    f1: tuple[float, ...]
    support: tuple[int, ...]
    labels: tuple[int, ...]  # per sample
    predicted: tuple[int, ...]
    confidence: tuple[float, ...]  # the predicted class's probability
    self_confidence: tuple[float, ...]  # the true class's probability
    images: str  # base64 of size × 28 × 28 uint8 pixels (ground/pixels.py)
    mistakes: tuple[int, ...]  # sample indices, most confident wrong answer first
    label_errors: tuple[int, ...]  # sample indices, least self-confident wrong answer first


@dataclass(frozen=True)
class DataProblem(Record):
    level: str  # "error", "warning", "info"
    message: str
    hint: str = ""


@dataclass(frozen=True)
class DataFormat(Record):
    stored: str  # how the images are stored, in words
    source: str  # where they come from


@dataclass(frozen=True)
class DatasetPreview(Record):
    """The Dataset dock's data, before training: samples per class, counts per split, format, problems."""

    dataset: str
    title: str
    classes: tuple[str, ...]
    counts: dict[str, tuple[int, ...]]  # split → images per class
    format: DataFormat | None
    samples: tuple[tuple[str, ...], ...]  # per class: base64 of each sample's 784 pixels
    problems: tuple[DataProblem, ...]

    def split_sizes(self) -> tuple[int, int] | None:
        """(train, val) images, when the preview has both."""
        if "train" in self.counts and "val" in self.counts:
            return sum(self.counts["train"]), sum(self.counts["val"])
        return None


@dataclass(frozen=True)
class FullgraphCheck(Record):
    """A fix-it card's *Check with fullgraph*: does the model compile as one graph, and if not, its first break."""

    ok: bool
    backend: str
    seconds: float
    type: str = ""  # the break's kind (parsers.parse_break), when not ok
    message: str = ""
    frames: tuple[Frame, ...] = ()  # where in the user's code


@dataclass(frozen=True)
class ParityRow(Record):
    """One way of running the model, held against eager on the same images."""

    name: str  # "eager", "compiled (inductor)", "exported (.pt2)"
    max_abs: float
    max_rel: float
    top1_agreement: float  # share of images whose predicted class equals eager's
    ms_per_batch: float  # median over the batches
    passed: bool
    drift: str = ""  # where a failing row drifted, in words


@dataclass(frozen=True)
class Tolerance(Record):
    """The parity gate's: |Δ| ≤ atol + rtol·|eager| on every logit, and this share of top-1 answers the same."""

    atol: float
    rtol: float
    top1: float


def row_verdict(row: ParityRow, tolerance: Tolerance) -> str:
    """'ok', 'FAILED', or 'ok (within atol)' for a row whose relative difference alone is over rtol: it passed on
    |Δ| ≤ atol + rtol·|eager| because its logits are small, which a reader of "max rel 5.63e-03 … ok" under rtol
    1e-4 cannot see."""
    if not row.passed:
        return "FAILED"
    return "ok (within atol)" if row.max_rel > tolerance.rtol else "ok"


@dataclass(frozen=True)
class ParityTable(Record):
    """An exported model's parity gate (also written beside it as parity.json)."""

    format: str
    file: str
    bytes: int
    export_seconds: float
    images: int
    batch: int
    tolerance: Tolerance
    passed: bool
    rows: tuple[ParityRow, ...]
    versions: dict


@dataclass(frozen=True)
class Written(Record):
    """Files a job wrote, the main one first (a checkpoint; a report's HTML, then its JSON twin)."""

    paths: tuple[str, ...]


@dataclass(frozen=True)
class Doing(Record):
    """A long job's step, said as it starts ("translating to ONNX…"): what an export reports while it works."""

    text: str
