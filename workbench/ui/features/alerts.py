"""A run's alerts in the window, beyond the marker on the loss plot and the line in the Log that the plots and the
Log draw themselves: the desktop is told when the user is elsewhere (notify.py), and a click on a marker or a line
leads to the fix the alert names (Alert.panel): the setting in the Setup form, the Model or Compile dock (the layer
or the step it is about), the System plot."""

from __future__ import annotations

from typing import Callable

from PySide6.QtCore import QObject

from ...core.ground.alerts import PANEL_COMPILE, PANEL_MODEL, PANEL_SYSTEM, Alert
from ...core.ground.config import setting_named
from ...core.ground.events import Event, RunFailed, RunFinished
from ..panels.alert_text import SETTING
from .parts import WindowParts
from .training import Training


class Alerts(QObject):
    def __init__(self, parts: WindowParts, training: Training, *,
                 show_compile_steps: Callable[[tuple[int, ...]], None]):
        """`show_compile_steps(steps)`: the Compile dock with those steps' compile events selected."""
        panels = parts.panels
        super().__init__(panels.plots)
        self.notifier, self.feedback, self.setup = parts.notifier, parts.feedback, panels.setup
        self.model, self.plots = panels.layers, panels.plots
        self.show_dock, self.show_compile_steps = parts.focus_dock, show_compile_steps  # a dock in front, focused
        self.plots.alerts.alertClicked.connect(self.go_to_fix)
        self.feedback.log.alertActivated.connect(self.go_to_fix)
        parts.runner.events.connect(self.add_events)
        training.runFinished.connect(self.run_ended)

    def add_events(self, batch: list[Event]) -> None:
        alerts = [event for event in batch if isinstance(event, Alert)]
        if alerts:
            self.notifier.alerts(alerts)

    def run_ended(self, result: RunFinished | RunFailed) -> None:
        self.notifier.run_ended(result)

    def go_to_fix(self, alert: Alert) -> None:
        panel = alert.panel
        if panel.startswith(SETTING):
            self._show_setting(panel.removeprefix(SETTING))
        elif panel == PANEL_MODEL:
            self.show_dock("model")
            self.model.show_alert(alert)
        elif panel == PANEL_COMPILE:
            self.show_compile_steps((alert.step,))
        elif panel == PANEL_SYSTEM:
            self.plots.machine_tabs.setCurrentWidget(self.plots.system_plot)

    def _show_setting(self, name: str) -> None:
        """The setting's field in the Setup form; one the form does not show (the plateau's LR schedule) is said
        with where it is set instead."""
        try:
            declared = setting_named(name)
        except KeyError:  # a setting of another version of Workbench (a recorded run's alert)
            return
        if not declared.form:
            self.feedback.show("info", f"{declared.label} is not in the Setup form: a run takes it from the command "
                                       f"line (workbench train {declared.flag}) or from a --config file.")
            return
        self.show_dock("setup")
        self.setup.show_setting(name)
