"""A run's results with every part a run can have: what the tests of the results' stored layout
(tests/core/test_results.py) and of their text (test_results_text.py) read and write."""

from __future__ import annotations

from workbench.core.ground.forecast import EVAL_MODE, NOT_PREDICTED, Forecast, ForecastCheck
from workbench.core.ground.payback import Payback
from workbench.core.ground.profile_trace import OpRow, ProfileCost
from workbench.core.ground.results import (AmpSummary, CompileTrace, GpuSummary, NonFinite, ProfileSummary, RunResults,
                                           SystemSummary)

EVAL = Forecast(cause=EVAL_MODE, phase="eval", when="at the first validation (after step 125)",
                text="forward recompiles for validation", fix="expected: no fix needed", expected=True)
PAYBACK = Payback(eager_step_s=0.010, compiled_step_s=0.008, compile_s=0.05, steps=30, method="paired test")
OP = OpRow(name="aten::addmm", region="", calls=40, self_cpu_us=812.5, cpu_us=900.0, self_device_us=0.0,
           device_us=0.0, shapes="[[64, 784]]")

# Every part a run can have, as the engine builds it.
FULL = RunResults(
    train_loss=0.41, val_loss=0.32, val_accuracy=0.91, best_val_accuracy=0.92, samples_per_s=5123.5,
    compile_seconds=1.5, compile_breakdown={"train": 1.25, "eval": 0.25}, peak_memory_mib=812.0,
    backend_used="aot_eager", epochs_completed=2,
    system=SystemSummary(samples=4, cpu_process_mean=180.0, cpu_machine_mean=45.5, rss_peak_mib=900.0,
                         gpus={"cuda:0": GpuSummary(util_mean=87.0, memory_peak_mib=30512.0, power_peak_w=412.5,
                                                    temp_peak_c=61.0)}),
    system_gpu_problem="",
    amp=AmpSummary(dtype="fp16", recommendation="bf16: …", census_groups={"low": 2, "fp32": 3, "other": 0},
                   skipped=2, skipped_steps=(3, 9), first_nonfinite=NonFinite(step=3, param="core.fc1.weight"),
                   final_scale=16384.0, skipped_share=0.05),
    profile=ProfileSummary(first_step=12, last_step=31, trace="/runs/r/profile/trace.json.gz", trace_bytes=81_234,
                           trimmed="memory events", snapshot="", top_ops=(OP,),
                           cost=ProfileCost(profiled_step_ms=2.5, steady_step_ms=2.0), memory_peak_bytes=4096,
                           memory_source="profiler", problem=""),
    payback=PAYBACK,
    recompile_forecast=(ForecastCheck(EVAL, observed=("forward: 0/1: GLOBAL_STATE changed: grad_mode",),
                                      verdict="confirmed"),
                        ForecastCheck(None, observed=("forward: 0/2: size mismatch",), verdict=NOT_PREDICTED)),
    compile_trace=CompileTrace("/runs/r/compile-trace", "install tlparse"),
    replica_checksums=("ab12", "ab12"),
    checkpoint="/runs/r/checkpoint.pt",
)
