"""The plots' comparing half: finished runs overlaid on the live one (set_overlays), seed groups as a mean with a
band (set_group_overlays), and a continued run's parent drawn faded before its continuation (show_parent).

A mixin of PlotsPanel (plots.py), which owns the plots, the smoothing weight, the x axis and the ranges this draws
on. Long runs are drawn about STEPS_AT_ONCE steps a turn of the event loop with the plots' painting off until the
last, each curve thinned once (items.thin_plot), so comparing 20 runs of 20,000 steps never holds the window for more
than ~100 ms at a time (scripts/history_scale.py measures it).

A compared run may come as a view of its steps (a level's rows, Curves.stride > 1: runs/loading.py). When the user
zooms, and the zoom has settled for DETAIL_MS, `detailWanted` asks for the visible steps of each such run again, and
`refine_overlays` puts the finer rows in its curves' items in place: the legend, colours and ranges stay.
"""

from __future__ import annotations

import math
from typing import Callable, Sequence

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QTimer

from ....core.history.curves import Curves, smooth
from ....core.history.groups import band
from ....core.history.x_axis import Clock, clock_of, mean_x, x_axis
from .bands import check_spread, draw_band
from .items import set_thinned, thin_plot
from .style import per_epoch

# Tableau 10: distinct hues that stay apart on a white and on a dark background.
PALETTE = ("#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f",
           "#bab0ac")
# Steps of compared runs (or seed groups' members) drawn per turn of the event loop, at least one run or group a
# turn: the window stays responsive (20 runs of 20,000 steps drawn in one go held it for 1.4 s), short runs at once.
# A run read whole (a seed group's member) of 20,000 steps is drawn alone in a turn (~15 ms), views of 2,000 rows four
# a turn: 20 compared runs of 20,000 steps in 399 ms, the longest turn 36 ms (scripts/history_scale.py, medians of 5).
STEPS_AT_ONCE = 40_000
# What making a run's items and legend entries costs, in steps drawn: 20 runs read as views of 2,000 rows drawn in
# one turn held the window for 187 ms (~9 ms a run, whatever its length).
ITEMS_COST = 6_000
DETAIL_MS = 150  # a zoom settles this long before compared runs' visible steps are read finer
DIMMED = 0.3  # opacity of the current run while finished runs are overlaid on it
PARENT_OPACITY = 0.5  # a continued run's parent's curves, before the continuation's own


def _overlay_name(label: str) -> str:
    """'#3' of '#3 inductor · bf16': what a compile marker says when runs are compared."""
    return label.split(" ", 1)[0]


def _memory_name(curves: Curves) -> str | None:
    """The memory curve a compared run shows: the CUDA peak where there is one (None: no memory recorded)."""
    if not curves.memory:
        return None
    return "peak" if "peak" in curves.memory else sorted(curves.memory)[0]


class ComparedRuns:
    """PlotsPanel's methods for the runs drawn beside the live one (see the module's docstring)."""

    def _recorded(self) -> list[Curves]:
        """Every recorded run drawn beside the current one: compared, in seed groups, a continued run's parent."""
        return [*(curves for _label, curves in self._overlaid), *(c for _label, group in self._grouped for c in group),
                *([self._parent[1]] if self._parent else [])]

    # -- comparing finished runs ------------------------------------------------------------------------------
    @property
    def _comparing(self) -> bool:
        return bool(self._overlaid or self._grouped)

    def set_overlays(self, runs: Sequence[tuple[str, Curves]]) -> None:
        """Overlay finished runs (label, curves), each in its own colour, the current run dimmed under them; an
        empty list removes them (seed groups, set_group_overlays, stay) and restores the current run if none is
        left."""
        self._overlaid = list(runs)
        self._details = {}
        self._draw_compared()

    # -- reading compared runs finer where zoomed ---------------------------------------------------------------
    def _watch_zoom(self) -> None:
        self.detail_timer = QTimer(self)
        self.detail_timer.setSingleShot(True)
        self.detail_timer.setInterval(DETAIL_MS)
        self.detail_timer.timeout.connect(self._want_detail)
        self.steps.sigXRangeChanged.connect(lambda *_: self._viewed())

    def _viewed(self) -> None:
        if any(curves.stride > 1 or i in self._details for i, (_label, curves) in enumerate(self._overlaid)):
            self.detail_timer.start()

    def _want_detail(self) -> None:
        """Ask for the visible steps of each compared run read as a view (`detailWanted`: the drawing it is for,
        and (run's place, first step, last step) for each), once per range; a run seen whole needs none."""
        low, high = self.steps.viewRange()[0]
        wanted = []
        for i, (_label, curves) in enumerate(self._overlaid):
            if curves.stride <= 1 and i not in self._details or not len(curves.step):
                continue
            x = clock_of(curves).x(self.x_axis, curves.step)
            inside = np.flatnonzero((x >= low) & (x <= high))
            if not len(inside):
                continue
            first = float(curves.step[max(inside[0] - 1, 0)])
            last = float(curves.step[min(inside[-1] + 1, len(curves.step) - 1)])
            if first <= curves.step[0] and last >= curves.step[-1] or self._details.get(i) == (first, last):
                continue
            self._details[i] = (first, last)
            wanted.append((i, first, last))
        if wanted:
            self.detailWanted.emit((self._drawing, wanted))

    def refine_overlays(self, drawing: int, refined: Sequence[tuple[int, Curves]]) -> None:
        """Compared runs (by their place in set_overlays) with curves read finer where zoomed: their items take the
        new points in place. An answer for an earlier comparison is dropped."""
        if drawing != self._drawing:
            return
        for i, curves in refined:
            label = self._overlaid[i][0]
            self._overlaid[i] = (label, curves)
            clock = clock_of(curves)
            for item, (_plot, steps, values, _name, _style) in zip(self._run_items[i],
                                                                  self._run_series(label, curves)):
                set_thinned(item, *clock.place(self.x_axis, steps, values))

    def set_group_overlays(self, groups: Sequence[tuple[str, Sequence[Curves]]], spread: str = "minmax") -> None:
        """Overlay seed groups (label, the members' curves), each as one mean line with a translucent band on every
        step plot, in the overlay colours after the single runs'; `spread`: "minmax" shades from the
        lowest member to the highest, "std" one standard deviation either side of the mean. An empty list removes
        them."""
        check_spread(spread)
        self._grouped, self._spread = [(label, list(members)) for label, members in groups], spread
        self._draw_compared()

    def _draw_compared(self) -> None:
        """(Re)draw the compared runs and seed groups: on the x axis, smoothed with the slider's weight."""
        for plot, item in (*self.overlays, *((plot, item) for plot, drawn in self.group_bands
                                             for item in drawn.band_items)):
            plot.removeItem(item)
        for marker in self.overlay_markers:
            self.throughput_plot.removeItem(marker)
        self.overlays.clear()
        self.group_bands.clear()
        self.overlay_markers.clear()
        self._run_items = {}
        self._drawing += 1
        for plot in self.plots:
            plot.setUpdatesEnabled(False)
        pieces = [(len(curves.step), lambda i=i, label=label, curves=curves: self._draw_run(i, label, curves))
                  for i, (label, curves) in enumerate(self._overlaid)]
        pieces += [(sum(len(c.step) for c in members),
                    lambda colour=PALETTE[i % len(PALETTE)], label=label, members=members:
                    self._draw_group(colour, label, members))
                   for i, (label, members) in enumerate(self._grouped, len(self._overlaid))]
        self._draw_pieces(self._drawing, pieces)

    def _draw_pieces(self, drawing: int, pieces: list[tuple[int, Callable[[], None]]]) -> None:
        """Draw the compared runs and groups about STEPS_AT_ONCE steps per turn of the event loop, with the plots'
        painting off until the last (a repaint of everything drawn so far after each turn was most of the stall),
        then range and label the plots, and paint them a turn later; a newer comparison stops an older one."""
        if drawing != self._drawing:
            return
        steps = 0
        while pieces and (steps == 0 or steps + pieces[0][0] + ITEMS_COST <= STEPS_AT_ONCE):
            size, piece = pieces.pop(0)
            piece()
            steps += size + ITEMS_COST
        if pieces:
            QTimer.singleShot(1, self, lambda: self._draw_pieces(drawing, pieces))
            return
        self._range_steps(fresh=True)
        self._dim(self._comparing)
        self._show_hint(self.hint)
        self._label_own()
        self._label_x()
        QTimer.singleShot(1, self, lambda: self._show_drawn(drawing))

    def _show_drawn(self, drawing: int, shown: int = 0) -> None:
        """Paint the plots again, a turn after the last piece and the ranges, one plot a turn: each plot's first
        paint of 20 compared runs is ~40 ms, and the four in one turn held the window for ~300 ms."""
        if drawing != self._drawing:
            return
        self.plots[shown].setUpdatesEnabled(True)
        if shown + 1 < len(self.plots):
            QTimer.singleShot(1, self, lambda: self._show_drawn(drawing, shown + 1))
        else:
            self._describe_soon(*self.plots)

    def _draw_run(self, i: int, label: str, curves: Curves) -> None:
        """One compared run: its curves (_run_series) and its compile marker."""
        colour = PALETTE[i % len(PALETTE)]
        pen = pg.mkPen(colour, width=1)
        clock = clock_of(curves)
        self._run_items[i] = [self._overlay(plot, clock, steps, values, pen, name, **style)
                              for plot, steps, values, name, style in self._run_series(label, curves, colour)]
        first = clock.x(self.x_axis, curves.step[:1])
        if curves.compile_seconds is not None and len(first) and math.isfinite(first[0]):
            self.overlay_markers.append(self._compile_line(
                f"{_overlay_name(label)} compile {curves.compile_seconds:.1f} s", colour, float(first[0])))

    def _run_series(self, label: str, curves: Curves, colour: str = "") -> list[tuple]:
        """What a compared run draws, as (plot, steps, values, name, style): its smoothed loss, validation
        accuracy, throughput and a memory curve; named '(no wall time)' where it has no x on the axis."""
        if not clock_of(curves).knows(self.x_axis):
            label = f"{label} (no {x_axis(self.x_axis).name})"
        series = [(self.loss_plot, curves.step, smooth(curves.loss, self.weight, curves.stride), label, {})]
        if len(curves.val_accuracy):
            series.append((self.accuracy_plot, curves.val_step, curves.val_accuracy, f"{label} (validation)",
                           dict(prepare=per_epoch, symbol="o", symbolSize=6, symbolBrush=colour, symbolPen=None)))
        series.append((self.throughput_plot, curves.throughput_step, curves.throughput, label, {}))
        name = _memory_name(curves)
        if name is not None:
            series.append((self.memory_plot, curves.step, curves.memory[name], f"{label} ({name})", {}))
        return series

    def _overlay(self, plot: pg.PlotWidget, clock: Clock, steps: np.ndarray, values: np.ndarray, pen, label: str,
                 **style) -> pg.PlotDataItem:
        item = thin_plot(plot, *clock.place(self.x_axis, steps, values), pen=pen, name=label, **style)
        self.overlays.append((plot, item))
        return item

    def _draw_group(self, colour: str, label: str, members: list[Curves]) -> None:
        """One seed group on every step plot: the mean of its members' curves (loss and accuracy smoothed, as a
        compared run's) on the steps they share (history.groups.band), with its band (bands.py); memory is the
        curve a compared run shows. On a time axis a step is at the members' mean time for it; a group whose members
        have no x on the axis is named so, as a compared run is."""
        clocks = [clock_of(curves) for curves in members]
        memory = _memory_name(members[0])
        for plot, series in ((self.loss_plot, lambda c: (c.step, smooth(c.loss, self.weight))),
                             (self.accuracy_plot, lambda c: (c.step, smooth(c.accuracy, self.weight))),
                             (self.throughput_plot, lambda c: (c.throughput_step, c.throughput)),
                             (self.memory_plot, lambda c: (c.step, c.memory.get(memory, np.full(len(c.step),
                                                                                               np.nan))))):
            spread = band([series(curves) for curves in members])
            if not len(spread.steps):  # no step every member has a value at (accuracy: older runs have none)
                continue
            x = mean_x(clocks, self.x_axis, spread.steps)  # the members share their steps: all placed, or none
            if not np.isfinite(x).all():
                self.overlays.append((plot, plot.plot([], [], pen=pg.mkPen(colour, width=2),
                                                      name=f"{label} (no {x_axis(self.x_axis).name})")))
                continue
            drawn = draw_band(plot, x, spread, self._spread, colour, label)
            self.overlays.append((plot, drawn.mean))
            self.group_bands.append((plot, drawn))

    def _dim(self, dimmed: bool) -> None:
        """The current run fades behind the compared ones, so theirs are the colours that read."""
        opacity = DIMMED if dimmed else 1.0
        for plot, series in self._plot_series():
            for s in series:  # the legend's swatch too: it shows what the plot shows
                s.item.setOpacity(opacity)
                plot.getPlotItem().legend.sample(s.item).setOpacity(opacity)
        if self.compile_marker is not None:
            self._set_marker_opacity(self.compile_marker, opacity)
        self.timeline.set_opacity(opacity)
        self.alerts.set_opacity(opacity)


    # -- a continued run -----------------------------------------------------------------------------------------
    def show_parent(self, label: str, curves: Curves) -> None:
        """A continued run's parent (`label`, its curves), faded before the continuation's steps: its loss and
        accuracy, smoothed, on the same step axis (a continuation's steps go on from its checkpoint's). The next
        run, or a recorded one shown, takes it away. On the time since start the continuation goes on from where
        the parent ended."""
        self._parent = (label, curves)
        end = clock_of(curves).last("elapsed")
        self.times.shift = end if math.isfinite(end) else 0.0
        self._place_own()
        self._place_markers()
        self._draw_parent()
        self._label_x()
        self._range_steps(fresh=True)
        self._describe_soon(self.loss_plot, self.accuracy_plot)

    def _draw_parent(self) -> None:
        """(Re)draw the parent's curves: with the smoothing's weight and the theme's line colour."""
        for plot, item in self.parent_items:
            plot.removeItem(item)
        self.parent_items.clear()
        if self._parent is None:
            return
        label, curves = self._parent
        clock = clock_of(curves)
        has_accuracy = np.isfinite(curves.accuracy)
        for plot, steps, y in ((self.loss_plot, curves.step, curves.loss),
                               (self.accuracy_plot, curves.step[has_accuracy], curves.accuracy[has_accuracy])):
            x, y = clock.place(self.x_axis, steps, smooth(y, self.weight))
            if len(x):
                item = thin_plot(plot, x, y, pen=pg.mkPen(self.theme.line, width=1), name=f"{label} (continued from)")
                item.setOpacity(PARENT_OPACITY)
                self.parent_items.append((plot, item))
