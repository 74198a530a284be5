"""A run's checkpoint re-evaluated on its validation split, as plain data: the kernel makes it
(`domain.evaluate.evaluate_run`), the report draws it. Here, in the ground layer, because both sides use it."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Misclassified:
    index: int  # position in the validation split
    pixels: np.ndarray  # (28, 28) uint8
    true: int
    predicted: int
    confidence: float  # probability the model gave its (wrong) prediction


@dataclass(frozen=True)
class Evaluation:
    """A run's checkpoint re-evaluated on its validation split, on the CPU in float32."""

    size: int
    loss: float
    accuracy: float
    classes: tuple[str, ...]
    confusion: tuple[tuple[int, ...], ...]  # rows: true class, columns: predicted class
    misclassified: tuple[Misclassified, ...]  # the most confident mistakes first
