"""The window's side of the service kernel: its typed jobs as background tasks, its state as Qt signals.

`kernel.service` is the typed client (core/run/service.py): one method per job, each returning a Future of its
answer. `kernel.ask(slot, future, on_result, on_error)` hands that answer (or its JobError) to the window on the GUI
thread, in a task slot of its own; `kernel.cancel(slot)` asks the slot's job to end early (the finders answer with
what they measured until then). `kernel.on_gui_thread(callback)` is how a job's partial results (the finders'
points, heard on the client's reader thread) reach a widget. The window learns what this machine can run from the
kernel's capabilities, asked again after every restart.

`kernel.move_to(remote)` moves the service kernel to another host (Kernel → Connect to…) or back here (None): the
window's features keep this object and reach the new kernel through it, as after a restart.
"""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any, Callable

from PySide6.QtCore import QObject, Signal, Slot

from ...core.ground.capabilities import Capabilities
from ...core.ground.progress import CopyProgress
from ...core.run.client import KernelClient
from ...core.run.remote.kernels import RemoteKernel
from ...core.run.remote.service import RemoteService
from ...core.run.service import ServiceClient
from ...core.run.remote.ssh import Remote
from ..support.tasks import Tasks

CAPABILITIES_SLOT = "asking what this machine can run"
CLOSING_SLOT = "closing a kernel"  # a kernel left for another is closed off the GUI thread (up to seconds)


class Kernel(QObject):
    stateChanged = Signal(str, str)  # "starting" | "ready" | "crashed" | "failed" | "closed", and how
    capabilitiesChanged = Signal(object)  # a Capabilities, once the kernel has answered
    notice = Signal(str)
    copying = Signal(str, bool)  # a file copied to or from the host: "copying 0.4 of 1.2 MB (33 %)", and whether
    # it is whole (emitted on the copy's thread)
    _relay = Signal(object, object)  # (callback, value): from the client's reader thread to this one

    def __init__(self, tasks: Tasks, client: KernelClient | None = None, parent: QObject | None = None):
        super().__init__(parent)
        self.tasks = tasks
        self.shared = client  # a client handed in (tests share one) outlives this window: "This computer" again
        self.stateChanged.connect(self._on_state)  # emitted on the client's thread: queued to this one
        self._relay.connect(lambda callback, value: callback(value))
        self._listener = self.stateChanged.emit
        self._use(client or KernelClient(start=False), owned=client is None)
        if self.client.ready:
            self._on_state("ready", "")

    def _use(self, client: KernelClient, *, owned: bool, remote: Remote | None = None) -> None:
        """Serve the window's jobs from `client` (started here if it is not yet; on `remote`, files named here are
        copied there and back); its capabilities are asked when it says it is ready."""
        self.client, self.owned = client, owned
        self.service = (ServiceClient(client) if remote is None else
                        RemoteService(client, remote, progress=CopyProgress(self.copying.emit)))
        self.capabilities = Capabilities.unknown()
        self._asked: dict[str, Future] = {}  # slot → its latest job, for cancel()
        client.listen(self._listener)
        client.start()

    def move_to(self, remote: Remote | None) -> None:
        """The service kernel runs on `remote` from now on (None: on this computer again; the shared client if
        one was handed in). The kernel left behind is closed (not a shared one), and whatever it was still doing
        fails; an answer it gives meanwhile (its capabilities) is no longer wanted."""
        if remote is None:
            client, owned = (self.shared, False) if self.shared is not None else (KernelClient(start=False), True)
        else:
            client, owned = KernelClient(spawn=lambda: RemoteKernel(remote), start=False), True
        old, old_owned = self.client, self.owned
        old.unlisten(self._listener)
        self.tasks.drop(CAPABILITIES_SLOT)
        self._use(client, owned=owned, remote=remote)
        self.stateChanged.emit(client.state, client.detail)  # said at once (starting; a shared one: ready, asked)
        if old_owned:
            self.tasks.submit(CLOSING_SLOT, old.close, lambda _done: None, self._no_close)

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

    def _no_close(self, error: BaseException) -> None:
        self.notice.emit(f"could not close the PyTorch kernel left behind: {error}")

    def close(self) -> None:
        self.client.unlisten(self._listener)
        if self.owned:
            self.client.close()
