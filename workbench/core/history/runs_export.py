"""The run history out of Workbench: a tidy CSV for pandas / R / a spreadsheet, the same table as Parquet, and
TensorBoard event files.

The CSV is long ("tidy"): one row per observation — a run, a metric, a step, a value:

    run_id, run, name, tags, notes, status, created, config.<setting>…, metric, step, value

`run` is the run's name everywhere else ("#3"), `name`, `tags` (space-separated: a tag is one word) and `notes`
what its user said about it, `created` its start (UTC, ISO 8601).
`config.<setting>` repeats the run's config on each of its rows (every setting any exported run has, in
TrainConfig's order; empty where a run has none or it is None), so a table groups or filters by any setting
without a join. `metric` is what the live plots draw, per optimizer step: train/loss, train/accuracy,
train/samples_per_s (steady steps only: compiling, warm-up and profiled steps are left out, as on the plot) and
memory/<name>_mib; per epoch at its last step: val/loss, val/accuracy. A step without a reading (no training
accuracy, no such memory figure) has no row. Per layer, at each step its statistics were sampled (history.layers):
layers/<layer>/grad_norm, …/weight_norm, …/update_ratio, …/dead_fraction (<layer> is the module's path,
"core_block.fc1"). The run's final figures from its record (final/steps, final/best_val_accuracy,
final/samples_per_s, final/compile_seconds, final/peak_memory_mib) have an empty step.

Parquet (the `parquet` extra: pyarrow) holds the CSV's table with its types: run_id and step int64 (step null for
the final figures), value float64, tags a list of strings, each setting as its values are (bool, int64, float64 or
string; a setting with values of several kinds is a string column), one row group per run. pandas, Polars and DuckDB
read it as it is (`pd.read_parquet`, `pl.read_parquet`, `SELECT … FROM 'runs.parquet'`).

TensorBoard gets the same metric names as scalar tags: one folder per run (run-<id>-<backend>[-<mode>]-<amp>,
named from the run's own config so re-exporting a run replaces its folder's one event file), the final figures
at the run's last step, and its config as hparams. Beside them, each sampled layer's histograms
(layers/<layer>/weights, …/grads, …/activations: its largest parameter, that parameter's gradient, its outputs)
for the Histograms and Distributions tabs, and the run's alerts as text ("alerts", one entry per step that raised
any). Event files are written with TensorBoard's own record writer and protos (the `tensorboard` extra), never
with torch.utils.tensorboard: the run history stays free of PyTorch.

Both are rebuilt from each run's recorded event stream (history.curves), one run at a time; every file is
written atomically, so a reader sees the previous export or the new one, never half of one.
"""

from __future__ import annotations

import csv
import json
import math
import re
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np

from ..ground.alerts import alert_line
from ..ground.atomic import atomic_path
from ..ground.config import settings, setup_label
from ..ground.errors import WorkbenchError
from ..ground.layer_stats import Histogram
from .curves import Curves, curves_from_columns
from .naming import run_name
from .layers import FIGURES, HISTOGRAMS, RunLayers, layer_metric, run_layers
from .runs import RunRecord, RunStore

PARQUET_HINT = "Parquet export needs pyarrow: pip install 'workbench[parquet]'"
TENSORBOARD_HINT = "TensorBoard export needs the tensorboard package: pip install 'workbench[tensorboard]'"
EVENT_FILE = "events.out.tfevents.workbench"  # TensorBoard reads any file with "tfevents" in its name
FIXED_COLUMNS = ("run_id", "run", "name", "tags", "notes", "status", "created")
_DECLARED = {setting.name: setting.kind for setting in settings()}  # what TrainConfig says each setting is
_FITS = {bool: {bool}, int: {int}, float: {int, float}, str: {str}}  # the values a declared kind's column holds
FINAL = ("steps", "best_val_accuracy", "samples_per_s", "compile_seconds", "peak_memory_mib")  # RunRecord fields


class RunsExportError(WorkbenchError):
    """The export could not be written; the message names the path and the reason."""

    kind = "io"


def export_csv(store: RunStore, run_ids: Sequence[int] | None, out: str | Path) -> int:
    """Write the runs (every run when `run_ids` is None) as one tidy CSV at `out`; return its number of rows."""
    records = _records(store, run_ids)
    settings = list(dict.fromkeys(key for record in records for key in record.config))
    rows = 0
    with _writing(Path(out)) as tmp, open(tmp, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow([*FIXED_COLUMNS, *(f"config.{key}" for key in settings), "metric", "step", "value"])
        for record in records:
            run = [record.id, run_name(record.id), record.name, " ".join(record.tags), record.notes, record.status,
                   record.created, *(record.config.get(key) for key in settings)]  # csv writes None as ""
            curves, layers = _read_run(store, record)
            for metric, step, value in _observations(record, curves, layers):
                writer.writerow([*run, metric, "" if step is None else step, value])
                rows += 1
    return rows


def export_parquet(store: RunStore, run_ids: Sequence[int] | None, out: str | Path) -> int:
    """Write the runs (every run when `run_ids` is None) as one Parquet file at `out` (the CSV's table, typed: see
    the module's docstring); return its number of rows."""
    try:  # the extra
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise RunsExportError("pyarrow is not installed", PARQUET_HINT) from None
    records = _records(store, run_ids)
    settings = {key: _setting_type(pa, key, [r.config.get(key) for r in records])
                for key in dict.fromkeys(key for record in records for key in record.config)}
    schema = pa.schema([("run_id", pa.int64()), ("run", pa.string()), ("name", pa.string()),
                        ("tags", pa.list_(pa.string())), ("notes", pa.string()), ("status", pa.string()),
                        ("created", pa.string()), *((f"config.{key}", kind) for key, kind in settings.items()),
                        ("metric", pa.string()), ("step", pa.int64()), ("value", pa.float64())])
    rows = 0
    with _writing(Path(out)) as tmp, pq.ParquetWriter(tmp, schema) as writer:
        for record in records:
            curves, layers = _read_run(store, record)
            observations = list(_observations(record, curves, layers))
            metrics, steps, values = zip(*observations) if observations else ((), (), ())
            n = len(observations)
            run = [record.id, run_name(record.id), record.name, list(record.tags), record.notes, record.status,
                   record.created, *(_setting_value(record.config.get(key), kind, pa)
                                     for key, kind in settings.items())]
            columns = [pa.array([value] * n, type=field.type) for value, field in zip(run, schema)]
            writer.write_table(pa.Table.from_arrays([*columns, pa.array(metrics, pa.string()),
                                                     pa.array(steps, pa.int64()), pa.array(values, pa.float64())],
                                                    schema=schema))
            rows += n
    return rows


def _setting_type(pa, key: str, values: list):
    """The Parquet type of a setting's column: the setting's declared kind (TrainConfig) where every value is of it,
    else its values' kind (None aside; a key of a user's older or newer version), string where they are of several."""
    kinds = {type(v) for v in values if v is not None}
    declared = _DECLARED.get(key)
    if declared is not None and kinds <= _FITS[declared]:
        kinds = {declared}
    if kinds == {bool}:
        return pa.bool_()
    if kinds == {int}:
        return pa.int64()
    if kinds and kinds <= {int, float}:
        return pa.float64()
    return pa.string()


def _setting_value(value, kind, pa):
    """A setting's value in its column's type (a string column writes what is not a string as JSON would)."""
    if value is None or kind != pa.string() or isinstance(value, str):
        return value
    return json.dumps(value)


def export_tensorboard(store: RunStore, run_ids: Sequence[int] | None, out: str | Path) -> list[Path]:
    """Write one TensorBoard run folder per run (every run when `run_ids` is None) under `out`; return them."""
    try:  # the extra: ~0.2 s to import, so only here
        from tensorboard.compat.proto import event_pb2, summary_pb2
        from tensorboard.plugins.hparams.summary_v2 import hparams_pb
        from tensorboard.plugins.text.summary_v2 import text_pb
        from tensorboard.summary.writer.record_writer import RecordWriter
    except ImportError:
        raise RunsExportError("TensorBoard is not installed", TENSORBOARD_HINT) from None
    folders = []
    for record in _records(store, run_ids):
        folder = Path(out) / tensorboard_name(record)
        wall = _start_time(record)
        config = {k: v for k, v in record.config.items() if isinstance(v, (bool, int, float, str))}
        curves, layers = _read_run(store, record)
        with _writing(folder / EVENT_FILE) as tmp, open(tmp, "wb") as fh:
            writer = RecordWriter(fh)

            def write(summary, step: int = 0) -> None:
                writer.write(event_pb2.Event(wall_time=wall, step=step, summary=summary).SerializeToString())

            writer.write(event_pb2.Event(wall_time=wall, file_version="brain.Event:2").SerializeToString())
            write(hparams_pb(config, folder.name, wall))
            for metric, step, value in _observations(record, curves, layers):
                write(summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=metric, simple_value=value)]),
                      record.steps if step is None else step)
            for tag, step, histogram in _histograms(layers):
                write(summary_pb2.Summary(value=[summary_pb2.Summary.Value(
                    tag=tag, histo=summary_pb2.HistogramProto(**histogram_fields(histogram)))]), step)
            for step, text in _alert_texts(layers):
                write(text_pb("alerts", text), step)
        folders.append(folder)
    return folders


def histogram_fields(histogram: Histogram) -> dict:
    """TensorBoard's HistogramProto fields of a histogram: bucket i holds the values up to bucket_limit[i] (its
    right edge), from `min` on; `num`, `sum` and `sum_squares` as if each bin's values sat at its centre (the
    histogram is all that was kept of them)."""
    edges = histogram.edges
    centres = [(left + right) / 2 for left, right in zip(edges, edges[1:])]
    return dict(min=histogram.lo, max=histogram.hi, num=histogram.total,
                sum=sum(c * x for c, x in zip(histogram.counts, centres)),
                sum_squares=sum(c * x * x for c, x in zip(histogram.counts, centres)),
                bucket_limit=edges[1:], bucket=list(histogram.counts))


def tensorboard_name(record: RunRecord) -> str:
    """'run-3-inductor-default-bf16': the run's TensorBoard folder, from its own config only, so it stays the same
    whichever runs are exported with it."""
    setup = re.sub(r"[^A-Za-z0-9_.]+", "-", setup_label(record.config)).strip("-")
    return f"run-{record.id}-{setup}"


def _records(store: RunStore, run_ids: Sequence[int] | None) -> list[RunRecord]:
    """The runs' rows without their events (read one run at a time later: a run can hold millions)."""
    records = store.list() if run_ids is None else [store.get(run_id) for run_id in dict.fromkeys(run_ids)]
    if not records:
        raise RunsExportError(f"no runs recorded yet in {store.path}", "train a run first")
    return records


def _read_run(store: RunStore, record: RunRecord) -> tuple[Curves, RunLayers]:
    """A run's curves, from its steps' columns and its other events, and its layers (from those events)."""
    events = store.get(record.id, with_events=True, steps=False).events
    return curves_from_columns(store.step_block(record.id), events), run_layers(events, record.config)


def _observations(record: RunRecord, curves: Curves, layers: RunLayers) -> Iterator[tuple[str, int | None, float]]:
    """(metric, step, value) of one run (its curves, and `layers`: what history.layers makes of its events), curve
    by curve: its steps and epochs, each layer's figures at its sampled steps, then its final figures (no step)."""
    for metric, steps, values in _series(curves):
        for step, value in zip(steps, values):
            yield metric, int(step), float(value)
    for series in layers.layers:
        for figure in FIGURES:
            for step, value in zip(series.steps, series.values[figure]):
                yield layer_metric(series.name, figure), step, value
    for name in FINAL:
        value = getattr(record, name)
        if value is not None:
            yield f"final/{name}", None, float(value)


def _series(curves: Curves) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """(metric, steps, values) of each curve the plots draw, by the names the CSV and TensorBoard both use."""
    return [("train/loss", curves.step, curves.loss), ("train/accuracy", *_read(curves.step, curves.accuracy)),
            ("train/samples_per_s", curves.throughput_step, curves.throughput),
            *((f"memory/{name}_mib", *_read(curves.step, values)) for name, values in curves.memory.items()),
            ("val/loss", curves.val_step, curves.val_loss), ("val/accuracy", curves.val_step, curves.val_accuracy)]


def _histograms(layers: RunLayers) -> Iterator[tuple[str, int, Histogram]]:
    """(tag, step, histogram) of each layer's histograms at each sampled step; those over a range that is not finite
    (a diverged step's gradients) are left out: TensorBoard cannot place their buckets."""
    for sample in layers.samples:
        for layer in sample.layers:
            for kind in HISTOGRAMS:
                histogram = getattr(layer, kind)
                if math.isfinite(histogram.lo) and math.isfinite(histogram.hi):
                    yield layer_metric(layer.name, kind), sample.step, histogram


def _alert_texts(layers: RunLayers) -> Iterator[tuple[int, str]]:
    """(step, Markdown) of the steps that raised alerts: each alert's line, a paragraph each."""
    by_step: dict[int, list[str]] = {}
    for alert in layers.alerts:
        by_step.setdefault(alert.step, []).append(alert_line(alert))
    for step, lines in by_step.items():
        yield step, "\n\n".join(lines)


def _read(steps: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The steps that have a reading: in these curves NaN stands for none (unlike a diverged loss's NaN, kept)."""
    kept = ~np.isnan(values)
    return steps[kept], values[kept]


def _start_time(record: RunRecord) -> float:
    """The wall time TensorBoard shows for every point: the run's start (the history keeps steps, not clocks)."""
    try:
        return datetime.fromisoformat(record.created).timestamp()
    except (ValueError, TypeError):  # a damaged row
        return 0.0


@contextmanager
def _writing(target: Path) -> Iterator[Path]:
    """atomic_path, with a path that cannot be written turned into a RunsExportError that names it."""
    try:
        with atomic_path(target) as tmp:
            yield tmp
    except OSError as exc:
        why = exc.strerror or str(exc)
        if isinstance(exc, (NotADirectoryError, FileExistsError)):
            why = f"{why} (a part of the folder path is a file)"
        raise RunsExportError(f"cannot write {target}: {why}", "choose a path in a folder you can write to") from None
