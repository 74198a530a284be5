"""Before a run across several hosts starts anything: every host × every check, each within a time bound and with
what to do when it fails. Nothing is launched until every cell is green.

The checks, host by host (each host answers over its own SSH session, the hosts at once):
- SSH login: the host answers its facts as Workbench; when it does not, the first contact's own checks
  (`Remote.hello`: a login, a banner, a missing Workbench) say which step failed;
- versions: Python, Workbench and torch as installed there, the same on every host (and the protocol this
  computer speaks); a mismatch names both versions;
- devices: what its processes train on, enough GPUs for its processes (one each), or the CPU with Gloo;
- interface: the network interface it reaches the first host by (its route to the address the first host was
  reached at, or the one the user chose), which its NCCL/Gloo sockets are told to use;
- rendezvous port: the first host binds the port on that address, for real, and every other host connects to it;
- clock: its clock against this computer's, the session's round trip taken out; more than MAX_SKEW_S apart is
  refused (the per-rank view lines ranks up by their wall times).
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Sequence

from ...ground.appinfo import version
from ...ground.codec import Record
from ..protocol import PROTOCOL_VERSION
from ..remote.probe import HostFacts, Reached
from ..remote.ssh import Remote, RemoteError

CHECKS = ("login", "versions", "devices", "interface", "rendezvous", "clock")
TITLES = {"login": "SSH login", "versions": "versions", "devices": "devices", "interface": "network interface",
          "rendezvous": "rendezvous port", "clock": "clock"}
ANSWER_S = 30.0  # a host's facts, or the port probe's first answer
LISTEN_S = 30.0  # how long the first host keeps the probed port open for the others
MAX_SKEW_S = 2.0
NOT_CHECKED = "not checked: no login"


@dataclass(frozen=True)
class Cell(Record):
    host: str
    check: str  # one of CHECKS
    ok: bool
    detail: str
    fix: str = ""

    @property
    def said(self) -> str:
        """'host · check: what it found': the cell as a line of text (the CLI's, the dialog's, a queued run's)."""
        return f"{self.host} · {TITLES[self.check]}: {self.detail}"


@dataclass(frozen=True)
class Preflight(Record):
    hosts: tuple[str, ...]
    cells: tuple[Cell, ...]
    rendezvous: str  # address:port the hosts meet at ("" when the first host could not be reached)
    interfaces: tuple[str, ...]  # the interface each host uses ("" where it is not known)

    @property
    def ok(self) -> bool:
        return all(cell.ok for cell in self.cells)

    def cell(self, host: str, check: str) -> Cell:
        return next(c for c in self.cells if c.host == host and c.check == check)

    @property
    def red(self) -> list[Cell]:
        return [cell for cell in self.cells if not cell.ok]


def preflight(hosts: Sequence[Remote], port: int, *, slots: Sequence[int], device: str = "auto",
              interfaces: dict[str, str] | None = None) -> Preflight:
    """Check `hosts` (the first is the rendezvous) for a run of `slots[i]` processes on host i, on `device` ("auto",
    "cpu" or "cuda"); `interfaces`: the interface the user chose for a host (by its address as given)."""
    names = [str(host) for host in hosts]
    cells: dict[tuple[str, str], Cell] = {}
    facts: dict[str, HostFacts] = {}
    skews: dict[str, float] = {}

    def ask(host: Remote, toward: str) -> None:
        """One session for a healthy host (its facts); the first contact's own checks say what failed otherwise."""
        name = str(host)
        try:
            started = time.time()
            answer = _ask(host, "facts", toward)
            facts[name] = fact = HostFacts.from_dict(answer)
            skews[name] = fact.time - (started + time.time()) / 2
            cells[name, "login"] = Cell(name, "login", True, f"Workbench {fact.workbench} on {fact.hostname}")
        except (RemoteError, ValueError) as failed:
            error: Exception = failed
            try:
                host.hello(ANSWER_S)  # login, banner, Workbench there, its protocol: which step failed
            except RemoteError as why:
                error = why
            cells[name, "login"] = Cell(name, "login", False, str(error), getattr(error, "hint", "") or
                                        "install the same Workbench there as here (it answers the preflight)")

    ask(hosts[0], "self")  # first: the others are asked about their route to where it was reached
    first = facts.get(names[0])
    address = first.ssh_address if first is not None else ""
    if address:
        with ThreadPoolExecutor(max_workers=max(len(hosts) - 1, 1)) as pool:
            list(pool.map(lambda host: ask(host, address), hosts[1:]))
    else:
        for name in names[1:]:
            cells[name, "login"] = Cell(name, "login", False, f"not checked: {names[0]} (the rendezvous) was not "
                                                              "reached", "fix the first host first")
    chosen = _interfaces(names, facts, interfaces or {}, cells)
    _versions(names, facts, cells)
    _devices(names, facts, slots, device, cells)
    _clocks(names, skews, facts, cells)
    _rendezvous(hosts, names, facts, address, port, cells)
    for name in names:
        for check in CHECKS:
            cells.setdefault((name, check), Cell(name, check, False, NOT_CHECKED, "fix the SSH login first"))
    return Preflight(tuple(names), tuple(cells[name, check] for name in names for check in CHECKS),
                     f"{address}:{port}" if address else "", tuple(chosen))


def _ask(host: Remote, *args: str) -> dict:
    session = host.open(*args)
    try:
        message = session.read(ANSWER_S, f"while asking {host} ({args[0]})")
    finally:
        session.close()
    if message is None:
        raise RemoteError("session", f"{host} did not answer within {ANSWER_S:.0f} s")
    return message


def _interfaces(names, facts, chosen_by_user, cells) -> list[str]:
    chosen = []
    for name in names:
        fact = facts.get(name)
        if fact is None:
            chosen.append("")
            continue
        wanted = chosen_by_user.get(name)
        if wanted:
            ok = wanted in fact.interfaces
            cells[name, "interface"] = Cell(name, "interface", ok, f"{wanted} (chosen)" if ok else
                                            f"{name} has no interface {wanted} (it has {', '.join(fact.interfaces)})",
                                            "" if ok else "choose one of those, or leave it out to have it found")
            chosen.append(wanted if ok else "")
        elif fact.interface:
            cells[name, "interface"] = Cell(name, "interface", True, f"{fact.interface} ({fact.address})")
            chosen.append(fact.interface)
        else:
            cells[name, "interface"] = Cell(name, "interface", False, f"{name} has no route to the first host",
                                            "check its network, or choose an interface for it")
            chosen.append("")
    return chosen


def _versions(names, facts, cells) -> None:
    known = [name for name in names if name in facts]
    if not known:
        return
    reference = facts[known[0]]
    here = version()
    for name in known:
        fact = facts[name]
        said = f"Python {fact.python_version} · Workbench {fact.workbench} · torch {fact.torch or 'not installed'}"
        problems = []
        if not fact.torch:
            problems.append("torch is not installed")
        for what, mine, theirs in (("Python", _minor(fact.python_version), _minor(reference.python_version)),
                                   ("Workbench", fact.workbench, reference.workbench),
                                   ("torch", fact.torch, reference.torch)):
            if mine != theirs and fact.torch and reference.torch:
                problems.append(f"{what} {mine} here, {theirs} on {known[0]}")
        if fact.protocol != PROTOCOL_VERSION:
            problems.append(f"protocol {fact.protocol}, this computer speaks {PROTOCOL_VERSION}")
        fix = (f"install the same on every host: pip install workbench=={reference.workbench or here} "
               f"torch=={reference.torch or '…'} (Python {_minor(reference.python_version)})") if problems else ""
        cells[name, "versions"] = Cell(name, "versions", not problems, "; ".join(problems) or said, fix)


def _minor(python_version: str) -> str:
    return ".".join(python_version.split(".")[:2])


def _devices(names, facts, slots, device, cells) -> None:
    known = [name for name in names if name in facts]
    cuda = device == "cuda" or (device == "auto" and known and all(facts[n].cuda_devices for n in known))
    for name in known:
        fact, wanted = facts[name], slots[names.index(name)]
        if not cuda:
            cells[name, "devices"] = Cell(name, "devices", True, f"{wanted} process(es) on the CPU with Gloo, "
                                                                 f"{fact.cpus} cores")
        elif fact.cuda_devices >= wanted:
            cells[name, "devices"] = Cell(name, "devices", True, f"{wanted} of its {fact.cuda_devices} GPUs, NCCL")
        else:
            cells[name, "devices"] = Cell(
                name, "devices", False, f"{wanted} process(es) asked for, {fact.cuda_devices} GPU(s) there",
                f"give it slots={fact.cuda_devices} or fewer" if fact.cuda_devices else
                "train on the CPU (--device cpu), or leave this host out")


def _clocks(names, skews, facts, cells) -> None:
    for name in names:
        if name not in facts:
            continue
        skew = skews[name]
        ok = abs(skew) <= MAX_SKEW_S
        side = "ahead of" if skew > 0 else "behind"
        cells[name, "clock"] = Cell(name, "clock", ok, f"{abs(skew):.1f} s {side} this computer's",
                                    "" if ok else "turn its time sync on (timedatectl set-ntp true)")


def _rendezvous(hosts, names, facts, address, port, cells) -> None:
    """The first host binds the port on `address` and waits; every other host connects to it, at once."""
    if not address or names[0] not in facts:
        return
    first = names[0]
    try:
        session = hosts[0].open("listen", address, str(port), str(LISTEN_S))
    except RemoteError as exc:
        cells[first, "rendezvous"] = Cell(first, "rendezvous", False, str(exc), exc.hint)
        return
    try:
        bound = Reached.from_dict(session.read(ANSWER_S, "while binding the rendezvous port") or {})
        cells[first, "rendezvous"] = Cell(first, "rendezvous", bound.ok, bound.detail, "" if bound.ok else
                                          f"choose another port (--rdzv-port), or stop what holds {port} there")
        if not bound.ok:
            for name in names[1:]:
                if name in facts:
                    cells[name, "rendezvous"] = Cell(name, "rendezvous", False, f"not checked: {first} could not "
                                                                               "bind the port", "see its cell")
            return
        lock = threading.Lock()

        def reach(host: Remote) -> None:
            name = str(host)
            if name not in facts:
                return
            try:
                reached = Reached.from_dict(_ask(host, "reach", address, str(port)))
                cell = Cell(name, "rendezvous", reached.ok, reached.detail, "" if reached.ok else
                            f"let {name} reach port {port} of {first} (its firewall), or choose the interface")
            except (RemoteError, ValueError) as exc:
                cell = Cell(name, "rendezvous", False, str(exc), getattr(exc, "hint", ""))
            with lock:
                cells[name, "rendezvous"] = cell

        with ThreadPoolExecutor(max_workers=max(len(hosts) - 1, 1)) as pool:
            list(pool.map(reach, hosts[1:]))
    except (RemoteError, ValueError) as exc:
        cells[first, "rendezvous"] = Cell(first, "rendezvous", False, str(exc), getattr(exc, "hint", ""))
    finally:
        session.close()


def matrix_lines(result: Preflight) -> list[str]:
    """The matrix as text: a row a host, ✓ or ✗ a check; then each red cell with what to do."""
    width = max(len(name) for name in result.hosts)
    lines = [f"{'host':<{width}}  " + "  ".join(f"{TITLES[check]:^{len(TITLES[check])}}" for check in CHECKS)]
    for name in result.hosts:
        marks = [("✓" if result.cell(name, check).ok else "✗").center(len(TITLES[check])) for check in CHECKS]
        lines.append(f"{name:<{width}}  " + "  ".join(marks))
    for name in result.hosts:
        for check in CHECKS:
            cell = result.cell(name, check)
            lines.append(f"{'✓' if cell.ok else '✗'} {cell.said}" + (f"\n    → {cell.fix}" if cell.fix else ""))
    return lines
