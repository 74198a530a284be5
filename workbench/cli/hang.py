"""`train`'s watch on a run of several processes: when it stops stepping (--hang-after seconds without a step),
every rank's stack is collected, once for each silence, and printed side by side with the first rank that
differs (core/ground/stacks.py); the run goes on (it may only be slow), and Ctrl+C still stops it."""

from __future__ import annotations

import sys
import threading
import time
from typing import Callable

from ..core.ground.events import Emit, Event
from ..core.ground.hang import StepWatch
from ..core.ground.stacks import RankStack, StacksView, side_by_side

CHECK_S = 1.0  # how often the silence is looked at


class HangReport:
    def __init__(self, collect: Callable[[], list[RankStack]], after_s: float, emit: Emit, stream=sys.stderr):
        """`collect`: the run's ranks' stacks; `emit`: where the events go on to (the progress bar)."""
        self.collect, self.emit, self.stream = collect, emit, stream
        self.watch = StepWatch(after_s)
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._watch, name="workbench-hang-watch", daemon=True)

    def __enter__(self) -> HangReport:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.done.set()
        self.thread.join()

    def __call__(self, event: Event) -> None:
        self.watch.saw(event)
        self.emit(event)

    def _watch(self) -> None:
        while not self.done.wait(CHECK_S):
            silent = self.watch.hung()
            if silent is None:
                continue
            print(f"\nno step for {silent:.0f} s: collecting every rank's stack …", file=self.stream, flush=True)
            asked = time.monotonic()
            try:
                view = StacksView.of(self.collect())
            except Exception as exc:  # the watch must not end the run it watches
                print(f"could not collect the stacks: {exc}", file=self.stream, flush=True)
                continue
            print(f"{len(view.stacks)} rank(s) answered in {time.monotonic() - asked:.1f} s", file=self.stream)
            print("\n".join([view.summary(), *side_by_side(view)]), file=self.stream, flush=True)
