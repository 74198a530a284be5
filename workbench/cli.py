"""Command line: `workbench` opens the app; subcommands run the same Qt-free core headless.

Every failure a user can cause ends in one line on stderr and a non-zero exit code, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
import time
from pathlib import Path

from .core.ground import appinfo
from .core.ground.config import MATMUL_PRECISIONS
from .core.ground.export_formats import EXPORT_FORMATS
from .core.run.forkserver import SERVER_FLAG
from .core.run.process import CHILD_FLAG, TORCHRUN_FLAG
from .core.ground.events import EpochEnd, Notice, RunFailed, RunFinished
from .core.ground.progress import Progress, epoch_line, failure_line, format_duration
from .core.ground.payback import Payback
from typing import Callable, Sequence

EXIT_USAGE = 2  # bad input: config, data, files
EXIT_RUN_FAILED = 3  # the run itself failed (diverged, compile failure, out of memory)
EXIT_INTERRUPTED = 130
PROFILE_STEPS = 20  # `workbench profile`'s window
PROFILE_LEAD_STEPS = 12  # `workbench profile`'s steps before the window: compile, CUDA warm-up, settling
PROFILE_EPOCHS = 100_000  # `workbench profile` ends at its step count (max steps), not at an epoch count


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == [CHILD_FLAG]:  # a frozen (PyInstaller) app has no `python -m`: it re-runs itself
        from .core.run.kernel import kernel_main

        return kernel_main()
    if argv[:1] == [SERVER_FLAG]:  # the frozen app's fork server (see core/run/forkserver.py)
        from .core.run.forkserver_main import server_main

        return server_main(argv[1:])
    if argv[:1] == [TORCHRUN_FLAG]:  # the frozen app's torchrun: loopback-only stores, its own temp folder
        from .core.run.torchrun import torchrun_main

        torchrun_main(argv[1:])
        return 0
    parser = build_parser()
    if not argv:
        from .gui_launch import launch_gui

        return launch_gui()
    args = parser.parse_args(argv)
    from .core.ground.errors import WorkbenchError

    try:
        return int(args.handler(args) or 0)
    except WorkbenchError as exc:
        return fail(str(exc), exc.hint)
    except KeyboardInterrupt:
        print("\nworkbench: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


def quiet_torch_logs() -> None:
    """For the commands that load PyTorch (train, evaluate, predict, explain, bench): the kernel's own rule.
    `workbench runs`, `report` and `--help` never import torch."""
    from .core.run.jobs import quiet_torch_logs as quiet

    quiet()


def fail(message: str, hint: str = "", code: int = EXIT_USAGE) -> int:
    print(f"workbench: error: {message}" + (f" — {hint}" if hint else ""), file=sys.stderr)
    return code


# -- parser -----------------------------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="workbench", description=(
        "A desktop training workbench for PyTorch. Without arguments it opens the app; the subcommands run "
        "the same engine headless."))
    parser.add_argument("--version", action="version", version=f"workbench {appinfo.version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    train = sub.add_parser("train", help="train the network and write checkpoint, metrics and events")
    add_train_options(train)
    train.set_defaults(handler=cmd_train)

    profile = sub.add_parser("profile", help=(
        f"a short run that profiles --profile-steps steady steps (default {PROFILE_STEPS}): op table, memory, "
        f"and a Chrome/Perfetto trace in the run's profile/ folder"))
    add_train_options(profile)
    profile.set_defaults(handler=cmd_profile)

    lr_find = sub.add_parser("lr-find", help="the learning-rate range test: a short run with the LR growing "
                                             "exponentially, the loss read live, and a suggested LR")
    add_config_options(lr_find)
    lr_find.add_argument("--steps", type=int, help="steps of the test (default: 200)")
    lr_find.add_argument("--lr-min", type=float, help="the first step's LR (default: 1e-6)")
    lr_find.add_argument("--lr-max", type=float, help="the last step's LR (default: 1)")
    lr_find.add_argument("--json", metavar="FILE", help="also write every point and the suggestion as JSON")
    lr_find.set_defaults(handler=cmd_lr_find)

    batch_find = sub.add_parser("batch-find", help="samples/s and peak memory for each batch size from 16, "
                                                   "doubling; the fastest (CPU) or the largest that fits (CUDA)")
    add_config_options(batch_find)
    batch_find.add_argument("--largest", type=int, help="the largest batch size to try (default: 4096, or the "
                                                        "training split's size)")
    batch_find.add_argument("--json", metavar="FILE", help="also write every measurement and the suggestion as JSON")
    batch_find.set_defaults(handler=cmd_batch_find)

    sweep = sub.add_parser("sweep", help="search the settings with Optuna: each trial a recorded run; resume a "
                                         "stopped sweep by its name; --report writes its Pareto front as HTML")
    sweep.add_argument("name", nargs="?", help="the sweep's name (an existing one resumes)")
    sweep.add_argument("--search", default="lr,batch_size,hidden_dim",
                       help="settings to search, comma-separated (default: lr,batch_size,hidden_dim; also dropout, "
                            "weight_decay, backend, mode, amp)")
    sweep.add_argument("--sampler", default="tpe", help="tpe (default), random or grid")
    sweep.add_argument("--trials", type=int, default=12, help="trials to finish, pruned ones included (default: 12)")
    sweep.add_argument("--report", metavar="FILE", help="write the sweep as HTML (Pareto front, parallel "
                                                        "coordinates, every trial) when it ends")
    sweep.add_argument("--show", action="store_true", help="show a stored sweep (and --report it); train nothing")
    sweep.add_argument("--list", action="store_true", help="list the stored sweeps")
    sweep.add_argument("--runs-dir", default=None, help="where the trials' run folders go (default: the usual one)")
    add_config_options(sweep)
    add_db_option(sweep)
    sweep.set_defaults(handler=cmd_sweep)

    evaluate = sub.add_parser("evaluate", help="accuracy and confusion matrix of a checkpoint on a dataset")
    evaluate.add_argument("checkpoint")
    evaluate.add_argument("--dataset", default=None, help="dataset name (default: the checkpoint's)")
    evaluate.add_argument("--data-root", default=None)
    evaluate.add_argument("--split", choices=("test", "val"), default=None,
                          help="default: the dataset's test split, or 'val' where it has none (mnist-sample)")
    evaluate.add_argument("--device", default="auto")
    evaluate.add_argument("--trust-model-code", action="store_true",
                          help="import the Python file a user-defined network's checkpoint names")
    evaluate.set_defaults(handler=cmd_evaluate)

    predict = sub.add_parser("predict", help="classify image files with a checkpoint")
    predict.add_argument("checkpoint")
    predict.add_argument("images", nargs="+")
    predict.add_argument("--json", action="store_true", help="one JSON object per image")
    predict.add_argument("--trust-model-code", action="store_true",
                         help="import the Python file a user-defined network's checkpoint names")
    predict.set_defaults(handler=cmd_predict)

    explain = sub.add_parser("explain", help="what torch.compile does with the network: graphs, breaks, ops")
    add_config_options(explain)
    explain.set_defaults(handler=cmd_explain)

    bench = sub.add_parser("bench", help="every backend, mode and precision side by side, with reference rows")
    bench.add_argument("--device", default="auto")
    bench.add_argument("--dataset", default="mnist-sample")
    bench.add_argument("--batch-size", type=int, default=256)
    bench.add_argument("--hidden-dim", type=int, default=128)
    bench.add_argument("--backends", default="eager,inductor,aot_eager,cudagraphs",
                       help="comma-separated (default: all; what the device cannot run is skipped, with why)")
    bench.add_argument("--modes", default="default,reduce-overhead,max-autotune-no-cudagraphs",
                       help="inductor modes, comma-separated")
    bench.add_argument("--amp", default="off,bf16,fp16", help="precisions, comma-separated")
    bench.add_argument("--warmup", type=positive_int, default=20, help="steps before timing (the first one compiles)")
    bench.add_argument("--windows", type=positive_int, default=5, help="timed windows")
    bench.add_argument("--window-steps", type=positive_int, default=50, help="steps per timed window")
    bench.add_argument("--matmul-precision", choices=MATMUL_PRECISIONS, default=None,
                       help="torch.set_float32_matmul_precision for the whole benchmark, restored afterwards "
                            "(default: as PyTorch has it, normally highest; high allows TF32 on CUDA); the table "
                            "header and the JSON state it")
    bench.add_argument("--quick", action="store_true", help="a few steps only: checks that it runs, measures little")
    bench.add_argument("--gui", action="store_true",
                       help="measure the app instead: in-app vs headless samples/s and GUI stalls (offscreen)")
    bench.add_argument("--gui-epochs", type=positive_int, default=60, help="epochs of the GUI benchmark's eager runs")
    bench.add_argument("--instruments", action="store_true",
                       help="measure instead what the profiler, fp16 step health and the system sampler cost "
                            "(paired runs, on vs off)")
    bench.add_argument("--recording", action="store_true",
                       help="measure instead what recording the run history costs (paired runs, on vs off)")
    bench.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    bench.set_defaults(handler=cmd_bench)

    export = sub.add_parser("export", help="export a checkpoint (torch.export .pt2, ONNX or an AOTInductor package) "
                                           "behind a parity check on the validation split")
    export.add_argument("checkpoint")
    export.add_argument("--format", choices=tuple(EXPORT_FORMATS), default="pt2",
                        help="what to write (default: pt2; onnx needs the export extra: onnx, onnxscript, "
                             "onnxruntime; aoti compiles with g++, about half a minute)")
    export.add_argument("--out", default=None, help="folder for the model, its contract and its parity table "
                                                     "(default: export-FORMAT beside the checkpoint)")
    export.add_argument("--compile-backend", default="inductor", choices=("inductor", "aot_eager", "eager"),
                        help="the backend of the parity table's compiled row (default: inductor)")
    export.add_argument("--trust-model-code", action="store_true",
                        help="import the checkpoint's model file (a checkpoint of your own network names one)")
    export.set_defaults(handler=cmd_export)

    runs = sub.add_parser("runs", help="the run history: list, show, remove or export runs")
    add_db_option(runs)
    runs.set_defaults(handler=cmd_runs_list)
    runs_sub = runs.add_subparsers(dest="runs_command", metavar="ACTION")
    show = runs_sub.add_parser("show", help="one run: config, environment, metrics, compile report")
    show.add_argument("run_id", type=int)
    add_db_option(show, inherited=True)
    show.set_defaults(handler=cmd_runs_show)
    remove = runs_sub.add_parser("rm", help="remove runs from the history (their files stay on disk)")
    remove.add_argument("run_ids", type=int, nargs="+")
    add_db_option(remove, inherited=True)
    remove.set_defaults(handler=cmd_runs_rm)
    export_runs = runs_sub.add_parser("export", help="runs as a tidy CSV (config, metrics, per-step curves) and/or "
                                                     "TensorBoard event files")
    export_runs.add_argument("run_ids", type=int, nargs="*", metavar="RUN_ID", help="the runs (default: all)")
    export_runs.add_argument("--csv", metavar="FILE", help="one CSV: a row per run, metric and step")
    export_runs.add_argument("--tensorboard", metavar="DIR",
                             help="a folder per run of TensorBoard event files (the tensorboard extra)")
    add_db_option(export_runs, inherited=True)
    export_runs.set_defaults(handler=cmd_runs_export)

    report = sub.add_parser("report", help="a self-contained HTML report (and JSON) of one or more runs")
    report.add_argument("run_ids", type=int, nargs="+", metavar="RUN_ID")
    report.add_argument("--out", default=None, help="HTML file (default: report-<ids>.html)")
    report.add_argument("--trust-model-code", action="store_true",
                        help="import each run's own model file (path/to/file.py:Class) to evaluate its checkpoint; "
                             "without it such runs are reported without an evaluation")
    add_db_option(report)
    report.set_defaults(handler=cmd_report)
    return parser


def positive_int(text: str) -> int:
    """argparse type for the benchmark's counts: zero windows or steps leave nothing to take a median of."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not allowed (at least 1)")
    return value


def add_train_options(parser: argparse.ArgumentParser) -> None:
    """What `train` and `profile` both take: the settings, the output folder, the history and the processes."""
    add_config_options(parser)
    parser.add_argument("--out", default=None, help="output folder (default: a new folder of its own under "
                                                     "~/.local/share/workbench/runs; every run gets one)")
    add_db_option(parser)
    ddp = parser.add_argument_group("several processes (torchrun + DistributedDataParallel; --batch-size is global)")
    ddp.add_argument("--nproc-per-node", type=int, default=1, help="processes on this machine (one per GPU)")
    ddp.add_argument("--nnodes", type=int, default=1, help="machines taking part")
    ddp.add_argument("--node-rank", type=int, default=0, help="this machine's index, 0 … nnodes-1")
    ddp.add_argument("--master-addr", default="127.0.0.1", help="address of node 0 (multi-node runs)")
    ddp.add_argument("--master-port", type=int, default=None, help="a free port on node 0 (default: picked)")


def add_db_option(parser: argparse.ArgumentParser, inherited: bool = False) -> None:
    """`inherited`: a sub-action's --db must not overwrite the one given before it (`runs --db X rm 1`): argparse
    copies a sub-parser's default over the parent's value, so such an option has no default of its own."""
    parser.add_argument("--db", default=argparse.SUPPRESS if inherited else None,
                        help="run history database (default: $WORKBENCH_DB or ~/.local/share/workbench/runs.sqlite)")


def add_config_options(parser: argparse.ArgumentParser) -> None:
    """One flag per declared setting (`TrainConfig`'s metadata), grouped as the setup form groups them. Bad values
    are refused by TrainConfig's validation (one line naming the setting), not by argparse."""
    from .core.ground.config import GROUPS, settings

    parser.add_argument_group("run configuration").add_argument(
        "--config", metavar="JSON", help="read settings from a JSON file (flags override it)")
    groups = {name: parser.add_argument_group(name.lower()) for name in GROUPS}
    for declared in settings():
        groups[declared.group].add_argument(declared.flag, dest=declared.name, default=None,
                                            **_flag_options(declared))


SWITCH_WORDS = {"auto": None, "true": True, "false": False}  # a setting that is on, off or automatic (--dynamic)


def _flag_options(declared) -> dict:
    """argparse options for one setting: its type, how its values read, its help with range and default."""
    notes = [declared.allowed] if declared.kind in (int, float) else []
    if declared.kind is bool and declared.optional:
        shown = next(word for word, value in SWITCH_WORDS.items() if value is declared.default)
    elif declared.kind is bool:
        shown = "on" if declared.default else "off"
    elif isinstance(declared.default, float):
        shown = f"{declared.default:g}"
    else:
        shown = "" if declared.default is None else str(declared.default)
    if shown:
        notes.append(f"default: {shown}")
    help_text = (declared.help + (f" ({'; '.join(notes)})" if notes else "")).replace("%", "%%")
    if declared.kind is bool and not declared.optional:
        return {"action": argparse.BooleanOptionalAction, "help": help_text}
    if declared.kind is bool:
        return {"metavar": "{" + ",".join(SWITCH_WORDS) + "}", "help": help_text}
    options: dict = {"type": declared.kind, "help": help_text}
    if declared.choices:
        options["metavar"] = "{" + ",".join(declared.choices) + "}"
    return options


def config_from_args(args: argparse.Namespace, **defaults):
    """Defaults, then the --config file, then explicit flags: the same TrainConfig validation for all three."""
    from .core.ground.config import ConfigError, TrainConfig, settings

    values: dict = dict(defaults)
    if args.config:
        try:
            text = Path(args.config).read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError("config", f"cannot read {args.config}: {exc.strerror}") from None
        except UnicodeDecodeError:
            raise ConfigError("config", f"cannot read {args.config}: not UTF-8 text (a JSON file is)") from None
        TrainConfig.from_json(text)  # the file must be a valid config on its own: errors name the file's fields
        values.update(json.loads(text))  # only what the file sets: its implicit defaults must not replace ours
    for declared in settings():
        value = getattr(args, declared.name, None)
        if value is None:  # not given: the file's value, else the default
            continue
        if declared.kind is bool and declared.optional:  # --dynamic auto|true|false
            if value not in SWITCH_WORDS:
                raise ConfigError(declared.name, f"unknown value {value!r}", ", ".join(SWITCH_WORDS))
            value = SWITCH_WORDS[value]
        values[declared.name] = value
    return TrainConfig.from_dict(values)


# -- train ------------------------------------------------------------------------------------------------------
def cmd_train(args: argparse.Namespace) -> int:
    if args.resume is None:
        return _train(args, config_from_args(args))
    path = resume_checkpoint(args.resume, args.db)
    return _train(args, config_from_args(args, **checkpoint_config(path)).replace(resume=str(path)))


def resume_checkpoint(what: str, db: str | None) -> Path:
    """`--resume RUN|CKPT`: a run's id in the history (3 or #3), its folder, or a checkpoint file."""
    from .core.ground.config import ConfigError
    from .core.history.runs import RunStore

    if what.lstrip("#").isdigit():
        with RunStore(db) as store:
            record = store.get(int(what.lstrip("#")))
        if not record.checkpoint:
            raise ConfigError("resume", f"run #{record.id} has no checkpoint to continue from")
        return Path(record.checkpoint)
    path = Path(what).expanduser()
    return (path / "checkpoint.pt" if path.is_dir() else path).resolve()


def checkpoint_config(path: Path) -> dict:
    """The settings of the run a checkpoint continues: the defaults a continued run's flags change."""
    from .core.domain import checkpoint
    from .core.ground.config import ConfigError

    try:
        return checkpoint.load(path, trust_model_code=True).config.to_dict()
    except checkpoint.CheckpointError as exc:
        raise ConfigError("resume", f"cannot continue from {path}: {exc}") from None


def cmd_profile(args: argparse.Namespace) -> int:
    """`train` with the profiler on, ending soon after the window unless --max-steps or --epochs say otherwise."""
    if args.resume is not None:
        return fail("profile starts a run of its own", "to profile a continued run: train --resume RUN "
                                                        "--profile-steps N")
    config = config_from_args(args, profile_steps=PROFILE_STEPS)
    if config.profile_steps == 0:
        return fail("--profile-steps 0 profiles nothing", f"leave it out ({PROFILE_STEPS} steps) or give a number")
    if args.max_steps is None and args.epochs is None:  # as many epochs as the window needs, then stop
        config = config.replace(max_steps=config.profile_steps + PROFILE_LEAD_STEPS, epochs=PROFILE_EPOCHS)
    return _train(args, config)


def cmd_lr_find(args: argparse.Namespace) -> int:
    """The range test in this process: a line every 20 steps while it runs, then the suggestion and its rule."""
    from .core.run.lr_finder import find_lr

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
    from .core.run.batch_finder import find_batch_size

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
    from .core.history.sweep_report import write_sweep_report
    from .core.history.sweeps import best_trial, pareto_front
    from .core.run.sweep import SweepSettings, load_trials, run_sweep, sweep_names, sweep_parameters

    if args.list:
        for name in sweep_names(args.db):
            trials = load_trials(name, args.db)
            best = best_trial(trials)
            print(f"{name}: {len(trials)} trials" + (f", best {best.val_accuracy:.2%} (trial {best.number})"
                                                     if best else ""))
        return 0
    if not args.name:
        return fail("name the sweep (an existing name resumes it)", "or --list the stored sweeps")
    if args.show:
        trials = load_trials(args.name, args.db)
    else:
        from .core.domain.devices import cuda_device_count

        quiet_torch_logs()
        settings = SweepSettings(args.name, tuple(p.strip() for p in args.search.split(",") if p.strip()),
                                 args.sampler, args.trials)
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


def _settings_text(params: dict) -> str:
    return ", ".join(f"{name} {value:.3g}" if isinstance(value, float) else f"{name} {value}"
                     for name, value in params.items())


def _train(args: argparse.Namespace, config) -> int:
    from .core.domain.devices import cuda_device_count
    from .core.run.launch import start_run
    from .core.run.request import Launch, RunRequest

    quiet_torch_logs()
    launch = Launch(args.nproc_per_node, args.nnodes, args.node_rank, args.master_addr, args.master_port,
                    where="here" if args.nproc_per_node * args.nnodes == 1 else "process")
    request = RunRequest.build(config, cuda_devices=cuda_device_count(), out_dir=args.out,
                               db=args.db, launch=launch)
    bar = ProgressBar(sys.stderr)
    stop = threading.Event()
    # Before the first step nothing is trained: the first Ctrl+C aborts at once, since user code in this process
    # that never returns (a model's constructor) can only be left by an exception. A run in other processes
    # (torchrun) ends at once on the first stop before its first step: the parent terminates them.
    untrained = (lambda: bar.progress.step == 0) if launch.where == "here" else None
    with interrupt_sets(stop, untrained) as interrupts:
        result = start_run(request, bar.update, stop)
    bar.close()
    if launch.node_rank != 0:
        code = result.metrics.get("node_exit_code") if isinstance(result, RunFinished) else None
        print(f"node {launch.node_rank}: its {launch.nproc_per_node} process(es) ended"
              + (f" (exit code {code})" if code is not None else f": {result.message}")
              + "; node 0 writes the checkpoint and the run record")
        if stop.is_set():  # Ctrl+C: the same exit code as on node 0, not that of the processes it ended
            return interrupts.exit_code
        return 0 if isinstance(result, RunFinished) else EXIT_RUN_FAILED
    if isinstance(result, RunFailed):
        code = EXIT_USAGE if result.kind in ("config", "data", "io") else EXIT_RUN_FAILED
        return fail(failure_line(result), code=code)
    m = result.metrics
    state = "stopped early" if result.stopped else "finished"
    accuracy = f"{m['val_accuracy']:.2%}" if "val_accuracy" in m else "— (no epoch was validated)"
    print(f"{state}: {result.steps} steps, {result.epochs} epoch(s) in {result.seconds:.1f} s · "
          f"val accuracy {accuracy} · {m.get('samples_per_s', 0):,.0f} samples/s"
          + (f" · compile {m['compile_seconds']:.1f} s" if m.get("compile_seconds") else ""))
    for line in run_lines(m):
        print(line)
    out = request.out_dir
    if m.get("checkpoint"):
        print(f"wrote {out}: checkpoint.pt, checkpoint.safetensors, metrics.json, events.jsonl")
    elif m.get("checkpoint_error"):  # trained, but the model is not on disk: that is a failed command
        print(f"wrote {out}: metrics.json, events.jsonl — but NOT the checkpoint ({result.steps} steps trained)")
        return fail(m["checkpoint_error"], "free some disk space or choose another output folder with --out",
                    code=EXIT_RUN_FAILED)
    elif result.steps > 0:
        print(f"wrote {out}: metrics.json, events.jsonl (no checkpoint was written)")
    elif (Path(out) / "metrics.json").is_file():
        print(f"wrote {out}: metrics.json, events.jsonl (no checkpoint: no step was trained)")
    else:
        print("nothing was written: the run stopped before it started")
    return interrupts.exit_code if result.stopped else 0


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
    from .core.history.report import gpu_text

    system = metrics.get("system")
    if not isinstance(system, dict) or not system:
        return None
    gpu = gpu_text(system) or metrics.get("system_gpu_problem") or ""
    return (f"system: CPU {system.get('cpu_process_mean', 0):.0f} % of a core (machine "
            f"{system.get('cpu_machine_mean', 0):.0f} %), peak RSS {system.get('rss_peak_mib', 0):,.0f} MiB"
            + (f"; {gpu}" if gpu else ""))


class interrupt_sets:
    """First Ctrl+C asks the run to stop after the current step (the checkpoint is still written); a second one
    interrupts at once. SIGTERM (a service manager, `kill`, a batch scheduler's time limit) and SIGHUP (the
    terminal closed) are treated the same way: the run stops after its step with its files and record kept.

    `exit_code`: what the command exits with after such a stop — 130 for Ctrl+C, as before, and 128 + the
    signal's number for the others (143 for SIGTERM, 129 for SIGHUP), the shell's convention for "ended by".

    `untrained`: says whether nothing has been trained yet; while it does, the first signal already raises
    KeyboardInterrupt (there is no step to stop after, and nothing to keep)."""

    SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))

    def __init__(self, stop: threading.Event, untrained: Callable[[], bool] | None = None):
        self.stop = stop
        self.untrained = untrained
        self.previous: dict[int, Callable | int | None] = {}
        self.signum: int | None = None  # the first signal received

    @property
    def exit_code(self) -> int:
        if self.signum is None or self.signum == signal.SIGINT:
            return EXIT_INTERRUPTED
        return 128 + int(self.signum)

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            for signum in self.SIGNALS:
                self.previous[signum] = signal.signal(signum, self._handle)
        return self

    def _handle(self, signum, frame):
        if self.stop.is_set() or (self.untrained is not None and self.untrained()):
            self.stop.set()  # a run in a kernel process stops too, whoever catches the interrupt
            raise KeyboardInterrupt
        self.signum = signum
        again = "Ctrl+C" if signum == signal.SIGINT else signal.Signals(signum).name
        try:
            print(f"\nstopping after this step ({again} again to abort)…", file=sys.stderr)
        except (OSError, ValueError):  # SIGHUP: the terminal may be gone; the stop matters, not the message
            pass
        self.stop.set()

    def __exit__(self, *exc):
        for signum, previous in self.previous.items():
            if previous is not None:
                signal.signal(signum, previous)
        self.previous.clear()
        return False


class ProgressBar:
    """One redrawn line on a terminal; a line per epoch otherwise (CI logs stay readable)."""

    WIDTH = 24

    def __init__(self, stream):
        self.stream = stream
        self.tty = stream.isatty()
        self.progress = Progress()
        self.last_draw = 0.0

    def update(self, event) -> None:
        self.progress.update(event)
        p = self.progress
        if isinstance(event, Notice):
            self._line(f"{event.level}: {event.message}")
        elif isinstance(event, EpochEnd):
            self._line(epoch_line(event).replace(f"epoch {event.epoch}:", f"epoch {event.epoch}/{p.epochs}:", 1))
        elif isinstance(event, RunFailed):
            self._clear()
        elif self.tty and time.monotonic() - self.last_draw > 0.1:
            self.last_draw = time.monotonic()
            filled = int(self.WIDTH * p.fraction)
            eta = p.eta_seconds
            text = (f"\r{p.describe().split(' · ')[0]} [{'#' * filled}{'-' * (self.WIDTH - filled)}] "
                    f"{p.fraction:4.0%} {p.step}/{p.total_steps} · loss {p.loss:.4f} · "
                    f"{p.samples_per_s:,.0f} samples/s" + (f" · ETA {format_duration(eta)}" if eta else ""))
            self.stream.write(text[:160].ljust(100))
            self.stream.flush()

    def _clear(self) -> None:
        if self.tty:
            self.stream.write("\r" + " " * 110 + "\r")

    def _line(self, text: str) -> None:
        self._clear()
        self.stream.write(text + "\n")
        self.stream.flush()

    def close(self) -> None:
        self._clear()


# -- evaluate / predict / explain -------------------------------------------------------------------------------
def cmd_evaluate(args: argparse.Namespace) -> int:
    from .core.run.jobs import evaluate

    quiet_torch_logs()
    result = evaluate(args.checkpoint, dataset=args.dataset, data_root=args.data_root, split=args.split,
                      device=args.device, trust_model_code=args.trust_model_code)
    print(f"{result['dataset']} {result['split']}: {result['images']} images · accuracy {result['accuracy']:.2%} · "
          f"loss {result['loss']:.4f}")
    print(format_confusion(result["confusion"], result["classes"]))
    return 0


def format_confusion(matrix: list[list[int]], classes: Sequence[str]) -> str:
    labels = [c[:6] for c in classes]
    width = max(6, max(len(str(v)) for row in matrix for v in row) + 1)
    lines = ["confusion matrix (rows: true class, columns: predicted)",
             "true\\pred".rjust(10) + "".join(label.rjust(width) for label in labels)]
    for label, row in zip(labels, matrix):
        lines.append(label.rjust(10) + "".join(str(v).rjust(width) for v in row))
    return "\n".join(lines)


def cmd_predict(args: argparse.Namespace) -> int:
    from .core.domain import checkpoint
    from .core.domain.images import ImageError
    from .core.domain.predict import predict_file

    quiet_torch_logs()
    ckpt = checkpoint.load(args.checkpoint, trust_model_code=args.trust_model_code)
    model = ckpt.build_model("cpu")
    failures = 0
    for image in args.images:
        try:
            p = predict_file(model, image, ckpt.classes)
        except ImageError as exc:
            failures += 1
            print(f"workbench: error: {exc}", file=sys.stderr)
            continue
        if args.json:
            print(json.dumps({"image": image, "class": p.class_name, "confidence": p.confidence,
                              "probabilities": list(p.probabilities)}))
        else:
            print(f"{image}: {p.class_name} ({p.confidence:.1%})")
    return EXIT_USAGE if failures else 0


def cmd_export(args: argparse.Namespace) -> int:
    from .core.domain import checkpoint
    from .core.domain.export import export_model, format_table

    quiet_torch_logs()
    ckpt = checkpoint.load(args.checkpoint, trust_model_code=args.trust_model_code)
    out = Path(args.out) if args.out else Path(args.checkpoint).parent / f"export-{args.format}"
    table = export_model(ckpt, out, fmt=args.format, compile_backend=args.compile_backend,
                         progress=lambda text: print(text, file=sys.stderr))
    print(format_table(table))
    print(f"wrote {out}: {Path(table['file']).name} ({table['bytes']:,} bytes, exported in "
          f"{table['export_seconds']:.1f} s), contract.json, parity.json")
    if not table["passed"]:
        return fail("the exported model disagrees with the eager one beyond the tolerance (see the table)",
                    code=EXIT_RUN_FAILED)
    return 0


def cmd_explain(args: argparse.Namespace) -> int:
    from .core.domain import devices
    from .core.domain.inspect import explain

    quiet_torch_logs()
    config = config_from_args(args, backend="inductor")  # explain is about compiling (so --mode works alone)
    config.check_runnable(devices.cuda_available())
    print(format_report(explain(config)))
    return 0


def format_report(report) -> str:
    lines = [f"graphs: {report.graph_count} · graph breaks: {report.graph_break_count} · ops: {report.op_count} · "
             f"traced in {report.compile_seconds:.2f} s"]
    for i, brk in enumerate(report.breaks, 1):
        lines.append(f"\nbreak {i} at {brk.where}")
        for frame in brk.frames:
            lines.append(f"  {frame.file}:{frame.line} in {frame.function}: {frame.source}")
        lines.extend("  " + line for line in brk.reason.splitlines())
    lines.extend(f"recompile: {r}" for r in report.recompiles)
    lines.extend(f"warning: {w}" for w in report.warnings)
    if not report.breaks:
        lines.append("no graph breaks: the whole forward pass compiles as one graph")
    return "\n".join(lines)


# -- benchmark --------------------------------------------------------------------------------------------------
def cmd_bench(args: argparse.Namespace) -> int:
    from .core.domain import devices
    from .core.tools.bench import BenchSettings, format_table, run_bench
    from .core.ground.config import TrainConfig

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


def _check_writable(target: Path) -> None:
    """Create and remove the temp file the final atomic write will use: the same folder, the same permissions."""
    import os

    from .core.ground.atomic import temp_beside

    if target.is_dir():
        raise _unwritable(target, "it is a folder")
    try:
        fd, tmp = temp_beside(target)
    except OSError as exc:
        raise _unwritable(target, exc.strerror or str(exc)) from None
    os.close(fd)
    tmp.unlink()


def _write_json(path: str | None, data) -> None:
    """--json, when given: the results as JSON, written atomically."""
    from .core.ground.atomic import write_text_atomic

    if not path:
        return
    try:
        write_text_atomic(path, json.dumps(data, indent=2))
    except OSError as exc:
        raise _unwritable(Path(path), exc.strerror or str(exc)) from None
    print(f"wrote {path}")


def _unwritable(target: Path, why: str):
    from .core.ground.errors import WorkbenchError

    return WorkbenchError(f"cannot write {target}: {why}", "choose a file in a folder you can write to with --json")


def _bench_gui(args: argparse.Namespace, progress) -> int:
    import os

    from .core.ground.config import TrainConfig
    from .gui_launch import display_problem

    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    problem = display_problem()
    if problem:
        return fail(f"cannot run the GUI benchmark: {problem}")
    from .ui.bench_gui import format_gui_report, run_gui_bench

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
    from .core.run.launch import start_run
    from .core.run.request import Launch, RunRequest

    request = RunRequest(config=config, out_dir=str(out.resolve()), record=False, launch=Launch(where="here"))
    result = start_run(request, lambda event: None)
    if not isinstance(result, RunFinished):
        raise RuntimeError(f"the headless run failed: {result.message}")
    return result.metrics["samples_per_s"]


def _bench_recording(args: argparse.Namespace, progress) -> int:
    import tempfile

    from .core.tools.bench import recording_overhead
    from .core.ground.config import TrainConfig

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
    from .core.ground.config import TrainConfig
    from .core.tools.bench import instrument_overhead

    config = TrainConfig(epochs=1 if args.quick else 3, batch_size=32, device=args.device)
    result = instrument_overhead(config, 1 if args.quick else 7, progress)
    for name, figures in result["instruments"].items():
        print(f"{name}: on = {figures['median_ratio']:.3f}× the samples/s of off (pairs: "
              + ", ".join(f"{r:.3f}" for r in figures["ratios"]) + ")"
              + (f"; a profiled step takes {figures['window_step_ratio']:.2f}× a steady one"
                 if figures["window_step_ratio"] else ""))
    print(f"method: {config.epochs} epoch(s) of the default config (batch 32, {config.epochs * 125} steps) per run, "
          "in this process, no files; each pair runs the instrument off and on, the first of each pair alternating; "
          "a ratio is steady samples/s on / off (the profiled steps are not steady: they are priced apart)")
    _write_json(args.json, result)
    return 0


def _csv(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


# -- run history and reports ---------------------------------------------------------------------------------
def _store(args: argparse.Namespace):
    from .core.history.runs import RunStore

    return RunStore(args.db)


def cmd_runs_list(args: argparse.Namespace) -> int:
    from .core.ground.config import setup_label

    with _store(args) as store:
        records = store.list()
    if not records:
        print(f"no runs recorded yet in {store.path}")
        return 0
    header = f"{'id':>4}  {'when (UTC)':<19}  {'dataset':<13} {'backend · mode · AMP':<34} {'epochs':>6} " \
             f"{'best val':>8} {'samples/s':>10}  status"
    print(header)
    for r in records:
        c = r.config  # a damaged row's config may be empty or hold anything: shown as text, never trusted
        setup = setup_label(c) if c else "—"
        best = f"{r.best_val_accuracy:.2%}" if r.best_val_accuracy is not None else "—"
        speed = f"{r.samples_per_s:,.0f}" if r.samples_per_s else "—"
        dataset, epochs = str(c.get("dataset", "—")), str(c.get("epochs", "—"))
        print(f"{r.id:>4}  {r.created[:19].replace('T', ' '):<19}  {dataset[:13]:<13} {setup[:34]:<34} "
              f"{epochs[:6]:>6} {best:>8} {speed:>10}  {r.status}")
    return 0


def cmd_runs_show(args: argparse.Namespace) -> int:
    from .core.history.report import last_compile_report

    from .core.history.curves import run_name

    with _store(args) as store:
        record = store.get(args.run_id, with_events=True)
        resume = record.config.get("resume")
        parent = store.id_for_out_dir(Path(resume).parent) if resume else None
    print(f"run {record.id} · {record.status} · started {record.created}")
    print("config:      " + json.dumps(record.config, sort_keys=True, default=str))
    print("environment: " + json.dumps(record.environment, sort_keys=True, default=str))
    metrics = {k: getattr(record, k) for k in ("steps", "best_val_accuracy", "samples_per_s", "compile_seconds",
                                               "peak_memory_mib", "backend_used", "out_dir", "checkpoint")}
    print("summary:     " + json.dumps(metrics))
    if resume:
        print(f"continues:   {run_name(parent) if parent is not None else 'a run not in this history'} "
              f"(from {resume})")
    if record.failure:
        print(f"failure:     {record.failure.get('kind')}: {record.failure.get('message')}")
    report = last_compile_report(record.events)
    if report is not None:
        print("compile report:\n" + format_report(report))
    finished = next((e for e in reversed(record.events) if isinstance(e, RunFinished)), None)
    metrics = finished.metrics if finished is not None else {}
    for line in run_lines(metrics):
        print(line)
    return 0


def cmd_runs_rm(args: argparse.Namespace) -> int:
    with _store(args) as store:
        for run_id in args.run_ids:
            store.delete(run_id)
            print(f"removed run {run_id}")
    return 0


def cmd_runs_export(args: argparse.Namespace) -> int:
    from .core.history.runs_export import export_csv, export_tensorboard

    if not (args.csv or args.tensorboard):
        return fail("nothing to export to", "give --csv FILE, --tensorboard DIR or both")
    run_ids = args.run_ids or None
    with _store(args) as store:
        if args.tensorboard:  # first: without the extra, fail before writing anything
            folders = export_tensorboard(store, run_ids, args.tensorboard)
            print(f"wrote {len(folders)} run(s) as TensorBoard event files under {args.tensorboard} "
                  f"(tensorboard --logdir {args.tensorboard})")
        if args.csv:
            rows = export_csv(store, run_ids, args.csv)
            print(f"wrote {rows:,} rows to {args.csv}")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from .core.run.reports import write_report

    out = Path(args.out or f"report-{'-'.join(map(str, args.run_ids))}.html")
    with _store(args) as store:
        html_path, json_path = write_report(store, args.run_ids, out, trust_model_code=args.trust_model_code)
    print(f"wrote {html_path} ({html_path.stat().st_size / 1024:.0f} KB) and {json_path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
