"""A finished run in lines of text, in the same words wherever it is shown: at the end of `workbench train`, in
`workbench runs show`, and in the window's Log. Torch-free, so the window and `workbench runs` render it too."""

from __future__ import annotations

from .events import RunFinished
from .figures import FINAL_VAL_ACCURACY
from .results import AmpSummary, ProfileSummary, RunResults, SystemSummary


def finished_lines(finished: RunFinished) -> list[str]:
    """The run's headline, then what its results say beyond it: compiling (the payback, the recompile forecast
    against what happened, the trace), the machine, mixed precision and the profiled window."""
    results = finished.results
    lines = [headline(finished), *compile_lines(results)]
    if results.system is not None:
        lines.append(system_line(results.system, results.system_gpu_problem))
    if results.amp is not None:
        lines += amp_lines(results.amp)
    if results.profile is not None:
        lines += profile_lines(results.profile)
    return lines


def accuracy_text(final: float | None, best: float | None) -> str:
    """The two accuracies a run has, each called by its name: the final one (the checkpoint's) and, where an
    earlier epoch did better, the best (what the headline and the Runs dock show)."""
    if final is None:
        return f"{FINAL_VAL_ACCURACY.name} — (no epoch was validated)"
    text = f"{FINAL_VAL_ACCURACY.name} {final:.2%}"
    return text + (f" (best {best:.2%})" if best is not None and f"{best:.2%}" != f"{final:.2%}" else "")


def headline(finished: RunFinished) -> str:
    results = finished.results
    state = "stopped early" if finished.stopped else "finished"
    return (f"{state}: {finished.steps} steps, {finished.epochs} epoch(s) in {finished.seconds:.1f} s · "
            f"{accuracy_text(results.val_accuracy, results.best_val_accuracy)} · "
            f"{results.samples_per_s:,.0f} samples/s"
            + (f" · compile {results.compile_seconds:.1f} s" if results.compile_seconds else ""))


def compile_lines(results: RunResults) -> list[str]:
    """Whether compiling paid off, the recompile forecast against what happened, and where the compile trace is."""
    lines = []
    payback = results.payback
    if payback is not None:
        lines.append(f"payback: {payback.verdict()} (eager {payback.eager_step_s * 1e3:.2f} ms/step, compiled "
                     f"{payback.compiled_step_s * 1e3:.2f} ms/step, compile {payback.compile_s:.1f} s)")
        lines += [f"payback, {line}" for line in payback.launch_lines()]
    elif results.payback_problem:
        lines.append(f"payback: {results.payback_problem}")
    for check in results.recompile_forecast or ():
        what = check.forecast.text if check.forecast is not None else "; ".join(check.observed)
        lines.append(f"recompile forecast: {check.verdict}: {what}")
    trace = results.compile_trace
    if trace is not None and trace.path:
        lines.append(f"compile trace: {trace.path}" + (f" ({trace.problem})" if trace.problem else ""))
    return lines


def system_line(system: SystemSummary, gpu_problem: str = "") -> str:
    """The machine in one line: CPU, peak memory, and the GPUs (or why there are no GPU figures)."""
    gpu = gpu_text(system) or gpu_problem
    return (f"system: CPU {system.cpu_process_mean:.0f} % of a core (machine {system.cpu_machine_mean:.0f} %), "
            f"peak RSS {system.rss_peak_mib:,.0f} MiB" + (f"; {gpu}" if gpu else ""))


def gpu_text(system: SystemSummary) -> str:
    """'cuda:0: 87 % busy, peak 412 W, 61 °C, 30,512 MiB' per GPU of a run's system summary; '' without one."""
    return "; ".join(f"{name}: {g.util_mean:.0f} % busy, peak {g.power_peak_w:.0f} W, {g.temp_peak_c:.0f} °C, "
                     f"{g.memory_peak_mib:,.0f} MiB" for name, g in system.gpus.items())


def amp_lines(amp: AmpSummary) -> list[str]:
    """Mixed precision: the census, the skipped fp16 steps and the recommendation."""
    groups = amp.census_groups
    lines = [f"amp {amp.dtype}: {groups.get('low', 0)} op call(s) ran in {amp.dtype}, {groups.get('fp32', 0)} in "
             f"fp32 (one forward and loss); recommended: {amp.recommendation}"]
    if amp.final_scale is not None:
        first = amp.first_nonfinite
        lines.append(f"amp loss scaling: {amp.skipped} step(s) skipped ({amp.skipped_share:.1%}), final scale "
                     f"{amp.final_scale:g}"
                     + (f"; first non-finite gradient: {first.param} at step {first.step}" if first else ""))
    return lines


def profile_lines(profile: ProfileSummary) -> list[str]:
    """The profiled window: its cost, the heaviest ops and where the trace is."""
    cost = profile.cost
    line = f"profile: steps {profile.first_step}–{profile.last_step}"
    if cost.profiled_step_ms and cost.steady_step_ms:
        line += (f", {cost.profiled_step_ms:.2f} ms a profiled step against {cost.steady_step_ms:.2f} ms a steady "
                 f"one")
    if profile.memory_peak_bytes:
        line += f"; peak memory {profile.memory_peak_bytes / 2**20:,.1f} MiB ({profile.memory_source})"
    lines = [line]
    for op in profile.top_ops:  # rows of the op table (ground.profile_trace), heaviest first
        device = f", {op.self_device_us / 1000:.2f} ms self on the device" if op.self_device_us else ""
        lines.append(f"  {op.self_cpu_us / 1000:8.2f} ms self CPU{device}  {op.calls}×  {op.name}"
                     + (f"  [{op.region}]" if op.region else ""))
    if profile.trace:
        lines.append(f"profile trace: {profile.trace} ({profile.trace_bytes / 2**20:.1f} MiB gzipped; open it in "
                     f"ui.perfetto.dev)" + (f"; left out: {profile.trimmed}" if profile.trimmed else ""))
    if profile.problem:
        lines.append(f"profile: {profile.problem}")
    return lines
