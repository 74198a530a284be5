"""The report's plain data: a run's checkpoint re-evaluated on its validation split, and the words for why a run has
none. `domain.evaluate.evaluate_run` makes an `Evaluation` (it imports the type from here, not from the renderer);
the report draws it. Torch-free, like the rest of the run history.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..runs import RunRecord


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


def missing_reason(record: RunRecord) -> str:
    """Why a run has no evaluation, worked out from its record (no checkpoint, or its file is gone)."""
    if not record.checkpoint:
        why = {"failed": "it failed before saving one", "running": "it is still running",
               "interrupted": "it was interrupted before saving one"}.get(record.status, "none was recorded")
        return f"run #{record.id} has no checkpoint ({why}), so its validation images could not be re-evaluated"
    if not Path(record.checkpoint).is_file():
        return (f"the checkpoint file {record.checkpoint} no longer exists (moved or deleted), so run "
                f"#{record.id} could not be re-evaluated")
    return f"run #{record.id} was not evaluated"
