"""The Evaluate view's data: a checkpoint scored on a whole split, as plain JSON-able lists the window can slice.

The window builds every gallery itself (a confusion cell, the most confident mistakes, the likely label errors)
from per-sample arrays and the split's pixels, so one answer serves every click without another kernel call.

Likely label errors follow confident learning's self-confidence rule: among the images the model gets wrong, the
lower the probability it gives to the *given* label, the more likely that label is wrong (Northcutt et al., 2021).
"""

from __future__ import annotations

import numpy as np

from ..ground import pixels
from ..ground.answers import EvaluationView
from . import devices
from .checkpoint import Checkpoint
from .data import DataError, Split, check_classes, classes_of, dataset_info, load_split
from .evaluate import GALLERY_SIZE, SplitResult, evaluate_split

DIGITS_KEPT = 4  # probabilities rounded to 4 decimals: the answer stays compact, a percentage stays exact


def evaluate_checkpoint(ckpt: Checkpoint, dataset: str | None = None, data_root: str | None = None,
                        split: str | None = None, device: str = "cpu") -> tuple[str, str, Split, SplitResult]:
    """(dataset, split, its images, the model's answers): a checkpoint on a split (by default its own dataset's
    test split, else its validation split), eagerly in float32 — the same numbers on every machine. The device is
    checked as a run checks it (cuda without CUDA, typos)."""
    name, root, split_name = evaluation_target(ckpt, dataset, data_root, split)
    config = ckpt.config.replace(amp="off", backend="eager", mode="default", device=device)
    config.check_runnable(devices.cuda_available())
    data = load_split(name, split_name, root)
    if not len(data):
        raise DataError(f"the {split_name} split of {name} holds no images: there is nothing to evaluate")
    check_classes(ckpt.classes, classes_of(name, root), name)
    where = devices.resolve_device(config.device)
    return name, split_name, data, evaluate_split(ckpt.build_model(where), data, config, where)


def evaluation_target(ckpt: Checkpoint, dataset: str | None, data_root: str | None,
                      split: str | None) -> tuple[str, str | None, str]:
    """(dataset, data root, split): the checkpoint's own dataset and folder unless another dataset is named; the
    test split when the dataset has one, else the validation split."""
    name = dataset or ckpt.config.dataset
    root = data_root if dataset else (data_root or ckpt.config.data_root)
    return name, root, split or ("test" if dataset_info(name).has_test else "val")


def view_answer(checkpoint: str, dataset: str, split: str, result: SplitResult, data: Split,
                classes: tuple[str, ...]) -> EvaluationView:
    """Scores, confusion and per-sample arrays of a SplitResult, with the split's pixels."""
    probabilities = result.probabilities.numpy()
    labels = result.labels.numpy()
    predicted = result.predictions.numpy()
    confidence = probabilities.max(axis=1)
    self_confidence = probabilities[np.arange(len(labels)), labels]
    confusion = result.confusion().numpy()
    scores = class_scores(confusion)
    return EvaluationView(
        checkpoint=checkpoint, dataset=dataset, split=split, classes=tuple(classes), size=len(labels),
        accuracy=result.accuracy, loss=result.loss, confusion=tuple(tuple(row) for row in confusion.tolist()),
        precision=tuple(scores["precision"]), recall=tuple(scores["recall"]), f1=tuple(scores["f1"]),
        support=tuple(scores["support"]), labels=tuple(labels.tolist()), predicted=tuple(predicted.tolist()),
        confidence=tuple(_rounded(confidence)), self_confidence=tuple(_rounded(self_confidence)),
        images=pixels.encode(data.images.numpy()),
        mistakes=tuple(confident_mistakes(labels, predicted, confidence)),
        label_errors=tuple(likely_label_errors(labels, predicted, self_confidence)))


def class_scores(confusion: np.ndarray) -> dict[str, list]:
    """Per-class precision (of the images predicted as the class, the share that are), recall (of the class's
    images, the share found), F1 and support (images of the class). A class never predicted, or with no images,
    scores 0 rather than NaN: JSON has no NaN, and 0 is what a sortable table should show for it."""
    confusion = np.asarray(confusion, dtype=np.float64)
    hits = np.diag(confusion)
    precision = _ratio(hits, confusion.sum(axis=0))
    recall = _ratio(hits, confusion.sum(axis=1))
    f1 = _ratio(2 * precision * recall, precision + recall)
    return {"precision": precision.tolist(), "recall": recall.tolist(), "f1": f1.tolist(),
            "support": [int(v) for v in confusion.sum(axis=1)]}


def confident_mistakes(labels: np.ndarray, predicted: np.ndarray, confidence: np.ndarray,
                       limit: int = GALLERY_SIZE) -> list[int]:
    """Indices of the wrong answers given with the highest confidence, most confident first (ties: lower index)."""
    wrong = np.flatnonzero(np.asarray(predicted) != np.asarray(labels))
    order = np.argsort(-np.asarray(confidence)[wrong], kind="stable")
    return wrong[order][:limit].tolist()


def likely_label_errors(labels: np.ndarray, predicted: np.ndarray, self_confidence: np.ndarray,
                        limit: int = GALLERY_SIZE) -> list[int]:
    """Indices of the wrong answers ranked by self-confidence, p(given label), lowest first (ties: lower index):
    the model is surest the label is not what the image shows."""
    wrong = np.flatnonzero(np.asarray(predicted) != np.asarray(labels))
    order = np.argsort(np.asarray(self_confidence)[wrong], kind="stable")
    return wrong[order][:limit].tolist()


def _ratio(top: np.ndarray, bottom: np.ndarray) -> np.ndarray:
    return np.divide(top, bottom, out=np.zeros_like(top, dtype=np.float64), where=bottom > 0)


def _rounded(values: np.ndarray) -> list[float]:
    return np.round(values.astype(np.float64), DIGITS_KEPT).tolist()
