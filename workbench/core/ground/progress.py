"""Run progress from the event stream: state, fraction done, ETA. One tracker serves the CLI bar and the GUI.

The ETA uses steady-state step time only: the compiling step (and CUDA's warm-up steps) would make it wildly
pessimistic.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .events import CompileFinished, CompileStarted, EpochEnd, Event, RunFailed, RunFinished, RunStarted, Step


def epoch_line(event: EpochEnd) -> str:
    """'epoch 3: train loss 0.1478 · val loss 0.2956 · val accuracy 92.30%' — the CLI and the Log say the same."""
    return (f"epoch {event.epoch}: train loss {event.train_loss:.4f} · val loss {event.val_loss:.4f} · "
            f"val accuracy {event.val_accuracy:.2%}")


def failure_line(event: RunFailed, hint_separator: str = " — ") -> str:
    return f"run failed ({event.kind}): {event.message}" + (f"{hint_separator}{event.hint}" if event.hint else "")


def format_duration(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


@dataclass
class Progress:
    state: str = "idle"  # idle | starting | compiling | training | finished | stopped | failed
    epoch: int = 0
    epochs: int = 0
    step: int = 0
    total_steps: int = 0
    loss: float = float("nan")
    samples_per_s: float = 0.0  # figures.SAMPLES_PER_S: the run's steady figure so far, then its own at the end
    _steady_seconds: float = 0.0
    _steady_steps: int = 0
    _inverse_rates: float = 0.0  # the sum of 1/rate over the steady steps (figures.steady_rate, kept running)

    def update(self, event: Event) -> None:
        if isinstance(event, RunStarted):
            self.__init__()  # type: ignore[misc]  # a new run starts from scratch
            self.state = "starting"
            self.epochs = event.config.epochs
            self.total_steps = event.total_steps
            self.epoch = 1
        elif isinstance(event, CompileStarted):
            self.state = "compiling"
        elif isinstance(event, CompileFinished):
            self.state = "training"
        elif isinstance(event, Step):
            if self.state in ("starting", "compiling") and not event.compiling:
                self.state = "training"
            self.step, self.epoch, self.loss = event.step, event.epoch, event.loss
            if event.steady:
                self._steady_seconds += event.step_seconds
                self._steady_steps += 1
                if event.samples_per_s > 0:
                    self._inverse_rates += 1.0 / event.samples_per_s
                    self.samples_per_s = self._steady_steps / self._inverse_rates
        elif isinstance(event, RunFinished):
            self.state = "stopped" if event.stopped else "finished"
            self.samples_per_s = event.results.samples_per_s  # the run's own: the Runs table's figure
        elif isinstance(event, RunFailed):
            self.state = "failed"

    @property
    def fraction(self) -> float:
        return min(1.0, self.step / self.total_steps) if self.total_steps else 0.0

    @property
    def eta_seconds(self) -> float | None:
        if not self._steady_steps:
            return None
        per_step = self._steady_seconds / self._steady_steps
        return per_step * max(0, self.total_steps - self.step)

    def describe(self) -> str:
        """'Idle', 'Compiling…', 'Epoch 2 of 5 · 43% · ETA 0:12', 'Finished', …"""
        if self.state == "training":
            text = f"Epoch {self.epoch} of {self.epochs} · {self.fraction:.0%}"
            eta = self.eta_seconds
            return text + (f" · ETA {format_duration(eta)}" if eta is not None else "")
        return {"idle": "Idle", "starting": "Starting…", "compiling": "Compiling…", "finished": "Finished",
                "stopped": "Stopped", "failed": "Failed"}[self.state]


class CopyProgress:
    """A file copy's progress (bytes done of all) as one short text and whether the copy is whole, told to `say`
    only when its whole percent changes: a copy arrives in many small reads, and the CLI's line or the window's
    status line must not be rewritten for each."""

    def __init__(self, say: Callable[[str, bool], None]):
        self.say = say
        self.shown = -1

    def __call__(self, done: int, total: int) -> None:
        percent = 100 * done // max(total, 1)
        if percent != self.shown:
            self.shown = percent
            self.say(f"copying {done / 1e6:.1f} of {total / 1e6:.1f} MB ({percent} %)", done >= total)
