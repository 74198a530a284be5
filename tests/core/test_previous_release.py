"""What the previous release wrote still reads: its event logs and its run history (tests/data/previous-release/,
made by `workbench 0.1.0` before events became typed records). A user's history is years of runs; a release that
cannot open it loses them."""

from __future__ import annotations

import contextlib
import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from workbench.core.ground.amp_census import AmpCensus
from workbench.core.ground.config import TrainConfig
from workbench.core.ground.events import (AmpReport, ProfileReport, RunFailed, RunFinished, RunStarted, Step,
                                          SystemSample, Versions, from_dict, from_json, to_dict, to_json)
from workbench.core.ground.profile_trace import ProfileTables
from workbench.core.history.curves import curves_from_events
from workbench.core.history.report.build import build_report
from workbench.core.history.runs import RunStore

PREVIOUS = Path(__file__).resolve().parent.parent / "data" / "previous-release"
LOGS = ("run1", "run2", "run3")


def _lines(name: str) -> list[str]:
    return (PREVIOUS / f"{name}.events.jsonl").read_text(encoding="utf-8").splitlines()


@pytest.mark.parametrize("name", LOGS)
def test_every_stored_event_reads_and_writes_back_the_same_line(name):
    for line in _lines(name):
        stored = json.loads(line)
        event = from_json(line)
        assert type(event).__name__ == stored["type"]
        assert to_dict(event) == stored  # the layout on disk is unchanged: an old reader reads what we write


def test_the_logs_hold_every_event_type_the_release_wrote():
    kinds = {json.loads(line)["type"] for name in LOGS for line in _lines(name)}
    assert kinds == {"RunStarted", "CompileStarted", "CompileFinished", "Step", "EpochEnd", "CompileReport",
                     "CompileEvent", "SystemSample", "ProfileReport", "AmpReport", "AmpSkipped", "ModelSummary",
                     "LayerStats", "Alert", "Notice", "RunFinished", "RunFailed"}


def test_the_nested_fields_read_as_their_declared_types():
    events = [from_json(line) for line in _lines("run1")]
    started = next(e for e in events if isinstance(e, RunStarted))
    assert isinstance(started.config, TrainConfig) and isinstance(started.versions, Versions)
    assert (started.config.backend, started.config.amp, started.config.hidden_dim) == ("aot_eager", "fp16", 16)
    assert started.versions.workbench == "0.1.0"
    profile = next(e for e in events if isinstance(e, ProfileReport))
    assert isinstance(profile.summary, ProfileTables) and profile.summary.ops
    assert all(isinstance(row.calls, int) for row in profile.summary.ops)
    census = next(e for e in events if isinstance(e, AmpReport)).census
    assert isinstance(census, AmpCensus) and any(op.op == "aten.addmm" for op in census.ops)
    steps = [e for e in events if isinstance(e, Step)]
    assert [s.step for s in steps] == list(range(1, 41))
    assert any(s.memory.readings() for s in steps)
    assert all(isinstance(e.gpu, dict) for e in events if isinstance(e, SystemSample))
    finished = events[-1]
    assert isinstance(finished, RunFinished) and finished.steps == 40
    failed = from_json(_lines("run2")[-1])
    assert isinstance(failed, RunFailed) and "/no/such" in failed.message


def test_a_changed_type_in_an_old_line_is_refused_with_its_field():
    line = json.loads(_lines("run1")[0])
    line["config"]["hidden_dim"] = "sixteen"
    with pytest.raises((TypeError, ValueError), match="hidden_dim"):
        from_dict(line)


@pytest.fixture
def previous_history(tmp_path):
    """A copy of the release's runs.sqlite: opening a history may migrate it, and the test data stays as made."""
    path = tmp_path / "runs.sqlite"
    shutil.copyfile(PREVIOUS / "runs.sqlite", path)
    return path


def test_the_previous_history_opens_with_its_runs_their_events_results_and_report(previous_history):
    with RunStore(previous_history) as store:
        records = store.list()
        assert sorted(r.id for r in records) == [1, 2, 3]
        full = [store.get(r.id, with_events=True) for r in sorted(records, key=lambda r: r.id)]
    first = full[0]
    assert first.status == "finished" and first.steps == 40 and first.config["backend"] == "aot_eager"
    assert first.results is not None and first.results.best_val_accuracy == first.best_val_accuracy
    assert [type(e).__name__ for e in first.events][0] == "RunStarted"
    assert isinstance(first.events[-1], RunFinished)
    curves = curves_from_events(first.events)
    assert list(curves.step) == list(range(1, 41))
    html, data = build_report(full, {r.id: None for r in full})
    assert "#1" in html and [run["id"] for run in data["runs"]] == [1, 2, 3]


def test_the_previous_history_moves_its_steps_into_columns_losing_no_event(previous_history):
    """Schema 2 → 3 on a history the release wrote: every event of every run reads back as it read before, in its
    order (the steps from their columns, the others from their rows); the file is smaller."""
    with contextlib.closing(sqlite3.connect(previous_history)) as raw:
        before = raw.execute("SELECT run_id, data FROM events ORDER BY run_id, seq").fetchall()
        assert raw.execute("PRAGMA user_version").fetchone()[0] == 2
    size = previous_history.stat().st_size
    with RunStore(previous_history) as store:
        after = [(run_id, to_json(event)) for run_id in (1, 2, 3)
                 for event in store.get(run_id, with_events=True).events]
    assert after == [(run_id, to_json(from_json(data))) for run_id, data in before]
    with contextlib.closing(sqlite3.connect(previous_history)) as raw:
        assert raw.execute("PRAGMA user_version").fetchone()[0] == 4
        assert raw.execute("SELECT COUNT(*) FROM events WHERE type = 'Step'").fetchone()[0] == 0
        assert raw.execute("SELECT SUM(count) FROM step_blocks").fetchone()[0] == sum(
            json.loads(data)["type"] == "Step" for _id, data in before)
    assert previous_history.stat().st_size < size
