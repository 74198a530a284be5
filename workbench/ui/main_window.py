"""The main window: docks, toolbar, menus, status bar — and the wiring between user actions and the kernels.

This process never imports torch. User actions leave the window as a RunRequest (Train), the stop flag (Stop) or a
kernel job (Explain, open a checkpoint, predict, export, report); what comes back is core events and plain data,
handed to each panel. No training logic lives here.
"""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, NamedTuple

from PySide6.QtCore import QRect, QSettings, Qt, QTimer, QUrl, Signal
from PySide6.QtGui import QAction, QDesktopServices, QGuiApplication, QKeySequence
from PySide6.QtWidgets import (QDockWidget, QHBoxLayout, QInputDialog, QLabel, QMainWindow, QMessageBox,
                               QPushButton, QScrollArea, QStyle, QVBoxLayout, QWidget)

from ..core.ground import appinfo
from ..core.ground.capabilities import Capabilities
from ..core.ground.config import TrainConfig, setup_label
from ..core.ground.consent import ModelConsent
from ..core.ground.errors import WorkbenchError, with_hint
from ..core.ground.events import (CompileEvent, CompileReport, Event, RunFailed, RunFinished, RunStarted,
                                  SystemSample)
from ..core.ground.progress import Progress, failure_line
from ..core.history.curves import differing_settings, run_label, run_name
from ..core.ground.answers import CheckpointInfo, DatasetPreview, EvaluationView, FullgraphCheck, ParityTable, Written
from ..core.run.client import KernelClient
from ..core.run.protocol import NeedsConsent
from ..core.run.service import ServiceClient
from ..core.run.request import Launch, RunRequest, new_run_dir
from .export_dialog import ExportDialog
from .finder_dialogs import BatchFinderDialog, FinderDialog, LrFinderDialog
from .kernel import Kernel
from .panels.compile import CompilePanel
from .panels.dataset import DatasetPanel
from .panels.evaluate import EvaluatePanel
from .panels.log import LogPanel
from .panels.plots import DARK, LIGHT, PlotsPanel, style_plot
from .panels.predict import PredictPanel
from .panels.profile import ProfilePanel
from .panels.runs import LoadedRun, RunsPanel
from .panels.setup import SetupPanel
from . import file_dialogs
from .garbage import collect_on_gui_thread
from .run_control import RunControl
from .settings import migrate_settings, open_settings, written_by_newer
from .tasks import Tasks


class Finder(NamedTuple):
    start: Callable[[ServiceClient, TrainConfig, Callable], Future]  # its measurement in the kernel
    dialog: type[FinderDialog]
    setting: str  # what its suggestion sets in the form
    action: str  # "find a learning rate": what failed, in words


FINDERS = {"lr": Finder(ServiceClient.find_lr, LrFinderDialog, "lr", "find a learning rate"),
           "batch": Finder(ServiceClient.find_batch_size, BatchFinderDialog, "batch_size", "find a batch size")}
# The window's task slots for kernel jobs: a newer job in a slot supersedes the older one's answer.
EXPLAINING, EVALUATING, PREVIEWING, OPENING, EXPORTING = "explaining", "evaluating", "previewing", "opening", \
    "exporting"

PREVIEW_DELAY_MS = 400  # a dataset choice (or data folder) this long unchanged is previewed
LOCAL_DATASETS = ("mnist-sample", "idx", "imagefolder")  # previewed as soon as chosen: nothing to download
DEFAULT_SIZE = (1400, 880)
FRAME_ALLOWANCE = 32  # the window manager's title bar, which availableGeometry() does not leave out
BOTTOM_SHARE = 0.2  # of the window's height for the Log/Runs docks
SIDE_SHARE = 0.25  # of its width for each side's docks


def app_icon():
    from PySide6.QtGui import QIcon

    icon = QIcon(str(appinfo.icon_path()))
    for size in (16, 32, 48, 64, 128, 256):
        icon.addFile(str(appinfo.icon_path(size)))
    return icon



LIGHT_BANNER = {"error": "#fde7e9", "warning": "#fff4ce", "info": "#e7f1fd"}
DARK_BANNER = {"error": "#5c1e24", "warning": "#5a4a12", "info": "#1e3a5c"}


def scrolled(widget: QWidget, min_width: int = 0) -> QScrollArea:
    """A dock's content that scrolls vertically rather than forcing the window taller than a small screen."""
    scroll = QScrollArea()
    scroll.setWidget(widget)
    scroll.setWidgetResizable(True)
    scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
    scroll.setMinimumWidth(min_width)
    return scroll


@dataclass(frozen=True)
class LoadedModel:
    """The checkpoint open for Predict, Evaluate and exports: what the kernel said it holds, how the window names
    it, and whether its model file has the user's consent."""

    info: CheckpointInfo
    description: str
    trusted: bool


class Banner(QWidget):
    """A dismissible message strip above the plots: run failures and file errors show here, not as tracebacks."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.label = QLabel()
        self.label.setObjectName("bannerText")
        self.label.setTextFormat(Qt.PlainText)  # messages quote files and runs: never rendered as rich text
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
        self.level, self.dark = "info", False
        self.hide()

    def show_message(self, level: str, text: str) -> None:
        self.level = level
        self.label.setText(text)
        self._colour()
        self.show()

    def set_dark(self, dark: bool) -> None:
        self.dark = dark
        self._colour()

    def _colour(self) -> None:
        background = (DARK_BANNER if self.dark else LIGHT_BANNER)[self.level]
        self.setStyleSheet(f"background: {background}; border-radius: 4px;")


class MainWindow(QMainWindow):
    runFinished = Signal(object)  # for tests and scripts: the terminal event of each run
    explainFinished = Signal(object)
    # For tests and scripts, each job's outcome once the window has shown it: its answer, or the error that stopped it
    fullgraphChecked = Signal(object)  # a FullgraphCheck
    checkpointLoaded = Signal(object)  # a CheckpointInfo
    reportFinished = Signal(object)  # the Written HTML and JSON
    exportFinished = Signal(object)  # the Written checkpoint
    modelExported = Signal(object)  # a ParityTable
    finderDone = Signal(str, object)  # a finder's kind and its finding (None: cancelled before it began)
    evaluationFinished = Signal(object)  # an EvaluationView
    datasetPreviewed = Signal(object)  # a DatasetPreview

    def __init__(self, runs_dir: Path | None = None, db: Path | None = None, *, prestart: bool = True,
                 kernel: KernelClient | None = None):
        super().__init__()
        collect_on_gui_thread()  # before any thread of this window can free a Qt object
        self.setWindowTitle(appinfo.DISPLAY_NAME)
        self.setWindowIcon(app_icon())
        self.setObjectName("mainWindow")
        self.runs_dir = runs_dir
        self.db = db
        self.model: LoadedModel | None = None  # the checkpoint open for Predict, Evaluate and exports
        self.last_run_dir: Path | None = None
        self.stopping = False  # Stop was pressed: say so until the run has ended
        self.train_waiting = False  # Train was pressed before PyTorch was ready: it starts when it is
        self.docks_to_size = False  # a first window sizes its docks when shown (fit_to_screen)
        self.kernel_restarting = False  # the kernel died and a new one is starting
        settings = open_settings()
        migrate_settings(settings)
        self.tasks = Tasks(self)
        self.kernel = Kernel(self.tasks, kernel, self)
        self.kernel.stateChanged.connect(self._kernel_state)
        self.kernel.capabilitiesChanged.connect(self._capabilities)
        self.kernel.notice.connect(self._log_warning)
        self.runner = RunControl(self.tasks, self, prestart=prestart)
        self.runner.events.connect(self.on_events)
        self.runner.runFinished.connect(self.on_run_finished)
        self.runner.notice.connect(self._log_warning)

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
        self.compile_panel = CompilePanel()
        self.compile_panel.explainRequested.connect(self.explain)
        self.compile_panel.fullgraphRequested.connect(self.check_fullgraph)
        self.setup.finderRequested.connect(self.open_finder)
        self.compile_panel.settingRequested.connect(self.setup.set_value)
        self.compile_panel.tabs.currentChanged.connect(lambda _index: self._update_forecast())
        self.setup.changed.connect(self._update_forecast)
        self.plots.timeline.stepClicked.connect(self.show_compile_step)
        # (train, val) images by (dataset, data root): from previews and runs; the What-if forecast needs them.
        self.split_sizes: dict[tuple, tuple[int, int]] = {}
        self.sizes_asked: set[tuple] = set()
        self.predict = PredictPanel(self.tasks)
        self.evaluation = EvaluatePanel()
        self.evaluation.evaluateRequested.connect(self.evaluate)
        self.dataset = DatasetPanel()
        self.dataset.refreshRequested.connect(self.preview_dataset)
        self.setup.changed.connect(self._dataset_maybe_changed)
        self.previewed_choice: tuple | None = None  # (dataset, data root) the Dataset dock shows
        self.export_dialog: ExportDialog | None = None  # File → Export model…'s, while it is open
        self.finder_dialogs: dict[str, FinderDialog] = {}  # Run → Find …'s, each made on first use
        self.sweep_dialog = None  # Run → Sweep…'s SweepDialog, made on first use (a sweep outlives its closing)
        self.preview_timer = QTimer(self)
        self.preview_timer.setSingleShot(True)
        self.preview_timer.setInterval(PREVIEW_DELAY_MS)
        self.preview_timer.timeout.connect(self._preview_if_changed)
        self.profile = ProfilePanel()
        self.profile.profileRequested.connect(self.profile_now)
        self.log = LogPanel()
        self.runs = RunsPanel(self.tasks, db)
        self.runs.compareRequested.connect(self.compare_runs)
        self.runs.table.selectionModel().selectionChanged.connect(lambda *_: self._update_actions())
        self.runs.openRequested.connect(self.show_run)
        self.runs.continueRequested.connect(self.continue_run)
        self.docks = {
            "setup": self._dock("Setup", scrolled(self.setup, min_width=330), Qt.LeftDockWidgetArea),
            "compile": self._dock("Compile", self.compile_panel, Qt.RightDockWidgetArea),
            "profile": self._dock("Profile", self.profile, Qt.RightDockWidgetArea),
            "predict": self._dock("Predict", scrolled(self.predict), Qt.RightDockWidgetArea),
            "evaluate": self._dock("Evaluate", self.evaluation, Qt.RightDockWidgetArea),
            "dataset": self._dock("Dataset", self.dataset, Qt.RightDockWidgetArea),
            "log": self._dock("Log", self.log, Qt.BottomDockWidgetArea),
            "runs": self._dock("Runs", self.runs, Qt.BottomDockWidgetArea),
        }
        self.tabifyDockWidget(self.docks["log"], self.docks["runs"])
        self.docks["log"].raise_()
        for name in ("profile", "predict", "evaluate", "dataset"):
            self.tabifyDockWidget(self.docks["compile"], self.docks[name])
        self.dataset_shown = False  # its tab is the one on show (isVisible() lags visibilityChanged)
        self.docks["dataset"].visibilityChanged.connect(self._dataset_visible)
        self.docks["compile"].raise_()

        self._build_actions()
        self._build_status_bar()
        self._restore_settings(settings)
        self._update_actions()
        self.runs.refresh()
        hints = QGuiApplication.styleHints()
        hints.colorSchemeChanged.connect(self.apply_colour_scheme)
        self.apply_colour_scheme(hints.colorScheme())
        if self.kernel.capabilities.known:  # a kernel that was ready before this window (shared in tests)
            self._capabilities(self.kernel.capabilities)
        else:
            self._kernel_state(self.kernel.state, "")

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
        self.train_action = self._action("Train", lambda: self.train(), "Ctrl+R", QStyle.SP_MediaPlay, "trainAction")
        self.train_tooltip = self.train_action.toolTip()
        self.shown_problem = ""  # the form's problem the status bar shows
        self.stop_action = self._action("Stop", self.stop, Qt.Key_Escape, QStyle.SP_MediaStop, "stopAction")
        self.explain_action = self._action("Explain compile", self.explain, "Ctrl+E", None, "explainAction")
        self.evaluate_action = self._action("Evaluate model", lambda: self.evaluate(), "Ctrl+Shift+V", None,
                                            "evaluateAction")
        self.open_action = self._action("Open checkpoint…", self.choose_checkpoint, QKeySequence.Open,
                                        QStyle.SP_DialogOpenButton, "openCheckpointAction")
        self.export_action = self._action("Export checkpoint…", self.choose_export_checkpoint, QKeySequence.Save,
                                          QStyle.SP_DialogSaveButton, "exportCheckpointAction")
        self.report_action = self._action("Export report…", self.choose_export_report, "Ctrl+Shift+E", None,
                                          "exportReportAction")
        self.export_model_action = self._action("Export model…", self.open_export_dialog, "Ctrl+Shift+M", None,
                                                "exportModelAction")
        self.lr_finder_action = self._action("Find learning rate…", lambda: self.open_finder("lr"), "Ctrl+L", None,
                                             "lrFinderAction")
        self.batch_finder_action = self._action("Find batch size…", lambda: self.open_finder("batch"), "Ctrl+B",
                                                None, "batchFinderAction")
        self.sweep_action = self._action("Sweep…", self.open_sweep, "Ctrl+Shift+W", None, "sweepAction")
        quit_action = self._action("Quit", self.close, QKeySequence.Quit)
        about = self._action("About Workbench", self.about)
        forget = self._action("Forget trusted model files…", self.forget_trusted_models, None, None,
                              "forgetTrustedModelsAction")

        toolbar = self.addToolBar("Run")
        toolbar.setObjectName("runToolbar")
        toolbar.setToolButtonStyle(Qt.ToolButtonTextBesideIcon)
        for action in (self.train_action, self.stop_action):
            toolbar.addAction(action)
        toolbar.widgetForAction(self.train_action).setObjectName("trainButton")
        toolbar.widgetForAction(self.stop_action).setObjectName("stopButton")
        toolbar.addAction(self.explain_action)
        toolbar.addSeparator()
        for action in (self.open_action, self.export_action, self.report_action):
            toolbar.addAction(action)

        menu = self.menuBar()
        file_menu = menu.addMenu("&File")
        for action in (self.open_action, self.export_action, self.export_model_action, self.report_action):
            file_menu.addAction(action)
        file_menu.addSeparator()
        file_menu.addAction(quit_action)
        run_menu = menu.addMenu("&Run")
        for action in (self.train_action, self.stop_action, self.explain_action, self.evaluate_action,
                       self.lr_finder_action, self.batch_finder_action, self.sweep_action):
            run_menu.addAction(action)
        view_menu = menu.addMenu("&View")
        for dock in self.docks.values():
            view_menu.addAction(dock.toggleViewAction())
        help_menu = menu.addMenu("&Help")
        help_menu.addAction(forget)
        help_menu.addAction(about)

    def _build_status_bar(self) -> None:
        self.device_label = QLabel("")
        self.device_label.setObjectName("statusDevice")
        self.kernel_label = QLabel("")
        self.kernel_label.setObjectName("statusKernel")
        self.state_label = QLabel("Idle")
        self.state_label.setObjectName("statusState")
        self.state_label.setTextFormat(Qt.PlainText)  # a form problem quotes the user's values
        self.speed_label = QLabel("")
        self.speed_label.setObjectName("statusSpeed")
        self.problem_button = QPushButton("Show")
        self.problem_button.setObjectName("showProblemButton")
        self.problem_button.setToolTip("Scroll the Setup panel to the setting that stops Train")
        self.problem_button.clicked.connect(self.setup.focus_problem)
        self.problem_button.hide()
        bar = self.statusBar()
        bar.addWidget(self.state_label)
        bar.addWidget(self.problem_button)  # right after the problem it shows
        bar.addWidget(QWidget(), 1)
        for widget in (self.speed_label, self.device_label, self.kernel_label):
            bar.addPermanentWidget(widget)

    def apply_colour_scheme(self, scheme: Qt.ColorScheme) -> None:
        """Follow the desktop's light or dark scheme (Qt ≥ 6.5): the widgets follow the palette by themselves;
        the plots and the banner pick their colours here."""
        dark = scheme == Qt.ColorScheme.Dark
        self.plots.set_dark(dark)
        self.profile.set_dark(dark)
        for chart in (self.predict.chart, self.dataset.chart):
            style_plot(chart, DARK if dark else LIGHT)
        self.banner.set_dark(dark)

    # -- the kernel ---------------------------------------------------------------------------------------------
    def _kernel_state(self, state: str, detail: str) -> None:
        """The status bar always says whether PyTorch is there; a kernel that died is a message, not a crash."""
        caps = self.kernel.capabilities
        if state in ("crashed", "ready"):
            self.kernel_restarting = state == "crashed"
        starting = "PyTorch restarting…" if self.kernel_restarting else "Starting PyTorch…"
        self.kernel_label.setText({
            "idle": starting, "starting": starting,
            "ready": f"torch {caps.torch_version}" if caps.known else "PyTorch ready",
            "crashed": "PyTorch restarting…", "failed": "PyTorch kernel down", "closed": "",
        }.get(state, state))
        if state == "crashed":
            self.banner.show_message("warning", f"The PyTorch kernel stopped unexpectedly: {detail}. It is being "
                                                "restarted; the window and your runs are unaffected.")
            self.log.add("warning", f"PyTorch kernel stopped: {detail}; restarting it")
        elif state == "failed":
            self.banner.show_message("error", f"The PyTorch kernel keeps failing: {detail}. Explain, Predict and "
                                              "exports need it; restart Workbench.")
            self.log.add("error", f"PyTorch kernel down: {detail}")
        self._update_actions()

    def _capabilities(self, caps: Capabilities) -> None:
        first = self.device_label.text() == ""
        self.setup.set_capabilities(caps)
        self.device_label.setText(caps.device_label())
        self.kernel_label.setText(f"torch {caps.torch_version}")
        if first:
            self.log.add("info", f"Workbench ready on {caps.device_label()} · torch {caps.torch_version}")
        if self.train_waiting:
            self.train_waiting = False
            self.train()
        self._update_actions()

    # -- actions ------------------------------------------------------------------------------------------------
    def _config_for(self, action: str) -> TrainConfig | None:
        """The form's config, or None with the reason shown (the actions are disabled then, but shortcuts race)."""
        try:
            return self.setup.config()
        except WorkbenchError as exc:
            self.banner.show_message("error", f"Cannot {action}: {exc}")
            return None

    def run_request(self, config: TrainConfig | None = None) -> RunRequest:
        """The form as a run (or `config`): built and checked against this machine once, here."""
        return RunRequest.build(config or self.setup.config(), cuda_devices=self.kernel.capabilities.cuda_devices,
                                out_dir=new_run_dir(self.runs_dir), db=self.db,
                                launch=Launch(nproc_per_node=self.setup.processes()))

    def train(self, config: TrainConfig | None = None) -> bool:
        """Start a run with the form's settings (or `config`: a continued run); False when it was refused (the
        banner says why, if it can). Before PyTorch is ready the form's run waits for it (queued, not refused)."""
        if self.runner.training:
            return False
        if not self.kernel.capabilities.known and config is None:
            if self._config_for("start") is None:
                return False
            self.train_waiting = True
            self.state_label.setText("Train starts when PyTorch is ready…")
            self._update_actions()
            return True
        try:
            request = self.run_request(config)
        except WorkbenchError as exc:
            self.banner.show_message("error", f"Cannot start: {exc}")
            return False
        if not self.runner.start(request):
            return False
        self.stopping = False
        self.banner.hide()
        self._save_settings()
        self.state_label.setText("Starting…")
        self._update_actions()
        return True

    def continue_run(self, record, epochs: int | None = None) -> bool:
        """Runs dock's Continue training: the run goes on from its checkpoint until epoch `epochs` (asked for when
        not given: a stopped run's planned epochs, else one more than it trained)."""
        if self.runner.training or not self.kernel.capabilities.known:
            self.banner.show_message("warning", "Continue a run when no other is training and PyTorch is ready.")
            return False
        config = TrainConfig.from_dict(record.config)
        if epochs is None:
            planned = config.epochs if record.status == "stopped" else config.epochs + 1
            epochs, chosen = QInputDialog.getInt(
                self, "Continue training", f"Continue {run_name(record.id)} from its checkpoint until epoch:",
                planned, 1, 100_000)
            if not chosen:
                return False
        started = self.train(config.replace(resume=record.checkpoint, epochs=epochs, max_steps=None))
        if started:
            self.log.add("info", f"continuing {run_name(record.id)} until epoch {epochs}")
        return started

    def stop(self) -> None:
        if self.train_waiting:
            self.train_waiting = False
            self.state_label.setText(self.progress.describe())
            self._update_actions()
        elif self.runner.training:
            self.runner.stop()
            self.stopping = True
            self.state_label.setText(self._state_text())

    def profile_now(self, steps: int) -> None:
        """Profile Now: the running run profiles its next `steps` steps; the report arrives as its events do."""
        if self.runner.request_profile(steps):
            self.log.add("info", f"asked the run to profile its next {steps} steps")

    def explain(self) -> None:
        config = self._config_for("explain")
        if config is None:
            return
        self.kernel.ask(EXPLAINING, self.kernel.service.explain(config), self._explained, self._explain_failed)
        self.state_label.setText("Explaining…")
        self.compile_panel.clear()
        self.docks["compile"].raise_()
        self._update_actions()

    # -- results ------------------------------------------------------------------------------------------------
    def _state_text(self) -> str:
        return "Stopping after this step…" if self.stopping else self.progress.describe()

    def _log_warning(self, text: str) -> None:
        self.log.add("warning", text)

    def on_events(self, batch: list[Event]) -> None:
        for event in batch:
            if isinstance(event, RunStarted):
                self.split_sizes[(event.config.get("dataset"), event.config.get("data_root"))] = (
                    event.train_size, event.val_size)
                self.profile.clear()
        self.plots.add_events(batch)
        self.profile.add_events(batch)  # the headline's Progress, the status bar's too, takes the batch here
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
            if path:  # this window trained it: the user chose its model file, which is trusted and remembered
                self.last_run_dir = Path(path).parent
                name = self.runs.name_for_out_dir(self.last_run_dir) or Path(path).parent.name
                self.load_checkpoint(path, f"last run ({name})", own_run=True)
            if result.stopped:
                self.banner.show_message("info", f"Stopped after {result.steps} steps; what was trained is kept."
                                         if result.steps else "Stopped before training began; nothing was trained.")
        self._update_actions()
        self.runs.refresh()
        self.runFinished.emit(result)

    def _explained(self, report: CompileReport) -> None:
        self.compile_panel.show_report(report)
        self.log.add("warning" if report.graph_break_count else "info",
                     f"explain: {report.graph_count} graph(s), {report.graph_break_count} graph break(s)")
        self._explain_ended(report)

    def _explain_failed(self, error: BaseException) -> None:
        self.banner.show_message("error", f"Explain failed: {error}")
        self.log.add("error", f"explain failed: {error}")
        self._explain_ended(RunFailed(kind=getattr(error, "kind", "internal"), message=str(error)))

    def _explain_ended(self, outcome: CompileReport | RunFailed) -> None:
        self.state_label.setText(self.progress.describe())
        self._update_actions()
        self.explainFinished.emit(outcome)

    # -- evaluation and the dataset ------------------------------------------------------------------------------
    def evaluation_target(self) -> tuple[str, str, bool] | None:
        """(checkpoint, its name, trusted): the run selected in the Runs dock, else the model Predict uses (the
        last run, a re-opened run, an opened checkpoint); None when there is none."""
        ids = self.runs.selected_ids()
        if len(ids) == 1 and self.runs.store is not None:
            try:
                record = self.runs.store.get(ids[0])
            except WorkbenchError:
                record = None
            if record is not None and record.checkpoint:
                return record.checkpoint, run_name(record.id), False
        if self.model is not None:
            return self.model.info.path, self.model.description, self.model.trusted
        return None

    def evaluate(self, target: tuple[str, str, bool] | None = None) -> bool:
        """Score a model on its dataset's test (else validation) split in the service kernel; the Evaluate dock
        shows the result. False: there is no model to evaluate."""
        target = target or self.evaluation_target()
        if target is None:
            self.evaluation.set_error("Nothing to evaluate yet: train a run, select one in the Runs dock, or open "
                                      "a checkpoint (File → Open checkpoint…).")
            return False
        path, description, trusted = target
        self.evaluation.set_busy(f"Evaluating {description}…")
        self.docks["evaluate"].raise_()
        self.kernel.ask(EVALUATING, self.kernel.service.evaluate_view(path, trust_model_code=trusted),
                        lambda view: self._evaluated(view, description),
                        lambda error: self._evaluation_failed(error, target))
        return True

    def _evaluated(self, view: EvaluationView, description: str) -> None:
        self.evaluation.set_result(view, description)
        self.evaluationFinished.emit(view)

    def _evaluation_failed(self, error: BaseException, target: tuple[str, str, bool]) -> None:
        path, description, trusted = target
        if self._retried_with_consent(error, trusted, lambda: self.evaluate((path, description, True))):
            return
        self.evaluation.set_error(f"Could not evaluate {description}: {with_hint(error)}")
        self.evaluationFinished.emit(error)

    def _dataset_visible(self, visible: bool) -> None:
        self.dataset_shown = visible
        self._dataset_maybe_changed()

    def _dataset_maybe_changed(self) -> None:
        """Soon (typing a folder name is one change per key): _preview_if_changed."""
        self.preview_timer.start()

    def _preview_if_changed(self) -> None:
        """Preview a local dataset (bundled, IDX, image folder) when the Dataset dock is on show and the choice
        has changed; the torchvision sets may download, so they wait for the Preview button."""
        if not self.dataset_shown or not self.kernel.capabilities.known:
            return
        choice = (self.setup.value("dataset"), self.setup.value("data_root"))
        if choice != self.previewed_choice and choice[0] in LOCAL_DATASETS:
            self.preview_dataset()

    def preview_dataset(self) -> None:
        """The dataset the form names (valid or not: a preview is how a bad folder is found)."""
        dataset, data_root = self.previewed_choice = (self.setup.value("dataset"), self.setup.value("data_root"))
        self.dataset.set_busy(f"Reading {dataset}…")
        self.kernel.ask(PREVIEWING, self.kernel.service.preview_dataset(dataset, data_root), self._previewed,
                        self._preview_failed)

    def _previewed(self, preview: DatasetPreview) -> None:
        self.dataset.set_preview(preview)
        sizes = preview.split_sizes()
        if sizes is not None and self.previewed_choice is not None:
            self.split_sizes[self.previewed_choice] = sizes
            self._update_forecast()
        self.datasetPreviewed.emit(preview)

    def _preview_failed(self, error: BaseException) -> None:
        self.dataset.set_error(f"Could not read the dataset: {error}")
        self.datasetPreviewed.emit(error)

    # -- compile insight ------------------------------------------------------------------------------------------
    def _update_forecast(self) -> None:
        """The What-if tab, while it is on show: the recompiles the form's settings will hit on the chosen data.
        The split sizes come from a preview (asked for here once per local dataset choice) or an earlier run."""
        if self.compile_panel.tabs.currentWidget() is not self.compile_panel.forecast or self.runner.training:
            return
        config = self.setup.valid_config()
        if config is None:
            return
        choice = (config.dataset, config.data_root)
        sizes = self.split_sizes.get(choice)
        if sizes is not None:
            self.compile_panel.show_forecast(config, *sizes, world_size=self.setup.processes())
        elif choice not in self.sizes_asked and choice[0] in LOCAL_DATASETS and self.kernel.capabilities.known:
            self.sizes_asked.add(choice)
            self.preview_dataset()

    def check_fullgraph(self) -> None:
        """A fix-it card's *Check with fullgraph*: compile the form's model with fullgraph=True in the kernel."""
        config = self._config_for("check with fullgraph")
        if config is None:
            return
        self.kernel.ask(EXPLAINING, self.kernel.service.check_fullgraph(config), self._fullgraph_checked,
                        self._fullgraph_failed)
        self.state_label.setText("Checking with fullgraph…")

    def open_finder(self, kind: str) -> FinderDialog | None:
        """Run → Find learning rate… / Find batch size… (`kind`: a key of FINDERS): one dialog of each per window
        (a measurement still running answers into it), for the form's settings; *Use* puts the suggestion into the
        form."""
        finder = FINDERS[kind]
        config = self._config_for(finder.action)
        if config is None:
            return None
        dialog = self.finder_dialogs.get(kind)
        if dialog is None:
            dialog = self.finder_dialogs[kind] = finder.dialog(self.plots.theme, self)
            dialog.startRequested.connect(lambda: self.run_finder(kind))
            dialog.stopRequested.connect(lambda: self.kernel.cancel(kind))
            dialog.useRequested.connect(lambda value: self._use_suggestion(kind, value))
        dialog.describe(f"{config.optimizer}, batch {config.batch_size}, lr {config.lr:g}, "
                        f"{setup_label(config.to_dict())}")
        dialog.show()
        dialog.raise_()
        return dialog

    def run_finder(self, kind: str) -> None:
        """The finder's measurement in the kernel with the form's settings; each point is drawn as it comes back."""
        finder, dialog = FINDERS[kind], self.finder_dialogs[kind]
        config = self._config_for(finder.action)
        if config is None:  # the form was changed behind the dialog
            dialog.show_error("a setting in the Setup form needs fixing first (the banner says which)")
            return

        def found(finding) -> None:
            dialog.show_finding(finding)
            self.finderDone.emit(kind, finding)

        def failed(error: BaseException) -> None:
            dialog.show_error(with_hint(error))
            self.log.add("error", f"{finder.action} failed: {with_hint(error)}")
            self.finderDone.emit(kind, error)

        def cancelled() -> None:  # stopped while still queued: nothing was measured
            dialog.show_cancelled()
            self.finderDone.emit(kind, None)

        future = finder.start(self.kernel.service, config, self.kernel.on_gui_thread(dialog.add_point))
        self.kernel.ask(kind, future, found, failed, cancelled)

    def _use_suggestion(self, kind: str, value: float) -> None:
        setting = FINDERS[kind].setting
        self.setup.set_value(setting, int(value) if setting == "batch_size" else value)
        self.log.add("info", f"{setting} set to {value:g} (the finder's suggestion)")

    def open_sweep(self):
        """Run → Sweep…: one dialog per window, its trials the form's settings with some sampled; each trial that
        ends is a run in the Runs dock."""
        from .sweep_dialog import SweepDialog  # Optuna is imported on first use, not with the window

        if self.sweep_dialog is None:
            kernel = self.kernel
            self.sweep_dialog = SweepDialog(self.tasks, self.plots.theme, self.setup.config,
                                            lambda: kernel.capabilities.cuda_devices if kernel.capabilities.known
                                            else None, self.db, self.runs_dir, self)
            self.sweep_dialog.trialEnded.connect(lambda _trial: self.runs.refresh())
        self.sweep_dialog.show()
        self.sweep_dialog.raise_()
        return self.sweep_dialog

    def _fullgraph_checked(self, check: FullgraphCheck) -> None:
        self.compile_panel.show_fullgraph(check)
        self.state_label.setText(self.progress.describe())
        self.fullgraphChecked.emit(check)

    def _fullgraph_failed(self, error: BaseException) -> None:
        self.compile_panel.show_fullgraph_error(error)
        self.state_label.setText(self.progress.describe())
        self.fullgraphChecked.emit(error)

    def show_compile_step(self, step: int) -> None:
        """A timeline marker on the loss plot was clicked: its events in the Compile panel."""
        self.docks["compile"].raise_()
        self.compile_panel.select_step(step)

    # -- run history ------------------------------------------------------------------------------------------
    def reopen_last_run(self, out_dir: Path) -> None:
        """At start-up: the run this window trained last comes back (curves, compile report, model), as the user
        left it. A run that is no longer in the history is forgotten quietly."""
        run_id = self.runs.id_for_out_dir(out_dir)
        if run_id is None or self.runner.training:
            return
        self.last_run_dir = out_dir
        self.runs.load_runs([run_id], lambda runs: self.show_run(runs[0]))

    def compare_runs(self, runs: list[LoadedRun]) -> None:
        keys = differing_settings([run.record.config for run in runs])
        labels = [run_label(run.record.id, run.record.config, keys) for run in runs]
        self.plots.set_overlays([(label, run.curves) for label, run in zip(labels, runs)])
        if runs:
            self.log.add("info", "comparing " + ", ".join(labels))

    def show_run(self, run: LoadedRun) -> None:
        """Bring a recorded run back: its curves, compile report and (if its checkpoint exists) its model."""
        if self.runner.training:
            self.banner.show_message("warning", "A run is in progress: open the recorded run when it has ended.")
            return
        record = run.record
        self.plots.set_overlays([])
        self.plots.show_curves(run.curves, run.compile_seconds, record.config)
        self.plots.add_events([e for e in run.panel_events if isinstance(e, (CompileEvent, SystemSample))])
        self.compile_panel.clear()
        self.compile_panel.add_events(list(run.panel_events))
        self.profile.clear()
        self.profile.add_events(list(run.panel_events))
        self.plots.redraw()
        self.state_label.setText(f"Run #{record.id} ({record.status})")
        if record.checkpoint and Path(record.checkpoint).is_file():
            # Never trusted because of the history row: whatever checkpoint sits there now may name another file.
            self.load_checkpoint(record.checkpoint, f"run #{record.id}")
        else:
            self.log.add("warning", f"run #{record.id} has no checkpoint on disk: its curves only")

    # -- checkpoints and exports --------------------------------------------------------------------------------
    def choose_checkpoint(self) -> None:
        path = file_dialogs.open_file(self, "checkpoint", "Open checkpoint",
                                      "Workbench checkpoints (*.pt);;All files (*)")
        if path:
            self.load_checkpoint(path, Path(path).name)

    def load_checkpoint(self, path: str | Path, description: str, *, trust_model_code: bool = False,
                        own_run: bool = False) -> None:
        """Ask the kernel what the checkpoint holds (read safely there); checkpointLoaded says how it went. A
        checkpoint whose network is defined in a Python file is opened only with the user's consent to that file:
        remembered (ModelConsent: same path, same content) or asked for. `own_run`: a run this window has just
        trained, whose model file the user chose: consent given, and remembered."""
        self.kernel.ask(OPENING, self.kernel.service.load_checkpoint(path, trust_model_code=trust_model_code),
                        lambda info: self._checkpoint_loaded(info, description, trust_model_code),
                        lambda error: self._checkpoint_refused(error, path, description, trust_model_code, own_run))

    def _retried_with_consent(self, error: BaseException, trusted: bool, retry, own_run: bool = False) -> bool:
        """A NeedsConsent error: with the user's consent to that model file — remembered (same path, same
        content), given now, or implied (`own_run`) — `retry` with trust and say True; False when there is none."""
        if not isinstance(error, NeedsConsent) or trusted:
            return False
        spec = error.model_spec
        consent = ModelConsent()
        if not consent.is_trusted(spec):
            if not (own_run or self.confirm_model_code(spec)):
                return False
            self._remember_model_consent(consent, spec)
        retry()
        return True

    def _checkpoint_loaded(self, info: CheckpointInfo, description: str, trusted: bool) -> None:
        self.model = LoadedModel(info, description, trusted)
        accuracy = info.val_accuracy
        self.predict.set_model(self._scorer(info.path, trusted), info.classes, description + (
            f" · val accuracy {accuracy:.1%}" if accuracy is not None else ""))
        self.log.add("info", f"model for prediction: {description}")
        self._update_actions()
        self.checkpointLoaded.emit(info)

    def _checkpoint_refused(self, error: BaseException, path, description: str, trusted: bool,
                            own_run: bool) -> None:
        if self._retried_with_consent(error, trusted, lambda: self.load_checkpoint(
                path, description, trust_model_code=True), own_run):
            return
        if isinstance(error, NeedsConsent):
            self.banner.show_message("warning", f"Checkpoint not opened: {error}")
        else:
            self.banner.show_message("error", f"Cannot open checkpoint: {error}")
            self.log.add("error", f"cannot open checkpoint: {error}")
        self._update_actions()
        self.checkpointLoaded.emit(error)

    def _scorer(self, checkpoint_path: str, trusted: bool):
        """Images → probabilities, by the kernel (called on a pool thread: it waits for the answer)."""
        service = self.kernel.service

        def score(pixels):
            return service.predict(checkpoint_path, pixels, trust_model_code=trusted).result().probabilities

        return score

    def _remember_model_consent(self, consent: ModelConsent, spec: str) -> None:
        """Remember the user's consent to the spec's file; a config folder that cannot be written costs only the
        remembering (this time the file is trusted anyway)."""
        try:
            consent.trust(spec)
        except OSError as exc:
            self.log.add("warning", f"cannot remember that {spec.rpartition(':')[0]} is trusted: {exc}")

    def forget_trusted_models(self) -> bool:
        """Help → Forget trusted model files…: after a confirm, every remembered consent is dropped (opening such a
        checkpoint asks again). False: nothing was forgotten."""
        consent = ModelConsent()
        files = consent.trusted()
        if not files:
            QMessageBox.information(self, "Trusted model files", "No model files are remembered as trusted.")
            return False
        shown = "\n".join(files[:10]) + (f"\n… and {len(files) - 10} more" if len(files) > 10 else "")
        answer = QMessageBox.question(
            self, "Forget trusted model files?",
            f"Workbench remembers that you trust these model files:\n{shown}\n\nForget them? Opening a checkpoint "
            f"that needs one asks again.", QMessageBox.Yes | QMessageBox.No, QMessageBox.No)
        if answer != QMessageBox.Yes:
            return False
        try:
            consent.clear()
        except OSError as exc:
            self.banner.show_message("error", f"Cannot forget the trusted model files: {exc}")
            return False
        self.log.add("info", f"forgot {len(files)} trusted model file(s)")
        return True

    def confirm_model_code(self, model_spec: str) -> bool:
        file = model_spec.rpartition(":")[0]  # "path/to/file.py:Class"
        answer = QMessageBox.question(
            self, "Import model code?",
            f"This checkpoint's network is defined in\n{file}\n\nOpening it imports and runs that file. "
            f"Continue only if you trust it.", QMessageBox.Yes | QMessageBox.No, QMessageBox.No)
        return answer == QMessageBox.Yes

    def choose_export_checkpoint(self) -> None:
        path = file_dialogs.save_file(self, "export", "Export checkpoint", "checkpoint.pt", "Checkpoints (*.pt)")
        if path:
            self.export_checkpoint(path)

    def export_checkpoint(self, path: str | Path) -> bool:
        """Write the loaded checkpoint to `path` (the kernel saves it, atomically); exportFinished says how it
        went. False: there is no checkpoint to export."""
        if self.model is None:
            return False
        future = self.kernel.service.export_checkpoint(self.model.info.path, path,
                                                       trust_model_code=self.model.trusted)
        self._file_task("Exporting the checkpoint…", future,
                        lambda written: f"checkpoint exported to {written.paths[0]} (+ .safetensors)",
                        f"Could not export the checkpoint to {path}", self.exportFinished)
        return True

    def open_export_dialog(self) -> ExportDialog | None:
        """File → Export model…: the dialog for the loaded checkpoint (the last run's, or the one opened)."""
        if self.model is None:
            self.banner.show_message("info", "Train a run or open a checkpoint (Ctrl+O) to export its model.")
            return None
        folder = Path(self.model.info.path).parent / "export"
        dialog = ExportDialog(folder, self)
        dialog.setAttribute(Qt.WA_DeleteOnClose)
        dialog.exportRequested.connect(lambda fmt, out, backend: self.export_model(fmt, out, backend, dialog))
        dialog.show()
        self.export_dialog = dialog
        return dialog

    def export_model(self, fmt: str, out: str, compile_backend: str, dialog: ExportDialog | None = None) -> bool:
        """Export the loaded checkpoint in the kernel behind its parity gate; modelExported carries the table."""
        if self.model is None:
            return False

        def exported(table: ParityTable) -> None:
            self.state_label.setText(self.progress.describe())
            if dialog is not None:
                dialog.show_result(table)
            verdict = "passed its parity check" if table.passed else "FAILED its parity check"
            self.log.add("info" if table.passed else "warning", f"model exported to {table.file}: {verdict}")
            self.modelExported.emit(table)

        def failed(error: BaseException) -> None:
            self.state_label.setText(self.progress.describe())
            if dialog is not None:
                dialog.show_error(with_hint(error))
            self.log.add("error", f"export failed: {with_hint(error)}")
            self.modelExported.emit(error)

        self.state_label.setText("Exporting the model…")
        future = self.kernel.service.export_model(self.model.info.path, out, fmt=fmt, compile_backend=compile_backend,
                                                  trust_model_code=self.model.trusted)
        self.kernel.ask(EXPORTING, future, exported, failed)
        return True

    def _file_task(self, doing: str, future: Future, done_text: Callable[[Written], str], failed_text: str,
                   finished: Signal) -> None:
        """A slow file job (export, report) in the kernel: the status bar says it is under way, then the log
        says what was written or the banner why not; `finished` carries the outcome."""
        def written(files: Written) -> None:
            self.state_label.setText(self.progress.describe())
            self.log.add("info", done_text(files))
            self.show_written(Path(files.paths[0]))
            finished.emit(files)

        def failed(error: BaseException) -> None:
            self.state_label.setText(self.progress.describe())
            self.banner.show_message("error", f"{failed_text}: {with_hint(error)}")
            finished.emit(error)

        self.state_label.setText(doing)
        self.kernel.ask(EXPORTING, future, written, failed)

    def show_written(self, path: Path) -> QMessageBox:
        """Say where an export went, with Open and Show in folder (a message box that does not block)."""
        box = QMessageBox(QMessageBox.Information, "Exported", f"Written to\n{path}", QMessageBox.Close, self)
        box.setObjectName("writtenMessage")
        box.setTextFormat(Qt.PlainText)
        box.setAttribute(Qt.WA_DeleteOnClose)
        open_file = box.addButton("Open", QMessageBox.AcceptRole)
        show_folder = box.addButton("Show in folder", QMessageBox.ActionRole)
        open_file.clicked.connect(lambda: QDesktopServices.openUrl(QUrl.fromLocalFile(str(path))))
        show_folder.clicked.connect(lambda: QDesktopServices.openUrl(QUrl.fromLocalFile(str(path.parent))))
        box.open()
        return box

    def report_run_ids(self) -> list[int]:
        """The runs selected in the Runs dock, else the run trained last in this window."""
        ids = self.runs.selected_ids()
        if not ids and self.last_run_dir is not None:
            last = self.runs.id_for_out_dir(self.last_run_dir)
            ids = [last] if last is not None else []
        return ids

    def choose_export_report(self) -> None:
        ids = self.report_run_ids()
        if not ids:
            self.banner.show_message("info", "Select one or more runs in the Runs dock to report on.")
            return
        name = f"report-{'-'.join(map(str, ids))}.html"
        path = file_dialogs.save_file(self, "report", "Export report", name, "HTML report (*.html)")
        if path:
            self.export_report(path, ids)

    def export_report(self, path: str | Path, run_ids: list[int]) -> bool:
        """A self-contained HTML report of the runs (and its JSON twin), written atomically by the kernel (it
        re-evaluates each checkpoint); reportFinished says how it went. False: nothing to do. A run whose network
        is a Python file is evaluated only when the user has consented to that very file (ModelConsent); otherwise
        the report says its evaluation needs consent."""
        if not run_ids:
            return False
        future = self.kernel.service.write_report(run_ids, path, db=self.runs.db,
                                                  trust_model_code=self._model_files_trusted(run_ids))
        self._file_task("Writing the report…", future,
                        lambda written: f"report written to {written.paths[0]} (+ {Path(written.paths[1]).name})",
                        "Could not write the report", self.reportFinished)
        return True

    def _model_files_trusted(self, run_ids: list[int]) -> bool:
        """Whether every user-defined model file these runs name has the user's remembered consent (False when
        none does: the built-in network needs none)."""
        if self.runs.store is None:
            return False
        specs = []
        for run_id in run_ids:
            try:
                specs.append(str(self.runs.store.get(run_id).config.get("model", "")))
            except WorkbenchError:
                return False
        files = [spec for spec in specs if ":" in spec]
        consent = ModelConsent()
        return bool(files) and all(consent.is_trusted(spec) for spec in files)

    def about_text(self) -> str:
        import platform

        from PySide6 import __version__ as pyside_version
        from PySide6.QtCore import qVersion

        caps = self.kernel.capabilities
        torch_version = caps.torch_version if caps.known else "(PyTorch is still starting)"
        cuda = caps.cuda_version or "none"
        return (f"<h3>{appinfo.DISPLAY_NAME} {appinfo.version()}</h3><p>{appinfo.summary()}</p>"
                f"<table><tr><td>torch</td><td>{torch_version}</td></tr>"
                f"<tr><td>CUDA</td><td>{cuda}{'' if caps.cuda_available else ' (no CUDA device here)'}"
                f"</td></tr><tr><td>Qt</td><td>{qVersion()} (PySide6 {pyside_version})</td></tr>"
                f"<tr><td>Python</td><td>{platform.python_version()}</td></tr>"
                f"<tr><td>Device</td><td>{caps.device_label()}</td></tr></table>")

    def about(self) -> None:
        box = QMessageBox(QMessageBox.NoIcon, f"About {appinfo.DISPLAY_NAME}", self.about_text(),
                          QMessageBox.Ok, self)
        box.setObjectName("aboutDialog")
        box.setAttribute(Qt.WA_DeleteOnClose)
        box.setIconPixmap(self.windowIcon().pixmap(64, 64))
        box.open()

    @property
    def progress(self) -> Progress:
        """The run's progress: one tracker, the plots' headline's, serves the headline and the status bar."""
        return self.plots.headline.progress

    # -- state ----------------------------------------------------------------------------------------------------
    @property
    def busy(self) -> bool:
        """A run is alive or waiting for PyTorch, or Explain is out: the form and Train wait."""
        return self.runner.training or self.train_waiting or self.tasks.busy(EXPLAINING)

    def _update_actions(self) -> None:
        busy = self.busy
        problem = self.setup.problem_text()
        valid = not problem
        self.train_action.setEnabled(not busy and valid)
        self.train_action.setToolTip(self.train_tooltip if valid else f"Cannot train: {problem}")
        if problem and not busy:  # the reason is said where the user looks, over whatever was there
            self.state_label.setText(f"⚠ Cannot train: {problem}")
        elif self.shown_problem and not problem:
            self.state_label.setText(self.progress.describe())
        self.shown_problem = problem
        self.problem_button.setVisible(bool(problem) and not busy)
        self.stop_action.setEnabled(self.runner.training or self.train_waiting)
        self.profile.set_running(self.runner.profilable)
        self.explain_action.setEnabled(not busy and valid)
        self.compile_panel.explain_button.setEnabled(not busy and valid)
        self.setup.setEnabled(not busy)
        has_model = self.model is not None
        self.export_action.setEnabled(has_model and not busy)
        self.export_model_action.setEnabled(has_model and not busy)
        self.report_action.setEnabled(not busy and (self.last_run_dir is not None or bool(self.runs.selected_ids())))

    def _restore_settings(self, settings: QSettings) -> None:
        text = settings.value("config")
        if text:
            try:
                self.setup.set_config(TrainConfig.from_json(str(text)))
            except WorkbenchError as exc:
                self.log.add("warning", f"saved settings were not usable ({exc}); using defaults")
        try:
            self.setup.set_processes(int(settings.value("processes", 1) or 1))
        except (TypeError, ValueError):
            pass  # a hand-edited value: keep one process
        self.layout().activate()  # else a window not yet shown takes a stale minimum size (measured: 918 px tall)
        geometry = settings.value("geometry")
        if geometry is None or not self.restoreGeometry(geometry):
            self.fit_to_screen()
        state = settings.value("windowState")
        if state is not None and self.restoreState(state):
            self.docks_to_size = False  # the user's own layout
        last_run = settings.value("last_run_dir")
        if last_run:
            QTimer.singleShot(0, self, lambda: self.reopen_last_run(Path(str(last_run))))

    def fit_to_screen(self, screen: QRect | None = None) -> None:
        """The first window: DEFAULT_SIZE where the screen's available area (`screen`, by default this window's
        screen's) has room, else that area (a 1366×768 laptop), centred, with the docks sized to leave the plots
        most of it."""
        screen = screen or (self.screen() or QGuiApplication.primaryScreen()).availableGeometry()
        width = min(DEFAULT_SIZE[0], screen.width())
        height = min(DEFAULT_SIZE[1], screen.height() - FRAME_ALLOWANCE)
        self.resize(width, height)
        self.move(screen.x() + (screen.width() - width) // 2, screen.y() + (screen.height() - height) // 2)
        self.docks_to_size = True  # once shown: the dock areas only take sizes then

    def showEvent(self, event) -> None:
        super().showEvent(event)
        if self.docks_to_size:
            self.docks_to_size = False
            self.resizeDocks([self.docks["log"]], [int(self.height() * BOTTOM_SHARE)], Qt.Vertical)
            side = int(self.width() * SIDE_SHARE)
            self.resizeDocks([self.docks["setup"], self.docks["compile"]], [side, side], Qt.Horizontal)

    def _save_settings(self) -> None:
        settings = open_settings()
        if written_by_newer(settings):  # the newer Workbench's settings stay theirs (migration wrote ours)
            return
        try:
            settings.setValue("config", self.setup.config().to_json())
        except WorkbenchError:
            pass  # an invalid form is not saved over the last good settings
        settings.setValue("processes", self.setup.processes())
        settings.setValue("geometry", self.saveGeometry())
        if self.last_run_dir is not None:
            settings.setValue("last_run_dir", str(self.last_run_dir))
        settings.setValue("windowState", self.saveState())
        settings.sync()

    def closeEvent(self, event) -> None:
        """Closing during a run or a sweep stops it cleanly first (the checkpoint of what was trained is still
        written; the sweep's stopped trial runs again when it is resumed)."""
        self._save_settings()
        sweeping = self.sweep_dialog is not None and self.sweep_dialog.stop()  # tasks.wait() below waits for it
        if self.runner.training or sweeping:
            self.hide()  # the run stops within a step (longer while compiling); no frozen window meanwhile
        if not self.runner.shutdown():
            QTimer.singleShot(0, self.close)  # still compiling: try again, never kill the thread mid-step
            event.ignore()
            return
        self.kernel.close()  # jobs still waiting on it end now
        self.tasks.wait()  # a report being written finishes its atomic write
        self.runs.close_store()
        event.accept()
