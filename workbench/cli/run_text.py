"""A finished run's figures as lines of text (the summary after `train`, `runs show`)."""

from __future__ import annotations

from ..core.ground.payback import Payback


def run_lines(metrics: dict) -> list[str]:
    """Everything a run's metrics say beyond its headline (`train` at its end, `runs show`)."""
    return [line for line in [*compile_lines(metrics), system_line(metrics), *amp_lines(metrics),
                              *profile_lines(metrics)] if line]


def amp_lines(metrics: dict) -> list[str]:
    """Mixed precision: the census, the skipped fp16 steps and the recommendation."""
    amp = metrics.get("amp")
    if not isinstance(amp, dict):
        return []
    groups = amp.get("census_groups") or {}
    lines = [f"amp {amp.get('dtype')}: {groups.get('low', 0)} op call(s) ran in {amp.get('dtype')}, "
             f"{groups.get('fp32', 0)} in fp32 (one forward and loss); recommended: {amp.get('recommendation')}"]
    if amp.get("final_scale") is not None:
        first = amp.get("first_nonfinite") or {}
        lines.append(f"amp loss scaling: {amp.get('skipped', 0)} step(s) skipped "
                     f"({amp.get('skipped_share', 0):.1%}), final scale {amp['final_scale']:g}"
                     + (f"; first non-finite gradient: {first.get('param')} at step {first.get('step')}"
                        if first else ""))
    return lines


def profile_lines(metrics: dict) -> list[str]:
    """The profiled window: its cost, the heaviest ops and where the trace is."""
    profile = metrics.get("profile")
    if not isinstance(profile, dict):
        return []
    cost = profile.get("cost") or {}
    line = f"profile: steps {profile.get('first_step')}–{profile.get('last_step')}"
    if cost.get("profiled_step_ms") and cost.get("steady_step_ms"):
        line += (f", {cost['profiled_step_ms']:.2f} ms a profiled step against {cost['steady_step_ms']:.2f} ms "
                 f"a steady one")
    if profile.get("memory_peak_bytes"):
        line += f"; peak memory {profile['memory_peak_bytes'] / 2**20:,.1f} MiB ({profile.get('memory_source')})"
    lines = [line]
    for op in profile.get("top_ops") or ():
        device = f", {op['self_device_us'] / 1000:.2f} ms self on the device" if op.get("self_device_us") else ""
        lines.append(f"  {op.get('self_cpu_us', 0) / 1000:8.2f} ms self CPU{device}  {op.get('calls')}×  "
                     f"{op.get('name')}" + (f"  [{op['region']}]" if op.get("region") else ""))
    if profile.get("trace"):
        lines.append(f"profile trace: {profile['trace']} ({profile.get('trace_bytes', 0) / 2**20:.1f} MiB gzipped; "
                     f"open it in ui.perfetto.dev)" + (f"; left out: {profile['trimmed']}" if profile.get("trimmed")
                                                       else ""))
    if profile.get("problem"):
        lines.append(f"profile: {profile['problem']}")
    return lines


def compile_lines(metrics: dict) -> list[str]:
    """What a compiled run's metrics say about compiling: the payback, the recompile forecast against what
    happened, and where the compile trace is (`train` at its end, `runs show` for a recorded run)."""
    lines = []
    payback = Payback.from_dict(metrics.get("payback"))
    if payback is not None:
        lines.append(f"payback: {payback.verdict()} (eager {payback.eager_step_s * 1e3:.2f} ms/step, compiled "
                     f"{payback.compiled_step_s * 1e3:.2f} ms/step, compile {payback.compile_s:.1f} s)")
    elif metrics.get("payback_problem"):
        lines.append(f"payback: {metrics['payback_problem']}")
    for check in metrics.get("recompile_forecast") or ():
        if isinstance(check, dict):
            what = check.get("text") or "; ".join(map(str, check.get("observed") or ()))
            lines.append(f"recompile forecast: {check.get('verdict')}: {what}")
    if metrics.get("compile_trace"):
        problem = metrics.get("compile_trace_problem")
        lines.append(f"compile trace: {metrics['compile_trace']}" + (f" ({problem})" if problem else ""))
    return lines


def system_line(metrics: dict) -> str | None:
    """A run's system figures in one line (`train` at its end, `runs show`); None for a run without them."""
    from ..core.history.report_cells import gpu_text

    system = metrics.get("system")
    if not isinstance(system, dict) or not system:
        return None
    gpu = gpu_text(system) or metrics.get("system_gpu_problem") or ""
    return (f"system: CPU {system.get('cpu_process_mean', 0):.0f} % of a core (machine "
            f"{system.get('cpu_machine_mean', 0):.0f} %), peak RSS {system.get('rss_peak_mib', 0):,.0f} MiB"
            + (f"; {gpu}" if gpu else ""))
