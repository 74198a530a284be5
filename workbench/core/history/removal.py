"""Deleting runs: their rows out of the history and their folders into the trash, with the size that frees; and
Undo, which puts both back exactly.

A run's folder is moved only when it is that run's alone. Runs share folders (a run trained into the folder of an
earlier one moves the earlier files into previous-…/ inside it; `--out` can name any folder), so the folder stays
where it is when another run's folder is the same, inside it or around it, when it holds what no run writes (a
folder given with --out that held the user's own files), or when it holds Workbench's own places (the home
folder, the data folder, the history's database). It also stays when it is on another computer (a run trained
over SSH: its files are on that host) or no longer there. The row is removed all the same, and `kept` says why
the folder was not moved. A run still training is not removed at all.

Folders are compared, and moved, by their real paths: a folder recorded as `runs/x/../a` or through a linked
folder (`alias/a`) may be another run's folder under another name, and moving it would leave that run listed
without its files.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path, PurePath
from typing import Sequence

from ..ground import paths
from ..ground.errors import WorkbenchError
from .runs import RunRecord, RunStore, StoredRun
from .trash import Trashed, folder_bytes, move_to_trash, restore
from .warm_starts import CACHE_FILE, KEY_FILE

# What a run puts in its folder: its files (kernel/recorder.py's RUN_FILES), the profiler's and the compile trace's
# folders, its compile cache (warm_starts), `workbench export`'s export-FORMAT folders, and the hidden temp files its
# atomic writes leave while they are under way. Anything else in the folder is not this run's.
RUN_ENTRIES = ("checkpoint.pt", "checkpoint.safetensors", "metrics.json", "events.jsonl", "profile", "compile-trace",
               CACHE_FILE, KEY_FILE)
RUN_ENTRY_PREFIXES = ("export-",)


@dataclass(frozen=True)
class Planned:
    """What deleting one run does: the folder it moves to the trash and its size, or why the folder stays, or why
    the run is not deleted at all."""

    run_id: int
    folder: str | None = None  # moved to the trash
    bytes: int = 0  # the folder's size
    kept: str = ""  # why its folder stays where it is ("" when it is moved, or the run has none)
    refused: str = ""  # why the run is not deleted ("" when it is)
    along: int | None = None  # its folder lies in (or is) the folder of this run, deleted with it: it goes with it


@dataclass(frozen=True)
class Removal:
    """What `delete_runs` did, with what `undo_delete` needs to put it all back."""

    removed: tuple[int, ...]
    trashed: tuple[Trashed, ...]
    bytes_freed: int  # what the trashed folders hold (freed once the trash is emptied)
    skipped: tuple[tuple[int, str], ...]  # (run id, why it was not deleted)
    kept: tuple[tuple[int, str], ...]  # (run id, why its folder stayed where it is)
    stored: tuple[StoredRun, ...]  # the removed runs' rows and events, exactly


def plan_removal(store: RunStore, run_ids: Sequence[int]) -> tuple[Planned, ...]:
    """What `delete_runs(store, run_ids)` would do, touching nothing: for a question before it acts."""
    records = {r.id: r for r in store.list()}
    ids = list(dict.fromkeys(run_ids))
    refused = {run_id: _refusal(records.get(run_id)) for run_id in ids}
    leaving = {run_id for run_id, why in refused.items() if not why}
    # The folders that stay: every other run's on this computer (a removed run's may go with the folder around it).
    staying = [(r.id, real_path(r.out_dir)) for r in records.values()
               if r.id not in leaving and r.out_dir and not r.elsewhere]
    protected = _protected(store)
    # Inner folders first: a folder holding another removed run's folder may go only when that one may.
    kept, going = {}, {}
    for run_id in sorted(leaving, key=lambda i: -len(real_path(records[i].out_dir or ".").parts)):
        record = records[run_id]
        kept[run_id] = _kept(record, staying, list(going.values()), protected)
        if not kept[run_id] and record.folder is not None:
            going[run_id] = real_path(record.out_dir)
    plans = []
    for run_id in ids:
        if refused[run_id]:
            plans.append(Planned(run_id, refused=refused[run_id]))
        elif run_id in going:
            plans.append(Planned(run_id, folder=str(going[run_id])))
        else:
            plans.append(Planned(run_id, kept=kept[run_id]))
    return tuple(_with_sizes(plans))


def _with_sizes(plans: list[Planned]) -> list[Planned]:
    """Each folder that is moved with its size, once: one that lies in (or is) another one this removal moves goes
    with the outermost one (the same folder goes with the run of the lowest id)."""
    moving = [(plan.run_id, PurePath(plan.folder)) for plan in plans if plan.folder]
    movers = {run_id: folder for run_id, folder in moving
              if not any(other != run_id and folder.is_relative_to(place) and (place != folder or other < run_id)
                         for other, place in moving)}
    sized = []
    for plan in plans:
        if plan.run_id in movers:
            plan = replace(plan, bytes=folder_bytes(plan.folder))
        elif plan.folder:
            along = next(other for other, place in movers.items() if PurePath(plan.folder).is_relative_to(place))
            plan = replace(plan, folder=None, along=along)
        sized.append(plan)
    return sized


def real_path(folder: str | Path) -> PurePath:
    """The folder's real place: absolute, every link resolved, `..` taken after the link it follows."""
    return PurePath(os.path.realpath(folder))


def _refusal(record: RunRecord | None) -> str:
    if record is None:
        return "there is no such run in the history"
    if record.status == "running":
        return "it is still running: stop it first"
    return ""


def _protected(store: RunStore) -> dict[PurePath, str]:
    """Places a run's folder must not hold, and what they are."""
    places = {Path.home(): "your home folder", paths.data_dir(): "Workbench's data folder",
              store.path.parent: "the run history's database"}
    return {real_path(place): what for place, what in places.items()}


def _kept(record: RunRecord, staying: list[tuple[int, PurePath]], going: list[PurePath],
          protected: dict[PurePath, str]) -> str:
    """Why this run's folder must stay where it is; "" when it is the run's alone, or holds only folders of runs
    deleted with it (or it has none here)."""
    if not record.out_dir:
        return ""
    if record.elsewhere:
        return f"its files are on {record.elsewhere}: they stay there"
    folder, real = PurePath(record.out_dir), real_path(record.out_dir)  # as recorded (said), where it is (compared)
    if record.folder is None:
        return f"its folder {folder} is no longer there"
    if Path(folder).is_symlink():
        return f"its folder {folder} is a link: the folder it points to is left as it is"
    for other, place in staying:
        if other == record.id:
            continue
        if place == real:
            return f"run #{other} uses the same folder {folder}" + (f" ({real})" if real != folder else "")
        if place.is_relative_to(real):
            return f"its folder {folder} holds run #{other}'s folder"
        if real.is_relative_to(place):
            return f"its folder {folder} lies in run #{other}'s folder"
    for place, what in protected.items():
        if place.is_relative_to(real):
            return f"its folder {folder} holds {what}"
    foreign = sorted(entry.name for entry in Path(real).iterdir()
                     if not _runs_own(entry.name) and not any(place.is_relative_to(entry) for place in going))
    if foreign:
        shown = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3 else "")
        return f"its folder {folder} holds files that are not this run's ({shown})"
    return ""


def _runs_own(name: str) -> bool:
    """Whether an entry of a run's folder is one the run writes: one of its files, or the temp file of one being
    written atomically (`.TARGET.XXXXXXXX.tmp`, ground.atomic). Any other hidden entry (the user's .git, .venv, .env)
    is not the run's."""
    if name.startswith(".") and name.endswith(".tmp"):
        target = name[1:]
        return any(target.startswith(entry + ".") for entry in RUN_ENTRIES) or target.startswith(RUN_ENTRY_PREFIXES)
    return name in RUN_ENTRIES or name.startswith(RUN_ENTRY_PREFIXES)


def delete_runs(store: RunStore, run_ids: Sequence[int]) -> Removal:
    """Delete runs: each one's folder to the trash (when it is the run's alone, see the module's docstring), then
    its row. A run whose folder cannot be moved, or whose row cannot be deleted, is skipped with the reason, its
    folder put back: every run is deleted whole or not at all."""
    store.check_writable()
    removed, trashed, skipped, kept, stored = [], [], [], [], []
    for plan in plan_removal(store, run_ids):
        if plan.refused:
            skipped.append((plan.run_id, plan.refused))
            continue
        item = None
        try:
            if plan.folder is not None:
                item = move_to_trash(plan.folder)
            stored.append(store.forget(plan.run_id))
        except WorkbenchError as exc:  # the folder could not be moved, or the row could not be deleted
            why = str(exc)
            if item is not None:  # the row stays: so does its folder
                try:
                    restore(item)
                except WorkbenchError as lost:
                    why += f"; {lost}"
            skipped.append((plan.run_id, why))
            continue
        removed.append(plan.run_id)
        if item is not None:
            trashed.append(item)
        if plan.kept:
            kept.append((plan.run_id, plan.kept))
    return Removal(removed=tuple(removed), trashed=tuple(trashed), bytes_freed=sum(t.bytes for t in trashed),
                   skipped=tuple(skipped), kept=tuple(kept), stored=tuple(stored))


def undo_delete(store: RunStore, removal: Removal) -> None:
    """Put the deleted runs back: their rows and events as they were, then their folders where they were. A
    folder that cannot go back (its place is taken, the trash was emptied) does not stop the others: the error
    names every one of them."""
    store.check_writable()
    for run in removal.stored:
        store.put_back(run)
    problems = []
    for item in reversed(removal.trashed):
        try:
            restore(item)
        except WorkbenchError as exc:
            problems.append(str(exc))
    if problems:
        raise WorkbenchError("; ".join(problems), "the runs are back in the history; their files are in the trash")
