"""A run on the terminal: the progress bar, and Ctrl+C / SIGTERM / SIGHUP as a stop after the current step."""

from __future__ import annotations

import signal
import sys
import threading
import time
from typing import Callable

from ..core.ground.alerts import Alert, alert_line
from ..core.ground.events import EpochEnd, Notice, RunFailed
from ..core.ground.progress import Progress, epoch_line, format_duration
from .common import EXIT_INTERRUPTED


class interrupt_sets:
    """First Ctrl+C asks the run to stop after the current step (the checkpoint is still written); a second one
    interrupts at once. SIGTERM (a service manager, `kill`, a batch scheduler's time limit) and SIGHUP (the
    terminal closed) are treated the same way: the run stops after its step with its files and record kept.

    `exit_code`: what the command exits with after such a stop — 130 for Ctrl+C, as before, and 128 + the
    signal's number for the others (143 for SIGTERM, 129 for SIGHUP), the shell's convention for "ended by".

    `untrained`: says whether nothing has been trained yet; while it does, the first signal already raises
    KeyboardInterrupt (there is no step to stop after, and nothing to keep)."""

    SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))

    def __init__(self, stop: threading.Event, untrained: Callable[[], bool] | None = None):
        self.stop = stop
        self.untrained = untrained
        self.previous: dict[int, Callable | int | None] = {}
        self.signum: int | None = None  # the first signal received

    @property
    def exit_code(self) -> int:
        if self.signum is None or self.signum == signal.SIGINT:
            return EXIT_INTERRUPTED
        return 128 + int(self.signum)

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            for signum in self.SIGNALS:
                self.previous[signum] = signal.signal(signum, self._handle)
        return self

    def _handle(self, signum, frame):
        if self.stop.is_set() or (self.untrained is not None and self.untrained()):
            self.stop.set()  # a run in a kernel process stops too, whoever catches the interrupt
            raise KeyboardInterrupt
        self.signum = signum
        again = "Ctrl+C" if signum == signal.SIGINT else signal.Signals(signum).name
        try:
            print(f"\nstopping after this step ({again} again to abort)…", file=sys.stderr)
        except (OSError, ValueError):  # SIGHUP: the terminal may be gone; the stop matters, not the message
            pass
        self.stop.set()

    def __exit__(self, *exc):
        for signum, previous in self.previous.items():
            if previous is not None:
                signal.signal(signum, previous)
        self.previous.clear()
        return False


class ProgressBar:
    """One redrawn line on a terminal; a line per epoch otherwise (CI logs stay readable)."""

    WIDTH = 24

    def __init__(self, stream):
        self.stream = stream
        self.tty = stream.isatty()
        self.progress = Progress()
        self.last_draw = 0.0

    def update(self, event) -> None:
        self.progress.update(event)
        p = self.progress
        if isinstance(event, Notice):
            self._line(f"{event.level}: {event.message}")
        elif isinstance(event, Alert) and event.severity != "error":  # an error alert (the loss blew up) comes
            self._line(alert_line(event))  # just before the run's failure, whose line says it: recorded, not repeated
        elif isinstance(event, EpochEnd):
            self._line(epoch_line(event).replace(f"epoch {event.epoch}:", f"epoch {event.epoch}/{p.epochs}:", 1))
        elif isinstance(event, RunFailed):
            self._clear()
        elif self.tty and time.monotonic() - self.last_draw > 0.1:
            self.last_draw = time.monotonic()
            filled = int(self.WIDTH * p.fraction)
            eta = p.eta_seconds
            text = (f"\r{p.describe().split(' · ')[0]} [{'#' * filled}{'-' * (self.WIDTH - filled)}] "
                    f"{p.fraction:4.0%} {p.step}/{p.total_steps} · loss {p.loss:.4f} · "
                    f"{p.samples_per_s:,.0f} samples/s" + (f" · ETA {format_duration(eta)}" if eta else ""))
            self.stream.write(text[:160].ljust(100))
            self.stream.flush()

    def _clear(self) -> None:
        if self.tty:
            self.stream.write("\r" + " " * 110 + "\r")

    def _line(self, text: str) -> None:
        self._clear()
        self.stream.write(text + "\n")
        self.stream.flush()

    def close(self) -> None:
        self._clear()
