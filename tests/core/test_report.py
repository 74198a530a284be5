"""The HTML/JSON run report: built from real recorded runs (eager, aot_eager, a planted graph break, a diverged
run), checked for every section, offline-safety, escaping, the re-evaluation of checkpoints, and clean failures."""

from __future__ import annotations

import base64
import dataclasses
import errno
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

import workbench
from workbench.core.ground import atomic
from workbench.core.ground.config import TrainConfig
from workbench.core.ground.errors import WorkbenchError
from workbench.core.ground.events import (CompileReport, EpochEnd, Frame, GraphBreak, MemorySample, Notice, RunFailed,
                                          Step)
from workbench.core.domain.evaluate import evaluate_run
from workbench.core.history.report.build import build_report
from workbench.core.history.report.facts import last_compile_report
from workbench.core.history.report.page import SECTIONS
from workbench.core.history.report.write import ReportError
from workbench.core.history.runs import RunRecord, RunStore
from workbench.core.history.report.svgchart import downsample, nice_ticks, tick_labels
from workbench.core.kernel.run_files import run_recorded
from workbench.core.kernel.reports import write_report
from workbench.core.run.run_request import RunRequest

PLANTED = Path(workbench.__file__).parents[1] / "resources" / "examples" / "planted_break.py"
REPORTED = dict(epochs=1, max_steps=40, hidden_dim=32)  # 40 steps: curves with a shape to draw
VAL_SIZE = 1000  # mnist-sample's held-out split
EVIL = "<script>alert(1)</script>"

# src=/href= pointing at the network, protocol-relative included; url(...) and @import in CSS.
NETWORK_REF = re.compile(r"""(?:src|href)\s*=\s*["']?\s*(?:https?:)?//|url\(\s*["']?\s*(?:https?:)?//|@import""",
                         re.IGNORECASE)


@dataclasses.dataclass
class Runs:
    db: Path
    eager: int
    aot: int
    planted: int
    failed: int


def record_run(config: TrainConfig, out_dir: Path, db: Path):
    """One run trained in this process with its files and its record kept (what a run process does)."""
    return run_recorded(RunRequest(config=config, out_dir=str(Path(out_dir).resolve()), db=str(db)))


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Runs:
    """Four real runs recorded once for the whole module (about 3 s on two cores, one torch thread)."""
    root = tmp_path_factory.mktemp("report-runs")
    db = root / "runs.sqlite"
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        configs = {
            "eager": TrainConfig(**REPORTED),
            "aot": TrainConfig(**REPORTED, backend="aot_eager"),
            "planted": TrainConfig(**REPORTED, backend="aot_eager", model=f"{PLANTED}:PlantedBreakNet"),
            "failed": TrainConfig(**REPORTED, lr=10.0),
        }
        for name, config in configs.items():
            record_run(config, root / name, db)
    finally:
        torch.set_num_threads(threads)
    store = RunStore(db)
    ids = {Path(r.out_dir).name: r.id for r in store.list()}
    store.close()
    return Runs(db=db, **ids)


@pytest.fixture
def store(runs):
    store = RunStore(runs.db)
    yield store
    store.close()


@pytest.fixture(scope="module")
def two_run_report(runs, tmp_path_factory):
    """eager + aot_eager: (html text, json data, html path)."""
    store = RunStore(runs.db)
    try:
        html_path, json_path = write_report(store, [runs.eager, runs.aot], tmp_path_factory.mktemp("rep") / "r.html")
    finally:
        store.close()
    return html_path.read_text(encoding="utf-8"), json.loads(json_path.read_text(encoding="utf-8")), html_path


def _report(store, ids, out: Path) -> tuple[str, dict]:
    html_path, json_path = write_report(store, ids, out)
    return html_path.read_text(encoding="utf-8"), json.loads(json_path.read_text(encoding="utf-8"))


def _run(data: dict, run_id: int) -> dict:
    return next(r for r in data["runs"] if r["id"] == run_id)


def _headings(text: str) -> list[str]:
    return re.findall(r"<h2>(.*?)</h2>", text)


# -- structure --------------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_two_run_report_has_every_section_in_order(two_run_report, runs):
    text, _, html_path = two_run_report
    assert _headings(text) == list(SECTIONS.values())
    assert f"run #{runs.eager}" in text and f"run #{runs.aot}" in text
    assert re.search(r"Generated \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", text)
    assert html_path.with_suffix(".json").is_file()


def test_one_run_report_has_no_comparison(store, runs, tmp_path):
    text, data = _report(store, [runs.eager], tmp_path / "one.html")
    assert _headings(text) == [h for h in SECTIONS.values() if h != "Comparison"]
    assert data["comparison"] is None
    assert [r["id"] for r in data["runs"]] == [runs.eager]


def test_report_works_offline(two_run_report):
    text = two_run_report[0]
    assert not NETWORK_REF.search(text)
    assert "<script" not in text.lower() and "<link" not in text.lower()
    assert "<svg" in text
    images = re.findall(r"<img src='([^']*)'", text)
    assert images, "the misclassified gallery should show images"
    for uri in images:
        assert uri.startswith("data:image/png;base64,")
        image = Image.open(io.BytesIO(base64.b64decode(uri.split(",", 1)[1])))
        assert image.format == "PNG" and image.size == (28, 28)


def test_report_is_small(two_run_report):
    assert two_run_report[2].stat().st_size < 600_000


def test_differing_settings_are_highlighted_and_name_the_series(two_run_report, runs):
    text = two_run_report[0]
    assert re.search(r"<tr class=diff><th>backend</th><td>eager</td><td>aot_eager</td>", text)
    assert re.search(r"<tr><th>epochs</th>", text)  # the same in both runs: not highlighted
    legend = re.search(r"<div class=legend>(.*?)</div>", text).group(1)
    assert f"#{runs.eager} eager" in legend and f"#{runs.aot} aot_eager" in legend


def test_curves_are_svg_charts_with_tick_labels(two_run_report):
    text = two_run_report[0]
    curves = text[text.index("<section id=curves>"):text.index("<section id=metrics>")]
    for title in ("Loss", "Accuracy", "Throughput", "Memory: rss"):
        assert f"<h3>{title}</h3><svg" in curves
    assert curves.count("<polyline") == 8  # 4 charts × 2 runs
    # one validation dot per run (one epoch each) on the loss and on the accuracy chart
    assert curves.count("class='marker'") == 4
    accuracy = curves[curves.index("<h3>Accuracy</h3>"):curves.index("<h3>Throughput</h3>")]
    assert accuracy.count("<polyline") == 2 and "validation accuracy at the end of each epoch" in accuracy
    assert re.search(r"text-anchor='end'>[\d.]+k?</text>", curves)


# -- evaluation -------------------------------------------------------------------------------------------------
def test_confusion_matrix_covers_the_validation_split(two_run_report, runs):
    text, data, _ = two_run_report
    for run_id in (runs.eager, runs.aot):
        evaluation = _run(data, run_id)["evaluation"]
        matrix = evaluation["confusion"]
        assert len(matrix) == 10 and all(len(row) == 10 for row in matrix)
        assert sum(map(sum, matrix)) == evaluation["size"] == VAL_SIZE
        correct = sum(matrix[i][i] for i in range(10))
        assert correct / VAL_SIZE == pytest.approx(evaluation["accuracy"])
        # The checkpoint holds the final weights: re-evaluating them gives the run's own final accuracy.
        assert evaluation["accuracy"] == pytest.approx(_run(data, run_id)["metrics"]["final_val_accuracy"], abs=2e-3)
        assert len(evaluation["misclassified"]) == min(24, VAL_SIZE - correct)
    assert text.count("<table class=confusion>") == 2
    captions = re.findall(r"<figcaption>true (\d) → predicted (\d) \((\d+)%\)</figcaption>", text)
    assert len(captions) == 48 and all(t != p for t, p, _ in captions)


def test_missing_checkpoint_is_explained(store, tmp_path):
    record_run(TrainConfig(epochs=1, max_steps=5, hidden_dim=8), tmp_path / "gone", store.path)
    run_id = store.list()[-1].id
    (tmp_path / "gone" / "checkpoint.pt").unlink()
    text, data = _report(store, [run_id], tmp_path / "gone.html")
    assert "no longer exists" in _run(data, run_id)["evaluation"]["unavailable"]
    assert re.search(r"<p class=missing>Not available: the checkpoint file .*checkpoint\.pt no longer exists", text)
    assert "<table class=confusion>" not in text


@pytest.mark.slow
@pytest.mark.parametrize("later", [dict(hidden_dim=16), {}], ids=["other settings", "same settings"])
def test_a_checkpoint_overwritten_by_a_later_run_is_not_passed_off_as_this_runs(tmp_path, later):
    tiny = TrainConfig(epochs=1, max_steps=3, hidden_dim=8)
    db = tmp_path / "runs.sqlite"
    for config in (tiny, tiny.replace(**later)):
        record_run(config, tmp_path / "latest", db)  # the CLI's default: every run in runs/latest
    with RunStore(db) as store:
        first, second = store.list()
    assert first.checkpoint == second.checkpoint
    evaluation, reason = evaluate_run(first)
    assert evaluation is None and "overwritten by a later run" in reason
    assert evaluate_run(second)[0] is not None


def test_model_code_is_trusted_only_for_the_runs_own_model_file(store, runs):
    record = store.get(runs.planted)
    evaluation, reason = evaluate_run(record)  # no consent: nothing imported, and the reason says so
    assert evaluation is None and "needs consent" in reason
    evaluation, _ = evaluate_run(record, trust_model_code=True)  # the run's own model file: imported, evaluated
    assert evaluation is not None and sum(map(sum, evaluation.confusion)) == VAL_SIZE
    other = dataclasses.replace(record, config={**record.config, "model": "sandwich"})
    assert evaluate_run(other, trust_model_code=True)[0] is None  # a file the run did not name: never imported


# -- compile report ---------------------------------------------------------------------------------------------
def test_compile_section_for_eager_and_compiled_runs(two_run_report, runs):
    text, data, _ = two_run_report
    section = text[text.index("<section id=compile>"):text.index("<section id=comparison>")]
    assert "ran eagerly: nothing was compiled" in section
    assert "<tr><th>Compiled</th><td>yes</td></tr>" in section
    assert "<tr><th>Backend / mode</th><td>aot_eager / default</td></tr>" in section
    assert re.search(r"compile \(first step\): [\d.]+ (ms|s), the time of about [\d,]+ steady steps", section)
    assert re.search(r"Steady-state step: [\d.]+ (µs|ms) \(median of 39 steps\)", section)
    compiled = _run(data, runs.aot)["compile"]
    assert compiled["source"] == "run" and compiled["compiled"] is True and compiled["graph_count"] >= 1
    assert _run(data, runs.eager)["compile"] is None


def test_the_last_compile_report_prefers_what_happened_while_training():
    run = CompileReport(compiled=True, backend="aot_eager", mode="default", source="run")
    explained = dataclasses.replace(run, source="explain", graph_count=3)
    assert last_compile_report([run, explained]) == run  # an inspection never hides what the run did
    assert last_compile_report([explained]) == explained
    assert last_compile_report([Notice("info", "no compile")]) is None


def test_graph_break_source_line_is_escaped(store, runs, tmp_path):
    text, data = _report(store, [runs.planted], tmp_path / "planted.html")
    section = text[text.index("<section id=compile>"):text.index("<section id=failures>")]
    assert "print(&quot;mean input:&quot;" in section
    assert 'print("mean input:"' not in text
    assert "planted_break.py:" in section and "<h4>Graph breaks</h4>" in section
    breaks = _run(data, runs.planted)["compile"]["breaks"]
    assert any(b["source"] and 'print("mean input:"' in b["source"] for b in breaks)


# -- comparison -------------------------------------------------------------------------------------------------
def test_json_holds_metrics_and_the_comparison(two_run_report, runs):
    _, data, _ = two_run_report
    assert data["format"] == "workbench-report"
    for run_id in (runs.eager, runs.aot):
        metrics = _run(data, run_id)["metrics"]
        assert metrics["status"] == "finished" and metrics["steps"] == 40 and metrics["epochs"] == 1
        assert metrics["samples_per_s"] > 0 and metrics["peak_memory_mib"] > 0
    comparison = data["comparison"]
    assert comparison["baseline_run"] == runs.eager
    rows = {r["id"]: r for r in comparison["runs"]}
    assert rows[runs.eager]["speedup"] == 1.0
    aot = _run(data, runs.aot)["metrics"]["samples_per_s"] / _run(data, runs.eager)["metrics"]["samples_per_s"]
    assert rows[runs.aot]["speedup"] == pytest.approx(aot)
    assert rows[runs.aot]["compile_seconds"] > 0


def test_without_an_eager_run_the_first_run_is_the_baseline_and_the_report_says_so(store, runs):
    records = [store.get(runs.aot, with_events=True), store.get(runs.planted, with_events=True)]
    text, data = build_report(records, {})
    assert data["comparison"]["baseline_run"] == runs.aot
    assert data["comparison"]["runs"][0]["speedup"] == 1.0
    assert f"relative to the first run, #{runs.aot}" in text


def test_a_report_read_with_steps_as_columns_is_the_report_read_from_events(store, runs):
    """write_report reads each run's steps as columns (RunStore.get_with_columns), not a Step object each: what it
    writes is what the events gave."""
    from datetime import datetime, timezone

    when = datetime(2026, 12, 5, tzinfo=timezone.utc)
    ids = [runs.eager, runs.aot, runs.failed]
    from_columns = build_report([store.get_with_columns(run_id) for run_id in ids], {}, generated=when)
    from_events = build_report([store.get(run_id, with_events=True) for run_id in ids], {}, generated=when)
    assert store.get_with_columns(runs.eager).step_columns is not None
    assert not any(isinstance(e, Step) for e in store.get_with_columns(runs.eager).events)
    assert from_columns == from_events


# -- failures ---------------------------------------------------------------------------------------------------
def test_failed_run_shows_its_failure(store, runs, tmp_path):
    text, data = _report(store, [runs.eager, runs.failed], tmp_path / "failed.html")
    failure = _run(data, runs.failed)["failure"]
    assert failure["kind"] == "diverged" and "loss exploded" in failure["message"]
    section = text[text.index("<section id=failures>"):]
    assert f"failed (diverged)</h3><pre>{failure['message']}</pre>" in section
    assert "lower the learning rate" in section
    assert "failed before saving one" in _run(data, runs.failed)["evaluation"]["unavailable"]


def test_stopped_and_interrupted_runs_say_so(store, runs):
    record = store.get(runs.eager, with_events=True)
    stopped = dataclasses.replace(record, status="stopped")
    interrupted = dataclasses.replace(record, id=99, status="interrupted", checkpoint=None)
    text, _ = build_report([stopped, interrupted], {})
    assert "was stopped by the user after 40 steps" in text
    assert "was interrupted: its process ended without finishing" in text


# -- escaping ---------------------------------------------------------------------------------------------------
def _evil_record(base: RunRecord) -> RunRecord:
    """A run whose every user-visible string tries to inject markup."""
    config = {**base.config, "data_root": EVIL, "model": f"/tmp/{EVIL}.py:Net", "dataset": f"idx{EVIL}"}
    brk = GraphBreak(reason=f"reason {EVIL}\nmore {EVIL}",
                     frames=(Frame(file=f"/x/{EVIL}.py", line=3, function="forward", source=f"y = '{EVIL}'"),))
    events = list(base.events) + [
        CompileReport(compiled=True, backend="aot_eager", mode="default", graph_count=2, graph_break_count=1,
                      breaks=(brk,), recompiles=(f"guard {EVIL}",), warnings=(f"warn {EVIL}",)),
        Notice("warning", f"note {EVIL}", f"hint {EVIL}"),
        RunFailed(kind="data", message=f"cannot read {EVIL}", hint=f"fix {EVIL}"),
    ]
    return dataclasses.replace(base, id=77, status="failed", config=config, failure=None, checkpoint=None,
                               environment={**base.environment, "device_name": EVIL}, events=events,
                               name=f"name {EVIL}", notes=f"# notes\n{EVIL}", tags=(f"tag{EVIL}",))


def test_user_text_is_always_escaped(store, runs):
    base = store.get(runs.eager, with_events=True)
    text, data = build_report([base, _evil_record(base)], {})
    assert "<script" not in text.lower()
    escaped = "&lt;script&gt;alert(1)&lt;/script&gt;"
    for where in ("<section id=runs>", "<section id=config>", "<section id=compile>", "<section id=failures>",
                  "<section id=curves>"):
        section = text[text.index(where):]
        assert escaped in section[:section.index("</section>")], where
    assert _run(data, 77)["config"]["data_root"] == EVIL  # the JSON keeps the raw text
    assert (_run(data, 77)["name"], _run(data, 77)["notes"]) == (f"name {EVIL}", f"# notes\n{EVIL}")
    assert f"<title>Workbench report — run #{base.id}, run #77 (name &lt;script&gt;" in text


def test_a_runs_name_tags_and_notes_are_shown_where_it_is_named(store, runs):
    base = store.get(runs.eager, with_events=True)
    named = dataclasses.replace(base, name="warm-up", tags=("baseline", "amp"), notes="lr too high\n\n- next: 3e-3")
    other = store.get(runs.aot, with_events=True)
    text, data = build_report([named, other], {})
    runs_section = text[text.index("<section id=runs>"):text.index("</section>")]
    assert "<th>Tags</th>" in runs_section and "<td>baseline, amp</td>" in runs_section
    assert "<h3>Notes</h3>" in runs_section and "<pre>lr too high\n\n- next: 3e-3</pre>" in runs_section
    assert runs_section.count("— warm-up") == 2  # the run's row and its note's heading; not the other run
    legend = text[text.index("<div class=legend>"):]
    assert "#%d eager — warm-up</span>" % named.id in legend[:legend.index("</div>")]
    comparison = text[text.index("<section id=comparison>"):]
    assert "— warm-up" in comparison[:comparison.index("</section>")]
    assert f"<title>Workbench report — run #{named.id} (warm-up), run #{other.id}</title>" in text
    assert (_run(data, named.id)["name"], _run(data, named.id)["tags"]) == ("warm-up", ["baseline", "amp"])
    assert (_run(data, other.id)["name"], _run(data, other.id)["tags"], _run(data, other.id)["notes"]) == ("", [], "")


def test_runs_that_differ_only_by_seed_are_one_group_with_its_mean_and_spread(store, runs):
    base = store.get(runs.eager, with_events=True)
    seeds = [dataclasses.replace(base, id=base.id + 100 * k, config={**base.config, "seed": k},
                                 best_val_accuracy=accuracy, samples_per_s=speed)
             for k, (accuracy, speed) in enumerate(((0.90, 1000.0), (0.92, 1200.0), (0.97, 1100.0)))]
    other = store.get(runs.aot, with_events=True)  # another backend: not in the group
    text, _ = build_report([*seeds, other], {})
    runs_section = text[text.index("<section id=runs>"):text.index("</section>")]
    groups = runs_section[runs_section.index("<h3>Seed groups</h3>"):]
    assert groups.count("<tr>") == 2  # a header and one group: the other backend's run is alone
    assert "93.00% ± 3.61% (90.00%–97.00%, 3 runs)" in groups and "1,100 ± 100 (1,000–1,200, 3 runs)" in groups
    alone, _ = build_report([seeds[0], other], {})
    assert "Seed groups" not in alone


# -- errors -----------------------------------------------------------------------------------------------------
def test_unknown_run_id_raises_a_clear_error(store, runs, tmp_path):
    with pytest.raises(WorkbenchError, match="no run with id 424242"):
        write_report(store, [runs.eager, 424242], tmp_path / "r.html")
    assert list(tmp_path.iterdir()) == []


def test_output_under_a_file_raises_report_error_and_leaves_nothing(store, runs, tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    with pytest.raises(ReportError, match="cannot write the report to .*not-a-folder"):
        write_report(store, [runs.eager], blocker / "report.html")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["not-a-folder"]


def test_output_that_is_a_folder_raises_report_error_and_leaves_nothing(store, runs, tmp_path):
    (tmp_path / "report.html").mkdir()
    with pytest.raises(ReportError):
        write_report(store, [runs.eager], tmp_path / "report.html")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html"]
    assert list((tmp_path / "report.html").iterdir()) == []


def test_output_in_a_read_only_folder_raises_report_error(store, runs, tmp_path, monkeypatch):
    def read_only(target, suffix=""):  # what creating a file in a read-only folder does (root is never refused)
        raise PermissionError(errno.EACCES, "Permission denied", str(target.parent))

    monkeypatch.setattr(atomic, "temp_beside", read_only)
    with pytest.raises(ReportError, match=r"cannot write the report to .*report\.html: Permission denied"):
        write_report(store, [runs.eager], tmp_path / "report.html")
    assert list(tmp_path.iterdir()) == []


def test_json_twin_that_cannot_be_written_takes_the_html_with_it(store, runs, tmp_path):
    (tmp_path / "report.json").mkdir()  # the HTML can be written, its JSON twin cannot
    with pytest.raises(ReportError, match="report.json"):
        write_report(store, [runs.eager], tmp_path / "report.html")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.json"]


def test_report_files_are_written_without_touching_the_process_umask(store, runs, tmp_path, monkeypatch):
    """Reports are written on a pool thread: setting the umask (to read it) would race with the other threads."""
    mask = os.umask(0o022)
    os.umask(mask)

    def umask(value):
        raise AssertionError("the process umask was changed while writing")

    monkeypatch.setattr(os, "umask", umask)
    html_path, json_path = write_report(store, [runs.eager], tmp_path / "r.html")
    assert html_path.stat().st_mode & 0o777 == json_path.stat().st_mode & 0o777 == 0o666 & ~mask


def test_written_files_are_flushed_through_a_writable_descriptor(tmp_path, monkeypatch):
    """Windows refuses to fsync a file opened read-only."""
    modes = []

    def spying_open(path, mode="r", *args, **kwargs):
        modes.append(mode)
        return open(path, mode, *args, **kwargs)

    monkeypatch.setattr(atomic, "open", spying_open, raising=False)
    atomic.write_text_atomic(tmp_path / "f.txt", "text")
    assert modes and all("+" in mode or "w" in mode for mode in modes)
    assert (tmp_path / "f.txt").read_text() == "text"


# -- charts -----------------------------------------------------------------------------------------------------
def test_downsample_bounds_points_and_keeps_extremes():
    n = 1_000_000
    xs = list(range(n))
    ys = [1.0] * n
    ys[123_457], ys[876_543] = 50.0, -7.0
    dx, dy = downsample(xs, ys)
    assert len(dx) <= 800 and len(dx) == len(dy)
    assert dy.max() == 50.0 and dy.min() == -7.0
    assert (np.diff(dx) > 0).all() and dx[dy.argmax()] == 123_457 and dx[dy.argmin()] == 876_543
    short_x, short_y = downsample([1, 2, 3], [3, 2, 1])
    assert short_x.tolist() == [1, 2, 3] and short_y.tolist() == [3, 2, 1]


def test_a_long_run_makes_a_small_report():
    n = 100_000
    steps = [Step(step=i, epoch=1, loss=2.0 / i ** 0.5, samples_per_s=50_000.0 + i % 97, step_seconds=1e-3,
                  memory=MemorySample(allocated=10.0, reserved=20.0, peak=30.0 + i % 5)) for i in range(1, n + 1)]
    record = RunRecord(id=1, created="2025-01-01T00:00:00+00:00", status="finished", config={"backend": "eager"},
                       environment={}, steps=n, best_val_accuracy=None, samples_per_s=None, compile_seconds=None,
                       peak_memory_mib=None, backend_used="eager", failure=None, out_dir=None, checkpoint=None,
                       events=steps)
    text, data = build_report([record], {})
    assert len(text.encode()) < 100_000
    for title in ("Memory: allocated", "Memory: reserved", "Memory: peak"):
        assert f"<h3>{title}</h3><svg" in text
    assert max(len(p.split()) for p in re.findall(r"points='([^']*)'", text)) <= 800
    assert data["runs"][0]["metrics"]["peak_memory_mib"] == 34.0


def test_ticks_are_round_and_cover_the_range():
    assert nice_ticks(0.13, 2.41) == pytest.approx([0.0, 0.5, 1.0, 1.5, 2.0, 2.5])
    assert nice_ticks(5.0, 5.0)[0] < 5.0 < nice_ticks(5.0, 5.0)[-1]
    assert tick_labels([0.0, 20_000.0, 40_000.0]) == ["0", "20k", "40k"]
    assert tick_labels([0.0, 0.05, 0.1]) == ["0", "0.05", "0.10"]


def _synthetic(run_id: int, backend: str, memory: MemorySample) -> RunRecord:
    steps = [Step(step=i, epoch=1, loss=1.0 / i, samples_per_s=1000.0, step_seconds=0.01, memory=memory)
             for i in range(1, 31)]
    return RunRecord(id=run_id, created="2025-01-01T00:00:00+00:00", status="finished",
                     config={"backend": backend, "amp": "off"}, environment={}, steps=30, best_val_accuracy=None,
                     samples_per_s=None, compile_seconds=None, peak_memory_mib=None, backend_used=backend,
                     failure=None, out_dir=None, checkpoint=None, events=steps)


def test_runs_with_different_memory_readings_each_get_their_own_chart():
    cpu = _synthetic(1, "eager", MemorySample(rss=900.0))
    cuda = _synthetic(2, "aot_eager", MemorySample(allocated=10.0, reserved=20.0, peak=30.0))
    text, data = build_report([cpu, cuda], {})
    curves = text[text.index("<section id=curves>"):text.index("<section id=metrics>")]
    titles = re.findall(r"<h3>(Memory: \w+)</h3><svg", curves)
    assert titles == ["Memory: allocated", "Memory: reserved", "Memory: peak", "Memory: rss"]
    assert curves.count("<polyline") == 2 + 2 + 4  # loss and throughput for both runs, one line per memory chart
    assert [r["metrics"]["peak_memory_mib"] for r in data["runs"]] == [900.0, 30.0]
    assert data["comparison"]["runs"][1]["speedup"] == 1.0  # same samples/s as the eager baseline


def test_non_finite_values_stay_out_of_charts_and_json():
    record = _synthetic(5, "eager", MemorySample(rss=900.0))
    record.events[10] = dataclasses.replace(record.events[10], loss=float("inf"))
    record.events.append(EpochEnd(epoch=1, train_loss=float("nan"), val_loss=float("nan"), val_accuracy=0.1,
                                  seconds=1.0))
    text, data = build_report([record], {})
    json.dumps(data, allow_nan=False)  # strict JSON: NaN became null
    assert data["runs"][0]["metrics"]["final_val_loss"] is None
    for points in re.findall(r"points='([^']*)'", text):
        assert "nan" not in points and "inf" not in points
    loss_points = re.findall(r"points='([^']*)'", text)[0].split()
    assert len(loss_points) == 29  # 30 steps, the infinite one left out


# -- layering: rendering is history's, and history is below torch ------------------------------------------------
def test_the_report_renderer_imports_no_torch():
    code = ("import sys, workbench.core.history.report.build\n"
            "print(sorted(m for m in sys.modules if m == 'torch' or m.startswith(('torch.', 'workbench.core.domain',"
            " 'workbench.core.engine', 'workbench.core.run'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


# -- CUDA graphs: the graph pool counts as reserved, not allocated (pytorch/pytorch#121932) -----------------------
@pytest.mark.parametrize("backend, mode", [("cudagraphs", "default"), ("inductor", "reduce-overhead")])
def test_memory_of_a_cuda_graph_run_says_its_pool_is_in_reserved(backend, mode):
    cuda = MemorySample(allocated=10.0, reserved=200.0, peak=30.0)
    graphed = dataclasses.replace(_synthetic(7, backend, cuda), config={"backend": backend, "mode": mode, "amp": "off"})
    plain = dataclasses.replace(_synthetic(8, "inductor", cuda), config={"backend": "inductor", "mode": "default",
                                                                        "amp": "off"})
    text, _ = build_report([plain, graphed], {})
    curves = text[text.index("<section id=curves>"):text.index("<section id=metrics>")]
    titles = re.findall(r"<h3>(Memory: [^<]+)</h3><svg", curves)
    assert titles == ["Memory: allocated (CUDA-graph pool is in reserved)", "Memory: reserved", "Memory: peak"]
    note = curves[curves.index("CUDA-graph pool is in reserved"):curves.index("<h3>Memory: reserved")]
    assert "#7" in note and "#8" not in note and "pytorch/pytorch#121932" in note  # names the graphed run only
    text, _ = build_report([plain], {})  # no CUDA graphs: the plain title, no note
    assert "CUDA-graph pool" not in text and "<h3>Memory: allocated</h3>" in text
