"""The run history exported as a tidy CSV and as TensorBoard event files, each read back with its own reader."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Iterator

import numpy as np
import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from tensorboard.plugins.hparams.plugin_data_pb2 import HParamsPluginData

from workbench.core.ground.errors import WorkbenchError
from workbench.core.ground.events import Step
from workbench.core.ground.layer_stats import Histogram, LayerStats
from workbench.core.history.layers import FIGURES
from workbench.core.history.runs import RunStore
from workbench.core.history.runs_export import (TENSORBOARD_HINT, RunsExportError, export_csv, export_tensorboard,
                                                histogram_fields, tensorboard_name)

from ..support.layers_history import LAYERS, SAMPLED, histogram, layered_events, old_config, record, stat
from ..support.runs_export import (FINAL_METRICS, FINISHED, export_step, read_csv, record_history, values,
                                   without_tensorboard)


@pytest.fixture
def store(tmp_path):
    record_history(tmp_path / "runs.sqlite")
    with RunStore(tmp_path / "runs.sqlite") as store:
        yield store


def test_csv_is_tidy_and_holds_every_recorded_value(store, tmp_path):
    out = tmp_path / "out" / "runs.csv"
    rows = export_csv(store, None, out)
    table = read_csv(out)
    assert len(table) == rows
    assert list(table[0])[:9] == ["run_id", "run", "name", "tags", "notes", "status", "created", "config.dataset",
                                  "config.data_root"]
    assert list(table[0])[-3:] == ["metric", "step", "value"]
    assert values(table, 1, "train/loss") == {i: 2.0 / i + 0.1 for i in range(1, 7)}  # exact, not rounded
    assert values(table, 1, "train/accuracy") == {i: 0.1 * i for i in range(2, 7)}  # step 1 had none
    assert values(table, 1, "train/samples_per_s") == {i: 1000.0 + i / 3 for i in range(2, 7)}  # not compiling
    assert values(table, 1, "memory/rss_mib") == {i: 100.0 + i for i in range(1, 7)}
    assert values(table, 1, "val/accuracy") == {3: 0.8 + 3 / 100, 6: 0.8 + 6 / 100}  # each epoch at its last step
    assert values(table, 1, "val/loss") == {3: 1 / 3, 6: 1 / 6}
    assert {m: values(table, 1, f"final/{m}") for m in FINAL_METRICS} == {m: {None: v}
                                                                            for m, v in FINAL_METRICS.items()}
    assert values(table, 2, "train/loss") == {1: 2.1, 2: 1.1}
    assert values(table, 2, "final/steps") == {None: 2.0} and not values(table, 2, "val/loss")

    first, failed = (next(r for r in table if r["run_id"] == str(i)) for i in (1, 2))
    assert (first["run"], first["status"], failed["run"], failed["status"]) == ("#1", "finished", "#2", "failed")
    assert (first["config.backend"], first["config.amp"], first["config.lr"]) == ("eager", "off", "0.01")
    assert (failed["config.backend"], failed["config.amp"], failed["config.lr"]) == ("aot_eager", "bf16", "0.001")
    assert first["config.max_steps"] == ""  # None


def test_csv_has_each_runs_name_tags_and_notes(store, tmp_path):
    store.rename(1, "warm-up, first")
    store.set_tags(1, ["baseline", "amp"])
    store.set_notes(1, 'lr "too" high\nsee #2')
    export_csv(store, None, tmp_path / "runs.csv")
    table = read_csv(tmp_path / "runs.csv")
    first, failed = (next(r for r in table if r["run_id"] == str(i)) for i in (1, 2))
    assert (first["name"], first["tags"], first["notes"]) == ("warm-up, first", "baseline amp", 'lr "too" high\nsee #2')
    assert (failed["name"], failed["tags"], failed["notes"]) == ("", "", "")
    assert all(r["name"] == "warm-up, first" for r in table if r["run_id"] == "1")  # on each of its rows


def test_csv_of_chosen_runs_only(store, tmp_path):
    rows = export_csv(store, [2, 2], tmp_path / "two.csv")
    assert {r["run_id"] for r in read_csv(tmp_path / "two.csv")} == {"2"}
    assert rows == export_csv(store, [2], tmp_path / "once.csv")  # a repeated id is exported once


def test_runs_of_other_versions_get_every_setting_and_empty_cells_for_theirs_missing(store, tmp_path):
    other = {k: v for k, v in FINISHED.to_dict().items() if k != "lr_schedule"} | {"new_setting": 3}
    store.append_events(store.start_run(other), 0, [export_step(1, 1)], {"status": "finished"})
    export_csv(store, [1, 3], tmp_path / "runs.csv")
    first, third = (next(r for r in read_csv(tmp_path / "runs.csv") if r["run_id"] == i) for i in ("1", "3"))
    assert list(first)[-4:] == ["config.new_setting", "metric", "step", "value"]
    assert (first["config.lr_schedule"], first["config.new_setting"]) == ("cosine", "")
    assert (third["config.lr_schedule"], third["config.new_setting"]) == ("", "3")


def test_tensorboard_reads_back_every_scalar_per_run(store, tmp_path):
    folders = export_tensorboard(store, None, tmp_path / "tb")
    assert [f.name for f in folders] == ["run-1-eager-off", "run-2-aot_eager-bf16"]

    def scalars(folder: Path) -> dict[str, dict[int, float]]:
        events = EventAccumulator(str(folder)).Reload()
        return {tag: {e.step: e.value for e in events.Scalars(tag)} for tag in events.Tags()["scalars"]}

    first = scalars(folders[0])
    f32 = np.float32  # TensorBoard keeps scalars as float32
    assert first["train/loss"] == {i: pytest.approx(f32(2.0 / i + 0.1)) for i in range(1, 7)}
    assert first["train/accuracy"] == {i: pytest.approx(f32(0.1 * i)) for i in range(2, 7)}
    assert first["train/samples_per_s"] == {i: pytest.approx(f32(1000.0 + i / 3)) for i in range(2, 7)}
    assert first["val/accuracy"] == {3: pytest.approx(f32(0.83)), 6: pytest.approx(f32(0.86))}
    assert first["final/best_val_accuracy"] == {6: 0.875}  # at the run's last step
    assert scalars(folders[1])["train/loss"] == {1: pytest.approx(f32(2.1)), 2: pytest.approx(f32(1.1))}
    [content] = EventAccumulator(str(folders[1])).Reload().PluginTagToContent("hparams").values()
    hparams = HParamsPluginData.FromString(content).session_start_info.hparams  # for TensorBoard's HParams tab
    assert (hparams["backend"].string_value, hparams["lr"].number_value) == ("aot_eager", 0.001)


def test_re_exporting_replaces_a_runs_event_file(store, tmp_path):
    export_tensorboard(store, [1], tmp_path / "tb")
    [folder] = export_tensorboard(store, [1], tmp_path / "tb")
    assert [p.name for p in folder.iterdir()] == ["events.out.tfevents.workbench"]
    assert len(EventAccumulator(str(folder)).Reload().Scalars("train/loss")) == 6  # not twice


def test_the_folder_name_is_the_runs_own(store):
    assert tensorboard_name(store.get(1)) == "run-1-eager-off"


def test_without_tensorboard_the_error_says_how_to_get_it(store, tmp_path, monkeypatch):
    without_tensorboard(monkeypatch)
    with pytest.raises(RunsExportError) as error:
        export_tensorboard(store, None, tmp_path / "tb")
    assert error.value.hint == TENSORBOARD_HINT and "pip install 'workbench[tensorboard]'" in TENSORBOARD_HINT
    assert not (tmp_path / "tb").exists()


def test_a_path_that_cannot_be_written_is_one_clear_error(store, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(RunsExportError, match=r"cannot write .*file/runs.csv: .*a part of the folder path is a file"):
        export_csv(store, None, blocker / "runs.csv")
    with pytest.raises(RunsExportError, match="a part of the folder path is a file"):
        export_tensorboard(store, None, blocker)
    assert blocker.read_text() == "x" and not list(tmp_path.glob("**/*.tmp"))


def test_unknown_runs_and_an_empty_history_are_errors(store, tmp_path):
    with pytest.raises(WorkbenchError, match="no run with id 9"):
        export_csv(store, [1, 9], tmp_path / "runs.csv")
    assert not (tmp_path / "runs.csv").exists()
    with RunStore(tmp_path / "empty.sqlite") as empty, pytest.raises(RunsExportError, match="no runs recorded"):
        export_csv(empty, None, tmp_path / "runs.csv")


# -- inside the network: per-layer figures, histograms and alerts ------------------------------------------------
@pytest.fixture
def layered(tmp_path) -> Iterator[tuple[RunStore, int, int]]:
    """A run with per-layer statistics and alerts, and one recorded before them (its steps only)."""
    db = tmp_path / "layered.sqlite"
    with_layers = record(db, layered_events())
    older = record(db, [e for e in layered_events() if isinstance(e, Step)], old_config())
    with RunStore(db) as store:
        yield store, with_layers, older


def test_csv_has_each_layers_figures_at_its_sampled_steps(layered, tmp_path):
    store, with_layers, older = layered
    export_csv(store, None, tmp_path / "runs.csv")
    table = read_csv(tmp_path / "runs.csv")
    for name in LAYERS:
        for figure in FIGURES:
            assert values(table, with_layers, f"layers/{name}/{figure}") == {
                step: getattr(stat(name, step), figure) for step in SAMPLED}  # exact, not rounded
    assert not [r for r in table if r["run_id"] == str(older) and r["metric"].startswith("layers/")]
    metrics = list(dict.fromkeys(r["metric"] for r in table if r["run_id"] == str(with_layers)))
    assert metrics.index("layers/block.fc1/grad_norm") > metrics.index("train/loss")  # after the curves,
    assert metrics.index("layers/block.fc2/dead_fraction") < metrics.index("final/steps")  # before the run's end


def test_tensorboard_has_each_layers_scalars_histograms_and_the_alerts(layered, tmp_path):
    from tensorboard import data_compat
    from tensorboard.backend.event_processing.event_accumulator import HISTOGRAMS, TENSORS
    from tensorboard.util import tensor_util

    store, with_layers, _ = layered
    [folder] = export_tensorboard(store, [with_layers], tmp_path / "tb")
    events = EventAccumulator(str(folder), size_guidance={HISTOGRAMS: 0, TENSORS: 0}).Reload()
    f32 = np.float32
    for name in LAYERS:
        for figure in FIGURES:
            assert {e.step: e.value for e in events.Scalars(f"layers/{name}/{figure}")} == {
                step: pytest.approx(f32(getattr(stat(name, step), figure))) for step in SAMPLED}
    for kind, offset in (("weights", 0), ("grads", 1), ("activations", 2)):
        read = events.Histograms(f"layers/block.fc2/{kind}")
        assert [e.step for e in read] == list(SAMPLED)
        made = histogram(4 + offset, 1)  # block.fc2's at step 4
        value = read[-1].histogram_value
        assert (value.min, value.max, value.num) == (made.lo, made.hi, made.total)
        assert list(value.bucket) == list(made.counts) and list(value.bucket_limit) == made.edges[1:]
        centres = [(a + b) / 2 for a, b in zip(made.edges, made.edges[1:])]
        assert value.sum == pytest.approx(sum(c * x for c, x in zip(made.counts, centres)))
        assert value.sum_squares == pytest.approx(sum(c * x * x for c, x in zip(made.counts, centres)))
    # As TensorBoard's Histograms tab reads it: [left, right, count] per bucket, its empty last bucket dropped.
    migrated = data_compat.migrate_value(_histogram_value(folder, "layers/block.fc1/weights"))
    made = histogram(1, 0)
    buckets = tensor_util.make_ndarray(migrated.tensor)
    assert buckets[:, 2].tolist() == list(made.counts[:3])
    assert buckets[:, 0].tolist() == pytest.approx(made.edges[:3]) and buckets[-1, 1] == made.hi
    texts = {e.step: e.tensor_proto.string_val[0].decode() for e in events.Tensors("alerts")}
    assert texts == {3: "alert (error, step 3): the loss went from 2.3 to 267 at step 3 — lower the learning rate",
                     4: "alert (warning, step 4): 75% of the inputs of block.fc2 were 0 — use LeakyReLU"}


def _histogram_value(folder: Path, tag: str):
    """The first Summary.Value of `tag` as written in the event file (what data_compat migrates)."""
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader

    for event in EventFileLoader(str(next(folder.iterdir()))).Load():
        for value in event.summary.value:
            if value.tag == tag:
                return value
    raise AssertionError(f"no {tag} in {folder}")


def test_tensorboard_of_an_older_run_has_no_layers_and_no_alerts(layered, tmp_path):
    store, _, older = layered
    [folder] = export_tensorboard(store, [older], tmp_path / "tb")
    tags = EventAccumulator(str(folder)).Reload().Tags()
    assert "train/loss" in tags["scalars"] and not [t for t in tags["scalars"] if t.startswith("layers/")]
    assert not tags["histograms"] and "alerts" not in tags["tensors"]


def test_histograms_over_a_range_that_is_not_finite_are_left_out(tmp_path):
    """A diverged step's gradients: TensorBoard cannot place their buckets; the other histograms still go."""
    broken = LayerStats(step=5, layers=(dataclasses.replace(stat("block.fc1", 5), grads=Histogram(
        lo=-math.inf, hi=math.nan, counts=(1.0, 2.0))),))
    db = tmp_path / "runs.sqlite"
    run_id = record(db, [*layered_events(), broken])
    with RunStore(db) as store:
        [folder] = export_tensorboard(store, [run_id], tmp_path / "tb")
    events = EventAccumulator(str(folder), size_guidance={"histograms": 0}).Reload()
    assert [e.step for e in events.Histograms("layers/block.fc1/grads")] == list(SAMPLED)
    assert [e.step for e in events.Histograms("layers/block.fc1/weights")] == [*SAMPLED, 5]


def test_histogram_fields_are_tensorboards():
    fields = histogram_fields(Histogram(lo=0.0, hi=3.0, counts=(1.0, 0.0, 2.0)))
    assert fields == {"min": 0.0, "max": 3.0, "num": 3.0, "sum": 0.5 + 2 * 2.5, "sum_squares": 0.25 + 2 * 6.25,
                      "bucket_limit": [1.0, 2.0, 3.0], "bucket": [1.0, 0.0, 2.0]}
