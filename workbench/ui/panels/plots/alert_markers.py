"""Alerts on the loss plot: a marker at the step each alert fired, coloured by its severity, as the compile
timeline marks what the compiler did (compile_timeline.py). One marker a step, however many alerts share it,
coloured by the gravest; its tooltip says what happened and what to do, and a click on it leads to the fix
(`alertClicked`: the window raises the dock or the setting the alert names)."""

from __future__ import annotations

from collections import defaultdict

import pyqtgraph as pg
from PySide6.QtCore import Signal

from ....core.ground.alerts import SEVERITIES, Alert
from ..alert_text import alert_tip
from ..log import COLOURS
from ..step_markers import StepMarkers

INFO_COLOUR = "#4e79a7"  # the Log leaves info in the palette's text colour; a plot needs one of its own
GLYPHS = {"info": "ℹ", "warning": "⚠", "error": "✖"}
LABEL_HEIGHT = 0.84  # of the plot's height: under the compile timeline's glyphs (0.96) at a step both mark


def severity_colour(severity: str) -> str:
    return COLOURS.get(severity, INFO_COLOUR)


def gravest(alerts: list[Alert]) -> Alert:
    """The alert a shared marker stands for: the gravest, the first of those."""
    return max(alerts, key=lambda alert: SEVERITIES.index(alert.severity))


class AlertMarkers(StepMarkers):
    """The markers on a plot (`lines`: step → its line); `alertClicked(alert)` when one is clicked."""

    alertClicked = Signal(object)

    def __init__(self, plot: pg.PlotWidget):
        super().__init__(plot, height=LABEL_HEIGHT, z=-4)  # over the compile timeline's lines, under the curves
        self.alerts: dict[int, list[Alert]] = defaultdict(list)

    def add(self, alert: Alert) -> None:
        step = alert.step
        alerts = self.alerts[step]
        alerts.append(alert)
        shown = gravest(alerts)
        tip = "\n\n".join(alert_tip(each) for each in sorted(alerts, key=lambda each: each is not shown))
        self.mark(step, severity_colour(shown.severity), GLYPHS[shown.severity], tip)

    def clicked(self, steps: tuple[int, ...]) -> None:
        self.alertClicked.emit(gravest([alert for step in steps for alert in self.alerts[step]]))

    def clear(self) -> None:
        super().clear()
        self.alerts.clear()
