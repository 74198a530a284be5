"""`workbench train` and `workbench profile`: a run in this process (or torchrun's), its progress and its summary."""

from __future__ import annotations

import argparse
import sys
import threading
from pathlib import Path

from ..core.ground.events import RunFailed, RunFinished
from ..core.ground.progress import failure_line
from ..core.ground.results_text import finished_lines
from .common import EXIT_RUN_FAILED, EXIT_USAGE, fail, quiet_torch_logs
from .options import config_from_args
from .progress import ProgressBar, interrupt_sets


PROFILE_STEPS = 20  # `workbench profile`'s window
PROFILE_LEAD_STEPS = 12  # `workbench profile`'s steps before the window: compile, CUDA warm-up, settling
PROFILE_EPOCHS = 100_000  # `workbench profile` ends at its step count (max steps), not at an epoch count


# -- train ------------------------------------------------------------------------------------------------------
def cmd_train(args: argparse.Namespace) -> int:
    if args.from_run is not None and args.resume is not None:
        return fail("--from and --resume do not go together", "--from starts a new run with a run's settings; "
                                                              "--resume continues that run")
    if args.from_run is not None:
        return _train(args, config_from_args(args, **run_settings(args.from_run, args.db)))
    if args.resume is None:
        return _train(args, config_from_args(args))
    path = resume_checkpoint(args.resume, args.db)
    return _train(args, config_from_args(args, **checkpoint_config(path)).replace(resume=str(path)))


def run_settings(what: str, db: str | None) -> dict:
    """`--from RUN`: the settings of a run (its id in the history, 3 or #3; its folder; or its checkpoint, as
    --resume takes them), for a new run of its own: not a continuation of the one it was (`resume` is left out).
    The options given on the command line change them (config_from_args)."""
    from ..core.ground.errors import WorkbenchError
    from ..core.history.runs import RunStore

    path, number = Path(what).expanduser(), what.lstrip("#")
    if number.isdigit() or path.is_dir():
        with RunStore(db) as store:
            run_id = int(number) if number.isdigit() else store.id_for_out_dir(path)
            record = store.get(run_id) if run_id is not None else None
        if record is not None and not record.config:
            raise WorkbenchError(f"--from {what}: the settings of run #{record.id} cannot be read "
                                 f"({record.failure['message'] if record.failure else 'none were recorded'})")
        config = record.config if record is not None else checkpoint_config((path / "checkpoint.pt").resolve(),
                                                                             "--from")
    elif path.is_file():
        config = checkpoint_config(path.resolve(), "--from")
    else:
        raise WorkbenchError(f"--from {what}: no such run", "give a run's id (`workbench runs` lists them), its "
                                                            "folder or its checkpoint")
    return {**config, "resume": None}


def resume_checkpoint(what: str, db: str | None) -> Path:
    """`--resume RUN|CKPT`: a run's id in the history (3 or #3), its folder, or a checkpoint file."""
    from ..core.ground.config import ConfigError
    from ..core.history.runs import RunStore

    if what.lstrip("#").isdigit():
        with RunStore(db) as store:
            record = store.get(int(what.lstrip("#")))
        if not record.checkpoint:
            raise ConfigError("resume", f"run #{record.id} has no checkpoint to continue from")
        return Path(record.checkpoint)
    path = Path(what).expanduser()
    return (path / "checkpoint.pt" if path.is_dir() else path).resolve()


def checkpoint_config(path: Path, flag: str = "resume") -> dict:
    """The settings of the run a checkpoint continues (or, `flag` "--from", starts anew): the defaults the flags
    change."""
    from ..core.domain import checkpoint
    from ..core.ground.config import ConfigError

    try:
        return checkpoint.load(path, trust_model_code=True).config.to_dict()
    except checkpoint.CheckpointError as exc:
        doing = "continue from" if flag == "resume" else "read the settings of"
        raise ConfigError(flag, f"cannot {doing} {path}: {exc}") from None


def check_warm_from(run_id: int, db: str | None) -> None:
    """`--warm-from N`: refused before anything starts (and before a failed run is recorded) when run N has no
    compile cache to load; whether its cache fits this run's settings is checked where the run builds its model."""
    from ..core.history.runs import RunStore
    from ..core.history.warm_starts import WarmStartError, warm_source

    with RunStore(db, recover=False) as store:
        try:
            warm_source(store, run_id)
        except WarmStartError as exc:  # said with the flag the user typed, as config_from_args says a bad value
            called = exc.called("--warm-from")
            called.hint = exc.hint
            raise called from None


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


def _train(args: argparse.Namespace, config) -> int:
    if args.hosts or args.hostfile:  # several hosts: checked first, then one torchrun on each
        from .remote import train_across_hosts

        return train_across_hosts(args, config)
    if args.host is not None:  # the host checks the settings against its devices; nothing here imports torch
        from .remote import train_remote

        return train_remote(args, config)
    if config.warm_from:
        check_warm_from(config.warm_from, args.db)
    from ..core.ground.config import local_data_problem

    problem = local_data_problem(config)  # before PyTorch loads (seconds): a mistyped folder is said at once
    if problem is not None:
        raise problem.called("--data-root") if config.data_root is not None else problem
    from ..core.domain.devices import cuda_device_count
    from ..core.kernel.launch import start_run
    from ..core.run.run_request import Launch, RunRequest

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
        if launch.distributed and launch.node_rank == 0:  # several processes here: a hang is reported with stacks
            from ..core.run.process import start_distributed
            from .hang import HangReport

            process = start_distributed(request)
            with HangReport(process.collect_stacks, args.hang_after, bar.update) as watched:
                result = start_run(request, watched, stop, process=process)
        else:
            result = start_run(request, bar.update, stop)
    bar.close()
    if launch.node_rank != 0:
        code = result.results.node_exit_code if isinstance(result, RunFinished) else None
        print(f"node {launch.node_rank}: its {launch.nproc_per_node} process(es) ended"
              + (f" (exit code {code})" if code is not None else f": {result.message}")
              + "; node 0 writes the checkpoint and the run record")
        if stop.is_set():  # Ctrl+C: the same exit code as on node 0, not that of the processes it ended
            return interrupts.exit_code
        return 0 if isinstance(result, RunFinished) else EXIT_RUN_FAILED
    if isinstance(result, RunFailed):
        code = EXIT_USAGE if result.kind in ("config", "data", "io") else EXIT_RUN_FAILED
        return fail(failure_line(result), code=code)
    for line in finished_lines(result):
        print(line)
    out, results = request.out_dir, result.results
    if results.checkpoint:
        print(f"wrote {out}: checkpoint.pt, checkpoint.safetensors, metrics.json, events.jsonl")
    elif results.checkpoint_error:  # trained, but the model is not on disk: that is a failed command
        print(f"wrote {out}: metrics.json, events.jsonl — but NOT the checkpoint ({result.steps} steps trained)")
        return fail(results.checkpoint_error, "free some disk space or choose another output folder with --out",
                    code=EXIT_RUN_FAILED)
    elif result.steps > 0:
        print(f"wrote {out}: metrics.json, events.jsonl (no checkpoint was written)")
    elif (Path(out) / "metrics.json").is_file():
        print(f"wrote {out}: metrics.json, events.jsonl (no checkpoint: no step was trained)")
    else:
        print("nothing was written: the run stopped before it started")
    return interrupts.exit_code if result.stopped else 0
