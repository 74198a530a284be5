"""The main window: docks, toolbar, menus and status bar, and the wiring between them.

This process never imports torch. The window builds itself and wires its features, it does not own them: runs are
RunControl's (run_control.py), the open checkpoint and model consent Checkpoints' (checkpoints.py), exports and
reports Exports' (exports.py), Explain / fullgraph / What-if CompileInsight's (compile_insight.py), Evaluate and
the dataset preview DataInsight's (data_insight.py), the finders and sweeps Search's (search.py), where the kernels
run (this computer or a host over SSH) Hosts' (hosts.py), where an alert's fix is and whether the desktop is told
Alerts' (alerts.py). What the window knows is plain data in WindowState (window_state.py); each feature speaks to
the user through Feedback (banner, Log, status line). Here: the training run's own flow (Train, Stop, Continue, its
events), recorded runs brought back, the kernel's state in the status bar, the actions' enabled states, and the
window's settings.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Callable

from PySide6.QtCore import QRect, QSettings, Qt, QTimer
from PySide6.QtGui import QAction, QGuiApplication, QKeySequence
from PySide6.QtWidgets import (QApplication, QDockWidget, QLabel, QMainWindow, QPushButton, QScrollArea, QStyle,
                               QTabBar, QVBoxLayout, QWidget)

from ..core.ground import appinfo, figures, paths
from ..core.ground.capabilities import Capabilities
from ..core.ground.config import TrainConfig
from ..core.ground.errors import WorkbenchError
from ..core.ground.progress import Progress
from .dialogs.about import app_icon, show_about
from .settings import migrate_settings, open_settings
from .window_settings import restore_window, save_window
from .window_state import WindowState

if TYPE_CHECKING:
    from ..core.run.client import KernelClient
    from ..core.run.remote.ssh import Remote

DEFAULT_SIZE = (1400, 880)
FRAME_ALLOWANCE = 32  # the window manager's title bar, which availableGeometry() does not leave out
BOTTOM_SHARE = 0.2  # of the window's height for the Log/Runs docks
SIDE_SHARE = 0.25  # of its width for each side's docks


def scrolled(widget: QWidget, min_width: int = 0) -> QScrollArea:
    """A dock's content that scrolls vertically rather than forcing the window taller than a small screen."""
    scroll = QScrollArea()
    scroll.setWidget(widget)
    scroll.setWidgetResizable(True)
    scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
    scroll.setMinimumWidth(min_width)
    return scroll


def _dock_of(widget: QWidget | None) -> QDockWidget | None:
    """The dock `widget` is in, if any."""
    while widget is not None and not isinstance(widget, QDockWidget):
        widget = widget.parentWidget()
    return widget


def _starting_text() -> QLabel:
    """What a staged window shows until its panels are built."""
    label = QLabel("Starting Workbench: building the panels; PyTorch starts next…")
    label.setObjectName("startingText")
    label.setAlignment(Qt.AlignCenter)
    return label


class MainWindow(QMainWindow):

    def __init__(self, runs_dir: Path | None = None, db: Path | None = None, *, prestart: bool = True,
                 kernel: KernelClient | None = None, staged: bool = False, remote: Remote | None = None):
        """`staged` (the app's own window): the window paints at once, saying what it is waiting for, and builds
        its panels and starts its kernels only once it has painted. Built in one go, a window was mapped but
        blank for seconds (the panels took ~1 s to build, and the kernels starting beside it importing torch took
        the CPU the window needed to paint). Tests build in one go: the window is whole when constructed.
        `remote` (`workbench --host`): once built, the window connects to that host (Kernel → Connect to…, its
        dialog open and connecting, so that a failure is said there and the address can be corrected)."""
        super().__init__()
        self.setWindowTitle(appinfo.DISPLAY_NAME)
        self.setWindowIcon(app_icon())
        self.setObjectName("mainWindow")
        self.runs_dir, self.db = runs_dir, db
        self.state = WindowState()
        self.docks: dict[str, QDockWidget] = {}  # none until built
        self.docks_to_size = False  # a first window sizes its docks when shown (fit_to_screen)
        settings = open_settings()
        migrate_settings(settings)
        self._build_later: Callable[[], None] | None = None
        if staged:
            self.setCentralWidget(_starting_text())
            self.restore_geometry(settings)
            self._build_later = lambda: self._build(settings, prestart, kernel, remote)
        else:
            self._build(settings, prestart, kernel, remote)

    def _build(self, settings: QSettings, prestart: bool, kernel: KernelClient | None, remote: Remote | None) -> None:
        """The panels, the features that drive them and the kernels (a shared `kernel` client, or a new one).
        Their modules (pyqtgraph's among them) are imported here, not at the top: a staged window paints first.
        The kernels start first: their torch import (seconds) runs beside the panels' building."""
        from .support.garbage import collect_on_gui_thread
        from .features.kernel import Kernel
        from .features.run_control import RunControl
        from .support.tasks import Tasks

        collect_on_gui_thread()  # before any thread of this window can free a Qt object
        self.tasks = Tasks(self)
        self.kernel = Kernel(self.tasks, kernel, self)
        self.kernel.stateChanged.connect(self._kernel_state)
        self.kernel.capabilitiesChanged.connect(self._capabilities)
        self.kernel.notice.connect(lambda text: self.log.add("warning", text))
        self.runner = RunControl(self.tasks, self, prestart=prestart)
        self.runner.notice.connect(lambda text: self.log.add("warning", text))

        from .features.feedback import Banner
        from .panels.compile.compile import CompilePanel
        from .panels.dataset import DatasetPanel
        from .panels.evaluate import EvaluatePanel
        from .panels.log import LogPanel
        from .panels.layers.layers import ModelPanel
        from .panels.plots.plots import PlotsPanel
        from .panels.predict import PredictPanel
        from .panels.profile.profile import ProfilePanel
        from .panels.runs.runs import RunsPanel
        from .panels.setup import SetupPanel

        self.plots, self.banner = PlotsPanel(), Banner()
        central = QWidget()
        layout = QVBoxLayout(central)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.banner)
        layout.addWidget(self.plots, 1)
        self.setCentralWidget(central)
        self.setup, self.compile_panel, self.profile = SetupPanel(), CompilePanel(), ProfilePanel()
        self.model_panel = ModelPanel()
        self.predict, self.evaluation, self.dataset = PredictPanel(self.tasks), EvaluatePanel(), DatasetPanel()
        self.log, self.runs = LogPanel(), RunsPanel(self.tasks, self.db)
        self._build_features()
        self.docks = {
            "setup": self._dock("Setup", scrolled(self.setup, min_width=330), Qt.LeftDockWidgetArea),
            "compile": self._dock("Compile", self.compile_panel, Qt.RightDockWidgetArea),
            "profile": self._dock("Profile", self.profile, Qt.RightDockWidgetArea),
            "predict": self._dock("Predict", scrolled(self.predict), Qt.RightDockWidgetArea),
            "evaluate": self._dock("Evaluate", self.evaluation, Qt.RightDockWidgetArea),
            "dataset": self._dock("Dataset", self.dataset, Qt.RightDockWidgetArea),
            "log": self._dock("Log", self.log, Qt.BottomDockWidgetArea),
            "runs": self._dock("Runs", self.runs, Qt.BottomDockWidgetArea),
            # Last, with its Alt+9: the docks before it keep the shortcuts they had.
            "model": self._dock("Model", self.model_panel, Qt.RightDockWidgetArea),
        }
        # The right docks (Compile, Evaluate, Profile…: the dense panels) take the window's full height; the Log and
        # Runs run under the plots and the form. At 1366×768 under the Log the matrix showed 4 of its 10 rows.
        self.setCorner(Qt.BottomRightCorner, Qt.RightDockWidgetArea)
        self.tabifyDockWidget(self.docks["log"], self.docks["runs"])
        self.docks["log"].raise_()
        self.docks["runs"].visibilityChanged.connect(self._fit_runs_dock)
        for name in ("profile", "predict", "evaluate", "dataset", "model"):
            self.tabifyDockWidget(self.docks["compile"], self.docks[name])
        self.docks["dataset"].visibilityChanged.connect(self.data_insight.dataset_visible)
        self.docks["compile"].raise_()

        self._build_actions()
        self._build_status_bar()
        restore_window(self, settings)
        self._update_actions()
        self.runs.refresh()
        hints = QGuiApplication.styleHints()
        hints.colorSchemeChanged.connect(self.apply_colour_scheme)
        self.apply_colour_scheme(hints.colorScheme())
        if self.kernel.capabilities.known:  # a kernel that was ready before this window (shared in tests)
            self._capabilities(self.kernel.capabilities)
        else:
            self._kernel_state(self.kernel.state, "")
        if self.isVisible():  # a staged window, built after its first paint: size its docks once laid out
            QTimer.singleShot(0, self, self._size_docks)
        if remote is not None:
            self.hosts.open_connect(remote)

    def focusNextPrevChild(self, next: bool) -> bool:
        """Tab and Shift+Tab pass over the widgets of docks behind another dock's tab: Qt moves such a dock off the
        window but keeps it "visible", so the focus landed where nobody could see it (16 stops). The docks' tabs
        stay Tab stops, and Alt+1…9 raise a dock."""
        for _ in range(len(self.findChildren(QWidget))):  # each widget at most once: never round and round
            if not super().focusNextPrevChild(next):
                return False
            dock = _dock_of(QApplication.focusWidget())
            if dock is None or not dock.visibleRegion().isEmpty():
                return True
        return True

    def paintEvent(self, event) -> None:
        super().paintEvent(event)
        if self._build_later is not None:  # a staged window's first paint: build once it is on the screen
            build, self._build_later = self._build_later, None
            QTimer.singleShot(0, self, lambda: self.isVisible() and build())  # not when closed meanwhile

    # -- construction -------------------------------------------------------------------------------------------
    def _build_features(self) -> None:
        """Each feature with what it drives, and the panels' requests to them."""
        from .features.alerts import Alerts
        from .features.checkpoints import Checkpoints
        from .commands import go_to_dock
        from .features.compile_insight import CompileInsight
        from .features.data_insight import DataInsight
        from .features.exports import Exports
        from .features.feedback import Feedback
        from .features.hosts import Hosts
        from .support.notify import Notifier
        from .features.recorded_runs import RecordedRuns
        from .features.search import Search
        from .features.training import Training

        self.feedback = Feedback(self.banner, self.log, lambda text: self.state_label.setText(text),
                                 lambda: self.state_label.setText(self.training.status_text()))
        self.checkpoints = Checkpoints(self.kernel, self.state, self.feedback, self.predict, self,
                                       self._update_actions)
        self.exports = Exports(self.kernel, self.state, self.feedback, self.runs, self.checkpoints, self)
        self.data_insight = DataInsight(
            self.kernel, self.state, self.setup, self.evaluation, self.dataset, self.runs, self.checkpoints,
            show_evaluation=lambda: self.docks["evaluate"].raise_(),
            sizes_learned=lambda: self.compile_insight.update_forecast())
        self.compile_insight = CompileInsight(
            self.kernel, self.state, self.feedback, self.setup, self.compile_panel, config_for=self._config_for,
            show=lambda: self.docks["compile"].raise_(), preview=self.data_insight.preview,
            training=lambda: self.runner.training, changed=self._update_actions,
            profile=lambda: self.profile.report, window=self)
        self.search = Search(self.kernel, self.tasks, self.feedback, self.setup, lambda: self.plots.theme, self,
                             config_for=self._config_for, db=self.db, runs_dir=self.runs_dir,
                             trial_ended=self.runs.refresh, remote=lambda: self.runner.remote,
                             busy=lambda: "a run is training: wait for it to end, or stop it" if self.runner.training
                             else "")
        panels = (self.profile, self.compile_panel, self.model_panel)
        self.training = Training(self.runner, self.kernel, self.state, self.feedback, self.setup, self.plots, panels,
                                 self.runs, self.checkpoints, self, runs_dir=self.runs_dir, db=self.db,
                                 config_for=self._config_for, show_speed=lambda text: self.speed_label.setText(text),
                                 started=lambda: save_window(self), changed=self._update_actions)
        self.hosts = Hosts(self.kernel, self.runner, self.training, self.tasks, self.state, self.feedback,
                           self.predict, self, moved=self._moved, sweeping=lambda: self.search.sweeping,
                           runs_dir=self.runs_dir or paths.runs_dir())
        self.profile.locate = self.hosts.local_copy
        self.kernel.copying.connect(self._copying)
        self.recorded_runs = RecordedRuns(self.state, self.feedback, self.runs, self.plots, panels, self.checkpoints,
                                          training=lambda: self.runner.training,
                                          show_speed=lambda text: self.speed_label.setText(text))
        self.setup.changed.connect(self._update_actions)
        self.setup.changed.connect(self.compile_insight.update_forecast)
        self.compile_panel.explainRequested.connect(self.compile_insight.explain)
        self.compile_panel.fullgraphRequested.connect(self.compile_insight.check_fullgraph)
        self.compile_panel.numericsRequested.connect(self.compile_insight.compare_numerics)
        self.compile_panel.codeRequested.connect(self.compile_insight.show_code)
        self.compile_panel.settingRequested.connect(self.setup.set_value)
        self.compile_panel.tabs.currentChanged.connect(lambda _index: self.compile_insight.update_forecast())
        self.plots.timeline.stepClicked.connect(self.compile_insight.show_step)
        self.notifier = Notifier(self)
        self.alerts = Alerts(self.notifier, self.feedback, self.setup, self.model_panel, self.plots,
                             show_dock=lambda name: go_to_dock(self.docks[name]),
                             show_compile_step=self.compile_insight.show_step)
        self.runner.events.connect(self.alerts.add_events)
        self.training.runFinished.connect(self.alerts.run_ended)
        self.profile.profileRequested.connect(self.training.profile_now)
        self.runs.table.selectionModel().selectionChanged.connect(lambda *_: self._update_actions())
        self.runs.continueRequested.connect(self.training.continue_run)
        self.runs.cloneRequested.connect(self._new_run_from)
        self.runs.warmRequested.connect(lambda record: self._new_run_from(record, warm=True))
        self.runs.repeatRequested.connect(self.search.open_seeds)

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
        from .commands import PALETTE_SHORTCUT, SHORTCUTS_SHORTCUT, CommandPalette, ShortcutsDialog, add_dock_navigation
        from .support.notify import notifications_action

        self.train_action = self._action("Train", lambda: self.training.train(), "Ctrl+R", QStyle.SP_MediaPlay,
                                         "trainAction")
        self.train_tooltip = self.train_action.toolTip()
        self.shown_problem = ""  # the form's problem the status bar shows
        self.stop_action = self._action("Stop", self.training.stop, Qt.Key_Escape, QStyle.SP_MediaStop, "stopAction")
        self.explain_action = self._action("Explain compile", self.compile_insight.explain, "Ctrl+E", None,
                                           "explainAction")
        self.numerics_action = self._action("Compare numerics", self.compile_insight.compare_numerics,
                                            "Ctrl+Shift+D", None, "numericsAction")
        self.evaluate_action = self._action("Evaluate model", lambda: self.data_insight.evaluate(), "Ctrl+Shift+V",
                                            None, "evaluateAction")
        self.open_action = self._action("Open checkpoint…", self.checkpoints.choose, QKeySequence.Open,
                                        QStyle.SP_DialogOpenButton, "openCheckpointAction")
        self.export_action = self._action("Export checkpoint…", self.exports.choose_checkpoint_target,
                                          QKeySequence.Save, QStyle.SP_DialogSaveButton, "exportCheckpointAction")
        self.report_action = self._action("Export report…", self.exports.choose_report_target, "Ctrl+Shift+E", None,
                                          "exportReportAction")
        self.export_model_action = self._action("Export model…", self.exports.open_model_dialog, "Ctrl+Shift+M",
                                                None, "exportModelAction")
        self.lr_finder_action = self._action("Find learning rate…", lambda: self.search.open_finder("lr"), "Ctrl+L",
                                             None, "lrFinderAction")
        self.batch_finder_action = self._action("Find batch size…", lambda: self.search.open_finder("batch"),
                                                "Ctrl+B", None, "batchFinderAction")
        self.sweep_action = self._action("Sweep…", self.search.open_sweep, "Ctrl+Shift+W", None, "sweepAction")
        self.connect_action = self._action("Connect to…", lambda: self.hosts.open_connect(), "Ctrl+Shift+K", None,
                                           "connectAction")
        self.host_runs_action = self._action("Runs on this host…", lambda: self.hosts.list_runs(), None, None,
                                             "hostRunsAction")
        self.local_action = self._action("This computer", self.hosts.go_local, None, None, "thisComputerAction")
        quit_action = self._action("Quit", self.close, QKeySequence.Quit)
        about = self._action("About Workbench", lambda: show_about(self, self.kernel.capabilities), None, None,
                             "aboutAction")
        forget = self._action("Forget trusted model files…", self.checkpoints.forget_trusted, None, None,
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
        for action in (self.train_action, self.stop_action, self.explain_action, self.numerics_action,
                       self.evaluate_action, self.lr_finder_action, self.batch_finder_action, self.sweep_action):
            run_menu.addAction(action)
        kernel_menu = menu.addMenu("&Kernel")
        for action in (self.connect_action, self.host_runs_action, self.local_action):
            kernel_menu.addAction(action)
        view_menu = menu.addMenu("&View")
        for dock in self.docks.values():
            view_menu.addAction(dock.toggleViewAction())
        view_menu.addSeparator()
        add_dock_navigation(self, self.docks, view_menu)
        view_menu.addSeparator()
        self.notifications_action = notifications_action(self.notifier, self)
        view_menu.addAction(self.notifications_action)
        help_menu = menu.addMenu("&Help")
        help_menu.addAction(self._action("Command palette…", lambda: CommandPalette(self).exec(), PALETTE_SHORTCUT,
                                         None, "commandPaletteAction"))
        help_menu.addAction(self._action("Keyboard shortcuts", lambda: ShortcutsDialog(self).exec(),
                                         SHORTCUTS_SHORTCUT, None, "shortcutsAction"))
        help_menu.addAction(forget)
        help_menu.addAction(about)

    def _build_status_bar(self) -> None:
        self.device_label = QLabel("")
        self.device_label.setObjectName("statusDevice")
        self.kernel_label = QLabel("")
        self.kernel_label.setObjectName("statusKernel")
        self.host_label = QLabel("")
        self.host_label.setObjectName("statusHost")
        self.host_label.setTextFormat(Qt.PlainText)  # the host as the user typed it
        self.host_label.hide()  # on this computer: nothing extra
        self.state_label = QLabel("Idle")
        self.state_label.setObjectName("statusState")
        self.state_label.setTextFormat(Qt.PlainText)  # a form problem quotes the user's values
        self.speed_label = QLabel("")
        self.speed_label.setObjectName("statusSpeed")
        self.speed_label.setToolTip(figures.SAMPLES_PER_S.method)
        self.problem_button = QPushButton("Show")
        self.problem_button.setObjectName("showProblemButton")
        self.problem_button.setToolTip("Scroll the Setup panel to the setting that stops Train")
        self.problem_button.clicked.connect(self.setup.focus_problem)
        self.problem_button.hide()
        bar = self.statusBar()
        bar.addWidget(self.state_label)
        bar.addWidget(self.problem_button)  # right after the problem it shows
        bar.addWidget(QWidget(), 1)
        for widget in (self.speed_label, self.device_label, self.kernel_label, self.host_label):
            bar.addPermanentWidget(widget)

    def apply_colour_scheme(self, scheme: Qt.ColorScheme) -> None:
        """Follow the desktop's light or dark scheme (Qt ≥ 6.5): the widgets follow the palette by themselves;
        the plots and the banner pick their colours here."""
        from .panels.plots.style import DARK, LIGHT, style_plot

        dark = scheme == Qt.ColorScheme.Dark
        self.plots.set_dark(dark)
        self.profile.set_dark(dark)
        self.model_panel.set_dark(dark)
        for chart in (self.predict.chart, self.dataset.chart):
            style_plot(chart, DARK if dark else LIGHT)
        self.banner.set_dark(dark)

    # -- the kernel ---------------------------------------------------------------------------------------------
    def _kernel_state(self, state: str, detail: str) -> None:
        """The status bar always says whether PyTorch is there; a kernel that died is a message, not a crash."""
        self.kernel_label.setText(self.state.kernel_label(state, self.kernel.capabilities))
        if state == "crashed":
            self.feedback.show("warning", f"The PyTorch kernel stopped unexpectedly: {detail}. It is being "
                                          "restarted; the window and your runs are unaffected.")
            self.feedback.note("warning", f"PyTorch kernel stopped: {detail}; restarting it")
        elif state == "failed":
            again = ("connect again (Kernel → Connect to…) or use This computer" if self.hosts.remote is not None
                     else "restart Workbench")
            self.feedback.show("error", f"The PyTorch kernel keeps failing: {detail}. Explain, Predict and exports "
                                        f"need it; {again}.")
            self.feedback.note("error", f"PyTorch kernel down: {detail}")
        self._update_actions()

    def _capabilities(self, caps: Capabilities) -> None:
        first = self.device_label.text() == ""
        self.setup.set_capabilities(caps)
        self.device_label.setText(caps.device_label())
        self.kernel_label.setText(f"torch {caps.torch_version}")
        if first:
            host = self.hosts.host_text()
            where = f" of {host}" if host else ""
            self.log.add("info", f"Workbench ready on {caps.device_label()}{where} · torch {caps.torch_version}")
        self.training.kernel_ready()
        self._update_actions()

    def _new_run_from(self, record, warm: bool = False) -> None:
        """Runs dock → New run from this…: the run's settings in the form, which says it derives from the run
        until they are edited away; Train then starts a new run (not a continuation). `warm` (Warm start from
        this…): the new run loads the run's compile cache before it compiles; a run without one is refused when
        Train starts it, saying why (history.warm_starts.warm_source: no reading of run folders on the GUI thread)."""
        from ..core.history.curves import run_name

        name = run_name(record.id)
        try:
            config = TrainConfig.from_dict({**record.config, "resume": None, "warm_from": record.id if warm else None})
        except WorkbenchError as exc:
            self.feedback.show("error", f"{name}'s settings cannot be used here: {exc}")
            return
        label = name + (f" ({record.name})" if record.name else "") + (", warm from its compile cache" if warm else "")
        self.setup.set_derived(config, label)
        self.docks["setup"].raise_()
        self.feedback.note("info", f"the settings of {label} are in the form: edit them, then Train")

    def _copying(self, text: str, whole: bool) -> None:
        """A file on its way to or from the host, in the status line; a whole one leaves it to the job's own."""
        if whole:
            self.feedback.settled()
        else:
            self.feedback.busy(f"{text[:1].upper()}{text[1:]} · {self.hosts.host_text()}")

    def _moved(self) -> None:
        """The kernels have moved (Kernel → Connect to… / This computer): the status bar and the title say where,
        the device is said again once the new kernel has answered."""
        host = self.hosts.host_text()
        self.host_label.setText(f"on {host}" if host else "")
        self.host_label.setVisible(bool(host))
        self.setWindowTitle(f"{appinfo.DISPLAY_NAME} — {host}" if host else appinfo.DISPLAY_NAME)
        self.device_label.setText("")
        self._kernel_state(self.kernel.state, "")

    @property
    def progress(self) -> Progress:
        return self.training.progress

    def _config_for(self, action: str) -> TrainConfig | None:
        """The form's config, or None with the reason shown (the actions are disabled then, but shortcuts race)."""
        from .panels.setup import form_text

        try:
            return self.setup.config()
        except WorkbenchError as exc:
            self.feedback.show("error", f"Cannot {action}: {form_text(exc)}")
            return None

    # -- state ----------------------------------------------------------------------------------------------------
    @property
    def busy(self) -> bool:
        """A run is alive or waiting for PyTorch, or Explain is out: the form and Train wait."""
        return self.runner.training or self.state.train_waiting or self.compile_insight.busy

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
        self.stop_action.setEnabled(self.runner.training or self.state.train_waiting)
        self.profile.set_running(self.runner.profilable)
        self.explain_action.setEnabled(not busy and valid)
        self.numerics_action.setEnabled(not busy and valid)
        self.compile_panel.explain_button.setEnabled(not busy and valid)
        self.compile_panel.numerics_button.setEnabled(not busy and valid)
        self.setup.setEnabled(not busy)
        has_model = self.state.model is not None
        self.export_action.setEnabled(has_model and not busy)
        self.export_model_action.setEnabled(has_model and not busy)
        self.report_action.setEnabled(not busy and (self.state.last_run_dir is not None
                                                    or bool(self.runs.selected_ids())))
        connected = self.hosts.remote is not None
        self.host_runs_action.setEnabled(connected)
        self.local_action.setEnabled(connected)

    def restore_geometry(self, settings: QSettings) -> None:
        """Where and how large the user left the window, else fit to the screen."""
        geometry = settings.value("geometry")
        if geometry is None or not self.restoreGeometry(geometry):
            self.fit_to_screen()

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
        self._size_docks()

    def _size_docks(self) -> None:
        """A first window's docks take their shares of it, once it is shown and they exist."""
        if self.docks_to_size and self.docks:
            self.docks_to_size = False
            bottom = int(self.height() * BOTTOM_SHARE)
            if self._in_front(self.docks["runs"]):
                bottom = max(bottom, self._runs_height())
            self.resizeDocks([self.docks["log"]], [bottom], Qt.Vertical)
            side = int(self.width() * SIDE_SHARE)
            tabs = self._dock_tabs(self.docks["compile"])
            right = max(side, sum(tabs.tabSizeHint(i).width() for i in range(tabs.count())))  # not "Comp… Pro…"
            # What the right tabs need beyond their share comes from the Setup form's (down to its minimum).
            self.resizeDocks([self.docks["setup"], self.docks["compile"]], [2 * side - right, right], Qt.Horizontal)

    def _fit_runs_dock(self, visible: bool) -> None:
        """The Runs dock brought to the front grows to show its five runs (RunsPanel.sizeHint): its share at start
        (the Log's in front) left a 1366×768 window's 2, and that share keeps the plots their height until then.
        Measured once laid out: raised as the window opens, its height is not yet the one it will get."""
        if visible:
            QTimer.singleShot(0, self, self._grow_runs_dock)

    def _grow_runs_dock(self) -> None:
        dock = self.docks["runs"]
        if self._in_front(dock) and dock.height() < dock.sizeHint().height():
            self.resizeDocks([dock], [self._runs_height()], Qt.Vertical)

    def _runs_height(self) -> int:
        """The Runs dock's group's height for its five runs (resizeDocks sizes a tabbed group with its tab bar)."""
        return self.docks["runs"].sizeHint().height() + self._dock_tabs(self.docks["runs"]).sizeHint().height()

    def _in_front(self, dock: QDockWidget) -> bool:
        """`dock`'s tab is its group's current one (a tabbed dock behind another is still "visible" to Qt)."""
        tabs = self._dock_tabs(dock)
        return tabs.tabText(tabs.currentIndex()) == dock.windowTitle()

    def _dock_tabs(self, dock: QDockWidget) -> QTabBar:
        """The tab bar of `dock`'s tabified group: the dock areas' own tab bar with a tab for each of the group's
        docks (tabifying one dock at a time leaves Qt an unused "Compile, Profile" bar as well)."""
        tabs = len(self.tabifiedDockWidgets(dock)) + 1
        return next(bar for bar in self.findChildren(QTabBar, options=Qt.FindDirectChildrenOnly)
                    if bar.count() == tabs and dock.windowTitle() in (bar.tabText(i) for i in range(tabs)))

    def closeEvent(self, event) -> None:
        """Closing during a run or a sweep stops it cleanly first (the checkpoint of what was trained is still
        written; the sweep's stopped trial runs again when it is resumed)."""
        if not self.docks:  # closed before it was built: nothing started, nothing to save
            event.accept()
            return
        leave = False  # a run on a host: left training there, or stopped, as the user answers
        if self.runner.training and self.runner.remote is not None and not self.runner.closing:
            leave = self.hosts.ask_to_close()
            if leave is None:
                event.ignore()
                return
        self.runs.flush_edits()  # a name, tags or a note still being typed are written before anything closes
        save_window(self)
        sweeping = self.search.stop_sweep()  # tasks.wait() below waits for it
        if self.runner.training or sweeping:
            self.hide()  # the run stops within a step (longer while compiling); no frozen window meanwhile
        if not self.runner.shutdown(leave=leave):
            QTimer.singleShot(0, self.close)  # still compiling: try again, never kill the thread mid-step
            event.ignore()
            return
        self.kernel.close()  # jobs still waiting on it end now
        self.tasks.wait()  # a report being written finishes its atomic write
        self.runs.close_store()
        event.accept()
