"""`workbench lr-find`, `batch-find` and `sweep`: searching the settings."""

from __future__ import annotations

import argparse
import sys
import threading

from ..core.ground.progress import format_duration
from .common import EXIT_RUN_FAILED, _write_json, fail, quiet_torch_logs
from .options import config_from_args
from .progress import interrupt_sets


def cmd_lr_find(args: argparse.Namespace) -> int:
    """The range test in this process: a line every 20 steps while it runs, then the suggestion and its rule."""
    from ..core.kernel.lr_finder import find_lr

    quiet_torch_logs()
    config = config_from_args(args)
    stop = threading.Event()

    def heard(point) -> None:
        if point.step % 20 == 0:
            print(f"step {point.step:4d}  LR {point.lr:9.2e}  loss {point.loss:7.4f}  (smoothed "
                  f"{point.smoothed:.4f})", file=sys.stderr, flush=True)

    with interrupt_sets(stop, untrained=lambda: False):
        options = {name: getattr(args, name) for name in ("steps", "lr_min", "lr_max") if getattr(args, name)}
        finding = find_lr(config, on_point=heard, stop=stop, **options)
    ran = f"compiled ({config.backend}), {finding.recompiles} recompiles" if finding.compiled else "eager"
    print(f"LR range test: {len(finding.points)} steps, LR from {finding.lr_min:g} towards {finding.lr_max:g}, "
          f"{ran}; {finding.ended}")
    if finding.points:
        lowest = min(finding.points, key=lambda point: point.smoothed)
        print(f"lowest smoothed loss {lowest.smoothed:.4f} at LR {lowest.lr:.2e}")
    _write_json(args.json, finding.to_dict())
    if finding.suggestion is None and finding.ended == "stopped":
        return fail("stopped before the loss turned up: no learning rate to suggest",
                    "let the test run until the loss blows up (it ends by itself)", code=EXIT_RUN_FAILED)
    if finding.suggestion is None:
        return fail("too few steps before the loss stopped falling to suggest a learning rate",
                    "widen the range (--lr-min lower) or take more --steps", code=EXIT_RUN_FAILED)
    print(f"suggested LR: {finding.suggestion:.2e} — {finding.rule}")
    print(f"use it: workbench train --lr {finding.suggestion:.2g}")
    return 0


def cmd_batch_find(args: argparse.Namespace) -> int:
    """The batch-size finder in this process: a line per batch size as it is measured, then the suggestion."""
    from ..core.kernel.batch_finder import find_batch_size

    quiet_torch_logs()
    config = config_from_args(args)
    stop = threading.Event()

    def heard(point) -> None:
        print(f"batch {point.batch_size:5d}  {point.samples_per_s:10,.0f} samples/s  peak memory "
              f"{point.peak_memory_mib:9,.0f} MiB" + ("" if point.fits else "  (past the headroom)"), flush=True)

    with interrupt_sets(stop, untrained=lambda: False):
        finding = find_batch_size(config, on_point=heard, stop=stop,
                                  **({"largest": args.largest} if args.largest else {}))
    print(f"{finding.device}: {finding.ended}")
    _write_json(args.json, finding.to_dict())
    if finding.suggestion is None:
        return fail("no batch size fitted", "lower the hidden size, or use --amp bf16", code=EXIT_RUN_FAILED)
    print(f"suggested batch size: {finding.suggestion} — {finding.rule}")
    print(f"use it: workbench train --batch-size {finding.suggestion} (the learning rate may need to grow with "
          f"the batch: workbench lr-find --batch-size {finding.suggestion})")
    return 0


def cmd_sweep(args: argparse.Namespace) -> int:
    """A sweep here, its trials in run processes: a line per trial with the ETA, then the best trial against the
    defaults and the Pareto front."""
    from ..core.history.report.sweep import write_sweep_report
    from ..core.history.sweeps import best_trial, pareto_front
    from ..core.run.sweep import load_trials, run_sweep, sweep_names, sweep_parameters

    if args.list:
        for name in sweep_names(args.db):
            trials = load_trials(name, args.db)
            best = best_trial(trials)
            print(f"{name}: {len(trials)} trials" + (f", best {best.val_accuracy:.2%} (trial {best.number})"
                                                     if best else ""))
        return 0
    if not args.name:
        return fail("name the sweep (an existing name resumes it)", "or --list the stored sweeps")
    if args.queue:
        return _queue_sweep(args)
    if args.show:
        trials = load_trials(args.name, args.db)
    else:
        from ..core.domain.devices import cuda_device_count

        quiet_torch_logs()
        settings = _sweep_settings(args)
        stop = threading.Event()

        def heard(progress) -> None:
            trial = progress.trial
            accuracy = "—" if trial.val_accuracy is None else f"{trial.val_accuracy:.2%}"
            eta = f", about {format_duration(progress.eta_seconds)} left" if progress.done < progress.total else ""
            print(f"trial {trial.number} {trial.state:8} {_settings_text(trial.params):44} val accuracy "
                  f"{accuracy:>7}  ({progress.done}/{progress.total}{eta})" + (f"  {trial.note}" if trial.note
                                                                                else ""), flush=True)

        base = config_from_args(args)
        with interrupt_sets(stop, untrained=lambda: False):
            trials = run_sweep(base, settings, epochs=base.epochs,
                               cuda_devices=cuda_device_count(), db=args.db, runs_dir=args.runs_dir,
                               on_progress=heard, stop=stop)
        if stop.is_set():
            print(f"stopped: `workbench sweep {args.name}` resumes it", file=sys.stderr)
    best = best_trial(trials)
    defaults = next((t for t in trials if t.number == 0 and t.val_accuracy is not None), None)
    if best is not None:
        print(f"best: trial {best.number}, {best.val_accuracy:.2%} with {_settings_text(best.params)}"
              + (f" (trial 0, the base settings: {defaults.val_accuracy:.2%})" if defaults else ""))
    for trial in pareto_front(trials):
        print(f"pareto: trial {trial.number}  {trial.val_accuracy:.2%}  {trial.samples_per_s:,.0f} samples/s  "
              f"compile {trial.compile_seconds or 0:.1f} s  peak {trial.peak_memory_mib or 0:,.0f} MiB")
    if args.report:
        written = write_sweep_report(args.report, args.name, trials, sweep_parameters(args.name, args.db))
        print(f"wrote {written}")
    return 0


def _queue_sweep(args: argparse.Namespace) -> int:
    """--queue: the sweep's trials as queue entries, for this computer or --host."""
    from ..core.run.remote.ssh import Remote
    from ..core.run.sweep import queue_sweep

    place = str(Remote.parse(args.host)) if args.host else ""
    ids = queue_sweep(config_from_args(args), _sweep_settings(args), epochs=config_from_args(args).epochs,
                      db=args.db, place=place, python=args.remote_python)
    print(f"queued {len(ids)} trial(s) of sweep {args.name} on {place or 'this computer'} (entries "
          f"{ids[0]}–{ids[-1]}): the window, or workbench queue work" + (f" --host {place}" if place else "")
          + ", trains them")
    return 0


def _sweep_settings(args: argparse.Namespace):
    from ..core.run.sweep import SweepSettings

    return SweepSettings(args.name, tuple(p.strip() for p in args.search.split(",") if p.strip()), args.sampler,
                         args.trials)


def _settings_text(params: dict) -> str:
    return ", ".join(f"{name} {value:.3g}" if isinstance(value, float) else f"{name} {value}"
                     for name, value in params.items())
