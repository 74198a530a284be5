"""Why a run has no evaluation in its report, in words (the evaluation itself is ground.evaluation's `Evaluation`).
Torch-free, like the rest of the run history.
"""

from __future__ import annotations

from pathlib import Path

from ..runs import RunRecord


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
