"""A run across several SSH hosts: one torchrun per host, launched by each host's supervisor (the one that keeps a
remote run alive), node i on host i, meeting at the rendezvous the preflight probed on the first host, each node's
process group on the interface the preflight chose for it. The first host streams the run's events here and is
recorded in this computer's history; the others report how their processes ended. When a node fails, every other
node is stopped: nothing is left training anywhere."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Sequence

from ...ground.errors import first_line
from ...ground.events import Emit, Notice, RunFailed, RunFinished
from ...ground.stacks import RankStack
from ..process import PEER_GONE
from ..remote.kernels import RemoteRun
from ..remote.ssh import Remote, RemoteError
from ..run_request import Launch, RunRequest
from .preflight import Preflight

NODE_END_S = 60.0  # how long the other nodes may take to end once the first has


class AcrossRun:
    """A run across `hosts` (`slots` processes each) after their green preflight `checked`, driven as RemoteRun and
    ChildProcess drive theirs: `run` follows it to its end, and from another thread `collect_stacks` asks every
    rank on every host where it is (a run that stopped stepping)."""

    def __init__(self, hosts: Sequence[Remote], checked: Preflight, slots: int, db: str | None = None):
        self.hosts, self.checked, self.slots = list(hosts), checked, slots
        self.nodes = [RemoteRun(host, db=db) for host in self.hosts]
        self.ranks = len(self.hosts) * slots

    @property
    def started(self):
        """The first node's RunStart once its host has started it: where the run's files and record are."""
        return self.nodes[0].started

    def terminate(self) -> None:
        """Stop following every node at once (the window closing on a run that did not stop in time)."""
        for node in self.nodes:
            node.terminate()

    def run(self, request: RunRequest, emit: Emit, stop: threading.Event) -> RunFinished | RunFailed:
        """Train `request`; the terminal event of the run (the first node's, or the failure of the node that failed
        first) is returned and emitted."""
        checked, hosts = self.checked, self.hosts
        if not checked.ok:
            failed = RunFailed(kind="config", message=f"the preflight found {len(checked.red)} problem(s)",
                               hint="fix the red cells (workbench preflight), then train")
            emit(failed)
            return failed
        address, port = checked.rendezvous.rsplit(":", 1)
        requests = [replace(request, launch=Launch(nproc_per_node=self.slots, nnodes=len(hosts), node_rank=rank,
                                                   master_addr=address, master_port=int(port),
                                                   interface=checked.interfaces[rank]))
                    for rank in range(len(hosts))]
        failures: list[tuple[Remote, RunFailed]] = []  # the other nodes that failed, in the order they did

        def node(rank: int) -> None:
            result = self.nodes[rank].run(requests[rank], lambda event: None, stop)
            if isinstance(result, RunFailed) and result.kind != "detached":
                failures.append((hosts[rank], result))
                if not stop.is_set():
                    emit(Notice("error", f"node {rank} on {hosts[rank]} failed: {result.message}; stopping every "
                                         "node"))
                    stop.set()

        others = [threading.Thread(target=node, args=(rank,), name=f"workbench-node-{rank}", daemon=True)
                  for rank in range(1, len(hosts))]
        for thread in others:
            thread.start()

        def forward(event) -> None:
            if not isinstance(event, (RunFinished, RunFailed)):  # the end is said below, every node accounted for
                emit(event)

        result = self.nodes[0].run(requests[0], forward, stop)
        if isinstance(result, RunFailed):
            stop.set()  # the first node failed: the others end too
        for thread in others:
            thread.join(NODE_END_S)
        if isinstance(result, RunFailed) and failures and _symptom(result):
            host, failed = failures[0]  # the first node only saw a peer vanish: the node that failed is the culprit
            result = replace(failed, message=f"{host}: {failed.message}")
        emit(result)
        return result

    def collect_stacks(self) -> list[RankStack]:
        """Every rank's stack and last collectives, every host asked at once; a host that cannot be asked gives each
        of its ranks that reason."""
        def ask(node: int) -> list[RankStack]:
            try:
                return self.nodes[node].collect_stacks()
            except RemoteError as exc:
                return [RankStack(rank=node * self.slots + local, host=str(self.hosts[node]), pid=0,
                                  error=first_line(exc)) for local in range(self.slots)]

        with ThreadPoolExecutor(max_workers=len(self.nodes)) as pool:
            return sorted((stack for stacks in pool.map(ask, range(len(self.nodes))) for stack in stacks),
                          key=lambda stack: stack.rank)


def _symptom(failure: RunFailed) -> bool:
    """A failure that is what every rank sees when a peer on another node goes (its connection closed or reset),
    rather than a failure of its own."""
    return any(symptom in failure.message.lower() for symptom in PEER_GONE)
