"""Evaluation: a model's loss and accuracy on a split, and a recorded run's checkpoint re-evaluated for its report.

`evaluate` is the per-epoch validation the engine runs (sums stay on the device, one sync, shards reduced across
processes); `evaluate_split` is one pass over a whole split with every class probability (`workbench evaluate`,
the report); `evaluate_run` turns a run's checkpoint into the report's plain-data `Evaluation`.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import torch
from torch import nn
from torch.nn import functional as F

from ..ground.config import EVAL_BATCH, TrainConfig
from ..ground.errors import WorkbenchError, first_line
from ..ground.results import RunResults
from ..ground.evaluation import Evaluation, Misclassified
from ..history.report.data import missing_reason
from ..history.runs import RunRecord
from .checkpoint import Checkpoint, UntrustedModelCode, load
from .data import DataError, DeviceBatches, Split, check_classes, classes_of, load_split
from .model import is_relative_spec
GALLERY_SIZE = 24  # the report's most confident mistakes


def autocast_context(config: TrainConfig, device: torch.device):
    """Autocast for forward + loss only; nullcontext when AMP is off."""
    if config.amp == "off":
        return contextlib.nullcontext()
    dtype = torch.bfloat16 if config.amp == "bf16" else torch.float16
    return torch.autocast(device_type=device.type, dtype=dtype)


# -- a model on a split -----------------------------------------------------------------------------------------
def evaluate(model: nn.Module, batches: DeviceBatches, config: TrainConfig, device: torch.device,
             reduce: Callable[[torch.Tensor], torch.Tensor] | None = None) -> tuple[float, float]:
    """Mean loss and accuracy over a split; sums stay on the device until the end (one sync). With several
    processes each evaluates its shard and `reduce` sums the shards: the figure is the global one."""
    was_training = model.training
    model.eval()
    loss_sum = torch.zeros((), device=device)
    correct = torch.zeros((), device=device, dtype=torch.long)
    count = 0
    with torch.no_grad(), autocast_context(config, device):
        for x, y in batches.epoch(0):
            logits = model(x)
            loss_sum += F.cross_entropy(logits.float(), y, reduction="sum")
            correct += (logits.argmax(dim=-1) == y).sum()
            count += y.numel()
    model.train(was_training)
    sums = torch.stack([loss_sum.float(), correct.float(), torch.tensor(float(count), device=device)])
    if reduce is not None:
        sums = reduce(sums)
    loss_total, correct_total, count_total = sums.tolist()
    return loss_total / max(count_total, 1), correct_total / max(count_total, 1)


@dataclass(frozen=True)
class SplitResult:
    """A model's answers on a whole split, on the CPU: what `workbench evaluate` and the report show."""

    loss: float
    accuracy: float
    probabilities: torch.Tensor  # (N, classes) float32
    labels: torch.Tensor  # (N,) int64

    @property
    def predictions(self) -> torch.Tensor:
        return self.probabilities.argmax(dim=-1)

    def confusion(self) -> torch.Tensor:
        """(classes × classes) counts; rows are the true class, columns the predicted one."""
        k = self.probabilities.shape[1]
        index = self.labels * k + self.predictions  # evaluate_split refuses labels outside 0…k-1
        return torch.bincount(index, minlength=k * k).reshape(k, k)


def evaluate_split(model: nn.Module, split: Split, config: TrainConfig, device: torch.device) -> SplitResult:
    """One pass over a whole split: loss, accuracy and every class probability. Labels the model has no output
    for (a dataset with more classes than it was trained on) are a DataError, not an index error in the loss."""
    batches = DeviceBatches(split, EVAL_BATCH, device, shuffle=False, drop_last=False)
    label_range = (int(split.labels.min()), int(split.labels.max())) if len(split) else (0, 0)
    was_training = model.training
    model.eval()
    loss_sum, probabilities = 0.0, []
    try:
        with torch.no_grad(), autocast_context(config, device):
            for x, y in batches.epoch(0):
                logits = model(x).float()
                if label_range[0] < 0 or label_range[1] >= logits.shape[-1]:
                    raise DataError(f"the split has labels {label_range[0]}…{label_range[1]} but the model has "
                                    f"{logits.shape[-1]} outputs (classes 0…{logits.shape[-1] - 1})",
                                    "evaluate on the dataset the model was trained on, or one with as many classes")
                loss_sum += F.cross_entropy(logits, y, reduction="sum").item()
                probabilities.append(logits.softmax(dim=-1).cpu())
    finally:
        model.train(was_training)
    probs = torch.cat(probabilities)
    labels = split.labels.cpu()
    accuracy = (probs.argmax(dim=-1) == labels).float().mean().item() if len(labels) else 0.0
    return SplitResult(loss=loss_sum / max(len(labels), 1), accuracy=accuracy, probabilities=probs, labels=labels)


# -- a recorded run's checkpoint, for its report ----------------------------------------------------------------
def evaluate_run(record: RunRecord, trust_model_code: bool = False) -> tuple[Evaluation | None, str]:
    """The run's checkpoint evaluated on its validation split: (evaluation, "") or (None, why not, in words).
    Never raises: a report is still useful without it.

    A network defined in a Python file is imported only with `trust_model_code` (the caller's consent), only when
    the checkpoint names the very file the run's own config did, and only by an absolute path: a relative one
    (an old history row) would be resolved against whatever folder the report is written from."""
    if not record.checkpoint or not Path(record.checkpoint).is_file():
        return None, missing_reason(record)
    try:
        return _evaluate_checkpoint(record, Path(record.checkpoint), trust_model_code), ""
    except _Skipped as exc:
        return None, str(exc)
    except WorkbenchError as exc:
        return None, f"the checkpoint {record.checkpoint} could not be evaluated: {exc}"
    except Exception as exc:  # the user's own model code can raise anything; the report must still come out
        return None, (f"the checkpoint {record.checkpoint} could not be evaluated: "
                      f"{type(exc).__name__}: {first_line(exc)}")


def _evaluate_checkpoint(record: RunRecord, path: Path, trust_model_code: bool = False) -> Evaluation:
    ckpt = _load_checkpoint(record, path, trust_model_code)
    if _written_by_another_run(record, ckpt.config.to_dict(), ckpt.results):
        raise _Overwritten()
    model = ckpt.build_model("cpu")
    config = ckpt.config.replace(amp="off", device="cpu")  # float32 on the CPU: the same on every machine
    split = load_split(config.dataset, "val", config.data_root)
    check_classes(ckpt.classes, classes_of(config.dataset, config.data_root), config.dataset)  # folders can change
    return _evaluation(evaluate_split(model, split, config, torch.device("cpu")), split, tuple(ckpt.classes))


def _evaluation(result: SplitResult, split: Split, classes: tuple[str, ...]) -> Evaluation:
    """The report's plain-data view of a SplitResult: numbers, and the most confident mistakes as pixels."""
    predictions, labels = result.predictions, result.labels
    counts = result.confusion()
    wrong = torch.nonzero(predictions != labels).flatten()
    confidence = result.probabilities[wrong].max(dim=-1).values
    order = torch.argsort(confidence, descending=True)[:GALLERY_SIZE]
    gallery = tuple(Misclassified(index=int(wrong[i]), pixels=split.images[wrong[i]].numpy().copy(),
                                  true=int(labels[wrong[i]]), predicted=int(predictions[wrong[i]]),
                                  confidence=float(confidence[i])) for i in order)
    return Evaluation(size=len(split), loss=result.loss, accuracy=result.accuracy, classes=classes,
                      confusion=tuple(tuple(int(v) for v in row) for row in counts.tolist()),
                      misclassified=gallery)


def _load_checkpoint(record: RunRecord, path: Path, trust_model_code: bool = False) -> Checkpoint:
    """Load safely; import model code only with consent, and only when it is the very file this run's own config
    named, by an absolute path."""
    try:
        return load(path)
    except UntrustedModelCode as exc:
        own = record.config.get("model", "sandwich")
        if exc.model_spec != own:  # not this run's network: never import it
            raise _Overwritten() from None
        file = own.rpartition(":")[0]
        if is_relative_spec(own):
            raise _Skipped(f"the evaluation was skipped: the run recorded its model file as the relative path "
                           f"'{file}', which names a different file in every folder, so it is not imported "
                           f"(retrain it to record the absolute path)") from None
        if not trust_model_code:
            raise _Skipped(f"the evaluation was skipped: its network is defined in {file}, and importing that "
                           f"file needs consent (open the run in the window and allow that file, or pass "
                           f"workbench report --trust-model-code)") from None
        return load(path, trust_model_code=True)


class _Skipped(WorkbenchError):
    """An evaluation not attempted on purpose: the message is the whole reason."""


class _Overwritten(WorkbenchError):
    """Runs that share an output folder (the CLI's default runs/latest) write the same checkpoint path: the file
    there may be a later run's, and evaluating it would pass that run's weights off as this one's."""

    def __init__(self):
        super().__init__("it was overwritten by a later run that wrote into the same folder")


def _written_by_another_run(record: RunRecord, saved_config: dict, saved: RunResults) -> bool:
    """The checkpoint's settings (on the keys both versions know) or its throughput differ from the run's own."""
    if any(record.config[key] != saved_config[key] for key in record.config.keys() & saved_config.keys()):
        return True
    # Same settings, run again: the measured throughput tells them apart.
    return record.samples_per_s is not None and saved.samples_per_s != record.samples_per_s
