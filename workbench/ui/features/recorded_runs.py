"""Runs from the history, back in the window: one re-opened (its curves and alerts, compile report, profile, layer
statistics and model; one still training in another process goes on drawing, read by cursor: panels/runs/following.py),
the last one this window trained at the next launch, and several overlaid to compare (runs that differ only by their
seed as one group: a mean line with a band). The Runs dock lists them and reads them off the GUI thread
(panels/runs/); this is what the window does with them."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject

from ...core.ground.alerts import Alert
from ...core.ground.events import CompileEvent, Event, RankTimes, RunStarted, SystemSample
from ...core.history.naming import differing_settings, run_label, run_name
from ...core.history.groups import seed_groups
from ...core.history.imports import imported_from
from ...core.history.runs import RunRecord
from ..panels.runs.following import RunFollower
from ..panels.runs.runs import LoadedRun
from .checkpoints import Checkpoints
from .parts import WindowParts


class RecordedRuns(QObject):
    def __init__(self, parts: WindowParts, checkpoints: Checkpoints):
        panels = parts.panels
        super().__init__(panels.runs)
        self.state, self.feedback, self.runs, self.plots = parts.state, parts.feedback, panels.runs, panels.plots
        self.profile, self.compile_panel, self.model = panels.profile, panels.compile, panels.layers
        self.checkpoints, self.training = checkpoints, lambda: parts.runner.training
        self.show_speed = parts.show_speed  # the status bar's samples/s follows the run on show (a live one's)
        self.runs.compareRequested.connect(self.compare)
        self.plots.detailWanted.connect(self._read_detail)
        self._singles: list[LoadedRun] = []  # the compared runs drawn alone, in the order the plots have them
        self.follower = RunFollower(self.runs.tasks, self.runs.db, self._followed, self.runs.loader.on_error)
        self.runs.openRequested.connect(self.show)
        self.runs.runsDeleted.connect(self.deleted)

    def reopen_last(self, out_dir: Path) -> None:
        """At start-up: the run this window trained last comes back (curves, compile report, model), as the user
        left it, once the history is open. A run that is no longer in the history is forgotten quietly."""
        self.runs.when_open(lambda: self._reopen(out_dir))

    def _reopen(self, out_dir: Path) -> None:
        run_id = self.runs.id_for_out_dir(out_dir)
        if run_id is None or self.training():
            return
        self.state.last_run_dir = out_dir
        self.runs.load_runs([run_id], lambda runs: self.show(runs[0]))

    def _show_parent_of(self, run_id: int) -> None:
        """A continuation shown from the history gets its parent's curves before its own steps, as it had while
        it trained (read like any run: off the GUI thread, and dropped if another run is opened meanwhile)."""
        parent = self.runs.parent_of(run_id)
        if parent is None:
            return
        shown = self.plots.shown_at

        def show(runs: list[LoadedRun]) -> None:
            if self.plots.shown_at == shown and not self.training():
                self.plots.show_parent(run_name(parent), runs[0].curves)

        self.runs.load_runs([parent], show)

    def compare(self, runs: list[LoadedRun]) -> None:
        """Overlay these runs: those that form seed groups (history.groups.seed_groups) as one mean line with a
        band each, the others as their own curves, labelled by the settings that differ between what is shown."""
        by_id = {run.record.id: run for run in runs}
        groups = seed_groups([run.record for run in runs])
        grouped = {run_id for group in groups for run_id in group.run_ids}
        singles = [run for run in runs if run.record.id not in grouped]
        shown = [run.record.config for run in singles] + [by_id[group.run_ids[0]].record.config for group in groups]
        keys = differing_settings(shown)
        labels = [run_label(run.record.id, run.record.config, keys) + _origin(run.record) for run in singles]
        self._singles = singles
        self.plots.set_overlays([(label, run.curves) for label, run in zip(labels, singles)])
        self.plots.set_group_overlays([(group.label, [by_id[run_id].curves for run_id in group.run_ids])
                                       for group in groups])
        self.state.compared = tuple(by_id)
        if runs:
            self.feedback.note("info", "comparing " + ", ".join(labels + [group.label for group in groups]))

    def _read_detail(self, wanted) -> None:
        """The plots were zoomed over compared runs read as views: read their visible steps finer (off the GUI
        thread) and give them to the plots."""
        drawing, ranges = wanted
        runs = [(i, self._singles[i]) for i, _first, _last in ranges]
        if any(run.view is None for _i, run in runs):
            return

        def refine(results) -> None:
            self.plots.refine_overlays(drawing, [(i, curves) for (i, _run), (_same, curves) in zip(runs, results)])

        self.runs.load_detail([(run, first, last) for (_i, run), (_, first, last) in zip(runs, ranges)], refine)

    def show(self, run: LoadedRun) -> None:
        """Bring a recorded run back: its curves, compile report and (if its checkpoint exists) its model."""
        if self.training():
            self.feedback.show("warning", "A run is in progress: open the recorded run when it has ended.")
            return
        record = run.record
        self.follower.stop()
        self.feedback.banner.hide()  # an earlier run's failure is not this run's
        self.state.shown_run, self.state.compared = record.id, ()
        self.plots.set_overlays([])
        self.plots.set_group_overlays([])
        self.plots.show_curves(run.curves, run.compile_seconds, record.config)
        self.plots.add_events([e for e in run.panel_events
                               if isinstance(e, (CompileEvent, SystemSample, RankTimes, Alert))])
        self.compile_panel.clear()
        self.compile_panel.add_events(list(run.panel_events))
        self.profile.clear()
        self.profile.add_events(list(run.panel_events))
        self.model.clear()
        self.model.add_events(list(run.panel_events))
        self.model.redraw()
        self.plots.set_run_name(run_name(record.id))
        self.plots.redraw()
        self._show_parent_of(record.id)
        self.feedback.busy(f"Run #{record.id} ({record.status})")
        if record.status == "running":  # training in another process: drawn on as it records
            started = next((e for e in run.panel_events if isinstance(e, RunStarted)), None)
            self.plots.keep_growing(started.total_steps if started is not None else None)
            self.follower.follow(record.id, run.cursor)
        rate = run.curves.samples_per_s
        self.show_speed(f"{rate:,.0f} samples/s" if rate else "")
        if record.checkpoint and Path(record.checkpoint).is_file():
            # Never trusted because of the history row: whatever checkpoint sits there now may name another file.
            self.checkpoints.load(record.checkpoint, f"run #{record.id}")
        else:
            self.feedback.note("warning", f"run #{record.id} has no checkpoint on disk: its curves only")

    def _followed(self, events: list[Event]) -> None:
        """New events of the run on show, recorded by the process that trains it: drawn as a live run's are."""
        if self.training() or self.state.shown_run != self.follower.run_id:
            self.follower.stop()
            return
        self.plots.add_events(events)
        for panel in (self.compile_panel, self.profile, self.model):
            panel.add_events(events)

    def deleted(self, records: list) -> None:
        """Runs were deleted from the history: whatever shows one of them lets it go — the plots and the panels
        of the run on show, the runs overlaid, the model Predict uses if it was one of theirs."""
        ids = {record.id for record in records}
        if self.state.compared and ids & set(self.state.compared):
            self.plots.set_overlays([])
            self.plots.set_group_overlays([])
            self.state.compared = ()
        if self.state.shown_run in ids and not self.training():
            self.follower.stop()
            self.plots.reset(f"{run_name(self.state.shown_run)} was deleted (Undo in the Runs dock brings it back)")
            self.plots.set_run_name(None)
            for panel in (self.compile_panel, self.profile, self.model):
                panel.clear()
            self.state.shown_run = None
            self.show_speed("")
            self.feedback.settled()
        checkpoints = {Path(record.checkpoint).resolve() for record in records if record.checkpoint}
        model = self.state.model
        if model is not None and Path(model.info.path).resolve() in checkpoints:
            self.checkpoints.forget("was deleted with its run")


def _origin(record: RunRecord) -> str:
    """' (from TensorBoard)' after an imported run's label: its curves were not measured by Workbench."""
    source = imported_from(record.environment)
    return f" (from {source})" if source else ""
