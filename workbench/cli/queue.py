"""`workbench queue …`: line runs up (here or on a host) and let them train without a window (history/queue.py,
run/queue_worker.py). Everything but `work` reads and writes the history only: no PyTorch is loaded."""

from __future__ import annotations

import argparse
import signal
import threading
import time

from ..core.history.queue import RUNNING, AcrossHosts, QueueEntry, RunQueue
from ..core.history.queue_eta import ends_in
from ..core.run.remote.ssh import Remote
from .common import EXIT_INTERRUPTED
from .options import config_from_args


def cmd_queue_ls(args: argparse.Namespace) -> int:
    with RunQueue(args.db) as queue:
        entries, paused = queue.entries(), queue.paused
        ends = ends_in(entries, queue.estimates(entries), time.time())
    if not entries:
        print("the queue is empty: workbench queue add [train options] lines a run up")
        return 0
    print(f"{'id':>4}  {'state':<11} {'where':<24} {'run':>5}  {'best acc':>8}  {'ends in':>9}  what")
    for entry in entries:
        print(_line(entry, ends.get(entry.id, "")))
    waiting = sum(1 for entry in entries if entry.state == "queued")
    print(f"{waiting} queued" + (" · PAUSED: nothing starts until workbench queue resume" if paused else ""))
    if any(entry.handed and entry.state == RUNNING for entry in entries):
        print("^ trained by its host on its own: `workbench queue work --host HOST` (or the window) takes it back")
    return 0


def _line(entry: QueueEntry, ends: str) -> str:
    best = f"{entry.best_val_accuracy:.2%}" if entry.best_val_accuracy is not None else "—"
    run = str(entry.run_id) if entry.run_id is not None else "—"
    state = entry.state + ("*" if entry.state == RUNNING and entry.cancel else "") + (
        "^" if entry.state == RUNNING and entry.handed else "")
    why = f"  ({entry.error})" if entry.error else ""
    return f"{entry.id:>4}  {state:<11} {entry.where[:24]:<24} {run:>5}  {best:>8}  {ends:>9}  {entry.title}{why}"


def place_of(hosts: str | None) -> str:
    """--host's place in the queue: "" for this computer, a host as Remote names it, or a host set's (a, b, …)."""
    return ",".join(str(Remote.parse(host.strip())) for host in hosts.split(",")) if hosts else ""


def cmd_queue_add(args: argparse.Namespace) -> int:
    config = config_from_args(args)
    place = place_of(args.host)
    across = AcrossHosts(args.processes, args.rdzv_port) if "," in place else None
    with RunQueue(args.db) as queue:
        entry_id = queue.add(config, place=place, python=args.remote_python, label=args.label or "", across=across)
        entry = queue.entry(entry_id)
    print(f"queued entry {entry_id} on {entry.where}: {entry.title}")
    return 0


def cmd_queue_change(args: argparse.Namespace) -> int:
    """rm, move, cancel, retry: one entry each."""
    with RunQueue(args.db) as queue:
        if args.queue_command == "rm":
            queue.remove(args.entry)
            print(f"removed entry {args.entry}")
        elif args.queue_command == "move":
            queue.move(args.entry, args.position - 1)
            print(f"entry {args.entry} is now queued at {args.position}")
        elif args.queue_command == "cancel":
            state = queue.cancel(args.entry)
            print(f"entry {args.entry}: " + ("its runner stops it after its step" if state == RUNNING else state))
        elif args.resume:
            checkpoint = queue.resume(args.entry)
            print(f"entry {args.entry} is queued again, to go on from {checkpoint}")
        else:
            queue.retry(args.entry)
            print(f"entry {args.entry} is queued again")
    return 0


def cmd_queue_pause(args: argparse.Namespace) -> int:
    with RunQueue(args.db) as queue:
        queue.pause(args.paused)
    print("the queue is paused: no entry starts (a running one goes on)" if args.paused else "the queue goes on")
    return 0


def cmd_queue_work(args: argparse.Namespace) -> int:
    """Train the queue's entries of this computer (or --host's) until none is left (--wait: until Ctrl+C)."""
    from ..core.domain.devices import cuda_device_count
    from ..core.run.queue_worker import work

    stop = threading.Event()
    stopped = []

    def ctrl_c(*_):
        stopped.append(True)
        stop.set()

    previous = {sig: signal.signal(sig, ctrl_c) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        started = time.monotonic()
        place = place_of(args.host)
        if place and "," not in place:  # what the host trained on its own first: recorded here, in order
            from ..core.run.queue_handover import collect

            taken = collect(args.db, place, stop, say=lambda line: print(line, flush=True))
            if taken.problem:
                print(taken.problem, flush=True)
        done = work(args.db, stop, cuda_devices=cuda_device_count(), place=place, wait=args.wait,
                    say=lambda line: print(line, flush=True), parallel=args.parallel)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    print(f"{done.summary()} ({time.monotonic() - started:.0f} s)")
    return EXIT_INTERRUPTED if stopped else 0


def cmd_queue_handover(args: argparse.Namespace) -> int:
    """Hand the host's queued entries over to the host, which trains them with no connection to this computer."""
    from ..core.run.queue_handover import hand_over

    place = str(Remote.parse(args.host))
    ids, said = hand_over(args.db, place, args.remote_python)
    print(said or f"nothing queued for {place} to hand over")
    if ids:
        print(f"`workbench queue work --host {place}` takes their runs back into this history (or the window does)")
    return 0


def add_queue_parser(sub) -> None:
    """`queue` and its actions (ls when none is given)."""
    from .options import add_config_options, add_db_option

    queue = sub.add_parser("queue", help="line runs up, here or on a host, and train them without a window: ls, "
                                         "add, rm, move, cancel, retry, pause, resume, work, handover")
    add_db_option(queue)
    queue.set_defaults(handler=cmd_queue_ls)
    actions = queue.add_subparsers(dest="queue_command", metavar="ACTION")
    actions.add_parser("ls", help="the entries, in order, with their state").set_defaults(handler=cmd_queue_ls)
    add = actions.add_parser("add", help="queue a run: the options of train")
    add_config_options(add)
    add.add_argument("--host", default=None, metavar="[USER@]HOST[:PORT][,HOST…]",
                     help="train it there, over SSH; several hosts (by commas): across them, as train --hosts does")
    add.add_argument("--processes", type=int, default=1, metavar="N",
                     help="across several hosts: processes a host (default: 1)")
    add.add_argument("--rdzv-port", type=int, default=29500, help="across several hosts: the rendezvous port on the "
                                                                  "first (default: 29500)")
    add.add_argument("--remote-python", default="python3", metavar="COMMAND",
                     help="the host's Python that has workbench installed (default: python3)")
    add.add_argument("--label", default=None, help="what to call it in the queue")
    add.set_defaults(handler=cmd_queue_add)
    for action, words in (("rm", "take an entry out"), ("cancel", "cancel a queued entry, or stop a running one"),
                          ("retry", "queue a failed, cancelled or interrupted entry again")):
        one = actions.add_parser(action, help=words)
        one.add_argument("entry", type=int)
        if action == "retry":
            one.add_argument("--resume", action="store_true",
                             help="go on from its run's checkpoint (an interrupted or cancelled entry)")
        one.set_defaults(handler=cmd_queue_change, resume=False)
    move = actions.add_parser("move", help="put a queued entry at a position among the queued (1: next)")
    move.add_argument("entry", type=int)
    move.add_argument("position", type=int)
    move.set_defaults(handler=cmd_queue_change)
    for action, paused in (("pause", True), ("resume", False)):
        actions.add_parser(action, help="no entry starts until resume" if paused else "entries start again"
                           ).set_defaults(handler=cmd_queue_pause, paused=paused)
    work = actions.add_parser("work", help="train the queued entries here (or --host's) until none is left")
    work.add_argument("--host", default=None, metavar="[USER@]HOST[:PORT][,HOST…]",
                      help="work that host's entries (several: those queued across them)")
    work.add_argument("--wait", action="store_true", help="then wait for more (a service: until Ctrl+C/SIGTERM)")
    work.add_argument("--parallel", type=int, default=None, metavar="N",
                      help="train N entries at once, each on a CUDA device of its own (default: one per CUDA "
                           "device here, one at a time on the CPU or a host)")
    work.set_defaults(handler=cmd_queue_work)
    handover = actions.add_parser("handover", help="hand a host's queued entries over to the host: it trains them "
                                                   "with no connection to this computer")
    handover.add_argument("--host", required=True, metavar="[USER@]HOST[:PORT]")
    handover.add_argument("--remote-python", default=None, metavar="COMMAND",
                          help="the host's Python that has workbench installed (default: the one each entry was "
                               "queued with)")
    handover.set_defaults(handler=cmd_queue_handover)
