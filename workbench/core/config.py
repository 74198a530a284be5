"""Run configuration: one validated dataclass that the GUI, the CLI and child processes all share.

Validation lives here, in one place, so that every front end refuses the same bad values with the same words:
each error names the field, what was wrong, and the values that are allowed.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any

from .errors import WorkbenchError

BACKENDS = ("eager", "inductor", "aot_eager", "cudagraphs")
MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
AMP_CHOICES = ("off", "bf16", "fp16")
OPTIMIZERS = ("adamw", "sgd")
LR_SCHEDULES = ("cosine", "constant")
DEVICE_KINDS = ("auto", "cpu", "cuda", "cuda:N")
# Backends and modes that only make sense with CUDA graphs / a CUDA device.
CUDA_ONLY_BACKENDS = ("cudagraphs",)
CUDA_ONLY_MODES = ("reduce-overhead",)


class ConfigError(WorkbenchError):
    """A config value that cannot run. `field` names the offending setting so a UI can point at it."""

    kind = "config"

    def __init__(self, field: str, message: str, allowed: str | None = None):
        self.field = field
        self.allowed = allowed
        text = f"{field}: {message}"
        if allowed:
            text += f" (allowed: {allowed})"
        super().__init__(text)


def _choices(values) -> str:
    return ", ".join(values)


@dataclass(frozen=True)
class TrainConfig:
    """Everything one run needs. Plain values only, so it round-trips through JSON and pickles across processes."""

    dataset: str = "mnist-sample"
    data_root: str | None = None
    model: str = "sandwich"  # or "path/to/file.py:ClassName" for the user's own network
    device: str = "auto"
    epochs: int = 5
    batch_size: int = 32
    lr: float = 4e-3
    optimizer: str = "adamw"
    lr_schedule: str = "cosine"
    weight_decay: float = 0.01
    seed: int = 0
    hidden_dim: int = 128
    dropout: float = 0.2
    backend: str = "eager"
    mode: str = "default"
    fullgraph: bool = False
    dynamic: bool | None = None
    amp: str = "off"
    allow_eager_fallback: bool = False
    max_steps: int | None = None  # stop after this many optimizer steps (smoke tests, benchmarks)

    def __post_init__(self) -> None:
        self.check_values()

    # -- validation ---------------------------------------------------------------------------------------------
    def check_values(self) -> None:
        """Reject values that can never run, wherever they came from (GUI, CLI flags, a JSON file)."""
        _check_type(self, "dataset", str)
        if not self.dataset.strip():
            raise ConfigError("dataset", "must not be empty",
                              "mnist-sample, mnist, fashion-mnist, kmnist, idx, imagefolder")
        if self.data_root is not None:
            _check_type(self, "data_root", str)
        _check_type(self, "model", str)
        _check_type(self, "device", str)
        _check_int(self, "epochs", 1, 100_000)
        _check_int(self, "batch_size", 1, 1 << 20)
        _check_int(self, "seed", 0, 2**32 - 1)
        _check_int(self, "hidden_dim", 1, 1 << 16)
        _check_float(self, "lr", low_exclusive=0.0, high=100.0)
        _check_float(self, "weight_decay", low_inclusive=0.0, high=10.0)
        _check_float(self, "dropout", low_inclusive=0.0, high=0.99)
        if self.max_steps is not None:
            _check_int(self, "max_steps", 1, 1 << 40)
        _check_choice(self, "optimizer", OPTIMIZERS)
        _check_choice(self, "lr_schedule", LR_SCHEDULES)
        _check_choice(self, "backend", BACKENDS)
        _check_choice(self, "mode", MODES)
        _check_choice(self, "amp", AMP_CHOICES)
        for flag in ("fullgraph", "allow_eager_fallback"):
            _check_type(self, flag, bool)
        if self.dynamic is not None and not isinstance(self.dynamic, bool):
            raise ConfigError("dynamic", f"{self.dynamic!r} is not a switch", "true, false, or null for automatic")
        if self.mode != "default" and self.backend != "inductor":
            raise ConfigError("mode", f"'{self.mode}' only applies to the inductor backend "
                                      f"(backend is '{self.backend}')", "default")
        if not (self.device in ("auto", "cpu", "cuda") or _is_cuda_index(self.device)):
            raise ConfigError("device", f"unknown device '{self.device}'", _choices(DEVICE_KINDS))

    def check_runnable(self, cuda_available: bool) -> None:
        """Reject combinations this machine cannot run (fp16 or CUDA graphs without CUDA)."""
        on_cuda = cuda_available and self.device != "cpu"
        if self.device.startswith("cuda") and not cuda_available:
            raise ConfigError("device", f"'{self.device}' was asked for but this machine has no usable CUDA device",
                              "auto, cpu")
        if not on_cuda:
            if self.amp == "fp16":
                raise ConfigError("amp", "fp16 needs a CUDA device; on the CPU use bf16", "off, bf16")
            if self.backend in CUDA_ONLY_BACKENDS:
                raise ConfigError("backend", f"'{self.backend}' needs a CUDA device",
                                  _choices(b for b in BACKENDS if b not in CUDA_ONLY_BACKENDS))
            if self.mode in CUDA_ONLY_MODES:
                raise ConfigError("mode", f"'{self.mode}' uses CUDA graphs and needs a CUDA device",
                                  _choices(m for m in MODES if m not in CUDA_ONLY_MODES))

    # -- serialisation ------------------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "TrainConfig":
        if not isinstance(data, dict):
            raise ConfigError("config", f"expected a JSON object, got {type(data).__name__}")
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(unknown[0], "is not a setting Workbench knows", _choices(sorted(known)))
        return cls(**data)

    @classmethod
    def from_json(cls, text: str) -> "TrainConfig":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError("config", f"not valid JSON ({exc.msg} at line {exc.lineno})") from None
        return cls.from_dict(data)

    def replace(self, **changes: Any) -> "TrainConfig":
        return dataclasses.replace(self, **changes)

    @property
    def compiled(self) -> bool:
        return self.backend != "eager"


def setup_label(config: dict) -> str:
    """'inductor · max-autotune · bf16', 'eager · off': how a run's compile and precision settings are shown."""
    mode = f" · {config['mode']}" if config.get("backend") == "inductor" else ""
    return f"{config.get('backend')}{mode} · {config.get('amp')}"


def _is_cuda_index(device: str) -> bool:
    prefix, _, index = device.partition(":")
    return prefix == "cuda" and index.isdigit()


def _check_type(cfg: TrainConfig, name: str, kind: type) -> None:
    value = getattr(cfg, name)
    if not isinstance(value, kind):
        raise ConfigError(name, f"{value!r} is not a {kind.__name__}")


def _check_int(cfg: TrainConfig, name: str, low: int, high: int) -> None:
    value = getattr(cfg, name)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(name, f"{value!r} is not a whole number", f"{low} to {high}")
    if not low <= value <= high:
        raise ConfigError(name, f"{value} is out of range", f"{low} to {high}")


def _check_float(cfg: TrainConfig, name: str, *, low_exclusive: float | None = None,
                 low_inclusive: float | None = None, high: float) -> None:
    value = getattr(cfg, name)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        raise ConfigError(name, f"{value!r} is not a number")
    if low_exclusive is not None and value <= low_exclusive:
        raise ConfigError(name, f"{value} must be greater than {low_exclusive:g}",
                          f"> {low_exclusive:g} and ≤ {high:g}")
    if low_inclusive is not None and value < low_inclusive:
        raise ConfigError(name, f"{value} must not be below {low_inclusive:g}", f"{low_inclusive:g} to {high:g}")
    if value > high:
        raise ConfigError(name, f"{value} is too large", f"up to {high:g}")


def _check_choice(cfg: TrainConfig, name: str, allowed: tuple[str, ...]) -> None:
    value = getattr(cfg, name)
    if value not in allowed:
        raise ConfigError(name, f"unknown value {value!r}", _choices(allowed))
