"""A history of two runs made up event by event, and ways to read an export of it: what the tests of `workbench runs
export` share, in the core (tests/core/test_runs_export.py), on the command line and in the Runs dock."""

from __future__ import annotations

import csv
import sys
from pathlib import Path

from workbench.core.ground.config import TrainConfig
from workbench.core.ground.events import EpochEnd, MemorySample, RunFailed, RunFinished, Step
from workbench.core.ground.results import RunResults
from workbench.core.history.recording import RunRecorder
from workbench.core.history.runs import RunStore

from .history_events import started

FINISHED = TrainConfig(epochs=2, hidden_dim=16, lr=0.01)
FAILED = TrainConfig(epochs=1, hidden_dim=16, lr=0.001, backend="aot_eager", amp="bf16")
FINAL_METRICS = {"best_val_accuracy": 0.875, "samples_per_s": 1234.5, "compile_seconds": 0.25,
                 "peak_memory_mib": 106.0}


def export_step(i: int, epoch: int) -> Step:
    """Step 1 compiles (off the throughput curve) and has no accuracy; the values are not round in binary."""
    return Step(step=i, epoch=epoch, loss=2.0 / i + 0.1, samples_per_s=1000.0 + i / 3, step_seconds=0.01,
                memory=MemorySample(rss=100.0 + i), compiling=i == 1, accuracy=None if i == 1 else 0.1 * i)


def record_history(db: Path) -> None:
    """Run #1: finished, 6 steps over 2 epochs. Run #2: failed after 2 steps (no epoch, no final figures)."""
    with RunStore(db) as store:
        recorder = RunRecorder(store, interval=3600)
        recorder(started(FINISHED))
        for i in range(1, 7):
            recorder(export_step(i, epoch=1 + (i > 3)))
            if i % 3 == 0:
                recorder(EpochEnd(epoch=i // 3, train_loss=1.0, val_loss=1.0 / i, val_accuracy=0.8 + i / 100,
                                  seconds=float(i)))
        recorder(RunFinished(steps=6, epochs=2, seconds=6.0, stopped=False, results=RunResults(**FINAL_METRICS)))
        recorder = RunRecorder(store, interval=3600)
        for event in (started(FAILED), export_step(1, 1), export_step(2, 1), RunFailed("diverged", "the loss is NaN")):
            recorder(event)


def read_csv(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def values(rows: list[dict], run_id: int, metric: str) -> dict[int | None, float]:
    """step → value of one run's metric, from the CSV's rows."""
    return {int(r["step"]) if r["step"] else None: float(r["value"])
            for r in rows if r["run_id"] == str(run_id) and r["metric"] == metric}


def without_tensorboard(monkeypatch) -> None:
    """As if the extra were not installed: a None in sys.modules makes its import raise ImportError."""
    for name in [name for name in sys.modules if name.partition(".")[0] == "tensorboard"]:
        monkeypatch.setitem(sys.modules, name, None)
