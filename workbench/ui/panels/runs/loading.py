"""Recorded runs read back for the plots, the Compile, Profile and Model panels: each one's curves and the few
events those panels show, read and built on a pool thread (a run's events can be millions of rows), the last few
ended runs kept.

A run opened alone is read whole: its table and panels show every step (a run of 20,000 steps in ~45 ms). A run
compared is read as a view of about VIEW_ROWS rows (history/step_levels.py: its finest level that fits), and a zoom
reads the rows of the visible range again, finer (`load_detail`); a seed group's members are read whole, since
their band is drawn on the steps they share.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import Callable

from ....core.ground.alerts import Alert
from ....core.ground.events import (AmpReport, AmpSkipped, CompileEvent, CompileFinished, CompileReport, EpochEnd,
                                   Event, Notice, ProfileReport, RankTimes, RunFinished, RunStarted, SystemSample)
from ....core.ground.layer_stats import LayerStats, ModelSummary
from ....core.history.curves import Curves, curves_from_columns, scale_changes
from ....core.history.runs import RunRecord, RunStore
from ....core.history.step_levels import StepView, merged
from ....core.history.warm_starts import with_measured_launch
from ...support.tasks import Tasks

CACHED_RUNS = 8  # ended runs kept ready to compare or re-open
# Rows a compared run is read as, for the whole run or a zoomed range: a plot is about 1,000 pixels wide and draws a
# curve as at most items.DRAWN_POINTS points. Twenty runs of 20,000 steps read whole were 84 ms of block decoding
# and 50 ms of curves; a level's 2,000 rows a run are a tenth of it.
VIEW_ROWS = 2000
DETAIL_SLOT = "detail"
# What the panels show of a recorded run besides its curves: the Compile panel and the plots' compile timeline,
# RunFinished for its payback, the system samples for the System plot, the profile and AMP for the Profile panel,
# the layer table and statistics for the Model dock, the alerts' markers on the loss plot, each rank's times.
CURVE_EVENTS = (RunStarted, EpochEnd, CompileFinished, RunFinished)  # what curves_from_columns reads
PANEL_EVENTS = (RunStarted, CompileFinished, CompileReport, CompileEvent, SystemSample, RankTimes, ProfileReport,
                AmpReport, AmpSkipped, Notice, RunFinished, ModelSummary, LayerStats, Alert)


@dataclass(frozen=True)
class LoadedRun:
    """A recorded run as the plots and the Compile panel show it: its curves, built once off the GUI thread, not
    its (possibly millions of) events."""

    record: RunRecord  # without its events
    curves: Curves
    panel_events: tuple[Event, ...] | None  # None: read only to be compared (its curves), never shown
    view: StepView | None = None  # a compared run read at a level: its rows, which a zoom reads finer
    curve_events: tuple[Event, ...] = ()  # with a view: the events its curves were built from (CURVE_EVENTS)
    cursor: int = -1  # the last seq read of a run shown while it trains elsewhere: following.py reads on from there

    @property
    def compile_seconds(self) -> float | None:
        """Its first compile's seconds, what a shown run's compile marker says (a compared run's marker says its
        curves' compile seconds)."""
        return next((e.seconds for e in self.panel_events if isinstance(e, CompileFinished)), None)


def load_run(store: RunStore, run_id: int, panels: bool = True, whole: bool = True) -> LoadedRun:
    """The run's curves from its steps' columns, and the events its panels show (all of them but its steps);
    without `panels`, only the events its curves need: a run compared is not shown in the panels, and its system
    samples were half of what reading 20 long runs decoded; nor `whole`: read as a view of about VIEW_ROWS rows."""
    record = store.get(run_id, with_events=True, steps=False, kinds=None if panels else CURVE_EVENTS)
    if not panels and not whole:
        view = store.step_view(run_id, VIEW_ROWS)
        return LoadedRun(replace(record, events=[]), curves_from_columns(view.block, record.events, view.stride),
                         None, view, tuple(record.events))
    block = store.step_block(run_id)
    if not panels:
        return LoadedRun(replace(record, events=[]), curves_from_columns(block, record.events), None)
    record = with_measured_launch(store, record)  # a cold run's warm launch
    return LoadedRun(replace(record, events=[]), curves_from_columns(block, record.events),
                     tuple(e for e in record.events if isinstance(e, PANEL_EVENTS)) + scale_changes(block),
                     cursor=store.last_seq(run_id) if record.status == "running" else -1)


class RunLoader:
    def __init__(self, tasks: Tasks, db, on_error: Callable[[BaseException], None]):
        self.tasks, self.db, self.on_error = tasks, db, on_error
        self.cache: OrderedDict[int, LoadedRun] = OrderedDict()  # the last CACHED_RUNS ended runs used

    def load(self, ids: list[int], deliver: Callable[[list[LoadedRun]], None], slot: str,
             panels: bool = True, whole: frozenset[int] = frozenset()) -> None:
        """Hand `deliver` the runs, read with a connection of their own (`panels`: with what the panels show, else
        only their curves, as a view unless in `whole`); only the latest request of a task slot is delivered, so
        quick clicks never show an older selection."""
        cached = {run_id: run for run_id in ids if (run := self.cache.get(run_id)) is not None
                  and (run.panel_events is not None if panels else run_id not in whole or run.view is None)}
        missing = [run_id for run_id in ids if run_id not in cached]

        def read() -> list[LoadedRun]:
            with RunStore(self.db, recover=False) as store, store.snapshot():  # a run training elsewhere: its
                return [load_run(store, run_id, panels, whole=panels or run_id in whole)  # cursor is where this
                        for run_id in missing]  # read stopped

        def done(result) -> None:
            fresh = {run.record.id: run for run in result}
            runs = [fresh.get(run_id) or cached[run_id] for run_id in ids]
            for run in runs:
                if run.record.status != "running":  # ended: final, worth keeping
                    self.cache[run.record.id] = run
                    self.cache.move_to_end(run.record.id)
            while len(self.cache) > CACHED_RUNS:
                self.cache.popitem(last=False)
            deliver(runs)

        if missing:
            self.tasks.submit(slot, read, done, self.on_error)
        else:
            self.tasks.drop(slot)  # an older request still reading is no longer wanted
            done([])

    def load_detail(self, wanted: list[tuple[LoadedRun, float, float]],
                    deliver: Callable[[list[tuple[LoadedRun, Curves]]], None]) -> None:
        """Hand `deliver` each compared run (read at a level) with its curves read finer between two steps (a
        zoom): its view's rows there replaced by about VIEW_ROWS of its own, the rest as they were. Only the latest
        request is delivered."""
        def read() -> list[tuple[LoadedRun, Curves]]:
            with RunStore(self.db, recover=False) as store:
                return [(run, detailed(store, run, first, last)) for run, first, last in wanted]

        self.tasks.submit(DETAIL_SLOT, read, deliver, self.on_error)

    def forget(self, run_ids) -> None:
        """These runs are deleted: what was kept of them goes."""
        for run_id in run_ids:
            self.cache.pop(run_id, None)


def detailed(store: RunStore, run: LoadedRun, first: float, last: float) -> Curves:
    """A compared run's curves with the steps from `first` to `last` read as finely as VIEW_ROWS rows allow."""
    fine = store.step_view(run.record.id, VIEW_ROWS, (first, last))
    return curves_from_columns(merged(run.view.block, fine.block), list(run.curve_events), fine.stride)
