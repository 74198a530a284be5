"""A made-up run with per-layer statistics and alerts, recorded in a history: what the tests of the layers' read-back
(tests/core/test_layers_history.py), the runs' export and the report's layers section read, with the exact figures
each layer had at each sampled step."""

from __future__ import annotations

import json
from pathlib import Path

from workbench.core.ground.alerts import Alert
from workbench.core.ground.config import TrainConfig
from workbench.core.ground.events import MemorySample, RunStarted, Step
from workbench.core.ground.layer_stats import Histogram, LayerRow, LayerStat, LayerStats, ModelSummary
from workbench.core.history.recording import RunRecorder
from workbench.core.history.runs import RunStore

from ..helpers import VERSIONS

SUMMARY = ModelSummary(batch=32, rows=(
    LayerRow(name="", kind="Net", depth=0, output_shape=(32, 10), params=0, trainable=False, mult_adds=0),
    LayerRow(name="block", kind="Block", depth=1, output_shape=(32, 10), params=0, trainable=False, mult_adds=0),
    LayerRow(name="block.fc1", kind="Linear", depth=2, output_shape=(32, 16), params=12_560, trainable=True,
             mult_adds=401_408),
    LayerRow(name="block.act", kind="ReLU", depth=2, output_shape=(32, 16), params=0, trainable=False, mult_adds=0),
    LayerRow(name="block.fc2", kind="Linear", depth=2, output_shape=(32, 10), params=170, trainable=False,
             mult_adds=5_120),
    LayerRow(name="head", kind="Head", depth=1, output_shape=(), params=0, trainable=False, mult_adds=0),
))
SAMPLED = (1, 2, 4)
LAYERS = ("block.fc1", "block.fc2")
# Recorded out of step order (a read-back's loss alert may follow its statistics' alerts): shown by step.
ALERTS = (Alert(step=4, rule="dead_units", severity="warning", title="75% of the inputs of block.fc2 were 0",
                advice="use LeakyReLU", panel="model", layer="block.fc2"),
          Alert(step=3, rule="loss_exploded", severity="error", title="the loss went from 2.3 to 267 at step 3",
                advice="lower the learning rate", panel="setting:lr"))


def histogram(step: int, i: int) -> Histogram:
    return Histogram(lo=-1.0 / step - i, hi=0.5 + i, counts=(1.0 * step, 4.0, 2.5 + i, 0.0))


def stat(name: str, step: int) -> LayerStat:
    """Values that are not round in binary, different per layer and step."""
    i = LAYERS.index(name)
    return LayerStat(name=name, weight_norm=10.0 + step / 3 + i, grad_norm=(i + 1) / (3 * step),
                     update_ratio=1e-3 / step + i * 1e-4, dead_fraction=0.25 * i * step / 4,
                     weights=histogram(step, i), grads=histogram(step + 1, i), activations=histogram(step + 2, i))


def sample(step: int) -> LayerStats:
    return LayerStats(step=step, layers=tuple(stat(name, step) for name in LAYERS))


def layered_events(alerts: tuple[Alert, ...] = ALERTS) -> list:
    """What a run with per-layer statistics and alerts records: its table first, then samples and alerts."""
    steps = [Step(step=i, epoch=1, loss=2.0 / i, samples_per_s=100.0, step_seconds=0.01, memory=MemorySample())
             for i in range(1, 5)]
    return [SUMMARY, sample(1), steps[0], sample(2), steps[1], steps[2], *alerts, sample(4), steps[3]]


def started(config: TrainConfig) -> RunStarted:
    return RunStarted(config=config, device="cpu", device_name="CPU", versions=VERSIONS, train_size=128, val_size=32,
                      steps_per_epoch=4, total_steps=4)


def old_config() -> dict:
    """A run's config as versions before the alert rules recorded it: none of their settings."""
    return {k: v for k, v in TrainConfig().to_dict().items() if not k.startswith(("alert_", "stats_"))}


def record(db: Path, events: list, config: dict | None = None) -> int:
    """Record a run of `events` in the history at `db`; its id. `config`: the run's as its row keeps it, as the
    version that recorded it wrote it (old_config: one from before the alert rules); the defaults when None."""
    with RunStore(db) as store:
        recorder = RunRecorder(store, interval=3600)
        for event in [started(TrainConfig() if config is None else TrainConfig.from_dict(config)), *events]:
            recorder(event)
        recorder.flush()
        if config is not None:  # the row as that version wrote it: only the settings it had
            store.db.execute("UPDATE runs SET config = ? WHERE id = ?", (json.dumps(config), recorder.run_id))
        return recorder.run_id
