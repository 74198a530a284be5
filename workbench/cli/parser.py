"""The argument parser: every subcommand, its options and its handler."""

from __future__ import annotations

import argparse

from ..core.ground import appinfo
from ..core.ground.config import MATMUL_PRECISIONS
from ..core.ground.export_formats import EXPORT_FORMATS
from .bench import cmd_bench
from .history import (cmd_import, cmd_report, cmd_runs_archive, cmd_runs_diff, cmd_runs_export,
                      cmd_runs_list, cmd_runs_note, cmd_runs_rename, cmd_runs_rm, cmd_runs_show, cmd_runs_tag)
from .models import cmd_evaluate, cmd_explain, cmd_export, cmd_predict
from .numerics import cmd_numerics
from .options import (add_config_options, add_db_option, add_hosts_options, add_remote_options, add_train_options,
                      positive_int)
from .queue import add_queue_parser
from .remote import cmd_attach, cmd_preflight
from .search import cmd_batch_find, cmd_lr_find, cmd_sweep
from .train import PROFILE_STEPS, cmd_profile, cmd_train


# -- parser -----------------------------------------------------------------------------------------------------
class OneLineErrors(argparse.ArgumentParser):
    """A mistyped flag is one error line and where the help is, as every other bad input: argparse's default prints
    the command's whole usage (35 lines for train) above the line that matters. Its subcommands' parsers are of this
    class too (add_subparsers makes them like their parent)."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message}\n(all of its options: {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineErrors(prog="workbench", description=(
        "A desktop training workbench for PyTorch. Without arguments it opens the app; the subcommands run "
        "the same engine headless."))
    parser.add_argument("--version", action="version", version=f"workbench {appinfo.version()}")
    add_remote_options(parser)  # no subcommand: the window, its kernels on that host
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    train = sub.add_parser("train", help="train the network and write checkpoint, metrics and events")
    add_train_options(train)
    train.add_argument("--from", dest="from_run", metavar="RUN", default=None,
                       help="a new run with the settings of RUN (its id in the history, its folder or its "
                            "checkpoint), changed by the options given here")
    train.set_defaults(handler=cmd_train)

    attach = sub.add_parser("attach", help="follow a run on another machine again (every event it missed, then "
                                           "live); without RUN: the newest one training, or the list")
    attach.add_argument("host", metavar="[USER@]HOST[:PORT]")
    attach.add_argument("run", nargs="?", default=None, help="the run's name on the host (`workbench attach HOST` "
                                                             "lists them)")
    attach.add_argument("--remote-python", default="python3", metavar="COMMAND",
                        help="the host's Python that has workbench installed (default: python3)")
    add_db_option(attach)
    attach.set_defaults(handler=cmd_attach)

    checks = sub.add_parser("preflight", help="check several SSH hosts for a run across them: login, versions, "
                                              "devices, network interface, rendezvous port, clock")
    add_hosts_options(checks, required=True)
    checks.add_argument("--nproc-per-node", type=positive_int, default=1, help="processes a host (default 1)")
    checks.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto",
                        help="what they train on (auto: the GPUs where every host has one)")
    checks.add_argument("--remote-python", default="python3", metavar="COMMAND",
                        help="the hosts' Python that has workbench installed (default: python3)")
    checks.set_defaults(handler=cmd_preflight)

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
    sweep.add_argument("--queue", action="store_true", help="queue its trials instead of training them now: the "
                                                           "window or `workbench queue work` trains them")
    sweep.add_argument("--host", default=None, metavar="[USER@]HOST[:PORT]",
                       help="with --queue: its trials train on that host, over SSH (the study stays here)")
    sweep.add_argument("--remote-python", default="python3", metavar="COMMAND",
                       help="the host's Python that has workbench installed (default: python3)")
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

    numerics = sub.add_parser("numerics", help=(
        "one batch forward and backward, eager against compiled from the same weights: each layer's and op's "
        "largest difference against its tolerance, and the first that exceeds it, with its source line (--amp: "
        "also against fp32); exit 3 when one does"))
    add_config_options(numerics)
    numerics.add_argument("--json", metavar="FILE", help="also write the report (every row) as JSON")
    numerics.set_defaults(handler=cmd_numerics)

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

    add_queue_parser(sub)

    runs = sub.add_parser("runs", help="the run history: list, show, name, tag, archive, remove or export runs")
    add_db_option(runs)
    runs.add_argument("--all", action="store_true", help="list archived runs too")
    runs.add_argument("--where", metavar="QUERY", default=None,
                      help='only the runs that match, e.g. "backend=inductor acc>0.95 tag:baseline lr<=1e-3" '
                           '(settings, figures: acc sps compile memory steps duration, status, tag:X, words in '
                           'the name or notes; - negates a term)')
    runs.set_defaults(handler=cmd_runs_list)
    runs_sub = runs.add_subparsers(dest="runs_command", metavar="ACTION")
    show = runs_sub.add_parser("show", help="one run: name, tags, notes, config, environment, metrics, compile "
                                            "report")
    show.add_argument("run_id", type=int)
    add_db_option(show, inherited=True)
    show.set_defaults(handler=cmd_runs_show)
    rename = runs_sub.add_parser("rename", help="name a run (an empty name takes its name away)")
    rename.add_argument("run_id", type=int)
    rename.add_argument("name", nargs="+")
    add_db_option(rename, inherited=True)
    rename.set_defaults(handler=cmd_runs_rename)
    note = runs_sub.add_parser("note", help="a run's note (Markdown; replaces the one it has; - reads it from stdin)")
    note.add_argument("run_id", type=int)
    note.add_argument("text", nargs="+")
    add_db_option(note, inherited=True)
    note.set_defaults(handler=cmd_runs_note)
    for action, adding, words in (("tag", True, "add tags to a run (one word each)"),
                                  ("untag", False, "take tags away from a run")):
        tag = runs_sub.add_parser(action, help=words)
        tag.add_argument("run_id", type=int)
        tag.add_argument("tags", nargs="+", metavar="TAG")
        add_db_option(tag, inherited=True)
        tag.set_defaults(handler=cmd_runs_tag, adding=adding)
    for action, archived, words in (("archive", True, "hide runs from the list (`runs --all` shows them; asks "
                                                      "first); nothing is deleted"),
                                    ("unarchive", False, "list archived runs again")):
        archive = runs_sub.add_parser(action, help=words)
        archive.add_argument("run_ids", type=int, nargs="+", metavar="RUN_ID")
        if archived:
            archive.add_argument("--yes", "-y", action="store_true", help="do not ask")
        add_db_option(archive, inherited=True)
        archive.set_defaults(handler=cmd_runs_archive, archived=archived)
    remove = runs_sub.add_parser("rm", help="remove runs from the history and move their folders to the trash "
                                            "(asks first)")
    remove.add_argument("run_ids", type=int, nargs="+", metavar="RUN_ID")
    remove.add_argument("--yes", "-y", action="store_true", help="do not ask")
    add_db_option(remove, inherited=True)
    remove.set_defaults(handler=cmd_runs_rm)
    diff = runs_sub.add_parser("diff", help="only what differs between runs: settings, environment, behaviour")
    diff.add_argument("run_ids", type=int, nargs="+", metavar="RUN_ID", help="two or more runs")
    add_db_option(diff, inherited=True)
    diff.set_defaults(handler=cmd_runs_diff)
    export_runs = runs_sub.add_parser("export", help="runs as a tidy CSV (config, metrics, per-step curves) and/or "
                                                     "TensorBoard event files")
    export_runs.add_argument("run_ids", type=int, nargs="*", metavar="RUN_ID", help="the runs (default: all)")
    export_runs.add_argument("--csv", metavar="FILE", help="one CSV: a row per run, metric and step")
    export_runs.add_argument("--parquet", metavar="FILE", help="the same table as Parquet, typed, for pandas, Polars "
                                                               "and DuckDB (the parquet extra)")
    export_runs.add_argument("--tensorboard", metavar="DIR",
                             help="a folder per run of TensorBoard event files (the tensorboard extra)")
    add_db_option(export_runs, inherited=True)
    export_runs.set_defaults(handler=cmd_runs_export)

    imports = sub.add_parser("import", help="runs logged by another tool into the history, to compare them")
    imports_sub = imports.add_subparsers(dest="import_source", metavar="SOURCE", required=True)
    tensorboard = imports_sub.add_parser("tensorboard", help="TensorBoard event files: each folder with a loss "
                                                              "scalar is a run (the tensorboard extra)")
    tensorboard.add_argument("paths", nargs="+", metavar="DIR", help="SummaryWriter log dirs, or folders above them")
    mlflow = imports_sub.add_parser("mlflow", help="an MLflow file store: each run with a loss metric is a run "
                                                    "(read from its files: MLflow is not needed)")
    mlflow.add_argument("paths", nargs="+", metavar="PATH", help="an mlruns folder, an experiment's or a run's")
    for source in (tensorboard, mlflow):
        add_db_option(source)
        source.set_defaults(handler=cmd_import)

    report = sub.add_parser("report", help="a self-contained HTML report (and JSON) of one or more runs")
    report.add_argument("run_ids", type=int, nargs="+", metavar="RUN_ID")
    report.add_argument("--out", default=None, help="HTML file (default: report-<ids>.html)")
    report.add_argument("--trust-model-code", action="store_true",
                        help="import each run's own model file (path/to/file.py:Class) to evaluate its checkpoint; "
                             "without it such runs are reported without an evaluation")
    add_db_option(report)
    report.set_defaults(handler=cmd_report)
    return parser
