"""Device choice: CUDA devices always carry an index (set_device and memory readings need one)."""

from __future__ import annotations

import torch

from workbench.core import devices


def test_devices_without_cuda():
    if torch.cuda.is_available():
        return
    assert devices.resolve_device("auto") == torch.device("cpu")
    assert not devices.uses_cuda("auto") and not devices.uses_cuda("cuda")


def test_cuda_devices_get_an_index(monkeypatch):
    monkeypatch.setattr(devices, "cuda_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    assert devices.resolve_device("auto") == torch.device("cuda", 0)
    assert devices.resolve_device("cuda") == torch.device("cuda", 0)
    assert devices.resolve_device("cuda:1") == torch.device("cuda", 1)
    assert devices.resolve_device("cpu") == torch.device("cpu")
    assert devices.uses_cuda("auto") and not devices.uses_cuda("cpu")
