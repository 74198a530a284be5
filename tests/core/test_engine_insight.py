"""Issue 14 inside the engine: the profiled window of a real run, and AMP health (census, loss scale, skipped steps).

The parsers have tests of their own (test_profile_trace.py, test_memory_trace.py, test_amp.py); these check what a
run does with them: which steps are profiled, that they stay off the steady figures, where the report and the
trace go, and that fp16's skipped steps are found and named."""

from __future__ import annotations

import gzip
import json

import pytest

from workbench.core.domain.profiler import SETTLE_STEPS, profile_window
from workbench.core.engine import Trainer, standard_instruments
from workbench.core.engine.instruments.amp_health import AmpHealth
from workbench.core.engine.instruments.system_metrics import SystemMetrics
from workbench.core.ground.signals import RunSignals
from workbench.core.ground.events import (AmpReport, AmpSkipped, CompileStarted, Notice, ProfileReport, RunFinished,
                                          Step)

from ..helpers import SMALL, of, run, steps


# -- the window -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("first_steady, total, wanted, window", [
    (2, 100, 20, (2 + SETTLE_STEPS, 2 + SETTLE_STEPS + 19)),  # after the compile and the settling steps
    (1, 10, 20, (1, 10)),  # too short: every steady step, from the first
    (2, 12, 5, (2 + SETTLE_STEPS, 2 + SETTLE_STEPS + 4)),
    (2, 8, 5, (4, 8)),  # moved earlier (fewer settling steps) so that all five fit
    (6, 5, 5, None),  # CUDA's warm-up alone is longer than the run
    (2, 100, 0, None),  # off
])
def test_the_window_follows_the_warm_up_and_fits_the_run(first_steady, total, wanted, window):
    assert profile_window(first_steady, total, wanted) == window


# -- a profiled run ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def profiled(tmp_path_factory):
    out = tmp_path_factory.mktemp("profile")
    events, result = run(SMALL.replace(max_steps=14, profile_steps=5),
                         instruments=standard_instruments(profile_dir=out))
    return events, result, out


def test_the_profiled_steps_are_marked_and_kept_off_the_steady_figures(profiled):
    events, _, _ = profiled
    first, last = 1 + SETTLE_STEPS, SETTLE_STEPS + 5  # eager on the CPU: step 1 is already steady
    assert [s.step for s in steps(events) if s.profiled] == list(range(first, last + 1))
    assert all(not s.steady for s in steps(events) if s.profiled)


def test_the_report_follows_its_steps_and_covers_them(profiled):
    events, _, _ = profiled
    [report] = of(events, ProfileReport)
    at = events.index(report)
    assert max(s.step for s in steps(events[:at])) == report.last_step  # after the window's last Step …
    assert min(s.step for s in steps(events[at:])) == report.last_step + 1  # … before the next one
    assert [s.step for s in report.summary.steps] == list(range(report.first_step, report.last_step + 1))
    names = {op.name for op in report.summary.ops}
    assert {"aten::addmm", "Optimizer.step#AdamW.step"} & names
    cost = report.summary.cost
    assert cost.profiled_step_ms > 0 and cost.steady_step_ms > 0
    memory = report.memory
    assert memory.source == "profiler" and memory.peak_bytes > 0
    params = 784 * 16 + 16 + 16 * 10 + 10  # hidden 16: the weights are the constant bottom layer
    assert memory.categories["parameters"][0] == params * 4


def test_the_trace_is_written_gzipped_and_in_the_metrics(profiled):
    events, result, out = profiled
    [report] = of(events, ProfileReport)
    assert report.trace == str(out / "trace.json.gz") and report.problem == ""
    with gzip.open(report.trace, "rt", encoding="utf-8") as fh:
        trace = json.load(fh)
    assert any(e.get("name") == f"ProfilerStep#{report.first_step}" for e in trace["traceEvents"])
    assert report.trace_bytes == (out / "trace.json.gz").stat().st_size
    profile = result.results.profile
    assert profile.trace == report.trace and profile.first_step == report.first_step
    assert profile.top_ops == report.summary.ops[:len(profile.top_ops)]


def test_a_compiled_run_shows_its_compiled_region():
    events, _ = run(SMALL.replace(backend="aot_eager", max_steps=10, profile_steps=3))
    [report] = of(events, ProfileReport)
    regions = {op.region for op in report.summary.ops}
    assert any(r.startswith("compiled") for r in regions), regions
    assert report.first_step >= 2  # never the compiling step
    assert report.trace == ""  # no folder given: the report only


def test_a_run_too_short_to_profile_says_so():
    events, result = run(SMALL.replace(backend="aot_eager", max_steps=1, profile_steps=5))
    assert not of(events, ProfileReport) and result.results.profile is None
    assert any("not profiled" in n.message for n in of(events, Notice))


# -- AMP health -------------------------------------------------------------------------------------------------
def test_bf16_reports_its_census_before_compiling_and_in_the_metrics():
    events, result = run(SMALL.replace(amp="bf16", backend="aot_eager", max_steps=3))
    [report] = of(events, AmpReport)
    assert events.index(report) < events.index(of(events, CompileStarted)[0])
    assert report.dtype == "bf16" and report.census.groups.low > 0 and report.recommendation
    assert all(s.loss_scale is None for s in steps(events))  # bf16 needs no loss scaling
    assert result.results.amp.dtype == "bf16" and result.results.amp.final_scale is None


def test_no_amp_no_census():
    events, result = run(SMALL.replace(max_steps=3))
    assert not of(events, AmpReport) and result.results.amp is None


def test_an_overflowing_fp16_scale_skips_steps_and_names_the_gradient():
    huge = 2.0 ** 40  # the largest allowed: the scaled gradients overflow fp16 for the whole run
    events, result = run(SMALL.replace(amp="fp16", loss_scale=huge, max_steps=6))
    skipped = of(events, AmpSkipped)
    assert [s.step for s in skipped] == [1, 2, 3, 4, 5, 6]
    assert [s.scale for s in skipped] == [huge / 2 ** i for i in range(6)]  # each ran with the halved scale
    assert {s.param for s in skipped} == {"core_block.fc1.weight"}  # the first parameter, in the model's order
    assert [s.loss_scale for s in steps(events)] == [huge / 2 ** i for i in range(1, 7)]
    amp = result.results.amp
    assert amp.skipped == 6 and amp.first_nonfinite.step == 1 and amp.final_scale == huge / 2 ** 6
    finished = of(events, RunFinished)[0]
    assert finished.steps == 6


def test_a_sane_fp16_scale_skips_nothing():
    events, result = run(SMALL.replace(amp="fp16", max_steps=6))
    assert not of(events, AmpSkipped) and result.results.amp.skipped == 0
    assert all(s.loss_scale == 65536.0 for s in steps(events))


# -- CUDA (never run here: no GPU on this machine) ---------------------------------------------------------------
@pytest.mark.cuda
def test_a_cuda_run_records_the_allocator_history_and_the_kernels(tmp_path):
    events, result = run(SMALL.replace(device="cuda", max_steps=16, profile_steps=3),
                         instruments=standard_instruments(profile_dir=tmp_path))
    [report] = of(events, ProfileReport)
    assert report.summary.device == "cuda"
    assert any(op.self_device_us > 0 for op in report.summary.ops)  # kernels charged to their ops
    assert any(span.kind == "kernel" for span in report.summary.spans)
    memory = report.memory
    assert memory.source == "cuda allocator" and memory.peak_bytes > 0
    assert max(memory.categories["parameters"]) > 0  # the weights' blocks, known by their addresses
    snapshot = tmp_path / "memory-snapshot.pickle"
    assert report.snapshot == str(snapshot) and snapshot.is_file()


@pytest.mark.cuda
def test_an_overflowing_fp16_scale_on_cuda_skips_steps():
    events, result = run(SMALL.replace(device="cuda", amp="fp16", loss_scale=2.0 ** 40, max_steps=4))
    assert [s.step for s in of(events, AmpSkipped)] == [1, 2, 3, 4]
    assert result.results.amp.first_nonfinite.param == "core_block.fc1.weight"


# -- profiling on request, during the run (through the window and the kernel: tests/ui/test_profile_window.py) ----
def test_a_profile_asked_for_during_the_run_covers_the_next_steps():
    signals = RunSignals()
    events: list = []

    def emit(event):
        events.append(event)
        if isinstance(event, Step) and event.step == 5:
            signals.request_profile(3)

    Trainer(flush_seconds=0.0).run(SMALL.replace(max_steps=12), emit, signals)  # a read-back after every step
    [report] = of(events, ProfileReport)
    assert (report.first_step, report.last_step) == (6, 8)  # from the read-back after step 5
    assert [s.step for s in steps(events) if s.profiled] == [6, 7, 8]
    assert not [n for n in of(events, Notice) if "profil" in n.message]  # nothing to decline, nothing to warn


def test_a_second_request_while_profiling_is_declined():
    signals = RunSignals()
    events: list = []

    def emit(event):
        events.append(event)
        if isinstance(event, Step) and event.step in (2, 3):
            signals.request_profile(4)

    Trainer(flush_seconds=0.0).run(SMALL.replace(max_steps=12), emit, signals)
    assert [(r.first_step, r.last_step) for r in of(events, ProfileReport)] == [(3, 6)]
    assert "already profiling steps 3–6" in [n.message for n in of(events, Notice)]


def test_the_benchmark_can_switch_the_per_step_instruments_off():  # what `bench --instruments` prices
    events, result = run(SMALL.replace(amp="fp16", loss_scale=2.0 ** 40, max_steps=4),
                         instruments=standard_instruments(leave_out=(AmpHealth, SystemMetrics)))
    assert all(s.loss_scale is None for s in steps(events)) and not of(events, AmpSkipped)
    assert not [e for e in events if type(e).__name__ == "SystemSample"] and result.results.system is None
