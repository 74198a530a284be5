"""What a host says about itself before a run across several hosts (the preflight, core/run/hosts/preflight.py), on
the host's side of an SSH session. Torch-free and quick: versions come from the installed packages' metadata (torch
is not imported: that takes seconds), CUDA devices from the NVIDIA driver's folder, the route from the kernel's own
choice of source address (a UDP socket connected, nothing sent).

`listen` and `reach` probe the rendezvous port for real: the first host binds it on the address the others will be
given and accepts for a bounded time; each other host connects to it. Nothing else listens, and only while probing.
"""

from __future__ import annotations

import os
import select
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import BinaryIO

from ...ground.codec import Record
from ..protocol import PROTOCOL_VERSION

NVIDIA_GPUS = Path("/proc/driver/nvidia/gpus")  # one folder per GPU the driver sees
REACH_TIMEOUT_S = 3.0  # a connection to the rendezvous port that takes longer is a firewall dropping it


@dataclass(frozen=True)
class HostFacts(Record):
    """A host's own account of itself, for the preflight's checks."""

    hostname: str
    workbench: str
    protocol: int
    python_version: str  # major.minor.micro
    torch: str  # "" when torch is not installed
    cuda_devices: int  # GPUs the NVIDIA driver sees (0 without one)
    cpus: int
    time: float  # its clock (Unix seconds) when it answered
    ssh_address: str  # the address this SSH session reached it at: what the other hosts are told to use
    interface: str  # the network interface it would use toward `toward` ("" when it could not tell)
    address: str  # its own address on that interface
    interfaces: tuple[str, ...]  # every interface it has, for one the user chooses


@dataclass(frozen=True)
class Reached(Record):
    """The rendezvous port probed: `ok`, and what happened in words (the error when not)."""

    ok: bool
    detail: str
    seconds: float


def facts(toward: str | None) -> HostFacts:
    """`toward`: the address its route is asked for; "self": the address this session reached it at (the first
    host's interface is the one that holds the address the others will be given)."""
    from ...ground.appinfo import version

    ssh = os.environ.get("SSH_CONNECTION", "").split()
    ssh_address = ssh[2] if len(ssh) >= 4 else ""
    toward = ssh_address if toward == "self" else toward
    interface, address = route(toward) if toward else ("", "")
    return HostFacts(hostname=socket.gethostname(), workbench=version(), protocol=PROTOCOL_VERSION,
                     python_version=sys.version.split()[0], torch=_installed("torch"), cuda_devices=_gpus(),
                     cpus=os.cpu_count() or 1, time=time.time(), ssh_address=ssh_address, interface=interface,
                     address=address, interfaces=tuple(name for _index, name in socket.if_nameindex()))


def _installed(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return ""


def _gpus() -> int:
    try:
        return sum(1 for _ in NVIDIA_GPUS.iterdir())
    except OSError:
        return 0


def route(toward: str) -> tuple[str, str]:
    """(interface, this host's address on it) that traffic to `toward` leaves by; ("", "") when there is no route."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect((toward, 9))  # UDP: the kernel picks the route, nothing is sent
            address = probe.getsockname()[0]
    except OSError:
        return "", ""
    return _interface_of(address), address


def _interface_of(address: str) -> str:
    """The interface that holds `address` (`ip -o -4 addr`), "" when it cannot be told."""
    try:
        listing = subprocess.run(["ip", "-o", "-4", "addr", "show"], capture_output=True, text=True, timeout=5).stdout
    except (OSError, subprocess.SubprocessError):
        return ""
    for line in listing.splitlines():  # "1: lo    inet 127.0.0.1/8 scope host lo …"
        words = line.split()
        if len(words) >= 4 and words[2] == "inet" and words[3].split("/")[0] == address:
            return words[1]
    if address.startswith("127."):
        return "lo"  # the whole 127/8 is the loopback interface's, though only 127.0.0.1 is listed
    return ""


def listen(address: str, port: int, seconds: float, stdin: BinaryIO, out) -> int:
    """Bind the rendezvous port on `address`, say whether that worked, then accept (and close) connections for up to
    `seconds` or until the caller closes the session: the other hosts' `reach` needs someone there."""
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as torch's store: a probe just before (its closed
    try:  # connections in TIME_WAIT) does not hold the port; a socket listening there still does
        server.bind((address, port))
        server.listen()
    except OSError as exc:
        server.close()
        out(Reached(False, f"port {port} on {address} cannot be bound: {exc.strerror or exc}", 0.0).to_dict())
        return 1
    out(Reached(True, f"port {port} is free on {address}", 0.0).to_dict())
    deadline = time.monotonic() + seconds
    with server:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([server, stdin], [], [], min(0.2, max(0.0, deadline - time.monotonic())))
            if stdin in ready and not os.read(stdin.fileno(), 1):
                return 0  # the caller is done
            if server in ready:
                server.accept()[0].close()
    return 0


def reach(address: str, port: int) -> Reached:
    """Connect to the rendezvous port from here, within REACH_TIMEOUT_S."""
    started = time.monotonic()
    try:
        socket.create_connection((address, port), timeout=REACH_TIMEOUT_S).close()
    except OSError as exc:
        why = "timed out (a firewall dropping it?)" if isinstance(exc, TimeoutError) else exc.strerror or str(exc)
        return Reached(False, f"cannot reach {address}:{port}: {why}", time.monotonic() - started)
    took = time.monotonic() - started
    return Reached(True, f"reached {address}:{port} in {took * 1000:.0f} ms", took)
