"""What the window keeps across launches: the form's settings and process count, the x axis, the Runs dock's query
and hidden columns, whether to notify the desktop, the window's geometry and dock layout, and the last run
(reopened at start). Written when a run starts and when the window closes (never over a newer Workbench's
settings); read once the window is built."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QSettings, QTimer
from PySide6.QtWidgets import QMainWindow

from ..core.ground.config import TrainConfig
from ..core.ground.errors import WorkbenchError
from .settings import open_settings, written_by_newer


def restore_window(window: QMainWindow, settings: QSettings) -> None:
    """Into the built window (main_window.MainWindow: its form, plots, Runs dock and docks)."""
    text = settings.value("config")
    if text:
        try:
            window.setup.set_config(TrainConfig.from_json(str(text)))
        except WorkbenchError as exc:
            window.log.add("warning", f"saved settings were not usable ({exc}); using defaults")
    try:
        window.setup.set_processes(int(settings.value("processes", 1) or 1))
    except (TypeError, ValueError):
        pass  # a hand-edited value: keep one process
    from ..core.history.x_axis import AXES  # here, not at the top: a staged window paints before numpy loads

    axis = str(settings.value("x_axis", "") or "")
    if axis in AXES:  # else (none yet, or hand-edited): steps
        window.plots.set_x_axis(axis)
    window.runs.set_query_text(str(settings.value("runs_query", "") or ""))
    window.notifications_action.setChecked(settings.value("desktop_notifications", True, type=bool))
    if settings.contains("runs_hidden_columns"):  # else: none saved yet (the dock's own defaults)
        hidden = str(settings.value("runs_hidden_columns") or "")
        window.runs.set_hidden_columns([title for title in hidden.split(",") if title])
    window.layout().activate()  # else a window not yet shown takes a stale minimum size (measured: 918 px tall)
    window.restore_geometry(settings)
    state = settings.value("windowState")
    if state is not None and window.restoreState(state):
        window.layout_docks.to_size = False  # the user's own layout
    last_run = settings.value("last_run_dir")
    if last_run:
        QTimer.singleShot(0, window, lambda: window.recorded_runs.reopen_last(Path(str(last_run))))


def save_window(window: QMainWindow) -> None:
    """From main_window.MainWindow, unless a newer Workbench wrote the settings."""
    settings = open_settings()
    if written_by_newer(settings):  # the newer Workbench's settings stay theirs (migration wrote ours)
        return
    try:
        settings.setValue("config", window.setup.config().to_json())
    except WorkbenchError:
        pass  # an invalid form is not saved over the last good settings
    settings.setValue("processes", window.setup.processes())
    settings.setValue("x_axis", window.plots.x_axis)
    settings.setValue("runs_query", window.runs.query_text)
    settings.setValue("runs_hidden_columns", ",".join(window.runs.hidden_columns()))  # "": none hidden
    settings.setValue("desktop_notifications", window.notifications_action.isChecked())
    settings.setValue("geometry", window.saveGeometry())
    if window.state.last_run_dir is not None:
        settings.setValue("last_run_dir", str(window.state.last_run_dir))
    settings.setValue("windowState", window.saveState())
    settings.sync()
