"""A run's curves (loss, throughput, memory, validation) as arrays, rebuilt from its event stream.

The live plots append events as they come; everything that looks at a finished run — the run comparison overlay
and the report — rebuilds the same curves here, once.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..ground.events import EpochEnd, Event, Step


SMOOTHING = 0.98  # EMA weight of the smoothed loss line


@dataclass
class Curves:
    step: np.ndarray  # every optimizer step
    loss: np.ndarray
    throughput_step: np.ndarray  # steps that did not compile (nor warm CUDA up)
    throughput: np.ndarray
    memory: dict[str, np.ndarray] = field(default_factory=dict)  # by name, aligned with `step`
    val_step: np.ndarray = field(default_factory=lambda: np.empty(0))  # the last step of each epoch
    val_loss: np.ndarray = field(default_factory=lambda: np.empty(0))


def curves_from_events(events: list[Event]) -> Curves:
    steps = [e for e in events if isinstance(e, Step)]
    steady = [s for s in steps if not (s.compiling or s.warmup)]
    names = sorted({name for s in steps for name in s.memory})
    last_step_of_epoch: dict[int, int] = {}
    for s in steps:
        last_step_of_epoch[s.epoch] = s.step
    epochs = [e for e in events if isinstance(e, EpochEnd)]
    return Curves(
        step=np.array([s.step for s in steps], dtype=np.float64),
        loss=np.array([s.loss for s in steps], dtype=np.float64),
        throughput_step=np.array([s.step for s in steady], dtype=np.float64),
        throughput=np.array([s.samples_per_s for s in steady], dtype=np.float64),
        memory={name: np.array([s.memory.get(name, np.nan) for s in steps], dtype=np.float64) for name in names},
        val_step=np.array([last_step_of_epoch.get(e.epoch, 0) for e in epochs], dtype=np.float64),
        val_loss=np.array([e.val_loss for e in epochs], dtype=np.float64),
    )


def ema(previous: float | None, value: float, weight: float = SMOOTHING) -> float:
    """One step of the exponential moving average the smoothed loss line draws (starts at the first value)."""
    return value if previous is None else weight * previous + (1 - weight) * value


def smooth(values: np.ndarray) -> np.ndarray:
    """The smoothed line of a finished run: the same average the live plot builds step by step."""
    out = np.empty_like(values)
    running = None
    for i, value in enumerate(values):
        running = out[i] = ema(running, float(value))
    return out


def differing_settings(configs: list[dict]) -> list[str]:
    """Config keys whose values differ between runs: what a legend should name."""
    if len(configs) < 2:
        return []
    keys = sorted(set().union(*configs))
    return [k for k in keys if len({repr(c.get(k)) for c in configs}) > 1]


LABEL_MAX = 60
# Settings whose bare value says what it is ("inductor", "bf16"); others are shown as name=value.
SELF_EXPLAINING = ("backend", "mode", "amp", "dataset", "optimizer", "device")


def run_label(run_id: int, config: dict, keys: list[str]) -> str:
    """'#3 inductor · bf16' or '#4 lr=0.01': the run id and the settings that differ between compared runs."""
    parts = [_setting(k, config.get(k)) for k in (keys or ["backend", "amp"])]
    label = f"#{run_id} " + " · ".join(parts)
    return label if len(label) <= LABEL_MAX else label[:LABEL_MAX - 1] + "…"


def _setting(key: str, value) -> str:
    if key == "model" and isinstance(value, str) and ":" in value:
        value = value.rsplit("/", 1)[-1]  # file.py:Class, not the whole path
    return str(value) if key in SELF_EXPLAINING else f"{key}={value}"
