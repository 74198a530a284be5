"""Events of a compiled run, as Dynamo reports them (torch 2.14): two graph breaks and the run's start, for the
window's tests of the compile insight (tests/ui/test_compile_insight.py) and of the Compile dock on a small screen."""

from __future__ import annotations

from dataclasses import replace

from workbench.core.ground.config import TrainConfig
from workbench.core.ground.events import Frame, GraphBreak, RunStarted

from ..helpers import VERSIONS

ITEM_BREAK = GraphBreak(
    reason=("Unsupported Tensor.item() call with capture_scalar_outputs=False\n"
            "Explanation: Dynamo does not support tracing `Tensor.item()` with config.capture_scalar_outputs=False.\n"
            "Hint: Set `torch._dynamo.config.capture_scalar_outputs = True` to include these operations.\n"
            "For more details about this graph break, please visit: "
            "https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0124.html"),
    frames=(Frame(file="/home/u/model.py", line=15, function="forward", source="scale = h.abs().max().item()"),))
TORCH_BREAK = GraphBreak(
    reason=("Failed to trace builtin operator\n"
            "Explanation: Dynamo does not know how to trace builtin operator `struct.pack`\n"
            "Hint: Please report an issue to PyTorch."), frames=())


def started(backend="aot_eager", **config) -> RunStarted:
    cfg = TrainConfig(**{"backend": backend, "mode": "default", "batch_size": 32, "dataset": "mnist-sample", **config})
    return RunStarted(config=cfg, device="cpu", device_name="CPU", versions=replace(VERSIONS, torch="2.14.1"),
                      train_size=4000, val_size=1000, steps_per_epoch=125, total_steps=250)
