"""Evaluate answers made by hand, whose every figure a test can predict: for the window's tests of the Evaluate panel
(tests/ui/test_evaluate_panel.py) and of the window on a small screen."""

from __future__ import annotations

import numpy as np

from workbench.core.ground import pixels
from workbench.core.ground.answers import EvaluationView


def synthetic_answer(labels, predicted, confidence, self_confidence, classes=("cat", "dog", "owl")) -> EvaluationView:
    """A hand-made answer: image i is filled with the value i, so a thumbnail's pixels name its sample."""
    k, n = len(classes), len(labels)
    confusion = np.zeros((k, k), dtype=int)
    np.add.at(confusion, (labels, predicted), 1)
    hits, columns, rows = np.diag(confusion), confusion.sum(axis=0), confusion.sum(axis=1)
    precision = np.divide(hits, columns, out=np.zeros(k), where=columns > 0)
    recall = np.divide(hits, rows, out=np.zeros(k), where=rows > 0)
    f1 = np.divide(2 * precision * recall, precision + recall, out=np.zeros(k), where=precision + recall > 0)
    wrong = [i for i in range(n) if labels[i] != predicted[i]]
    images = np.repeat(np.arange(n, dtype=np.uint8), 28 * 28).reshape(n, 28, 28)
    return EvaluationView(
        checkpoint="/synthetic/checkpoint.pt", dataset="imagefolder", split="val", classes=tuple(classes), size=n,
        accuracy=float(np.trace(confusion) / n), loss=0.5, confusion=tuple(map(tuple, confusion.tolist())),
        precision=tuple(precision.tolist()), recall=tuple(recall.tolist()), f1=tuple(f1.tolist()),
        support=tuple(rows.tolist()), labels=tuple(labels), predicted=tuple(predicted),
        confidence=tuple(confidence), self_confidence=tuple(self_confidence), images=pixels.encode(images),
        mistakes=tuple(sorted(wrong, key=lambda i: -confidence[i])),
        label_errors=tuple(sorted(wrong, key=lambda i: self_confidence[i])))
