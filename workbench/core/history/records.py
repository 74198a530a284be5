"""A row of the run history as plain data (RunRecord), and how a stored row becomes one: what every listing, query
and export reads. A row this version did not write is still read, marked damaged, so one bad row never hides the
others."""

from __future__ import annotations

import json
import socket
import sqlite3
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from ..ground.events import Event, RunFinished
from ..ground.results import RunResults

if TYPE_CHECKING:
    from .step_columns import StepBlock

ENDED = ("finished", "stopped", "failed")  # statuses written by the run's own end
_NUMBERS = {int: (int,), float: (int, float)}  # what a number column may hold (SQLite gives these; bool is not one)


@dataclass
class RunRecord:
    """One row of the history, as plain data (events are loaded on demand)."""

    id: int
    created: str
    status: str
    config: dict
    environment: dict
    steps: int
    best_val_accuracy: float | None
    samples_per_s: float | None
    compile_seconds: float | None
    peak_memory_mib: float | None
    backend_used: str | None
    failure: dict | None
    out_dir: str | None
    checkpoint: str | None
    events: list[Event] = field(default_factory=list)
    updated: str = ""  # when the row was last written: an ended run's end
    host: str = ""  # the machine that trained it: this one's name, or a remote host as the user named it
    name: str = ""  # the user's name for it ("" : none given; the list shows "#ID")
    notes: str = ""  # the user's Markdown note
    tags: tuple[str, ...] = ()  # the user's tags, in the order given, each once
    archived: bool = False  # hidden from the list unless archived runs are shown
    disk_bytes: int | None = None  # what its folder holds on disk (None: not measured, or not on this computer)
    step_columns: "StepBlock | None" = None  # its steps as columns, when read so (RunStore.get_with_columns)

    @property
    def elsewhere(self) -> str:
        """The host it trained on when that is not this computer (its files are there), else ""."""
        return self.host if self.host and self.host != socket.gethostname() else ""

    @property
    def folder(self) -> Path | None:
        """Its output folder when that is on this computer and still there, else None."""
        if not self.out_dir or self.elsewhere:
            return None
        folder = Path(self.out_dir)
        return folder if folder.is_dir() else None

    @property
    def results(self) -> RunResults | None:
        """What the run measured, from its RunFinished event (loaded with its events); None without one."""
        return next((e.results for e in reversed(self.events) if isinstance(e, RunFinished)), None)

    @property
    def duration_s(self) -> float | None:
        """Seconds from start to end; None while it runs, and for an interrupted run (its row was last written
        when its death was noticed, not when it died) or a damaged one."""
        if self.status not in ENDED:
            return None
        try:
            return (datetime.fromisoformat(self.updated) - datetime.fromisoformat(self.created)).total_seconds()
        except (ValueError, TypeError):  # not ISO times, or one with a time zone and one without
            return None


def record_of_row(row: sqlite3.Row) -> RunRecord:
    """A row as a RunRecord. A row this version did not write (damaged JSON, text in a numeric column) is still
    read, with what could not be read left empty, its status "damaged" and `failure` saying what was wrong: it
    never stops the other rows from being listed. A row read without its environment (a listing: RunStore.list)
    has an empty one. The checks are a type lookup for what this version writes: 20,000 rows are listed in a
    few hundred ms."""
    problems: list[str] = []
    keys = row.keys()

    def mapping(column: str, *, optional: bool = False) -> dict | None:
        text = row[column]
        if optional and not text:
            return None
        try:
            value = json.loads(text) if isinstance(text, str) else None
        except (ValueError, RecursionError):
            value = None
        if not isinstance(value, dict):
            problems.append(f"{column} is not a JSON object")
            return None if optional else {}
        return value

    def number(column: str, kind: type, default):
        value = row[column]
        if value is None:
            return default
        if type(value) in _NUMBERS[kind] and value == value:
            return kind(value)
        problems.append(f"{column} is {value!r:.30}, not a number")
        return default

    def text(column: str, default: str | None) -> str | None:
        value = row[column]
        if type(value) is str:
            return value
        if value is None:
            return default
        problems.append(f"{column} is {value!r:.30}, not text")
        return default if default is not None else str(value)

    def words(column: str) -> tuple[str, ...]:
        value = tags_of(row[column])
        if value is None:
            problems.append(f"{column} is not a JSON list of words")
        return value or ()

    # A schema 1 history opened read-only has none of the user's columns: its runs have none of them set.
    users = (dict(name=text("name", ""), notes=text("notes", ""), tags=words("tags"),
                  archived=bool(number("archived", int, 0)), disk_bytes=number("disk_bytes", int, None))
             if "name" in keys else {})

    record = RunRecord(
        id=row["id"], created=text("created", ""), status=text("status", ""), config=mapping("config"),
        environment=mapping("environment") if "environment" in keys and row["environment"] is not None else {},
        steps=number("steps", int, 0), best_val_accuracy=number("best_val_accuracy", float, None),
        samples_per_s=number("samples_per_s", float, None), compile_seconds=number("compile_seconds", float, None),
        peak_memory_mib=number("peak_memory_mib", float, None), backend_used=text("backend_used", None),
        failure=mapping("failure", optional=True), out_dir=text("out_dir", None),
        checkpoint=text("checkpoint", None), updated=text("updated", ""), host=text("host", ""), **users)
    if problems:
        record.status = "damaged"
        record.failure = {"kind": "damaged", "message": "this run's row cannot be read in full: " + "; ".join(problems),
                          "hint": "it was not written by this version of Workbench, or the file was damaged"}
    return record


def tags_of(text) -> tuple[str, ...] | None:
    """A tags column's words; None when it is not a JSON list of words (a row this version did not write)."""
    if text == "[]":  # most runs: no tags
        return ()
    try:
        value = json.loads(text) if isinstance(text, str) else None
    except (ValueError, RecursionError):
        return None
    return tuple(value) if isinstance(value, list) and all(isinstance(item, str) for item in value) else None
