"""A diff that explains: only what differs between runs, in settings, environment and behaviour, each behaviour with
the settings that explain it."""

from __future__ import annotations

import pytest

from workbench.core.ground.alerts import Alert
from workbench.core.ground.config import TrainConfig
from workbench.core.ground.errors import WorkbenchError
from workbench.core.ground.events import AmpSkipped, CompileReport, RunFinished
from workbench.core.ground.payback import Payback
from workbench.core.ground.results import AmpSummary, RunResults
from workbench.core.history.diff import (BEHAVIOUR, ENVIRONMENT, MISSING, MODEL_FILE, SETTINGS, DiffRow, RunDiff,
                                         diff_runs)
from workbench.core.history.runs import RunRecord

ENVIRONMENT_OF = {"device": "cuda:0", "device_name": "NVIDIA H200", "torch": "2.5.1", "python": "3.11.9",
                  "cuda": "12.4", "workbench": "0.1.0"}


def _record(run_id: int, *, config: dict | None = None, environment: dict | None = None, host: str = "lab",
            best: float | None = 0.95, rate: float | None = 1000.0, compile_s: float | None = 0.0,
            memory: float | None = 500.0, steps: int = 100, backend_used: str | None = None, events: tuple = (),
            status: str = "finished", **settings) -> RunRecord:
    config = config if config is not None else TrainConfig(**settings).to_dict()
    return RunRecord(id=run_id, created="2025-03-14T10:00:00+00:00", status=status, config=config,
                     environment=dict(ENVIRONMENT_OF if environment is None else environment), steps=steps,
                     best_val_accuracy=best, samples_per_s=rate, compile_seconds=compile_s, peak_memory_mib=memory,
                     backend_used=backend_used or config.get("backend"), failure=None, out_dir=None, checkpoint=None,
                     updated="2025-03-14T10:01:40+00:00", host=host, events=list(events))


def _finished(**results) -> RunFinished:
    return RunFinished(steps=100, epochs=1, seconds=100.0, stopped=False, results=RunResults(**results))


def _fp16(skipped: int) -> AmpSummary:
    return AmpSummary(dtype="fp16", recommendation="bf16", census_groups={}, skipped=skipped, skipped_steps=(),
                      first_nonfinite=None, final_scale=1024.0, skipped_share=skipped / 100)


def _rows(diff: RunDiff, section: str) -> dict[str, DiffRow]:
    return {row.field: row for row in diff.section(section)}


def test_two_runs_that_differ_in_backend_and_amp():
    eager = _record(1, rate=1234.4, events=[_finished()])
    compiled = _record(2, backend="inductor", amp="fp16", rate=2500.0, compile_s=12.5, memory=420.0,
                       events=[CompileReport(compiled=True, backend="inductor", mode="default", graph_break_count=2,
                                             recompiles=("size mismatch",)),
                               _finished(amp=_fp16(7), payback=Payback(0.010, 0.005, 12.5, 100))])
    diff = diff_runs([eager, compiled])
    assert diff.run_ids == (1, 2)
    settings = _rows(diff, SETTINGS)
    assert list(settings) == ["Backend", "AMP"]
    assert settings["Backend"].values == ("eager", "inductor") and settings["AMP"].values == ("off (fp32)", "fp16")
    assert diff.section(ENVIRONMENT) == ()
    behaviour = _rows(diff, BEHAVIOUR)
    assert list(behaviour) == ["backend used", "graph breaks", "recompiles", "compile", "payback",
                               "AMP skipped steps", "peak memory", "samples/s"]  # accuracy, steps … are equal
    assert behaviour["backend used"].note == "with backend eager / inductor"
    assert behaviour["graph breaks"].values == (MISSING, "2") and behaviour["recompiles"].values == (MISSING, "1")
    assert behaviour["compile"].values == ("none (eager)", "12.50 s")
    assert behaviour["compile"].note.startswith("an eager run compiles nothing; with backend eager / inductor")
    assert behaviour["payback"].values == (MISSING, "2,500 steps")
    assert behaviour["AMP skipped steps"].values == (MISSING, "7")
    assert behaviour["AMP skipped steps"].note == ("only fp16 scales the loss, and skips the steps whose gradients "
                                                   "overflow; with amp off / fp16")
    assert behaviour["peak memory"].values == ("500 MiB", "420 MiB")
    assert behaviour["samples/s"].values == ("1,234", "2,500")
    assert behaviour["samples/s"].note == "with backend eager / inductor, amp off / fp16"


def test_equal_values_are_left_out_as_shown_and_the_environment_says_what_differs():
    one = _record(1, rate=1234.4, host="lab")
    other = _record(2, rate=1234.1, host="gpu-box", memory=900.0,
                    environment={**ENVIRONMENT_OF, "torch": "2.6.0", "gpu": "NVIDIA H200"})
    diff = diff_runs([one, other])
    assert diff.section(SETTINGS) == ()
    environment = _rows(diff, ENVIRONMENT)
    assert list(environment) == ["PyTorch", "GPU", "Host"]
    assert environment["PyTorch"].values == ("2.5.1", "2.6.0") and environment["GPU"].values == (MISSING, "NVIDIA H200")
    assert environment["Host"].values == ("lab", "gpu-box")
    behaviour = _rows(diff, BEHAVIOUR)
    assert list(behaviour) == ["peak memory"]  # 1,234 samples/s both: not a difference
    assert behaviour["peak memory"].note == "with PyTorch 2.5.1 / 2.6.0, GPU — / NVIDIA H200, Host lab / gpu-box"


def test_a_run_that_lacks_a_value_shows_a_dash():
    old = _record(1, config={k: v for k, v in TrainConfig().to_dict().items() if k != "matmul_precision"},
                  best=None, environment={"torch": "2.5.1"})
    new = _record(2, environment={"torch": "2.5.1", "python": "3.11.9"})
    diff = diff_runs([old, new])
    assert _rows(diff, SETTINGS)["fp32 matmul precision"].values == (MISSING, "highest (full fp32)")
    assert _rows(diff, ENVIRONMENT)["Python"].values == (MISSING, "3.11.9")
    assert _rows(diff, BEHAVIOUR)["best val accuracy"].values == (MISSING, "95.00%")


def test_a_behaviour_names_only_the_settings_that_bear_on_it():
    seed0 = _record(1, seed=0, best=0.95, compile_s=None)
    seed1 = _record(2, seed=1, best=0.93, compile_s=None)
    behaviour = _rows(diff_runs([seed0, seed1]), BEHAVIOUR)
    assert list(behaviour) == ["best val accuracy"]
    assert behaviour["best val accuracy"].note == "with seed 0 / 1"
    faster = _record(3, seed=0, rate=1100.0, lr=1e-2)  # lr differs, but lr does not bear on speed
    behaviour = _rows(diff_runs([seed0, faster]), BEHAVIOUR)
    assert behaviour["samples/s"].note == ""
    same = _record(4, seed=0, rate=1100.0, compile_s=None)
    assert _rows(diff_runs([seed0, same]), BEHAVIOUR)["samples/s"].note == "no setting differs: the runs' own variation"


def test_a_fallback_to_eager_is_explained():
    planned = _record(1, backend="inductor", allow_eager_fallback=True)
    fell = _record(2, backend="inductor", allow_eager_fallback=True, backend_used="eager", status="finished")
    row = _rows(diff_runs([planned, fell]), BEHAVIOUR)["backend used"]
    assert row.values == ("inductor", "eager") and row.note == "#2 fell back to eager when compiling failed"


def test_skipped_steps_of_a_run_that_did_not_finish_are_counted_from_its_events():
    running = _record(1, amp="fp16", status="running", events=[AmpSkipped(step=3, scale=65536.0)] * 2)
    finished = _record(2, amp="fp16", events=[_finished(amp=_fp16(5))])
    assert _rows(diff_runs([running, finished]), BEHAVIOUR)["AMP skipped steps"].values == ("2", "5")


def test_a_model_file_is_compared_by_its_content_today(tmp_path):
    first, second = tmp_path / "net.py", tmp_path / "net2.py"
    first.write_text("class Net: pass\n")
    second.write_text("class Net: pass  # changed\n")
    gone = tmp_path / "gone.py"
    runs = [_record(i, model=f"{path}:Net") for i, path in enumerate((first, second, gone), 1)]
    row = _rows(diff_runs(runs), SETTINGS)[MODEL_FILE]
    assert row.values[0] != row.values[1] and len(row.values[0]) == 12 and row.values[2] == "file gone"
    assert "now" in row.note
    same = [_record(1, model=f"{first}:Net"), _record(2, model=f"{first}:Net", lr=1e-2)]
    assert MODEL_FILE not in _rows(diff_runs(same), SETTINGS)
    builtin = [_record(1), _record(2, model=f"{first}:Net")]
    assert _rows(diff_runs(builtin), SETTINGS)[MODEL_FILE].values[0] == MISSING


def test_three_runs_and_the_diff_as_plain_data():
    runs = [_record(1), _record(2, backend="aot_eager"), _record(3, backend="inductor", mode="max-autotune",
                                                                 compile_s=40.0)]
    diff = diff_runs(runs)
    assert _rows(diff, SETTINGS)["Backend"].values == ("eager", "aot_eager", "inductor")
    compile_row = _rows(diff, BEHAVIOUR)["compile"]
    assert compile_row.values == ("none (eager)", "0 s", "40.00 s")
    assert compile_row.note.startswith("an eager run compiles nothing; with backend eager / aot_eager / inductor, "
                                       "mode default / default / max-autotune")
    assert RunDiff.from_dict(diff.to_dict()) == diff


def test_a_diff_needs_two_runs():
    with pytest.raises(WorkbenchError, match="two or more runs"):
        diff_runs([_record(1)])


def test_the_alerts_each_run_raised_are_a_behaviour_named_with_the_settings_behind_them():
    exploding = Alert(step=8, rule="grad_exploding", severity="warning", title="the gradient norm is 56", advice="")
    failed = Alert(step=10, rule="loss_exploded", severity="error", title="the loss went to 267", advice="")
    older = {k: v for k, v in TrainConfig().to_dict().items() if not k.startswith(("alert_", "stats_"))}
    diff = diff_runs([_record(1, lr=1.0, events=[failed, exploding]), _record(2), _record(3, config=older)])
    row = _rows(diff, BEHAVIOUR)["alerts"]
    assert row.values == ("grad_exploding (step 8), loss_exploded (step 10)", "none", MISSING)
    assert row.note.startswith("with lr 1 / 0.004 / 0.004")  # the setting that bears on it most first
    assert "alerts" not in _rows(diff_runs([_record(1), _record(2, lr=0.01)]), BEHAVIOUR)  # none in both: no row
