"""Helpers of multi-process runs that need no second process: replica checksums and the port probe."""

from __future__ import annotations

import socket

import pytest
import torch
from torch import nn

from workbench.core.domain.distributed import weights_checksum
from workbench.core.run.request import port_free


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
