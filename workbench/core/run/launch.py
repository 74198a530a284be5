"""`start_run(request, emit, stop)`: the one way a run starts, for the CLI, the window and the benchmarks.

Where it trains follows from the request's launch alone: several processes → torchrun (node 0 streams rank 0's
events; another node supervises its own ranks), else a fresh run kernel (a pre-started one when given). A run for
another host goes there whole (its supervisor on the host calls start_run again, with the same request). This
module imports no torch: the window calls it. A run in the caller's own process (`where="here"`, for debugging and
measuring) is the kernel side's: `core/kernel/launch.py`, which the CLI and the benchmarks call.
"""

from __future__ import annotations

import threading

from ..ground.events import Emit, RunFailed, RunFinished
from .process import ChildProcess, other_node, start_distributed
from .hosts.across import AcrossRun
from .remote.kernels import RemoteRun
from .run_request import RunRequest


def start_run(request: RunRequest, emit: Emit, stop: threading.Event | None = None, *,
              process: ChildProcess | RemoteRun | AcrossRun | None = None) -> RunFinished | RunFailed:
    """Train `request`; every event goes to `emit` (the terminal one last), and that terminal event is returned.
    `stop` ends the run after its current step. `process`: the kernel (or torchrun) started ahead of time for it,
    a RemoteRun (the run then trains on that host, launched there as it would be here), or an AcrossRun (on a set
    of hosts, one torchrun each)."""
    stop = stop or threading.Event()
    if isinstance(process, (RemoteRun, AcrossRun)):
        return process.run(request, emit, stop)
    launch = request.launch
    if launch.distributed and launch.node_rank != 0:
        return other_node(request, stop)
    if launch.distributed:
        return (process or start_distributed(request)).run(None, emit, stop)
    if launch.where == "here":
        raise ValueError("a run in this process is started by workbench.core.kernel.launch.start_run")
    return (process or ChildProcess()).run(request, emit, stop)
