"""A run across several SSH hosts: one torchrun per host, launched by each host's supervisor (the one that keeps a
remote run alive), node i on host i, meeting at the rendezvous the preflight probed on the first host, each node's
process group on the interface the preflight chose for it. The first host streams the run's events here and is
recorded in this computer's history; the others report how their processes ended. When a node fails, every other
node is stopped: nothing is left training anywhere."""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import Sequence

from ...ground.events import Emit, Notice, RunFailed, RunFinished
from ..process import PEER_GONE
from ..remote.kernels import RemoteRun
from ..remote.ssh import Remote
from ..run_request import Launch, RunRequest
from .preflight import Preflight

NODE_END_S = 60.0  # how long the other nodes may take to end once the first has


def train_across(request: RunRequest, hosts: Sequence[Remote], checked: Preflight, slots: int, emit: Emit,
                 stop: threading.Event, db: str | None = None) -> RunFinished | RunFailed:
    """Train `request` on `hosts` (`slots` processes each) after a green `checked`; the terminal event of the run
    (the first node's, or the failure of the node that failed first) is returned and emitted."""
    if not checked.ok:
        failed = RunFailed(kind="config", message=f"the preflight found {len(checked.red)} problem(s)",
                           hint="fix the red cells (workbench preflight), then train")
        emit(failed)
        return failed
    address, port = checked.rendezvous.rsplit(":", 1)
    requests = [replace(request, launch=Launch(nproc_per_node=slots, nnodes=len(hosts), node_rank=rank,
                                               master_addr=address, master_port=int(port),
                                               interface=checked.interfaces[rank]))
                for rank in range(len(hosts))]
    failures: list[tuple[Remote, RunFailed]] = []  # the other nodes that failed, in the order they did

    def node(rank: int) -> None:
        result = RemoteRun(hosts[rank], db=db).run(requests[rank], lambda event: None, stop)
        if isinstance(result, RunFailed) and result.kind != "detached":
            failures.append((hosts[rank], result))
            if not stop.is_set():
                emit(Notice("error", f"node {rank} on {hosts[rank]} failed: {result.message}; stopping every node"))
                stop.set()

    others = [threading.Thread(target=node, args=(rank,), name=f"workbench-node-{rank}", daemon=True)
              for rank in range(1, len(hosts))]
    for thread in others:
        thread.start()
    def forward(event) -> None:
        if not isinstance(event, (RunFinished, RunFailed)):  # the end is said below, every node accounted for
            emit(event)

    result = RemoteRun(hosts[0], db=db).run(requests[0], forward, stop)
    if isinstance(result, RunFailed):
        stop.set()  # the first node failed: the others end too
    for thread in others:
        thread.join(NODE_END_S)
    if isinstance(result, RunFailed) and failures and _symptom(result):
        host, failed = failures[0]  # the first node only saw a peer vanish: the node that failed is the culprit
        result = replace(failed, message=f"{host}: {failed.message}")
    emit(result)
    return result


def _symptom(failure: RunFailed) -> bool:
    """A failure that is what every rank sees when a peer on another node goes (its connection closed or reset),
    rather than a failure of its own."""
    return any(symptom in failure.message.lower() for symptom in PEER_GONE)
