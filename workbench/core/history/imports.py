"""Runs logged by other tools into the run history, so that a user's old runs are compared with new ones in the
window: TensorBoard logs and MLflow file stores.

TensorBoard: each folder holding event files with a loss scalar is one run, read with TensorBoard's own reader
(EventAccumulator, every scalar kept). MLflow: each run of a file store (`mlruns/<experiment>/<run>/`, as MLflow's
client writes it with a `file:` tracking URI) with a loss metric, read from its files (metrics as "ms value step"
lines, params and tags one file each): no MLflow needed to read it. Either way the scalars (metrics) are matched to
what a Workbench run records, by their names:
- the training loss ('loss', 'Loss/train', 'train_loss'…) becomes each step's loss (required);
- the training accuracy, a throughput ('samples/s', 'throughput'), each step's;
- a validation loss or accuracy ('Loss/val', 'val_acc', 'eval/accuracy'…) becomes an epoch's end at its step, the
  steps up to it that epoch's.
Accuracies in percent are read as fractions. TensorBoard's steps start at 0, Workbench's at 1: a log whose first
step is 0 is moved by one. The wall times become the steps' times (so the time axes work). The hyperparameters
(TensorBoard's `add_hparams`, in the run's folder or, as `torch.utils.tensorboard` writes them, in a subfolder;
MLflow's params) become the settings whose names match; the others, every scalar not matched and MLflow's own tags
are named in the run's environment ("imported from"), so nothing is dropped silently. An imported run has no
checkpoint: it cannot be continued.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Sequence

import numpy as np

from ..ground import appinfo
from ..ground.config import ConfigError, TrainConfig
from ..ground.errors import WorkbenchError
from ..ground.events import EpochEnd, MemorySample, RunFinished, RunStarted, Step, Versions
from ..ground.results import RunResults
from .runs import RunStore

VALIDATION = re.compile(r"val|valid|validation|eval|test", re.IGNORECASE)
KINDS = {"loss": re.compile(r"loss", re.I), "accuracy": re.compile(r"acc", re.I),
         "throughput": re.compile(r"samples.?(/|per.?)s|throughput", re.I)}
# hparams names → TrainConfig's settings
SETTINGS = {"lr": "lr", "learning_rate": "lr", "batch_size": "batch_size", "epochs": "epochs",
            "hidden_dim": "hidden_dim", "hidden_size": "hidden_dim", "seed": "seed", "optimizer": "optimizer",
            "weight_decay": "weight_decay", "dropout": "dropout"}

@dataclass(frozen=True)
class Point:
    """One logged value: TensorBoard's ScalarEvent has these three attributes, an MLflow metric line is read as one."""

    step: int
    value: float
    wall_time: float  # Unix seconds


class LogImportError(WorkbenchError):
    """A log that cannot be imported: the message names the folder and why."""

    kind = "input"


@dataclass(frozen=True)
class Imported:
    """One imported run: its id in the history, where it came from, and what of it was kept."""

    run_id: int
    folder: Path
    steps: int
    matched: dict[str, str]  # what it became → the scalar tag
    not_kept: tuple[str, ...]  # scalar tags with no place in a Workbench run
    settings: dict[str, object]  # hparams that became settings


def imported_from(environment: dict) -> str | None:
    """The tool a run was imported from ('TensorBoard'), from its environment; None for a run of Workbench's."""
    origin = environment.get("imported_from")
    return origin.get("source") if isinstance(origin, dict) else None


def import_tensorboard(store: RunStore, folders: Sequence[str | Path]) -> list[Imported]:
    """Every run under `folders` into the history; LogImportError when there is none, or TensorBoard is missing."""
    try:
        from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    except ImportError:
        raise LogImportError("TensorBoard is not installed", "pip install 'workbench[tensorboard]'") from None
    runs = [folder for root in folders for folder in _event_folders(Path(root))]
    imported = []
    for folder in runs:
        scalars = _read(EventAccumulator, folder)
        if _pick(scalars, "loss", validation=False) is None:
            continue  # a folder of hyperparameters or of other summaries: not a run
        hparams = _hparams(EventAccumulator, folder) or next(
            (found for child in sorted(p for p in folder.iterdir() if p.is_dir()) if child in runs
             and (found := _hparams(EventAccumulator, child))), {})
        imported.append(_write(store, "TensorBoard", folder, folder.name, scalars, hparams, {}))
    if not imported:
        raise LogImportError(f"no TensorBoard run with a loss scalar under {', '.join(map(str, folders))}",
                             "give the folder SummaryWriter wrote into (its log_dir), or the folder above several")
    return imported


def import_mlflow(store: RunStore, stores: Sequence[str | Path]) -> list[Imported]:
    """Every run with a loss metric of these MLflow file stores (an `mlruns` folder, an experiment's folder in one,
    or one run's folder) into the history; LogImportError when there is none."""
    imported = []
    for root in map(Path, stores):
        if not root.exists():
            raise LogImportError(f"{root} does not exist")
        for folder in sorted(meta.parent for meta in root.glob("**/meta.yaml") if (meta.parent / "metrics").is_dir()):
            if folder.parent.name == ".trash" or _meta(folder).get("lifecycle_stage") == "deleted":
                continue
            scalars = {path.name: _metric(path) for path in sorted((folder / "metrics").rglob("*")) if path.is_file()}
            if _pick(scalars, "loss", validation=False) is None:
                continue
            params = {path.name: path.read_text(encoding="utf-8").strip() for path in (folder / "params").glob("*")
                      if path.is_file()} if (folder / "params").is_dir() else {}
            tags = {path.name: path.read_text(encoding="utf-8").strip() for path in (folder / "tags").glob("*")
                    if path.is_file()} if (folder / "tags").is_dir() else {}
            name = tags.get("mlflow.runName") or _meta(folder).get("run_name") or folder.name
            user_tags = {key: value for key, value in tags.items() if not key.startswith("mlflow.")}
            experiment = _meta(folder.parent).get("name", "")
            imported.append(_write(store, "MLflow", folder, name, scalars, params,
                                   {"experiment": experiment, "tags": user_tags}))
    if not imported:
        raise LogImportError(f"no MLflow run with a loss metric under {', '.join(map(str, stores))}",
                             "give the mlruns folder of a file store (the tracking URI file:…/mlruns)")
    return imported


def _meta(folder: Path) -> dict[str, str]:
    """The plain `key: value` lines of an MLflow meta.yaml (what is read of it: names, stage), without YAML."""
    try:
        lines = (folder / "meta.yaml").read_text(encoding="utf-8").splitlines()
    except OSError:
        return {}
    pairs = (line.split(":", 1) for line in lines if ":" in line and not line.startswith(" "))
    return {key.strip(): value.strip().strip("'\"") for key, value in pairs}


def _metric(path: Path) -> list[Point]:
    """An MLflow metric file: a "timestamp-ms value step" line a value."""
    points = []
    for line in path.read_text(encoding="utf-8").splitlines():
        parts = line.split()
        if len(parts) >= 3:
            try:
                points.append(Point(int(parts[2]), float(parts[1]), int(parts[0]) / 1000.0))
            except ValueError:
                raise LogImportError(f"{path} has a line that is not 'milliseconds value step': {line[:60]!r}",
                                     "is this an MLflow file store?") from None
    return points


def _event_folders(root: Path) -> list[Path]:
    if not root.exists():
        raise LogImportError(f"{root} does not exist")
    files = [root] if root.is_file() else sorted(root.rglob("*tfevents*"))
    return sorted({path.parent for path in files})


def _read(accumulator, folder: Path) -> dict[str, list]:
    events = accumulator(str(folder), size_guidance={"scalars": 0})  # 0: keep every point
    events.Reload()
    return {tag: events.Scalars(tag) for tag in events.Tags().get("scalars", [])}


def _hparams(accumulator, folder: Path) -> dict[str, object]:
    """The hyperparameters add_hparams wrote into `folder`'s event files ({} without)."""
    from tensorboard.plugins.hparams import plugin_data_pb2

    events = accumulator(str(folder))
    events.Reload()
    try:
        content = events.PluginTagToContent("hparams")
    except KeyError:
        return {}
    start = next((data for tag, data in content.items() if tag.endswith("session_start_info")), None)
    if start is None:
        return {}
    values = plugin_data_pb2.HParamsPluginData.FromString(start).session_start_info.hparams
    return {name: getattr(value, value.WhichOneof("kind")) for name, value in values.items()
            if value.WhichOneof("kind")}


def _pick(scalars: dict[str, list], kind: str, validation: bool) -> str | None:
    """The tag of this kind (the training one, or the validation one), the shortest name first ('loss' before
    'loss_scale_something')."""
    found = [tag for tag in scalars if KINDS[kind].search(tag) and bool(VALIDATION.search(tag)) == validation]
    return min(found, key=lambda tag: (len(tag), tag)) if found else None


def _write(store: RunStore, source: str, folder: Path, name: str, scalars: dict[str, list],
           hparams: dict[str, object], more: dict) -> Imported:
    """The run these scalars (matched by name) and hyperparameters make, written into the history."""
    matched = {name: tag for name, tag in (("loss", _pick(scalars, "loss", False)),
                                           ("accuracy", _pick(scalars, "accuracy", False)),
                                           ("throughput", _pick(scalars, "throughput", False)),
                                           ("val_loss", _pick(scalars, "loss", True)),
                                           ("val_accuracy", _pick(scalars, "accuracy", True))) if tag}
    series = {name: _points(scalars[tag], percent=name.endswith("accuracy")) for name, tag in matched.items()}
    steps, losses, walls = series["loss"]
    shift = 1 if len(steps) and steps[0] == 0 else 0
    config, settings, used = _config(hparams)
    val_steps = series.get("val_loss", series.get("val_accuracy", (np.empty(0),) * 3))[0]
    epochs = np.searchsorted(val_steps, steps, side="left") + 1  # a step after the last validation: one more epoch
    started = float(walls[0]) if len(walls) else None
    seconds = np.diff(walls, prepend=walls[0]) if len(walls) else walls

    def at(name: str, step: float) -> float | None:
        if name not in series:
            return None
        where = np.searchsorted(series[name][0], step)
        return float(series[name][1][where]) if where < len(series[name][0]) and series[name][0][where] == step \
            else None

    events: list = [RunStarted(config=config, device="imported", device_name=f"{source} log",
                               versions=Versions(workbench=appinfo.version(), torch="", python="", cuda=""),
                               train_size=0, val_size=0, steps_per_epoch=0, total_steps=len(steps), wall=started)]
    for i, (step, loss, wall) in enumerate(zip(steps, losses, walls)):
        rate = at("throughput", step)
        events.append(Step(step=int(step) + shift, epoch=int(epochs[i]), loss=float(loss),
                           samples_per_s=math.nan if rate is None else rate, step_seconds=float(seconds[i]),
                           memory=MemorySample(), accuracy=at("accuracy", step), wall=float(wall)))
        validated = int(epochs[i]) - 1  # the validation point that ends this step's epoch
        if validated < len(val_steps) and (i + 1 == len(steps) or epochs[i + 1] != epochs[i]):
            val_loss, val_accuracy = at("val_loss", val_steps[validated]), at("val_accuracy", val_steps[validated])
            events.append(EpochEnd(epoch=int(epochs[i]), train_loss=float(loss),
                                   val_loss=math.nan if val_loss is None else val_loss,
                                   val_accuracy=math.nan if val_accuracy is None else val_accuracy,
                                   seconds=float(wall - walls[0]), wall=float(wall)))
    val_accuracies = series.get("val_accuracy", (None, np.empty(0)))[1]
    best = float(np.nanmax(val_accuracies)) if len(val_accuracies) else None
    rates = series.get("throughput", (None, np.empty(0)))[1]
    results = RunResults(best_val_accuracy=best, val_accuracy=float(val_accuracies[-1]) if len(val_accuracies)
                         else None, samples_per_s=float(np.median(rates)) if len(rates) else 0.0,
                         epochs_completed=min(len(val_steps), int(epochs[-1])) if len(epochs) else 0)
    events.append(RunFinished(steps=len(steps), epochs=results.epochs_completed,
                              seconds=float(walls[-1] - walls[0]) if len(walls) else 0.0, stopped=False,
                              results=results))
    not_kept = tuple(sorted(set(scalars) - set(matched.values())))
    origin = {"imported_from": {"source": source, "path": str(folder.resolve()), "scalars": matched, **more,
                                "not_kept": list(not_kept), "step_shift": shift,
                                "hparams_not_settings": sorted(set(hparams) - used)}}
    run_id = store.start_run(config.to_dict())
    store.append_events(run_id, 0, events, {
        "status": "finished", "steps": len(steps), "best_val_accuracy": best,
        "samples_per_s": results.samples_per_s or None,
        "environment": json.dumps(origin), "name": name})
    return Imported(run_id, folder, len(steps), matched, not_kept, settings)


def _points(points: list, percent: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A scalar's (steps, values, wall times), by step (a step logged twice: its last value)."""
    by_step = {point.step: point for point in points}
    steps = np.array(sorted(by_step), dtype=np.float64)
    values = np.array([by_step[s].value for s in sorted(by_step)], dtype=np.float64)
    walls = np.array([by_step[s].wall_time for s in sorted(by_step)], dtype=np.float64)
    if percent and len(values) and np.nanmax(values) > 1.0:
        values = values / 100.0
    return steps, values, walls


def _config(hparams: dict[str, object]) -> tuple[TrainConfig, dict[str, object], set[str]]:
    """The default settings with every hyperparameter that names one and is a value it can take; those settings,
    and the hyperparameters' names that became them."""
    config, kept, used = TrainConfig(), {}, set()
    for name, value in hparams.items():
        setting = SETTINGS.get(name.lower())
        if setting is None:
            continue
        kind = type(getattr(config, setting))
        try:
            candidate = replace(config, **{setting: kind(value)})  # checked as it is made
        except (ConfigError, TypeError, ValueError):
            continue
        config, kept[setting] = candidate, kind(value)
        used.add(name)
    return config, kept, used
