"""The window's side of the service kernel: its typed jobs as background tasks, its state as Qt signals.

`kernel.service` is the typed client (core/run/service.py): one method per job, each returning a Future of its
answer. `kernel.ask(slot, future, on_result, on_error)` hands that answer (or its JobError) to the window on the GUI
thread, in a task slot of its own; `kernel.cancel(slot)` asks the slot's job to end early (the finders answer with
what they measured until then). `kernel.on_gui_thread(callback)` is how a job's partial results (the finders'
points, heard on the client's reader thread) reach a widget. The window learns what this machine can run from the
kernel's capabilities, asked again after every restart.
"""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any, Callable

from PySide6.QtCore import QObject, Signal, Slot

from ..core.ground.capabilities import Capabilities
from ..core.run.client import KernelClient
from ..core.run.service import ServiceClient
from .tasks import Tasks

CAPABILITIES_SLOT = "asking what this machine can run"


class Kernel(QObject):
    stateChanged = Signal(str, str)  # "starting" | "ready" | "crashed" | "failed" | "closed", and how
    capabilitiesChanged = Signal(object)  # a Capabilities, once the kernel has answered
    notice = Signal(str)
    _relay = Signal(object, object)  # (callback, value): from the client's reader thread to this one

    def __init__(self, tasks: Tasks, client: KernelClient | None = None, parent: QObject | None = None):
        super().__init__(parent)
        self.tasks = tasks
        self.owned = client is None  # a client handed in (tests share one) outlives this window
        self.client = client or KernelClient(start=False)
        self.service = ServiceClient(self.client)
        self.capabilities = Capabilities.unknown()
        self.stateChanged.connect(self._on_state)  # emitted on the client's thread: queued to this one
        self._relay.connect(lambda callback, value: callback(value))
        self._asked: dict[str, Future] = {}  # slot → its latest job, for cancel()
        self._listener = self.stateChanged.emit
        self.client.listen(self._listener)
        self.client.start()
        if self.client.ready:
            self._on_state("ready", "")

    @property
    def state(self) -> str:
        return self.client.state

    def ask(self, slot: str, future: Future, on_result: Callable[[Any], None],
            on_error: Callable[[BaseException], None], on_cancelled: Callable[[], None] | None = None) -> None:
        """Wait for a service job's answer (a Future from `service`) in `slot`; a newer job in the slot supersedes
        it. The outcome comes to one of the callbacks, on the GUI thread."""
        self._asked[slot] = future
        self.tasks.watch(slot, future, on_result, on_error, on_cancelled)

    def cancel(self, slot: str) -> bool:
        """Ask the slot's latest job to stop early; its answer still comes to its callbacks. False when it has
        already been answered (nothing to stop)."""
        future = self._asked.get(slot)
        return future is not None and self.service.cancel(future)

    def on_gui_thread(self, callback: Callable[[Any], None]) -> Callable[[Any], None]:
        """`callback`, called on the GUI thread whichever thread calls the returned function."""
        return lambda value: self._relay.emit(callback, value)

    @Slot(str, str)
    def _on_state(self, state: str, detail: str) -> None:
        if state == "ready":
            self.ask(CAPABILITIES_SLOT, self.service.capabilities(), self._capabilities, self._no_capabilities)

    def _capabilities(self, capabilities: Capabilities) -> None:
        self.capabilities = capabilities
        self.capabilitiesChanged.emit(capabilities)

    def _no_capabilities(self, error: BaseException) -> None:
        self.notice.emit(f"could not ask the kernel what this machine can run: {error}")

    def close(self) -> None:
        self.client.unlisten(self._listener)
        if self.owned:
            self.client.close()
