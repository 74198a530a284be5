"""`start_run` for the processes that may train in themselves — the CLI and the benchmarks: `where="here"` trains the
request in this very process (the engine, and PyTorch with it, imported then); every other request goes to
`run.launch.start_run`, as the window's runs do."""

from __future__ import annotations

import threading

from ..ground.events import Emit, RunFailed, RunFinished
from ..run import launch
from ..run.process import ChildProcess
from ..run.remote.kernels import RemoteRun
from ..run.run_request import RunRequest


def start_run(request: RunRequest, emit: Emit, stop: threading.Event | None = None, *,
              process: ChildProcess | RemoteRun | None = None) -> RunFinished | RunFailed:
    """As `run.launch.start_run`, and a request `where="here"` trains here."""
    if request.launch.where == "here" and process is None:
        from .run_files import run_recorded

        return run_recorded(request, sinks=(emit,), stop=stop or threading.Event())
    return launch.start_run(request, emit, stop, process=process)
