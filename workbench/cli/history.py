"""`workbench runs …` and `workbench report`: the run history, read without importing PyTorch."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..core.ground.events import RunFinished
from ..core.ground.results_text import finished_lines
from .common import _store, fail
from .models import format_report


def cmd_runs_list(args: argparse.Namespace) -> int:
    from ..core.ground.config import setup_label

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
              f"{epochs[:6]:>6} {best:>8} {speed:>10}  {r.status}" + (f" on {r.elsewhere}" if r.elsewhere else ""))
    return 0


def cmd_runs_show(args: argparse.Namespace) -> int:
    from ..core.history.report_facts import last_compile_report

    from ..core.history.curves import run_name

    with _store(args) as store:
        record = store.get(args.run_id, with_events=True)
        resume = record.config.get("resume")
        parent = store.id_for_out_dir(Path(resume).parent) if resume else None
    where = f" on {record.elsewhere} (its files are there)" if record.elsewhere else ""
    print(f"run {record.id} · {record.status}{where} · started {record.created}")
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
    for line in finished_lines(finished) if finished is not None else ():
        print(line)
    return 0


def cmd_runs_rm(args: argparse.Namespace) -> int:
    with _store(args) as store:
        for run_id in args.run_ids:
            store.delete(run_id)
            print(f"removed run {run_id}")
    return 0


def cmd_runs_export(args: argparse.Namespace) -> int:
    from ..core.history.runs_export import export_csv, export_tensorboard

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
    from ..core.run.reports import write_report

    out = Path(args.out or f"report-{'-'.join(map(str, args.run_ids))}.html")
    with _store(args) as store:
        html_path, json_path = write_report(store, args.run_ids, out, trust_model_code=args.trust_model_code)
    print(f"wrote {html_path} ({html_path.stat().st_size / 1024:.0f} KB) and {json_path}")
    return 0
