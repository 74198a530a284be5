"""Trials without processes, for the tests of sweeps (tests/core/test_sweep.py, and `workbench sweep` on the command
line): a stand-in for sweep.start_run whose runs report the validation accuracies they are given, epoch by epoch."""

from __future__ import annotations

from workbench.core.ground.events import EpochEnd, RunFinished
from workbench.core.ground.results import RunResults


def fake_start_run(accuracies: list[list[float]], seen_stops: list[bool]):
    """start_run for trials without processes: trial k reports accuracies[k] epoch by epoch, until stopped."""
    runs = iter(accuracies)

    def start_run(request, emit, stop, process=None):
        epochs = next(runs)
        for epoch, accuracy in enumerate(epochs, 1):
            emit(EpochEnd(epoch=epoch, train_loss=0.5, val_loss=0.5, val_accuracy=accuracy, seconds=1.0))
            if stop.is_set():
                seen_stops.append(True)
                return RunFinished(steps=epoch, epochs=epoch, seconds=1.0, stopped=True)
        return RunFinished(steps=len(epochs), epochs=len(epochs), seconds=1.0, stopped=False,
                           results=RunResults(samples_per_s=1000.0, compile_seconds=0.0, peak_memory_mib=900.0))
    return start_run
