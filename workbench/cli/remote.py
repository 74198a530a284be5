"""`workbench train --host HOST` and `workbench attach HOST [RUN]`: runs on another machine, followed from this one.

The run trains on the host under a supervisor of its own (core/run/remote.py), so this terminal can close, sleep or
lose the network: the run goes on, and `attach` follows it again with every event it missed. Torch-free here: the
host's kernel has PyTorch, this side only reads events.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import threading

from ..core.ground.events import RunFailed
from ..core.ground.progress import CopyProgress, failure_line
from ..core.ground.results_text import finished_lines
from ..core.run.remote.kernels import RemoteRun, fetch, host_runs
from ..core.run.run_request import Launch, RunRequest
from ..core.run.remote.ssh import Remote
from .common import EXIT_INTERRUPTED, EXIT_RUN_FAILED, EXIT_USAGE, fail
from .progress import ProgressBar


def connect(address: str, python: str) -> Remote:
    """The host after its first contact (version and protocol checked), said in one line on stderr."""
    remote = Remote.parse(address, python)
    hello = remote.hello()
    print(f"connected to {remote} ({hello.hostname}): workbench {hello.workbench}, Python {hello.python_version}",
          file=sys.stderr)
    return remote


def train_remote(args: argparse.Namespace, config) -> int:
    """The run on the host; `--out` (optional) is where its folder is copied back here at the end."""
    remote = connect(args.host, args.remote_python)
    launch = Launch(args.nproc_per_node, args.nnodes, args.node_rank, args.master_addr, args.master_port)
    request = RunRequest(config, out_dir="", db=args.db, launch=launch)  # the host gives it a folder of its own
    run = RemoteRun(remote, db=args.db)
    return follow(run, lambda bar, stop: run.run(request, bar.update, stop), args.out, ctrl_c_stops=True)


def cmd_attach(args: argparse.Namespace) -> int:
    """Follow a run on the host again: RUN, or the newest one still training; without one, list them."""
    remote = connect(args.host, args.remote_python)
    runs = host_runs(remote)
    key = args.run or next((info.key for info in reversed(runs) if info.status == "running"), None)
    if key is None:
        if not runs:
            print(f"{remote} has no runs started from another machine")
            return 0
        for info in runs:
            print(f"{info.key}  {info.status:<9} {info.events:>6} events  {info.dataset}, {info.epochs} epoch(s)  "
                  f"{info.out_dir}")
        print(f"none is training: `workbench attach {remote} RUN` replays one")
        return 0
    run = RemoteRun(remote, db=args.db)
    return follow(run, lambda bar, stop: run.attach(key, bar.update, stop), None, ctrl_c_stops=False)


def cmd_preflight(args: argparse.Namespace) -> int:
    """Every host × every check of a run across hosts, as a matrix; exit 0 only when all are green."""
    _remotes, slots, result = _preflight(args, args.device)
    if result is None:
        return EXIT_USAGE
    if result.ok:
        print(f"every check passed: {len(result.hosts)} hosts can train together ({slots} process(es) each), "
              f"meeting at {result.rendezvous}")
        return 0
    print(f"{len(result.red)} check(s) failed: nothing was started")
    return EXIT_USAGE


def train_across_hosts(args: argparse.Namespace, config) -> int:
    """`train --hosts`: the preflight, then one torchrun per host (core/run/hosts/across.py), followed here."""
    from ..core.run.hosts.across import AcrossRun
    from .hang import HangReport

    remotes, slots, checked = _preflight(args, config.device if config.device in ("cpu", "cuda") else "auto")
    if checked is None:
        return EXIT_USAGE
    if not checked.ok:
        return fail(f"{len(checked.red)} preflight check(s) failed: nothing was started",
                    "fix the red cells above, then train again")
    request = RunRequest(config, out_dir="", db=args.db, launch=Launch())  # each host's node gets its launch
    bar, stop = ProgressBar(sys.stderr), threading.Event()
    previous = signal.signal(signal.SIGINT, lambda *_: stop.set())  # Ctrl+C: every node stops after its step
    try:
        across = AcrossRun(remotes, checked, slots, db=args.db)
        with HangReport(across.collect_stacks, args.hang_after, bar.update) as watched:
            result = across.run(request, watched, stop)
    finally:
        signal.signal(signal.SIGINT, previous)
    bar.close()
    if isinstance(result, RunFailed):
        return fail(failure_line(result), code=EXIT_RUN_FAILED)
    for line in finished_lines(result):
        print(line)
    print(f"the run's files are on {remotes[0]} (node 0)")
    return EXIT_INTERRUPTED if result.stopped else 0


def _preflight(args: argparse.Namespace, device: str):
    """(the hosts as Remotes, processes a host, the preflight) of --hosts or --hostfile, its matrix printed; the
    preflight is None when the hosts cannot be checked as given (said on stderr)."""
    from ..core.run.hosts.host_set import parse_hosts, read_hostfile
    from ..core.run.hosts.preflight import matrix_lines, preflight

    specs = parse_hosts(args.hosts) if args.hosts else read_hostfile(args.hostfile)
    remotes = [Remote.parse(spec.address, spec.python or args.remote_python) for spec in specs]
    slots = {spec.slots or args.nproc_per_node for spec in specs}
    if len(slots) > 1:
        fail("every host runs the same number of processes (torchrun's static rendezvous)",
             f"give them the same slots=N: now {', '.join(map(str, sorted(slots)))}")
        return remotes, 0, None
    interfaces = {}
    for choice in args.iface:
        host, _, interface = choice.partition("=")
        if not interface or host not in {spec.address for spec in specs}:
            fail(f"--iface {choice}: not HOST=INTERFACE for one of the hosts", "e.g. --iface gpu-b=eth1")
            return remotes, 0, None
        interfaces[str(Remote.parse(host, args.remote_python))] = interface
    [count] = slots
    result = preflight(remotes, args.rdzv_port, slots=[count] * len(specs), device=device, interfaces=interfaces)
    print("\n".join(matrix_lines(result)))
    return remotes, count, result


def follow(run: RemoteRun, start, copy_to: str | None, *, ctrl_c_stops: bool) -> int:
    """Drive `start(bar, stop)` with a progress bar. The terminal closing (SIGHUP) leaves the run training on the
    host; Ctrl+C stops it after its step when `ctrl_c_stops` (train), else — and a second time — leaves it
    running (attach); SIGTERM stops it, and a second SIGTERM (the stop did not get through) stops following it."""
    bar = ProgressBar(sys.stderr)
    stop = threading.Event()
    with _signals(run, stop, ctrl_c_stops):
        result = start(bar, stop)
    bar.close()
    if isinstance(result, RunFailed) and result.kind == "detached":
        print(f"{result.message} — {result.hint}", file=sys.stderr)
        return EXIT_INTERRUPTED
    if isinstance(result, RunFailed):
        code = EXIT_USAGE if result.kind in ("config", "data", "io", "remote") else EXIT_RUN_FAILED
        return fail(failure_line(result), code=code)
    for line in finished_lines(result):
        print(line)
    print(f"the run's files are on {run.remote}: {run.started.out_dir}")
    if copy_to:
        copied = fetch(run.remote, run.started.out_dir, copy_to,
                       CopyProgress(lambda text, _whole: print(f"\r{text}", end="", file=sys.stderr, flush=True)))
        print(f"\ncopied them to {copied}", file=sys.stderr)
    return EXIT_INTERRUPTED if result.stopped else 0


@contextlib.contextmanager
def _signals(run: RemoteRun, stop: threading.Event, ctrl_c_stops: bool):
    def handle(signum, frame) -> None:
        if (signum == signal.SIGTERM and not stop.is_set()) or (signum == signal.SIGINT and ctrl_c_stops
                                                                 and not stop.is_set()):
            stop.set()
            print("\nstopping after this step (Ctrl+C again leaves it running on the host)…", file=sys.stderr)
        else:
            run.terminate()  # stop following; the host goes on

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    names = ("SIGINT", "SIGTERM", "SIGHUP")
    previous = {getattr(signal, name): signal.signal(getattr(signal, name), handle)
                for name in names if hasattr(signal, name)}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
