"""`workbench bench`: throughput, the GUI's cost, recording's cost and each instrument's cost, measured."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..core.ground.events import RunFinished
from .common import _check_writable, _csv, _write_json, fail, quiet_torch_logs


# -- benchmark --------------------------------------------------------------------------------------------------
def cmd_bench(args: argparse.Namespace) -> int:
    from ..core.domain import devices
    from ..core.tools.bench import BenchSettings, format_table, run_bench
    from ..core.ground.config import TrainConfig

    def progress(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    quiet_torch_logs()
    if args.json:
        _check_writable(Path(args.json))  # a benchmark takes minutes: do not lose its results at the very end
    if args.gui:
        return _bench_gui(args, progress)
    TrainConfig(device=args.device).check_runnable(devices.cuda_available())  # as train does: no silent CPU
    if args.recording:
        return _bench_recording(args, progress)
    if args.instruments:
        return _bench_instruments(args, progress)
    settings = BenchSettings(device=args.device, dataset=args.dataset, batch_size=args.batch_size,
                             hidden_dim=args.hidden_dim, warmup=args.warmup, windows=args.windows,
                             window_steps=args.window_steps, matmul_precision=args.matmul_precision)
    if args.quick:
        settings.warmup, settings.windows, settings.window_steps, settings.eval_batches, settings.pairs = 2, 2, 3, 2, 1
    result = run_bench(settings, _csv(args.backends), _csv(args.modes), _csv(args.amp), progress)
    print(format_table(result))
    _write_json(args.json, result.to_dict())
    return 0


def _bench_gui(args: argparse.Namespace, progress) -> int:
    import os

    from ..core.ground.config import TrainConfig
    from ..gui_launch import display_problem

    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    problem = display_problem()
    if problem:
        return fail(f"cannot run the GUI benchmark: {problem}")
    from ..ui.bench_gui import format_gui_report, run_gui_bench

    epochs = 2 if args.quick else args.gui_epochs
    config = TrainConfig(epochs=epochs)
    compile_config = None if args.quick else TrainConfig(epochs=max(2, epochs // 2), backend="inductor")
    report = run_gui_bench(config, headless_samples_per_s, pairs=1 if args.quick else 2,
                           compile_config=compile_config, progress=progress)
    print(format_gui_report(report))
    _write_json(args.json, report)
    return 0


def headless_samples_per_s(config, out: Path) -> float:
    """The CLI's own path for a run (in this process, nothing recorded): what `bench --gui` compares the app to."""
    from ..core.kernel.launch import start_run
    from ..core.run.run_request import Launch, RunRequest

    request = RunRequest(config=config, out_dir=str(out.resolve()), record=False, launch=Launch(where="here"))
    result = start_run(request, lambda event: None)
    if not isinstance(result, RunFinished):
        raise RuntimeError(f"the headless run failed: {result.message}")
    return result.results.samples_per_s


def _bench_recording(args: argparse.Namespace, progress) -> int:
    import tempfile

    from ..core.tools.bench import recording_overhead
    from ..core.ground.config import TrainConfig

    config = TrainConfig(epochs=1 if args.quick else 20, batch_size=32, device=args.device)
    with tempfile.TemporaryDirectory(prefix="workbench-bench-recording-") as folder:
        result = recording_overhead(config, 1 if args.quick else 7, Path(folder), progress)
    print(f"recording the run history: {result['median_ratio']:.3f}× the samples/s of not recording "
          f"(median of {len(result['ratios'])} back-to-back pairs: "
          + ", ".join(f"{r:.3f}" for r in result["ratios"]) + ")")
    print(f"method: {config.epochs} epochs of the default config (batch 32, "
          f"{config.epochs * 125} steps) per run; each pair runs without and with the SQLite history (WAL, a "
          "commit every 0.5 s), the first of each pair alternating; both write events.jsonl and the checkpoint")
    _write_json(args.json, result)
    return 0


def _bench_instruments(args: argparse.Namespace, progress) -> int:
    from ..core.ground.config import TrainConfig
    from ..core.tools.bench_instruments import instrument_overhead

    config = TrainConfig(epochs=1 if args.quick else 3, batch_size=32, device=args.device)
    result = instrument_overhead(config, 1 if args.quick else 7, progress)
    for name, figures in result["instruments"].items():
        print(f"{name}: on = {figures['median_ratio']:.3f}× the samples/s of off (pairs: "
              + ", ".join(f"{r:.3f}" for r in figures["ratios"]) + ")"
              + (f"; a profiled step takes {figures['window_step_ratio']:.2f}× a steady one"
                 if figures["window_step_ratio"] else "")
              + (f"; a sampled step takes {figures['sampled_step_ratio']:.2f}× a steady one: every "
                 f"{config.stats_every} steps that is {(figures['sampled_step_ratio'] - 1) / config.stats_every:.1%} "
                 f"of the steady time" if figures["sampled_step_ratio"] else ""))
    print(f"method: {config.epochs} epoch(s) of the default config (batch 32, {config.epochs * 125} steps) per run, "
          "in this process, no files; each pair runs the instrument off and on, the first of each pair alternating; "
          "a ratio is steady samples/s on / off (the profiled steps are not steady: they are priced apart); the "
          "per-layer statistics are priced within each run too: the median time of a sampled step against the other "
          "steady steps (exact per step on the CPU)")
    _write_json(args.json, result)
    return 0
