"""Helpers of multi-process runs that need no second process: replica checksums, the port probe, and which rank
caused a torchrun failure."""

from __future__ import annotations

import socket

import pytest
import torch
from torch import nn

from workbench.core.domain.distributed import weights_checksum
from workbench.core.run.process import torchrun_culprit
from workbench.core.run.run_request import port_free


def test_checksum_of_bf16_weights():
    torch.manual_seed(0)
    model = nn.Linear(4, 3).to(torch.bfloat16)
    before = weights_checksum(model)
    assert before == weights_checksum(model)
    with torch.no_grad():
        model.weight[0, 0] += 1
    assert weights_checksum(model) != before


def _ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as probe:
            probe.bind(("::1", 0))
        return True
    except OSError:
        return False


@pytest.mark.skipif(not _ipv6_loopback(), reason="no IPv6 loopback here")
def test_port_probe_on_ipv6_loopback():
    with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as held:
        held.bind(("::1", 0))
        held.listen()
        port = held.getsockname()[1]
        assert not port_free("::1", port)
    assert port_free("::1", port)


def test_port_probe_on_ipv4():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        assert not port_free("127.0.0.1", port) and not port_free("localhost", port)


def _entry(rank: int, exitcode: str) -> str:
    """One entry of torchrun's failure summary."""
    return (f"  time      : 2026-11-29_16:34:41\n  host      : localhost\n"
            f"  rank      : {rank} (local_rank: {rank})\n  exitcode  : {exitcode}\n  error_file: <N/A>\n")


def test_a_rank_ended_with_exit_code_minus_15_is_not_the_culprit_even_without_the_signal_s_name():
    # torchrun ended rank 0 with SIGTERM once rank 1 had failed; this summary gives the code but not "(SIGTERM)".
    stderr = ("rank 1 failed (crashed): RuntimeError: planted failure on rank 1\n"
              "Failures:\n[1]:\n" + _entry(0, "-15 (pid: 16460)")
              + "Root Cause (first observed failure):\n[0]:\n" + _entry(1, "1 (pid: 16461)"))
    assert torchrun_culprit(stderr) == (1, "crashed: RuntimeError: planted failure on rank 1")
    killed = stderr.replace("-15 (pid: 16460)", "-9 (pid: 16460)")  # a signal from outside: that rank is the cause
    assert torchrun_culprit(killed) == (0, "killed by signal 9")
