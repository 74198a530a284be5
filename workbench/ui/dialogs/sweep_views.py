"""What the Sweep dialog shows of a sweep's trials: a table, parallel coordinates and the Pareto front.

The three only draw the `Trial`s they are given (history/sweeps.py); they keep the report's colours and objective
names (history/report/sweep.py), so the window and the HTML page read alike: orange the most accurate trial, blue
the complete ones (or the front), grey the rest.
"""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (QComboBox, QHBoxLayout, QHeaderView, QLabel, QTableWidget, QTableWidgetItem,
                               QVBoxLayout, QWidget)

from ...core.history.naming import run_name
from ...core.history.report.sweep import BEST, FRONT, OTHER, X_OBJECTIVES
from ...core.history.sweeps import Trial, axis_ends, axis_position, best_trial, pareto_front
from ..panels.plots.style import Theme, style_plot

ACCURACY_AXIS = "val accuracy"
FIGURES = {"val_accuracy": "val accuracy", **X_OBJECTIVES}  # the table's measured columns
FRONT_SIZE, DOT_SIZE = 12, 7


def value_text(value) -> str:
    return f"{value:.3g}" if isinstance(value, float) else str(value)


def params_text(params: dict) -> str:
    return ", ".join(f"{name} {value_text(value)}" for name, value in params.items())


def figure_text(trial: Trial, key: str) -> str:
    value = getattr(trial, key)
    if value is None:
        return "—"
    return f"{value:.2%}" if key == "val_accuracy" else f"{value:,.0f}" if key == "samples_per_s" else f"{value:,.1f}"


def trial_colour(trial: Trial, best: Trial | None) -> str:
    return BEST if trial is best else FRONT if trial.state == "complete" else OTHER


class TrialsTable(QTableWidget):
    """Every trial, a column per searched setting and per measured figure, with its run and why it ended."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(0, 0, parent)
        self.setObjectName("sweepTrials")
        self.verticalHeader().hide()
        self.setEditTriggers(QTableWidget.NoEditTriggers)
        self.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeToContents)
        self.horizontalHeader().setStretchLastSection(True)

    def show_trials(self, trials: list[Trial], parameters: list[str]) -> None:
        self.setColumnCount(3 + len(parameters) + len(FIGURES) + 1)
        self.setHorizontalHeaderLabels(["Trial", "State", *parameters, *FIGURES.values(), "Run", "Note"])
        self.setRowCount(len(trials))
        for row, trial in enumerate(trials):
            cells = [str(trial.number), trial.state, *(value_text(trial.params.get(name, "—")) for name in parameters),
                     *(figure_text(trial, key) for key in FIGURES),
                     run_name(trial.run_id) if trial.run_id is not None else "—", trial.note]
            for column, text in enumerate(cells):
                item = QTableWidgetItem(text)
                numeric = column == 0 or 2 + len(parameters) <= column < 2 + len(parameters) + len(FIGURES)
                item.setTextAlignment((Qt.AlignRight if numeric else Qt.AlignLeft) | Qt.AlignVCenter)
                self.setItem(row, column, item)


def parallel_lines(trials: list[Trial], parameters: list[str]) -> tuple[list[tuple[Trial, list[float]]],
                                                                        tuple[float, float]]:
    """Each complete or pruned trial's height on every axis, 0 (bottom) to 1 (top): a setting's by axis_position
    (a log scale for a log-uniform one, the index for a choice), the accuracy's between the lowest and the highest
    reached; and that lowest and highest."""
    done = [t for t in trials if t.state in ("complete", "pruned") and t.val_accuracy is not None]
    if not done:
        return [], (0.0, 0.0)
    low, high = min(t.val_accuracy for t in done), max(t.val_accuracy for t in done)
    return [(t, [axis_position(name, t.params[name]) for name in parameters]
             + [(t.val_accuracy - low) / ((high - low) or 1)]) for t in done], (low, high)


class ParallelView(pg.PlotWidget):
    """An axis per searched setting and one for the accuracy; each complete or pruned trial a line across them.
    `lines`: trial number → its line."""

    def __init__(self, theme: Theme, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("sweepParallel")
        self.theme = theme
        self.lines: dict[int, pg.PlotDataItem] = {}
        item = self.getPlotItem()
        item.setTitle("Settings against validation accuracy (orange: the best; grey: pruned)")
        item.hideAxis("left")
        item.hideButtons()
        item.setMouseEnabled(False, False)
        style_plot(self, theme)

    def show_trials(self, trials: list[Trial], parameters: list[str]) -> None:
        self.clear()
        self.lines = {}
        names = [*parameters, ACCURACY_AXIS]
        self.getPlotItem().getAxis("bottom").setTicks([list(enumerate(names))])
        self.setXRange(-0.5, len(names) - 0.5, padding=0)
        self.setYRange(-0.15, 1.15, padding=0)
        lines, (low, high) = parallel_lines(trials, parameters)
        ends = [axis_ends(name) for name in parameters] + [(f"{low:.1%}", f"{high:.1%}")]
        for x, (bottom, top) in enumerate(ends):
            self.plot([x, x], [0, 1], pen=pg.mkPen(self.theme.foreground))
            for text, y, anchor in ((bottom, 0, (0.5, 0)), (top, 1, (0.5, 1))):
                label = pg.TextItem(text, color=self.theme.foreground, anchor=anchor)
                label.setPos(x, y)
                self.addItem(label)
        best = best_trial(trials)
        for trial, heights in sorted(lines, key=lambda line: line[0] is best):  # the best drawn last, on top
            self.lines[trial.number] = self.plot(list(range(len(names))), heights, pen=pg.mkPen(
                trial_colour(trial, best), width=3 if trial is best else 1.5))


class ParetoView(QWidget):
    """Validation accuracy against the objective chosen (samples/s, compile seconds, peak memory): every trial
    measured on both a dot, the complete trials no other beats on both (pareto_front) bigger and joined. A pruned
    trial's dot is hollow: its accuracy is from the epoch it stopped at, so it is no rival for the front. `front`:
    those trials, by the objective."""

    def __init__(self, theme: Theme, parent: QWidget | None = None):
        super().__init__(parent)
        self.objective = QComboBox()
        self.objective.setObjectName("sweepObjective")
        for key, label in X_OBJECTIVES.items():
            self.objective.addItem(label, key)
        self.objective.currentIndexChanged.connect(lambda _index: self._draw())
        self.plot = pg.PlotWidget()
        item = self.plot.getPlotItem()
        item.setTitle("Validation accuracy against cost")
        item.setLabel("left", "val accuracy %")
        item.getViewBox().setDefaultPadding(0.06)  # the outermost dots whole, not cut by the frame
        self.line = self.plot.plot([], [], pen=pg.mkPen(FRONT, width=1.5, style=Qt.DashLine))
        self.tips: dict[int, str] = {}
        self.dots = pg.ScatterPlotItem(hoverable=True, tip=lambda x, y, data: self.tips.get(data, ""))
        self.plot.addItem(self.dots)
        style_plot(self.plot, theme)
        self.trials: list[Trial] = []
        self.front: list[Trial] = []
        choice = QHBoxLayout()
        choice.addWidget(QLabel("Against"))
        choice.addWidget(self.objective)
        choice.addStretch(1)
        choice.addWidget(QLabel("big dots, joined: the Pareto front of the complete trials · orange: the best · "
                                "hollow: pruned (its accuracy at the epoch it stopped)"))
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(choice)
        layout.addWidget(self.plot, 1)

    def show_trials(self, trials: list[Trial]) -> None:
        self.trials = trials
        self._draw()

    def _draw(self) -> None:
        key = self.objective.currentData()
        self.plot.getPlotItem().setLabel("bottom", self.objective.currentText())
        measured = [t for t in self.trials if t.val_accuracy is not None and getattr(t, key) is not None]
        self.front = sorted(pareto_front(measured, ("val_accuracy", key)), key=lambda t: getattr(t, key))
        on_front = {t.number for t in self.front}
        best = best_trial(self.trials)
        self.tips = {t.number: f"trial {t.number} ({t.state}): {params_text(t.params)}; val accuracy "
                               f"{figure_text(t, 'val_accuracy')}, {X_OBJECTIVES[key]} {figure_text(t, key)}"
                     for t in measured}
        self.dots.setData([{"pos": (getattr(t, key), 100 * t.val_accuracy), "data": t.number,
                            "size": FRONT_SIZE if t.number in on_front else DOT_SIZE,
                            **({"pen": pg.mkPen(OTHER, width=1.5), "brush": None} if t.state == "pruned" else
                               {"pen": None, "brush": trial_colour(t, best) if t.number in on_front else OTHER})}
                           for t in measured])
        self.line.setData([getattr(t, key) for t in self.front], [100 * t.val_accuracy for t in self.front])
