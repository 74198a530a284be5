"""The main window: docks, toolbar, menus, status bar — and the wiring between user actions and the worker.

User actions leave this window only as a TrainConfig (Train, Explain) or the stop flag (Stop); what comes back
is core events, handed to each panel. No training logic lives here.
"""

from __future__ import annotations

from pathlib import Path

import torch
from PySide6.QtCore import QSettings, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (QDockWidget, QFileDialog, QHBoxLayout, QLabel, QMainWindow, QMessageBox,
                               QPushButton, QScrollArea, QStyle, QVBoxLayout, QWidget)

from .. import appinfo
from ..core import checkpoint, devices, paths
from ..core.config import TrainConfig
from ..core.curves import differing_settings, run_label
from ..core.errors import WorkbenchError
from ..core.events import Event, RunFailed, RunFinished
from ..core.progress import Progress, failure_line
from .panels.compile import CompilePanel
from .panels.log import LogPanel
from .panels.plots import PlotsPanel
from .panels.predict import PredictPanel
from .panels.runs import LoadedRun, RunsPanel
from .background import run_in_background, wait_for_background
from .panels.setup import SetupPanel
from .worker import WorkerHost

SETTINGS_VERSION = 1


def app_icon():
    from PySide6.QtGui import QIcon

    icon = QIcon(str(appinfo.icon_path()))
    for size in (16, 32, 48, 64, 128, 256):
        icon.addFile(str(appinfo.icon_path(size)))
    return icon


def open_settings() -> QSettings:
    return QSettings(str(paths.config_dir() / "settings.ini"), QSettings.IniFormat)


def written_by_newer(settings: QSettings) -> bool:
    """Settings of a newer Workbench: read what still makes sense, never write over them."""
    return int(settings.value("settings_version", 0) or 0) > SETTINGS_VERSION


def migrate_settings(settings: QSettings) -> None:
    """Bring settings written by an older Workbench up to SETTINGS_VERSION (none older exists yet)."""
    if not written_by_newer(settings):
        settings.setValue("settings_version", SETTINGS_VERSION)


class Banner(QWidget):
    """A dismissible message strip above the plots: run failures and file errors show here, not as tracebacks."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.label = QLabel()
        self.label.setObjectName("bannerText")
        self.label.setWordWrap(True)
        self.label.setTextInteractionFlags(Qt.TextSelectableByMouse)
        close = QPushButton("✕")
        close.setFlat(True)
        close.setFixedWidth(28)
        close.clicked.connect(self.hide)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(8, 4, 8, 4)
        layout.addWidget(self.label, 1)
        layout.addWidget(close)
        self.setAutoFillBackground(True)
        self.hide()

    def show_message(self, level: str, text: str) -> None:
        colour = {"error": "#fde7e9", "warning": "#fff4ce", "info": "#e7f1fd"}[level]
        self.setStyleSheet(f"background: {colour}; border-radius: 4px;")
        self.label.setText(text)
        self.show()


class MainWindow(QMainWindow):
    runFinished = Signal(object)  # for tests and scripts: the terminal event of each run
    explainFinished = Signal(object)
    reportFinished = Signal(object)  # (html path, json path), or the exception that stopped the report
    exportFinished = Signal(object)  # the checkpoint path written, or the exception that stopped the export

    def __init__(self, runs_dir: Path | None = None, db: Path | None = None, *, prestart: bool = True):
        super().__init__()
        self.setWindowTitle(appinfo.DISPLAY_NAME)
        self.setWindowIcon(app_icon())
        self.setObjectName("mainWindow")
        self.progress = Progress()
        self.checkpoint: checkpoint.Checkpoint | None = None
        self.last_run_dir: Path | None = None
        self.stopping = False  # Stop was pressed: say so until the run has ended
        settings = open_settings()
        migrate_settings(settings)
        in_process = str(settings.value("in_process", "false")).lower() == "true"  # before a spare is started
        self.host = WorkerHost(self, runs_dir=runs_dir, db=db, in_process=in_process, prestart=prestart)
        self.host.events.connect(self.on_events)
        self.host.runFinished.connect(self.on_run_finished)
        self.host.explained.connect(self.on_explained)
        self.host.notice.connect(self._log_warning)

        self.plots = PlotsPanel()
        self.banner = Banner()
        central = QWidget()
        layout = QVBoxLayout(central)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.banner)
        layout.addWidget(self.plots, 1)
        self.setCentralWidget(central)

        self.setup = SetupPanel()
        self.setup.changed.connect(self._update_actions)
        self.setup.runnerChanged.connect(self.host.set_in_process)
        self.setup.processesChanged.connect(self._set_processes)
        self.compile_panel = CompilePanel()
        self.compile_panel.explainRequested.connect(self.explain)
        self.predict = PredictPanel()
        self.log = LogPanel()
        self.runs = RunsPanel(db)
        self.runs.compareRequested.connect(self.compare_runs)
        self.runs.table.selectionModel().selectionChanged.connect(lambda *_: self._update_actions())
        self.runs.openRequested.connect(self.show_run)
        scroll = QScrollArea()
        scroll.setWidget(self.setup)
        scroll.setWidgetResizable(True)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
        scroll.setMinimumWidth(330)
        self.docks = {
            "setup": self._dock("Setup", scroll, Qt.LeftDockWidgetArea),
            "compile": self._dock("Compile", self.compile_panel, Qt.RightDockWidgetArea),
            "predict": self._dock("Predict", self.predict, Qt.RightDockWidgetArea),
            "log": self._dock("Log", self.log, Qt.BottomDockWidgetArea),
            "runs": self._dock("Runs", self.runs, Qt.BottomDockWidgetArea),
        }
        self.tabifyDockWidget(self.docks["log"], self.docks["runs"])
        self.docks["log"].raise_()
        self.tabifyDockWidget(self.docks["compile"], self.docks["predict"])
        self.docks["compile"].raise_()
        self.resizeDocks([self.docks["setup"], self.docks["compile"]], [360, 420], Qt.Horizontal)
        self.resizeDocks([self.docks["log"]], [130], Qt.Vertical)

        self._build_actions()
        self._build_status_bar()
        self._restore_settings(settings, in_process)
        self._update_actions()
        self.runs.refresh()
        self.log.add("info", f"Workbench ready on {self.device_label.text()} · torch {torch.__version__}")

    # -- construction -------------------------------------------------------------------------------------------
    def _dock(self, title: str, widget: QWidget, area) -> QDockWidget:
        dock = QDockWidget(title, self)
        dock.setObjectName(f"{title.lower()}Dock")
        dock.setWidget(widget)
        self.addDockWidget(area, dock)
        return dock

    def _action(self, text: str, slot, shortcut=None, icon=None, name: str | None = None) -> QAction:
        action = QAction(text, self)
        if shortcut is not None:
            action.setShortcut(QKeySequence(shortcut))
            action.setToolTip(f"{text} ({QKeySequence(shortcut).toString(QKeySequence.NativeText)})")
        if icon is not None:
            action.setIcon(self.style().standardIcon(icon))
        if name:
            action.setObjectName(name)
        action.triggered.connect(slot)
        self.addAction(action)  # shortcuts work wherever the focus is
        return action

    def _build_actions(self) -> None:
        self.train_action = self._action("Train", self.train, "Ctrl+R", QStyle.SP_MediaPlay, "trainAction")
        self.stop_action = self._action("Stop", self.stop, Qt.Key_Escape, QStyle.SP_MediaStop, "stopAction")
        self.explain_action = self._action("Explain compile", self.explain, "Ctrl+E", None, "explainAction")
        self.open_action = self._action("Open checkpoint…", self.choose_checkpoint, QKeySequence.Open,
                                        QStyle.SP_DialogOpenButton, "openCheckpointAction")
        self.export_action = self._action("Export checkpoint…", self.choose_export_checkpoint, QKeySequence.Save,
                                          QStyle.SP_DialogSaveButton, "exportCheckpointAction")
        self.report_action = self._action("Export report…", self.choose_export_report, "Ctrl+Shift+E", None,
                                          "exportReportAction")
        quit_action = self._action("Quit", self.close, QKeySequence.Quit)
        about = self._action("About Workbench", self.about)

        toolbar = self.addToolBar("Run")
        toolbar.setObjectName("runToolbar")
        toolbar.setToolButtonStyle(Qt.ToolButtonTextBesideIcon)
        for action in (self.train_action, self.stop_action):
            toolbar.addAction(action)
        toolbar.widgetForAction(self.train_action).setObjectName("trainButton")
        toolbar.widgetForAction(self.stop_action).setObjectName("stopButton")
        toolbar.addSeparator()
        toolbar.addAction(self.open_action)
        toolbar.addAction(self.export_action)

        menu = self.menuBar()
        file_menu = menu.addMenu("&File")
        for action in (self.open_action, self.export_action, self.report_action):
            file_menu.addAction(action)
        file_menu.addSeparator()
        file_menu.addAction(quit_action)
        run_menu = menu.addMenu("&Run")
        for action in (self.train_action, self.stop_action, self.explain_action):
            run_menu.addAction(action)
        view_menu = menu.addMenu("&View")
        for dock in self.docks.values():
            view_menu.addAction(dock.toggleViewAction())
        menu.addMenu("&Help").addAction(about)

    def _build_status_bar(self) -> None:
        device = devices.resolve_device("auto")
        self.device_label = QLabel(devices.device_name(device))
        self.version_label = QLabel(f"torch {torch.__version__}")
        self.state_label = QLabel("Idle")
        self.state_label.setObjectName("statusState")
        self.speed_label = QLabel("")
        self.speed_label.setObjectName("statusSpeed")
        bar = self.statusBar()
        bar.addWidget(self.state_label, 1)
        for widget in (self.speed_label, self.device_label, self.version_label):
            bar.addPermanentWidget(widget)

    # -- actions ------------------------------------------------------------------------------------------------
    def _config_for(self, action: str) -> TrainConfig | None:
        """The form's config, or None with the reason shown (the actions are disabled then, but shortcuts race)."""
        try:
            return self.setup.config()
        except WorkbenchError as exc:
            self.banner.show_message("error", f"Cannot {action}: {exc}")
            return None

    def train(self) -> bool:
        """Start a run with the form's settings; False when it was refused (the banner says why, if it can)."""
        config = self._config_for("start")
        if config is None or not self.host.train(config):
            return False
        self.stopping = False
        self.banner.hide()
        self._save_settings()
        self.state_label.setText("Starting…")
        self._update_actions()
        return True

    def stop(self) -> None:
        if self.host.training:
            self.host.stop()
            self.stopping = True
            self.state_label.setText(self._state_text())

    def explain(self) -> None:
        config = self._config_for("explain")
        if config is None:
            return
        if self.host.explain(config):
            self.state_label.setText("Explaining…")
            self.compile_panel.clear()
            self.docks["compile"].raise_()
            self._update_actions()

    # -- worker results ---------------------------------------------------------------------------------------
    def _state_text(self) -> str:
        return "Stopping after this step…" if self.stopping else self.progress.describe()

    def _log_warning(self, text: str) -> None:
        self.log.add("warning", text)

    def on_events(self, batch: list[Event]) -> None:
        for event in batch:
            self.progress.update(event)
        self.plots.add_events(batch)
        self.compile_panel.add_events(batch)
        self.log.add_events(batch)
        self.state_label.setText(self._state_text())
        speed = self.progress.samples_per_s  # 0 from RunStarted until the first steady step
        self.speed_label.setText(f"{speed:,.0f} samples/s" if speed else "")

    def on_run_finished(self, result) -> None:
        """The terminal event itself already came, last in its batch, through on_events."""
        self.stopping = False
        self.state_label.setText(self.progress.describe())
        if isinstance(result, RunFailed):
            self.banner.show_message("error", failure_line(result, hint_separator="\n"))
        elif isinstance(result, RunFinished):
            path = result.metrics.get("checkpoint")
            if path:  # this run's own model file was imported to train it: trusted already
                self.last_run_dir = Path(path).parent
                self.load_checkpoint(path, f"last run ({Path(path).parent.name})", trust_model_code=True)
            if result.stopped:
                self.banner.show_message("info", f"Stopped after {result.steps} steps; what was trained is kept."
                                         if result.steps else "Stopped before training began; nothing was trained.")
        self._update_actions()
        self.runs.refresh()
        self.runFinished.emit(result)

    def on_explained(self, report) -> None:
        if isinstance(report, RunFailed):
            self.banner.show_message("error", f"Explain failed: {report.message}")
            self.log.add("error", f"explain failed: {report.message}")
        else:
            self.compile_panel.show_report(report)
            self.log.add("warning" if report.graph_break_count else "info",
                         f"explain: {report.graph_count} graph(s), {report.graph_break_count} graph break(s)")
        self.state_label.setText(self.progress.describe())
        self._update_actions()
        self.explainFinished.emit(report)

    def _set_processes(self, count: int) -> None:
        self.host.processes = count

    # -- run history ------------------------------------------------------------------------------------------
    def compare_runs(self, runs: list[LoadedRun]) -> None:
        keys = differing_settings([run.record.config for run in runs])
        labels = [run_label(run.record.id, run.record.config, keys) for run in runs]
        self.plots.set_overlays([(label, run.curves) for label, run in zip(labels, runs)])
        if runs:
            self.log.add("info", "comparing " + ", ".join(labels))

    def show_run(self, run: LoadedRun) -> None:
        """Bring a recorded run back: its curves, compile report and (if its checkpoint exists) its model."""
        if self.host.busy:
            self.banner.show_message("warning", "A run is in progress: open the recorded run when it has ended.")
            return
        record = run.record
        self.plots.set_overlays([])
        self.plots.show_curves(run.curves, run.compile_seconds)
        self.compile_panel.clear()
        self.compile_panel.add_events(list(run.compile_events))
        self.plots.redraw()
        self.state_label.setText(f"Run #{record.id} ({record.status})")
        if record.checkpoint and Path(record.checkpoint).is_file():
            # A run from this user's own history: its model file was imported to train it in the first place.
            self.load_checkpoint(record.checkpoint, f"run #{record.id}", trust_model_code=True)
        else:
            self.log.add("warning", f"run #{record.id} has no checkpoint on disk: its curves only")

    # -- checkpoints and exports --------------------------------------------------------------------------------
    def choose_checkpoint(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open checkpoint", str(paths.runs_dir()),
                                              "Workbench checkpoints (*.pt);;All files (*)")
        if path:
            self.load_checkpoint(path, Path(path).name)

    def load_checkpoint(self, path: str | Path, description: str, *, trust_model_code: bool = False) -> bool:
        try:
            ckpt = checkpoint.load(path, trust_model_code=trust_model_code)
            model = ckpt.build_model("cpu")  # eager copy: safe to call on the GUI thread
        except checkpoint.UntrustedModelCode as exc:
            if self.confirm_model_code(exc.model_spec):
                return self.load_checkpoint(path, description, trust_model_code=True)
            self.banner.show_message("warning", f"Checkpoint not opened: {exc}")
            return False
        except WorkbenchError as exc:
            self.banner.show_message("error", f"Cannot open checkpoint: {exc}")
            self.log.add("error", f"cannot open checkpoint: {exc}")
            return False
        self.checkpoint = ckpt
        accuracy = ckpt.metrics.get("val_accuracy")
        self.predict.set_model(model, ckpt.classes, description + (
            f" · val accuracy {accuracy:.1%}" if isinstance(accuracy, float) else ""))
        self.log.add("info", f"model for prediction: {description}")
        self._update_actions()
        return True

    def confirm_model_code(self, model_spec: str) -> bool:
        file = model_spec.rpartition(":")[0]
        answer = QMessageBox.question(
            self, "Import model code?",
            f"This checkpoint's network is defined in\n{file}\n\nOpening it imports and runs that file. "
            f"Continue only if you trust it.", QMessageBox.Yes | QMessageBox.No, QMessageBox.No)
        return answer == QMessageBox.Yes

    def choose_export_checkpoint(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Export checkpoint", "checkpoint.pt", "Checkpoints (*.pt)")
        if path:
            self.export_checkpoint(path)

    def export_checkpoint(self, path: str | Path) -> bool:
        """Write the loaded checkpoint to `path` on a pool thread (torch.save can take a while for a big model);
        exportFinished says how it went. False: there is no checkpoint to export."""
        if self.checkpoint is None:
            return False
        ckpt = self.checkpoint
        self._file_task("Exporting the checkpoint…", lambda: checkpoint.export(ckpt, path),
                        lambda written: f"checkpoint exported to {written} (+ .safetensors)",
                        f"Could not export the checkpoint to {path}", self.exportFinished)
        return True

    def _file_task(self, doing: str, job, done_text, failed_text: str, finished: Signal) -> None:
        """A slow file job (export, report) on a pool thread: the status bar says it is under way, then the log
        says what was written or the banner why not; `finished` carries the result or the exception."""
        def done(result) -> None:
            self.state_label.setText(self.progress.describe())
            if isinstance(result, Exception):
                hint = f" — {result.hint}" if isinstance(result, WorkbenchError) and result.hint else ""
                self.banner.show_message("error", f"{failed_text}: {result}{hint}")
            else:
                self.log.add("info", done_text(result))
            finished.emit(result)

        self.state_label.setText(doing)
        run_in_background(job, done)

    def report_run_ids(self) -> list[int]:
        """The runs selected in the Runs dock, else the run trained last in this window."""
        ids = self.runs.selected_ids()
        if not ids and self.last_run_dir is not None and self.runs.store is not None:
            last = self.runs.store.id_for_out_dir(self.last_run_dir)
            ids = [last] if last is not None else []
        return ids

    def choose_export_report(self) -> None:
        ids = self.report_run_ids()
        if not ids:
            self.banner.show_message("info", "Select one or more runs in the Runs dock to report on.")
            return
        name = f"report-{'-'.join(map(str, ids))}.html"
        path, _ = QFileDialog.getSaveFileName(self, "Export report", name, "HTML report (*.html)")
        if path:
            self.export_report(path, ids)

    def export_report(self, path: str | Path, run_ids: list[int]) -> bool:
        """A self-contained HTML report of the runs (and its JSON twin), written atomically by the core on a
        pool thread (it re-evaluates each checkpoint); reportFinished says how it went. False: nothing to do."""
        from ..core.report import write_report
        from ..core.runs import RunStore

        if not run_ids:
            return False
        db = self.runs.db

        def write():
            with RunStore(db, recover=False) as store:
                return write_report(store, run_ids, Path(path))

        self._file_task("Writing the report…", write, lambda paths: f"report written to {paths[0]} (+ {paths[1].name})",
                        "Could not write the report", self.reportFinished)
        return True

    def about_text(self) -> str:
        import platform

        from PySide6 import __version__ as pyside_version
        from PySide6.QtCore import qVersion

        cuda = torch.version.cuda or "none"
        device = self.device_label.text()
        return (f"<h3>{appinfo.DISPLAY_NAME} {appinfo.version()}</h3><p>{appinfo.summary()}</p>"
                f"<table><tr><td>torch</td><td>{torch.__version__}</td></tr>"
                f"<tr><td>CUDA</td><td>{cuda}{'' if torch.cuda.is_available() else ' (no CUDA device here)'}"
                f"</td></tr><tr><td>Qt</td><td>{qVersion()} (PySide6 {pyside_version})</td></tr>"
                f"<tr><td>Python</td><td>{platform.python_version()}</td></tr>"
                f"<tr><td>Device</td><td>{device}</td></tr></table>")

    def about(self) -> None:
        box = QMessageBox(QMessageBox.NoIcon, f"About {appinfo.DISPLAY_NAME}", self.about_text(),
                          QMessageBox.Ok, self)
        box.setObjectName("aboutDialog")
        box.setAttribute(Qt.WA_DeleteOnClose)
        box.setIconPixmap(self.windowIcon().pixmap(64, 64))
        box.open()

    # -- state ----------------------------------------------------------------------------------------------------
    def _update_actions(self) -> None:
        busy = self.host.busy
        valid = self.setup.valid_config() is not None
        self.train_action.setEnabled(not busy and valid)
        self.stop_action.setEnabled(self.host.training)
        self.explain_action.setEnabled(not busy and valid)
        self.compile_panel.explain_button.setEnabled(not busy and valid)
        self.setup.setEnabled(not busy)
        has_model = self.checkpoint is not None
        self.export_action.setEnabled(has_model and not busy)
        self.report_action.setEnabled(not busy and (self.last_run_dir is not None or bool(self.runs.selected_ids())))

    def _restore_settings(self, settings: QSettings, in_process: bool) -> None:
        self.setup.set_in_process(in_process)
        text = settings.value("config")
        if text:
            try:
                self.setup.set_config(TrainConfig.from_json(str(text)))
            except WorkbenchError as exc:
                self.log.add("warning", f"saved settings were not usable ({exc}); using defaults")
        geometry = settings.value("geometry")
        if geometry is not None:
            self.restoreGeometry(geometry)
        state = settings.value("windowState")
        if state is not None:
            self.restoreState(state)

    def _save_settings(self) -> None:
        settings = open_settings()
        if written_by_newer(settings):  # the newer Workbench's settings stay theirs (migration wrote ours)
            return
        try:
            settings.setValue("config", self.setup.config().to_json())
        except WorkbenchError:
            pass  # an invalid form is not saved over the last good settings
        settings.setValue("in_process", self.setup.in_process())
        settings.setValue("geometry", self.saveGeometry())
        settings.setValue("windowState", self.saveState())
        settings.sync()

    def closeEvent(self, event) -> None:
        """Closing during a run stops it cleanly first (the checkpoint of what was trained is still written)."""
        self._save_settings()
        if self.host.busy:
            self.hide()  # the run stops within a step (longer while compiling); no frozen window meanwhile
        if not self.host.shutdown():
            QTimer.singleShot(0, self.close)  # still compiling: try again, never kill the thread mid-step
            event.ignore()
            return
        wait_for_background()  # a report being written finishes its atomic write
        self.runs.close_store()
        event.accept()
