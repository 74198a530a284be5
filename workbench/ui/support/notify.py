"""Desktop notifications: a run that needs the user while they are in another window says so there.

`Notifier` decides: nothing while the window is the active one (its Log and markers already say it), nothing when
the user turned notifications off (View → Desktop notifications); otherwise a run's warnings and errors (`alerts`;
an info-level alert stays in the Log) and its end (`run_ended`: finished, stopped or failed, with its best validation
accuracy). How the desktop is told is the backend's: `DesktopBackend` shows a tray message where the desktop has a
system tray, else asks for attention the taskbar's way (QApplication.alert); tests hand in their own."""

from __future__ import annotations

from typing import Callable

from PySide6.QtGui import QAction
from PySide6.QtWidgets import QApplication, QSystemTrayIcon, QWidget

from ...core.ground.alerts import Alert
from ...core.ground.events import RunFailed, RunFinished
from ...core.ground.progress import failure_line

MESSAGE_MS = 10_000  # how long a tray message stays
TRAY_ICONS = {"info": QSystemTrayIcon.Information, "warning": QSystemTrayIcon.Warning,
              "error": QSystemTrayIcon.Critical}

Backend = Callable[[str, str, str], None]  # (title, text, level: "info" | "warning" | "error")


def run_end_message(result: RunFinished | RunFailed) -> tuple[str, str, str]:
    """(title, text, level) of a run's end."""
    if isinstance(result, RunFailed):
        return "Run failed", failure_line(result), "error"
    best = result.results.best_val_accuracy
    accuracy = f"best validation accuracy {best:.2%}" if best is not None else "no epoch was validated"
    state = "stopped" if result.stopped else "finished"
    return f"Run {state}", f"{state.capitalize()} after {result.steps:,} steps · {accuracy}", "info"


def sentence(text: str) -> str:
    """'the loss blew up' → 'The loss blew up.'"""
    return text[:1].upper() + text[1:] + ("" if text.endswith(".") else ".")


def alerts_message(alerts: list[Alert]) -> tuple[str, str, str]:
    """(title, text, level) of the alerts of one batch of events: one alert whole, several by their titles."""
    level = "error" if any(alert.severity == "error" for alert in alerts) else "warning"
    if len(alerts) == 1:
        [alert] = alerts
        return (f"{level.capitalize()} at step {alert.step:,}", f"{sentence(alert.title)} {sentence(alert.advice)}",
                level)
    steps = sorted({alert.step for alert in alerts})
    where = f"step {steps[0]:,}" if len(steps) == 1 else f"steps {steps[0]:,}–{steps[-1]:,}"
    return f"{len(alerts)} alerts at {where}", "\n".join(f"• {sentence(alert.title)}" for alert in alerts), level


class DesktopBackend:
    """A tray message (its icon appears with the first one; clicking either brings the window back), or the
    taskbar's attention where the desktop has no tray."""

    def __init__(self, window: QWidget):
        self.window = window
        self.tray: QSystemTrayIcon | None = None

    def __call__(self, title: str, text: str, level: str) -> None:
        if not QSystemTrayIcon.isSystemTrayAvailable():
            QApplication.alert(self.window)
            return
        if self.tray is None:
            self.tray = QSystemTrayIcon(self.window.windowIcon(), self.window)
            self.tray.setToolTip(self.window.windowTitle())
            self.tray.messageClicked.connect(self._bring_back)
            self.tray.activated.connect(lambda _reason: self._bring_back())
            self.tray.show()
        self.tray.showMessage(title, text, TRAY_ICONS[level], MESSAGE_MS)

    def _bring_back(self) -> None:
        self.window.showNormal()
        self.window.raise_()
        self.window.activateWindow()


class Notifier:
    """Whether and what to tell the desktop (`enabled`: the user's setting)."""

    def __init__(self, window: QWidget, backend: Backend | None = None):
        self.window = window
        self.backend = backend or DesktopBackend(window)
        self.enabled = True

    def alerts(self, alerts: list[Alert]) -> bool:
        """The warnings and errors among a batch's alerts, in one message; True when the desktop was told."""
        told = [alert for alert in alerts if alert.severity != "info"]
        return bool(told) and self.notify(*alerts_message(told))

    def run_ended(self, result: RunFinished | RunFailed) -> bool:
        return self.notify(*run_end_message(result))

    def notify(self, title: str, text: str, level: str) -> bool:
        """Tell the desktop, unless turned off or the window is the active one; True when it was told."""
        if not self.enabled or self.window.isActiveWindow():
            return False
        self.backend(title, text, level)
        return True


def notifications_action(notifier: Notifier, parent: QWidget) -> QAction:
    """View → Desktop notifications: the notifier's switch, on by default (saved with the window's settings)."""
    action = QAction("Desktop notifications", parent)
    action.setObjectName("notificationsAction")
    action.setCheckable(True)
    action.setChecked(notifier.enabled)
    action.setToolTip("Tell the desktop when a run warns, fails or ends while Workbench is not the active window")
    action.toggled.connect(lambda on: setattr(notifier, "enabled", on))
    return action
