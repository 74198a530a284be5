"""Device choice: CUDA devices always carry an index (set_device and memory readings need one)."""

from __future__ import annotations

import pytest
import torch

from workbench.core.domain import devices
from workbench.core.ground.config import ConfigError


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_devices_without_cuda():
    assert devices.resolve_device("auto") == torch.device("cpu")
    assert not devices.uses_cuda("auto") and not devices.uses_cuda("cuda")


def test_cuda_devices_get_an_index(monkeypatch):
    monkeypatch.setattr(devices, "cuda_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert devices.resolve_device("auto") == torch.device("cuda", 0)
    assert devices.resolve_device("cuda") == torch.device("cuda", 0)
    assert devices.resolve_device("cuda:1") == torch.device("cuda", 1)
    assert devices.resolve_device("cpu") == torch.device("cpu")
    assert devices.uses_cuda("auto") and not devices.uses_cuda("cpu")


def test_cuda_index_beyond_the_machines_devices_is_a_config_error(monkeypatch):
    monkeypatch.setattr(devices, "cuda_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    assert devices.resolve_device("cuda:0") == torch.device("cuda", 0)
    with pytest.raises(ConfigError) as info:
        devices.resolve_device("cuda:7")
    assert info.value.field == "device"
    assert "'cuda:7'" in str(info.value) and "1 CUDA device" in str(info.value) and "cuda:0" in str(info.value)
