"""The three-layer "sandwich" network: shape adapter → compute block → decoding.

Keeping shape/dtype handling (InputAdapter) and decoding (OutputAdapter) out of the compute block means a graph
break or a recompile reported by the compile panel points at one small, named layer.
"""

from __future__ import annotations

import importlib.util
import inspect
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import torch
from torch import nn
from torch.nn import functional as F

from ..ground.config import TrainConfig, split_model_spec
from ..ground.errors import WorkbenchError

# MNIST pixel statistics; applied inside the model so training, evaluation and prediction share them.
PIXEL_MEAN = 0.1307
PIXEL_STD = 0.3081
INPUT_DIM = 28 * 28  # every dataset arrives as 28×28 images


class InputAdapter(nn.Module):
    """(B, 1, 28, 28) or (B, 784), uint8 or float → (B, 784) normalised float. Shape and dtype only."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.flatten(1)
        if x.dtype == torch.uint8:
            x = x.float() / 255.0
        return (x - PIXEL_MEAN) / PIXEL_STD


class CoreBlock(nn.Module):
    """fc1 → ReLU → Dropout → fc2 with PyTorch's default initialisation (identical on every device)."""

    def __init__(self, input_dim: int, hidden_dim: int, output_dim: int, dropout: float):
        super().__init__()
        self.fc1 = nn.Linear(input_dim, hidden_dim)
        self.dropout = nn.Dropout(dropout)
        self.fc2 = nn.Linear(hidden_dim, output_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.dropout(F.relu(self.fc1(x))))


class OutputAdapter(nn.Module):
    """Turns logits into what people read: probabilities and the predicted class."""

    def decode(self, logits: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        probs = logits.float().softmax(dim=-1)
        return probs, probs.argmax(dim=-1)


class SandwichNet(nn.Module):
    def __init__(self, input_dim: int = 784, hidden_dim: int = 128, output_dim: int = 10, dropout: float = 0.2):
        super().__init__()
        self.input_adapter = InputAdapter()
        self.core_block = CoreBlock(input_dim, hidden_dim, output_dim, dropout)
        self.output_adapter = OutputAdapter()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.core_block(self.input_adapter(x))

    def predict(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Probabilities and classes, with autograd fully off (inference_mode is stronger than no_grad)."""
        was_training = self.training
        self.eval()
        try:
            with torch.inference_mode():
                return self.output_adapter.decode(self(x))
        finally:
            self.train(was_training)


class ModelSpecError(WorkbenchError):
    """A user model file that cannot be imported or has no such class."""

    kind = "config"


def build_model(spec: str, *, input_dim: int, hidden_dim: int, output_dim: int, dropout: float) -> nn.Module:
    """`sandwich` or `path/to/file.py:ClassName` (a user's own nn.Module taking the same four arguments)."""
    if spec == "sandwich":
        return SandwichNet(input_dim=input_dim, hidden_dim=hidden_dim, output_dim=output_dim, dropout=dropout)
    cls = load_model_class(spec)
    try:
        return cls(input_dim=input_dim, hidden_dim=hidden_dim, output_dim=output_dim, dropout=dropout)
    except Exception as exc:  # the user's constructor: a clear message, not an "internal" failure
        raise ModelSpecError(f"could not build {cls.__name__}(input_dim, hidden_dim, output_dim, dropout): "
                             f"{type(exc).__name__}: {exc}") from None


def model_for(config: TrainConfig, output_dim: int) -> nn.Module:
    """The network a config describes, for a dataset of `output_dim` classes: one place for the four arguments."""
    return build_model(config.model, input_dim=INPUT_DIM, hidden_dim=config.hidden_dim, output_dim=output_dim,
                       dropout=config.dropout)


@contextmanager
def side_effect_free(model: nn.Module, example: torch.Tensor, *, fork_random: bool = True) -> Iterator[None]:
    """For a forward that must leave the run as it was: eval mode (the model's own mode put back after), no
    gradients, and a forked random stream (`fork_random`: a forward in eval mode draws nothing from it, but a
    user's model may; forking it on a GPU costs a sync, which the per-step layer probe does not pay)."""
    was_training = model.training
    model.eval()
    cuda = [example.device] if example.device.type == "cuda" else []
    try:
        with torch.no_grad(), torch.random.fork_rng(devices=cuda, enabled=fork_random):
            yield
    finally:
        model.train(was_training)


def check_outputs(model: nn.Module, example: torch.Tensor, output_dim: int) -> None:
    """One forward on a real batch before training. A network that ignores `output_dim` would otherwise fail deep
    inside the loss ("Target 5 is out of bounds"), which names neither the model nor the fix. Side-effect free: the
    run itself is unchanged."""
    with side_effect_free(model, example):
        output = model(example)
    expected = (example.shape[0], output_dim)
    got = tuple(output.shape) if isinstance(output, torch.Tensor) else None
    if got != expected:
        what = f"shape {got}" if got is not None else f"a {type(output).__name__}"
        raise ModelSpecError(
            f"{type(model).__name__} returned {what} for a batch of {expected[0]} images; expected {expected} "
            f"(batch, output_dim = the dataset's {output_dim} classes)",
            "size the last layer with the output_dim argument the model is built with, and return one tensor")


def absolute_spec(spec: str) -> str:
    """`path/to/file.py:ClassName` with the file made absolute (against the current folder, now), so a recorded
    run and its checkpoint name the very file it trained with; `sandwich` and malformed specs come back as they are.
    A relative spec read back later (an old history row) must not be resolved again: which folder it meant is
    unknown — see `is_relative_spec`."""
    parts = split_model_spec(spec)
    if parts is None:
        return spec
    return f"{Path(parts[0]).expanduser().resolve()}:{parts[1]}"


def is_relative_spec(spec: str) -> bool:
    """A user model spec whose file is a relative path (recorded before specs were made absolute)."""
    parts = split_model_spec(spec)
    return parts is not None and not Path(parts[0]).expanduser().is_absolute()


_LOADED: dict[tuple[str, int], object] = {}  # (file, mtime) → its module: a user's file runs once, not per build


def load_model_class(spec: str) -> type[nn.Module]:
    parts = split_model_spec(spec)
    if parts is None:
        raise ModelSpecError(f"model '{spec}' is neither 'sandwich' nor 'path/to/file.py:ClassName'")
    path_text, name = parts
    path = Path(path_text).expanduser()
    if not path.is_file():
        raise ModelSpecError(f"model file '{path}' does not exist")
    key = (str(path.resolve()), path.stat().st_mtime_ns)
    module = _LOADED.get(key) or _import_file(path)
    _LOADED[key] = module
    cls = getattr(module, name, None)
    if not (inspect.isclass(cls) and issubclass(cls, nn.Module)):
        raise ModelSpecError(f"'{path}' has no nn.Module class named '{name}'")
    return cls


def _import_file(path: Path):
    module_name = f"workbench_user_model_{abs(hash(str(path.resolve())))}"
    module_spec = importlib.util.spec_from_file_location(module_name, path)
    if module_spec is None or module_spec.loader is None:
        raise ModelSpecError(f"'{path}' is not a Python file")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[module_name] = module  # dataclasses and pickling look modules up by name
    try:
        module_spec.loader.exec_module(module)
    except Exception as exc:  # the user's file: report, do not crash
        sys.modules.pop(module_name, None)
        raise ModelSpecError(f"could not import '{path}': {type(exc).__name__}: {exc}") from exc
    return module
