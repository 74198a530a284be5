"""A finished run in words: one renderer for `workbench train`, `workbench runs show` and the window's Log."""

from __future__ import annotations

import dataclasses

from workbench.core.ground.events import RunFinished
from workbench.core.ground.results import GpuSummary, RunResults
from workbench.core.ground.results_text import finished_lines, headline

from ..support.full_results import FULL


def _finished(results: RunResults, stopped: bool = False) -> RunFinished:
    return RunFinished(steps=250, epochs=2, seconds=12.34, stopped=stopped, results=results)


def test_the_headline_says_how_it_ended_and_its_figures():
    assert headline(_finished(FULL)) == ("finished: 250 steps, 2 epoch(s) in 12.3 s · final val accuracy 91.00% "
                                         "(best 92.00%) · 5,124 samples/s · compile 1.5 s")
    assert headline(_finished(RunResults(), stopped=True)) == (
        "stopped early: 250 steps, 2 epoch(s) in 12.3 s · final val accuracy — (no epoch was validated) · "
        "0 samples/s")


def test_the_final_accuracy_is_called_final_and_a_better_earlier_one_best():
    """The Log and `runs show` say the last epoch's accuracy, the headline and the Runs dock the best: each says which
    it is, so 93.30 % and 93.50 % are never two unlabelled figures for one run."""
    better_before = RunResults(val_accuracy=0.933, best_val_accuracy=0.935, samples_per_s=900.0)
    assert "final val accuracy 93.30% (best 93.50%)" in headline(_finished(better_before))
    at_best = RunResults(val_accuracy=0.935, best_val_accuracy=0.935, samples_per_s=900.0)
    assert "final val accuracy 93.50% ·" in headline(_finished(at_best))


def test_an_eager_run_without_instruments_is_its_headline():
    assert finished_lines(_finished(RunResults(val_accuracy=0.5, samples_per_s=900.0))) == [
        "finished: 250 steps, 2 epoch(s) in 12.3 s · final val accuracy 50.00% · 900 samples/s"]


def test_every_part_a_run_had_gets_its_lines_in_order():
    lines = finished_lines(_finished(FULL))
    assert lines[1:] == [
        "payback: paid for itself at step 25 (compiled steps are 1.25× as fast as eager) (eager 10.00 ms/step, "
        "compiled 8.00 ms/step, compile 0.1 s)",
        "payback, cold launch: pays off at step 25 (compile 0.1 s, measured in this run)",
        "payback, next launch (warm): not measured yet: the next run with these settings starts warm from this run's "
        "compile cache and measures it",
        "recompile forecast: confirmed: forward recompiles for validation",
        "recompile forecast: not predicted: forward: 0/2: size mismatch",
        "compile trace: /runs/r/compile-trace (install tlparse)",
        "system: CPU 180 % of a core (machine 46 %), peak RSS 900 MiB; cuda:0: 87 % busy, peak 412 W, 61 °C, "
        "30,512 MiB",
        "amp fp16: 2 op call(s) ran in fp16, 3 in fp32 (one forward and loss); recommended: bf16: …",
        "amp loss scaling: 2 step(s) skipped (5.0%), final scale 16384; first non-finite gradient: core.fc1.weight "
        "at step 3",
        "profile: steps 12–31, 2.50 ms a profiled step against 2.00 ms a steady one; peak memory 0.0 MiB (profiler)",
        "      0.81 ms self CPU  40×  aten::addmm",
        "profile trace: /runs/r/profile/trace.json.gz (0.1 MiB gzipped; open it in ui.perfetto.dev); left out: "
        "memory events",
    ]


def test_a_run_that_was_not_measured_says_why():
    results = RunResults(payback_problem="not measured: the run was stopped", system_gpu_problem="no NVML",
                         system=dataclasses.replace(FULL.system, gpus={}))
    lines = finished_lines(_finished(results, stopped=True))
    assert lines[1:] == ["payback: not measured: the run was stopped",
                         "system: CPU 180 % of a core (machine 46 %), peak RSS 900 MiB; no NVML"]
    two = dataclasses.replace(FULL.system, gpus={**FULL.system.gpus, "cuda:1": GpuSummary(10.0, 1.0, 50.0, 30.0)})
    assert "; cuda:1: 10 % busy, peak 50 W, 30 °C, 1 MiB" in finished_lines(_finished(RunResults(system=two)))[1]
