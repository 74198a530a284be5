"""The window's side of the service kernel: calls as background tasks, its state as Qt signals.

`kernel.call(slot, job, args, on_done)` sends `job` to the kernel at once (in the order of the calls) and waits for
the answer as a Tasks job on a pool thread; `on_done` gets the answer (or the JobError) on the GUI thread, and
`on_progress` the job's partial results (a job that reports as it goes), on the GUI thread too. `kernel.cancel(slot)`
asks the slot's job to end early (the finders answer with what they measured until then). The window learns what
this machine can run from the kernel's `capabilities` answer, asked again after every restart.
"""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any, Callable

from PySide6.QtCore import QObject, Signal, Slot

from ..core.ground.capabilities import Capabilities
from ..core.run.client import KernelClient
from .tasks import Tasks


class Kernel(QObject):
    stateChanged = Signal(str, str)  # "starting" | "ready" | "crashed" | "failed" | "closed", and how
    capabilitiesChanged = Signal(object)  # a Capabilities, once the kernel has answered
    notice = Signal(str)
    _progress = Signal(object, object)  # (callback, partial result): from the client's reader thread to this one

    def __init__(self, tasks: Tasks, client: KernelClient | None = None, parent: QObject | None = None):
        super().__init__(parent)
        self.tasks = tasks
        self.owned = client is None  # a client handed in (tests share one) outlives this window
        self.client = client or KernelClient(start=False)
        self.capabilities = Capabilities.unknown()
        self.stateChanged.connect(self._on_state)  # emitted on the client's thread: queued to this one
        self._progress.connect(lambda callback, partial: callback(partial))
        self._calls: dict[str, Future] = {}  # slot → its latest call, for cancel()
        self._listener = self.stateChanged.emit
        self.client.listen(self._listener)
        self.client.start()
        if self.client.ready:
            self._on_state("ready", "")

    @property
    def state(self) -> str:
        return self.client.state

    def call(self, slot: str, job: str, args: dict[str, Any], on_done: Callable[[Any], None],
             on_progress: Callable[[Any], None] | None = None) -> None:
        relay = None if on_progress is None else (lambda partial: self._progress.emit(on_progress, partial))
        future = self._calls[slot] = self.client.call(job, relay, **args)  # a line on a local socket: no wait
        self.tasks.submit(slot, future.result, on_done)

    def cancel(self, slot: str) -> bool:
        """Ask the slot's latest job to stop early; its answer still comes to its `on_done`. False when it has
        already been answered (nothing to stop)."""
        future = self._calls.get(slot)
        return future is not None and self.client.cancel(future)

    @Slot(str, str)
    def _on_state(self, state: str, detail: str) -> None:
        if state == "ready":
            self.call("capabilities", "capabilities", {}, self._capabilities)

    def _capabilities(self, result) -> None:
        if isinstance(result, Exception):
            self.notice.emit(f"could not ask the kernel what this machine can run: {result}")
            return
        self.capabilities = Capabilities.from_dict(result)
        self.capabilitiesChanged.emit(self.capabilities)

    def close(self) -> None:
        self.client.unlisten(self._listener)
        if self.owned:
            self.client.close()
