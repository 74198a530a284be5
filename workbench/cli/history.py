"""`workbench runs …` and `workbench report`: the run history, read without importing PyTorch."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..core.ground.events import RankTimes, RunFinished
from ..core.ground.figures import BEST_VAL_ACCURACY, PEAK_MEMORY, SAMPLES_PER_S
from ..core.ground.results_text import finished_lines
from .common import EXIT_USAGE, _store, fail
from .models import format_report

NAME_WIDTH = 24  # the list's name column at most (a longer name is cut, with "…"; `runs show` has it whole)


def cmd_runs_list(args: argparse.Namespace) -> int:
    from ..core.history.listing import list_runs
    from ..core.history.query import parse_query

    query = parse_query(args.where or "")  # a query it cannot read: one line saying what and where, before reading
    with _store(args) as store:
        matching, total = list_runs(store, query)
    if not total:
        print(f"no runs recorded yet in {store.path}")
        return 0
    shown = matching if args.all else [r for r in matching if not r.archived]
    hidden = len(matching) - len(shown)
    hidden_line = f"{hidden} archived run{'s' if hidden != 1 else ''} not shown (--all shows them)"
    if not matching:
        print(f"no run matches {args.where!r} ({total} in the history)")
        return 0
    if not shown:
        print(f"no runs to show: {hidden_line}")
        return 0
    width = min(max(len(r.name) for r in shown), NAME_WIDTH)
    name_head = f"{'name':<{width}}  " if width else ""
    lines = [f"{'id':>4}  {name_head}{'when (UTC)':<19}  {'dataset':<13} {'model':<16} {'backend · mode · AMP':<34} "
             f"{'epochs':>6} {'best val':>8} {'samples/s':>10}  status"]
    for r in shown:
        best = f"{r.best_val_accuracy:.2%}" if r.best_val_accuracy is not None else "—"
        speed = f"{r.samples_per_s:,.0f}" if r.samples_per_s else "—"
        name = f"{_cut(r.name, width):<{width}}  " if width else ""
        when = r.created[:19].replace("T", " ")
        lines.append(f"{r.id:>4}  {name}{when:<19}  {r.dataset[:13]:<13} {_cut(r.model, 16):<16} {r.setup[:34]:<34} "
                     f"{r.epochs[:6]:>6} {best:>8} {speed:>10}  {r.status}"
                     + (f" on {r.elsewhere}" if r.elsewhere else "") + (" · archived" if r.archived else "")
                     + (f"  [{', '.join(r.tags)}]" if r.tags else ""))
    if hidden:
        lines.append(hidden_line)
    if not query.empty:
        lines.append(f"{len(matching)} of {total} runs match {args.where!r}")
    print("\n".join(lines))
    return 0


def cmd_runs_diff(args: argparse.Namespace) -> int:
    """Only what differs between the runs: settings, environment, behaviour (each with what explains it)."""
    from ..core.history.naming import run_name
    from ..core.history.diff import diff_runs

    with _store(args) as store:
        records = [store.get(run_id, with_events=True, steps=False) for run_id in dict.fromkeys(args.run_ids)]
    diff = diff_runs(records)
    names = [record.name or run_name(record.id) for record in records]
    if not diff.rows:
        print(f"{' and '.join(names)} do not differ in settings, environment or behaviour")
        return 0
    field_width = max(len(row.field) for row in diff.rows)
    widths = [max(len(name), *(len(row.values[i]) for row in diff.rows)) for i, name in enumerate(names)]
    section = None
    for row in diff.rows:
        if row.section != section:
            section = row.section
            print(f"\n{section}:" if section != diff.rows[0].section else f"{section}:")
            print(("  " + " " * field_width + "  " + "  ".join(f"{n:<{w}}" for n, w in zip(names, widths))).rstrip())
        cells = "  ".join(f"{value:<{w}}" for value, w in zip(row.values, widths))
        print(f"  {row.field:<{field_width}}  {cells}".rstrip() + (f"   ({row.note})" if row.note else ""))
    return 0


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width - 1] + "…"


def cmd_runs_show(args: argparse.Namespace) -> int:
    from ..core.history.layers import run_layers
    from ..core.history.layers_text import alerts_lines, layers_lines
    from ..core.history.report.facts import last_compile_report

    from ..core.history.naming import run_name

    from ..core.history.warm_starts import with_measured_launch

    with _store(args) as store:
        record = with_measured_launch(store, store.get(args.run_id, with_events=True, steps=False))
        resume = record.config.get("resume")
        parent = store.id_for_out_dir(Path(resume).parent) if resume else None
    where = f" on {record.elsewhere} (its files are there)" if record.elsewhere else ""
    print(f"run {record.id} · {record.status}{where} · started {record.created}"
          + (" · archived" if record.archived else ""))
    if record.name:
        print(f"name:        {record.name}")
    if record.tags:
        print(f"tags:        {', '.join(record.tags)}")
    if record.notes:
        print("notes:\n" + "\n".join(f"  {line}".rstrip() for line in record.notes.splitlines()))
    print("config:      " + json.dumps(record.config, sort_keys=True, default=str))
    print("environment: " + json.dumps(record.environment, sort_keys=True, default=str))
    for line in summary_lines(record):
        print(line)
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
    ranks = next((e for e in reversed(record.events) if isinstance(e, RankTimes)), None)
    if ranks is not None:  # a run of several processes: where each rank ran, and its last forward time
        print("ranks:       " + ", ".join(f"{rank} on {host} ({seconds * 1000:.1f} ms a forward)"
                                          for rank, (host, seconds) in enumerate(zip(ranks.hosts,
                                                                                    ranks.forward_seconds))))
    layers = run_layers(record.events, record.config)
    for line in layers_lines(layers) + alerts_lines(layers):
        print(line)
    return 0


def summary_lines(record) -> list[str]:
    """The row's figures, rounded as the window shows them, each called by its name (not raw JSON floats)."""
    def figure(value, form: str, unit: str = "") -> str:
        return "—" if value is None else f"{value:{form}}{unit}"

    return [f"steps:       {record.steps:,}",
            f"{BEST_VAL_ACCURACY.name}: {figure(record.best_val_accuracy, '.2%')}",
            f"{SAMPLES_PER_S.name}:   {figure(record.samples_per_s, ',.0f')}",
            f"compile:     {figure(record.compile_seconds, '.2f', ' s')}"
            + (f" ({record.backend_used})" if record.backend_used else ""),
            f"{PEAK_MEMORY.name}: {figure(record.peak_memory_mib, ',.0f', ' MiB')}",
            f"folder:      {record.out_dir or '—'}",
            f"checkpoint:  {record.checkpoint or '—'}"]


def cmd_runs_rm(args: argparse.Namespace) -> int:
    """Each run out of the history and its folder into the trash, after a y/N question (unless --yes) that says
    which folders go (and which stay, and why)."""
    from ..core.history.removal import delete_runs, plan_removal
    from ..core.history.trash import size_text

    with _store(args) as store:
        store.check_writable()
        for run_id in args.run_ids:
            store.get(run_id)  # an unknown id is one error line, before anything is asked or done
        plans = plan_removal(store, args.run_ids)
        going = [plan for plan in plans if not plan.refused]
        for plan in plans:
            if plan.folder:
                print(f"run {plan.run_id}: its folder {plan.folder} ({size_text(plan.bytes)}) goes to the trash")
            elif plan.along is not None:
                print(f"run {plan.run_id}: its folder goes to the trash with run {plan.along}'s")
            elif plan.kept:
                print(f"run {plan.run_id}: its folder stays: {plan.kept}")
        if going and not args.yes:
            refused = _refused(f"remove {_runs(len(going))} from the history?", "removed", "remove")
            if refused is not None:
                return refused
        removal = delete_runs(store, args.run_ids)  # (what it skips, it says why)
    for run_id in removal.removed:
        print(f"removed run {run_id}")
    for item in removal.trashed:
        print(f"moved {item.original} ({size_text(item.bytes)}) to the trash: {item.trashed}")
    if removal.trashed:
        print(f"freed {size_text(removal.bytes_freed)} (once the trash is emptied)")
    for run_id, why in removal.skipped:
        fail(f"run {run_id} was not removed: {why}")
    return EXIT_USAGE if removal.skipped else 0


def _refused(question: str, done: str, verb: str) -> int | None:
    """Ask `question` [y/N]: None when the answer is yes, else the exit code (0 for a no; an error when no one can
    answer: a script must say --yes)."""
    answer = _ask(f"{question} [y/N] ")
    if answer is None:
        return fail(f"nothing was {done}: there is no one to answer the question", f"give --yes to {verb} without "
                    "asking")
    if answer not in ("y", "yes"):
        print(f"nothing was {done}")
        return 0
    return None


def _ask(question: str) -> str | None:
    """The answer (lower case, trimmed) to a question on the terminal; None when there is no one to ask (stdin
    closed or not a terminal with nothing to read)."""
    print(question, end="", flush=True)
    line = sys.stdin.readline()
    if not line:
        print()
        return None
    return line.strip().lower()


def _runs(n: int) -> str:
    return f"{n} run{'s' if n != 1 else ''}"


def cmd_runs_rename(args: argparse.Namespace) -> int:
    name = " ".join(args.name).strip()
    with _store(args) as store:
        store.rename(args.run_id, name)
    print(f"run {args.run_id} is now called {name!r}" if name else f"run {args.run_id} has no name now")
    return 0


def cmd_runs_note(args: argparse.Namespace) -> int:
    """`runs note N TEXT`; `-` reads the note from stdin (a file, a heredoc); an empty note takes it away."""
    text = _stdin_text("the note") if args.text == ["-"] else " ".join(args.text)
    with _store(args) as store:
        store.set_notes(args.run_id, text)
    lines = len(text.strip().splitlines())
    print(f"run {args.run_id}'s note: {lines} line{'s' if lines != 1 else ''}" if lines
          else f"run {args.run_id} has no note now")
    return 0


def _stdin_text(what: str) -> str:
    """Standard input as UTF-8 text; a WorkbenchError that says where it is not (a Latin-1 file)."""
    from ..core.ground.errors import WorkbenchError

    stream = getattr(sys.stdin, "buffer", None)
    if stream is None:  # a text stream without bytes beneath (an embedding program's): already text
        return sys.stdin.read()
    data = stream.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise WorkbenchError(f"{what} on standard input is not UTF-8 text (byte 0x{data[exc.start]:02x} at byte "
                             f"{exc.start + 1})", "convert it first, e.g. `iconv -f latin1 -t utf-8 FILE | "
                             "workbench runs note N -`") from None


def cmd_runs_tag(args: argparse.Namespace) -> int:
    """`runs tag N TAG…` adds tags, `runs untag N TAG…` takes them away (args.adding says which)."""
    with _store(args) as store:
        change = store.add_tags if args.adding else store.remove_tags
        tags = change(args.run_id, args.tags)
    print(f"run {args.run_id}'s tags: {', '.join(tags)}" if tags else f"run {args.run_id} has no tags now")
    return 0


def cmd_runs_archive(args: argparse.Namespace) -> int:
    """`runs archive N…` hides runs from the list (`runs --all` shows them) after a y/N question (unless --yes),
    `runs unarchive N…` shows them again (args.archived says which). Nothing is deleted."""
    ids = ", ".join(map(str, dict.fromkeys(args.run_ids)))
    with _store(args) as store:
        store.check_writable()
        for run_id in args.run_ids:
            store.get(run_id)  # an unknown id is one error line, before anything is asked or done
        if args.archived and not args.yes:
            refused = _refused(f"archive {_runs(len(set(args.run_ids)))} ({ids})? They leave the list, nothing is "
                               "deleted, `workbench runs unarchive` brings them back.", "archived", "archive")
            if refused is not None:
                return refused
        store.set_archived(args.run_ids, args.archived)
    print(f"archived {ids} (`workbench runs --all` lists them)" if args.archived else f"unarchived {ids}")
    return 0


def cmd_runs_export(args: argparse.Namespace) -> int:
    from ..core.history.runs_export import export_csv, export_parquet, export_tensorboard

    if not (args.csv or args.tensorboard or args.parquet):
        return fail("nothing to export to", "give --csv FILE, --parquet FILE, --tensorboard DIR, or several")
    run_ids = args.run_ids or None
    with _store(args) as store:
        if args.tensorboard:  # first: without the extra, fail before writing anything
            folders = export_tensorboard(store, run_ids, args.tensorboard)
            print(f"wrote {len(folders)} run(s) as TensorBoard event files under {args.tensorboard} "
                  f"(tensorboard --logdir {args.tensorboard})")
        if args.parquet:  # (without the extra: fails before writing anything)
            rows = export_parquet(store, run_ids, args.parquet)
            print(f"wrote {rows:,} rows to {args.parquet}")
        if args.csv:
            rows = export_csv(store, run_ids, args.csv)
            print(f"wrote {rows:,} rows to {args.csv}")
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    """`workbench import tensorboard DIR…` / `workbench import mlflow PATH…`: each run found, and what it became."""
    from ..core.history.imports import import_mlflow, import_tensorboard

    with _store(args) as store:
        imported = (import_tensorboard if args.import_source == "tensorboard" else import_mlflow)(store, args.paths)
    for run in imported:
        matched = ", ".join(f"{name.replace('_', ' ')} ← {tag}" for name, tag in run.matched.items())
        settings = " ".join(f"{name}={value}" for name, value in run.settings.items()) or "none matched"
        print(f"imported #{run.run_id} from {run.folder}: {run.steps:,} steps ({matched}); settings: {settings}"
              + (f"; not kept: {', '.join(run.not_kept)}" if run.not_kept else ""))
    print(f"{len(imported)} run(s) imported: compare them with `workbench runs` or in the window's Runs dock")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from ..core.kernel.reports import write_report

    out = Path(args.out or f"report-{'-'.join(map(str, args.run_ids))}.html")
    with _store(args) as store:
        html_path, json_path = write_report(store, args.run_ids, out, trust_model_code=args.trust_model_code)
    print(f"wrote {html_path} ({html_path.stat().st_size / 1024:.0f} KB) and {json_path}")
    return 0
