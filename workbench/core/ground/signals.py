"""What the user can ask of a run while it trains, beside stopping it: one object the kernel's control thread sets
and the engine reads at its read-backs (never per step)."""

from __future__ import annotations

import threading


class RunSignals(threading.Event):
    """A run's stop flag (set: stop after this step), carrying the user's requests during the run as well."""

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self._profile_steps = 0

    def request_profile(self, steps: int) -> None:
        """Profile the next `steps` steps (the latest request wins)."""
        with self._lock:
            self._profile_steps = steps

    def take_profile_request(self) -> int:
        """The steps asked for since the last call; 0 when none."""
        with self._lock:
            steps, self._profile_steps = self._profile_steps, 0
        return steps
