"""The main window: docks, toolbar, menus and status bar, and the wiring between them.

This process never imports torch. The window builds its panels and the features features/registry.py lists; it
does not own what they do. Each feature gets what the window lends it (WindowParts: the tasks, the kernel, the run
control, WindowState, Feedback, the panels), connects the panel signals it answers, and declares its actions
(actions.py), which the window puts in its menus and on its toolbar. Here: the kernel's state in the status bar,
what can be done now, the colour scheme, recorded runs' settings brought back to the form, and closing cleanly.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Callable

from PySide6.QtCore import QRect, QSettings, Qt, QTimer
from PySide6.QtGui import QGuiApplication, QKeySequence
from PySide6.QtWidgets import (QApplication, QDockWidget, QLabel, QMainWindow, QPushButton, QTabBar,
                               QVBoxLayout, QWidget)

from ..core.ground import appinfo, figures
from ..core.ground.capabilities import Capabilities
from ..core.ground.config import TrainConfig
from ..core.ground.errors import WorkbenchError
from ..core.ground.progress import Progress
from .actions import ActionSpec, build_actions, refresh_actions
from .dialogs.about import app_icon, show_about
from .dock_layout import DockLayout, dock_of, scrolled
from .support.wheel_guard import guard_wheels
from .settings import migrate_settings, open_settings
from .window_settings import restore_window, save_window
from .window_state import WindowState

if TYPE_CHECKING:
    from ..core.run.client import KernelClient
    from ..core.run.remote.ssh import Remote


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
        self.layout_docks = DockLayout(self, self.docks)
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
        from .panels.layers.layers import LayersPanel
        from .panels.plots.plots import PlotsPanel
        from .panels.predict import PredictPanel
        from .panels.queue import QueuePanel
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
        self.layers_panel = LayersPanel()
        self.predict, self.evaluation, self.dataset = PredictPanel(self.tasks), EvaluatePanel(), DatasetPanel()
        self.log, self.runs = LogPanel(), RunsPanel(self.tasks, self.db)
        self.queue_panel = QueuePanel()
        self._build_features()
        self.docks.update({
            "setup": self._dock("Setup", scrolled(self.setup, min_width=330), Qt.LeftDockWidgetArea),
            "compile": self._dock("Compile", self.compile_panel, Qt.RightDockWidgetArea),
            "profile": self._dock("Profile", self.profile, Qt.RightDockWidgetArea),
            "predict": self._dock("Predict", scrolled(self.predict), Qt.RightDockWidgetArea),
            "evaluate": self._dock("Evaluate", self.evaluation, Qt.RightDockWidgetArea),
            "dataset": self._dock("Dataset", self.dataset, Qt.RightDockWidgetArea),
            "log": self._dock("Log", self.log, Qt.BottomDockWidgetArea),
            "runs": self._dock("Runs", self.runs, Qt.BottomDockWidgetArea),
            # Last, with its Alt+9: the docks before it keep the shortcuts they had.
            "model": self._dock("Model", self.layers_panel, Qt.RightDockWidgetArea),
            "queue": self._dock("Queue", self.queue_panel, Qt.BottomDockWidgetArea),
        })
        # The right docks (Compile, Evaluate, Profile…: the dense panels) take the window's full height; the Log and
        # Runs run under the plots and the form. At 1366×768 under the Log the matrix showed 4 of its 10 rows.
        self.setCorner(Qt.BottomRightCorner, Qt.RightDockWidgetArea)
        self.tabifyDockWidget(self.docks["log"], self.docks["runs"])
        self.tabifyDockWidget(self.docks["runs"], self.docks["queue"])
        self.docks["log"].raise_()
        self.docks["runs"].visibilityChanged.connect(self.layout_docks.fit_runs_dock)
        for name in ("profile", "predict", "evaluate", "dataset", "model"):
            self.tabifyDockWidget(self.docks["compile"], self.docks[name])
        self.docks["dataset"].visibilityChanged.connect(self.data_insight.dataset_visible)
        self.docks["compile"].raise_()

        self._build_actions()
        self._build_status_bar()
        guard_wheels(self)  # every combo and spin box of every dock: the wheel needs its focus
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
            QTimer.singleShot(0, self, self.layout_docks.size_docks)
        if remote is not None:
            self.hosts.open_connect(remote)

    def focusNextPrevChild(self, next: bool) -> bool:
        """Tab and Shift+Tab pass over the widgets of docks behind another dock's tab: Qt moves such a dock off the
        window but keeps it "visible", so the focus landed where nobody could see it (16 stops). The docks' tabs
        stay Tab stops, and Alt+1…9 raise a dock."""
        for _ in range(len(self.findChildren(QWidget))):  # each widget at most once: never round and round
            if not super().focusNextPrevChild(next):
                return False
            dock = dock_of(QApplication.focusWidget())
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
        """Each feature of features/registry.py with what the window lends it (WindowParts), as window.<name>;
        then what the window itself answers: what can be done now, files copied to and from a host, new runs
        from a recorded one."""
        from .commands import go_to_dock
        from .features.feedback import Feedback
        from .features.parts import Panels, WindowParts
        from .features.registry import build_features
        from .support.notify import Notifier

        self.feedback = Feedback(self.banner, self.log, lambda text: self.state_label.setText(text),
                                 lambda: self.state_label.setText(self.training.status_text()))
        self.notifier = Notifier(self)
        panels = Panels(self.setup, self.plots, self.compile_panel, self.profile, self.layers_panel, self.predict,
                        self.evaluation, self.dataset, self.log, self.runs, self.queue_panel)
        parts = WindowParts(self, self.tasks, self.kernel, self.runner, self.state, self.feedback, panels,
                            self.runs_dir, self.db, changed=self._update_actions,
                            show_dock=lambda name: self.docks[name].raise_(),
                            focus_dock=lambda name: go_to_dock(self.docks[name]),
                            show_speed=lambda text: self.speed_label.setText(text), busy=lambda: self.busy,
                            kernel_moved=self._moved, notifier=self.notifier)
        self.features = build_features(parts)
        for name, feature in self.features.items():
            setattr(self, name, feature)
        self.kernel.copying.connect(self._copying)
        self.setup.changed.connect(self._update_actions)
        self.runs.table.selectionModel().selectionChanged.connect(lambda *_: self._update_actions())
        self.runs.cloneRequested.connect(self._new_run_from)
        self.runs.warmRequested.connect(lambda record: self._new_run_from(record, warm=True))

    def _dock(self, title: str, widget: QWidget, area) -> QDockWidget:
        dock = QDockWidget(title, self)
        dock.setObjectName(f"{title.lower()}Dock")
        dock.setWidget(widget)
        self.addDockWidget(area, dock)
        return dock

    def _own_actions(self) -> tuple[ActionSpec, ...]:
        """The window's own actions: quitting, the user guide, the command palette, the shortcuts list, About."""
        from .commands import PALETTE_SHORTCUT, SHORTCUTS_SHORTCUT, CommandPalette, ShortcutsDialog

        return (ActionSpec("quit", "Quit", self.close, "File", 100, QKeySequence.Quit),
                ActionSpec("user_guide", "User guide", self.open_guide, "Help", 5, QKeySequence.HelpContents,
                           name="userGuideAction", keywords="help manual documentation docs"),
                ActionSpec("command_palette", "Command palette…", lambda: CommandPalette(self).exec(), "Help", 10,
                           PALETTE_SHORTCUT, name="commandPaletteAction"),
                ActionSpec("shortcuts", "Keyboard shortcuts", lambda: ShortcutsDialog(self).exec(), "Help", 20,
                           SHORTCUTS_SHORTCUT, name="shortcutsAction"),
                ActionSpec("about", "About Workbench", lambda: show_about(self, self.kernel.capabilities), "Help",
                           40, name="aboutAction"))

    def open_guide(self) -> bool:
        """Help → User guide (F1): the guide shipped with the app, in the browser, offline; whether one opened it."""
        from PySide6.QtCore import QUrl
        from PySide6.QtGui import QDesktopServices

        from ..core.ground.resources import guide_index

        index = guide_index()
        if index is None:
            self.feedback.show("warning", "The user guide is not built in this checkout: `make docs` builds it "
                                          "(an installed Workbench carries it)")
            return False
        if not QDesktopServices.openUrl(QUrl.fromLocalFile(str(index))):
            self.feedback.show("warning", f"No browser opened the user guide: open {index} in one")
            return False
        self.feedback.note("info", f"opened the user guide ({index})")
        return True

    def _build_actions(self) -> None:
        """What every feature declares (its actions), in the menus and on the toolbar; the View menu is the
        window's: its docks, their shortcuts, desktop notifications."""
        from .commands import add_dock_navigation
        from .support.notify import notifications_action

        self.action_specs = tuple(spec for feature in self.features.values() if hasattr(feature, "actions")
                                  for spec in feature.actions()) + self._own_actions()
        self.named_actions, menus = build_actions(self, self.action_specs)
        self.train_tooltip = self.named_actions["train"].toolTip()
        self.shown_problem = ""  # the form's problem the status bar shows
        view_menu = menus["View"]
        for dock in self.docks.values():
            view_menu.addAction(dock.toggleViewAction())
        view_menu.addSeparator()
        add_dock_navigation(self, self.docks, view_menu)
        view_menu.addSeparator()
        self.notifications_action = notifications_action(self.notifier, self)
        view_menu.addAction(self.notifications_action)

    def _build_status_bar(self) -> None:
        def label(name: str, text: str = "") -> QLabel:
            widget = QLabel(text)
            widget.setObjectName(name)
            widget.setTextFormat(Qt.PlainText)  # a host as the user typed it, a form problem quoting their values
            return widget

        self.device_label, self.kernel_label, self.host_label = map(label, ("statusDevice", "statusKernel",
                                                                            "statusHost"))
        self.host_label.hide()  # on this computer: nothing extra
        self.state_label, self.speed_label = label("statusState", "Idle"), label("statusSpeed")
        self.speed_label.setToolTip(figures.SAMPLES_PER_S.method)
        self.problem_button = QPushButton("Show")
        self.problem_button.setObjectName("showProblemButton")
        self.problem_button.setToolTip("Scroll the Setup panel to the setting that stops Train")
        self.problem_button.clicked.connect(self.setup.focus_problem)
        self.problem_button.hide()
        bar = self.statusBar()
        for widget, stretch in ((self.state_label, 0), (self.problem_button, 0), (QWidget(), 1)):
            bar.addWidget(widget, stretch)  # the problem's button right after the problem it shows
        for widget in (self.speed_label, self.device_label, self.kernel_label, self.host_label):
            bar.addPermanentWidget(widget)

    def apply_colour_scheme(self, scheme: Qt.ColorScheme) -> None:
        """Follow the desktop's light or dark scheme (Qt ≥ 6.5): the widgets follow the palette by themselves;
        the plots and the banner pick their colours here."""
        from .panels.plots.style import DARK, LIGHT, style_plot

        dark = scheme == Qt.ColorScheme.Dark
        self.plots.set_dark(dark)
        self.profile.set_dark(dark)
        self.layers_panel.set_dark(dark)
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
        from ..core.history.naming import run_name

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

    # -- state ----------------------------------------------------------------------------------------------------
    @property
    def busy(self) -> bool:
        """A run is alive or waiting for PyTorch, or Explain is out: the form and Train wait."""
        return self.runner.training or self.state.train_waiting or self.compile_insight.busy

    def _update_actions(self) -> None:
        """What can be done now: each action as its feature declares, the form while nothing is busy, and the
        reason Train is off said where the user looks (its tooltip, the status bar)."""
        refresh_actions(self.action_specs, self.named_actions)
        for feature in self.features.values():
            if hasattr(feature, "refresh"):  # what it shows depends on what can be done now
                feature.refresh()
        busy = self.busy
        problem = self.setup.problem_text()
        train = self.named_actions["train"]
        train.setToolTip(f"Cannot train: {problem}" if problem else self.train_tooltip)
        if problem and not busy:  # the reason is said where the user looks, over whatever was there
            self.state_label.setText(f"⚠ Cannot train: {problem}")
        elif self.shown_problem and not problem:
            self.state_label.setText(self.progress.describe())
        self.shown_problem = problem
        self.problem_button.setVisible(bool(problem) and not busy)
        self.setup.setEnabled(not busy)

    def restore_geometry(self, settings: QSettings) -> None:
        """Where and how large the user left the window, else fit to the screen."""
        geometry = settings.value("geometry")
        if geometry is None or not self.restoreGeometry(geometry):
            self.fit_to_screen()

    def fit_to_screen(self, screen: QRect | None = None) -> None:
        self.layout_docks.fit_to_screen(screen)

    def showEvent(self, event) -> None:
        super().showEvent(event)
        self.layout_docks.size_docks()

    def childEvent(self, event) -> None:
        super().childEvent(event)
        if event.added() and hasattr(self, "layout_docks"):  # perhaps a dock group's new tab bar
            self.layout_docks.whole_soon.start()

    def _dock_tabs(self, dock: QDockWidget) -> QTabBar:
        return self.layout_docks.dock_tabs(dock)

    def closeEvent(self, event) -> None:
        """Closing during a run stops it cleanly first (the checkpoint of what was trained is still written); work
        queued (a sweep's trials and the seeds too) is kept working in the background, paused or cancelled, as the
        user answers."""
        if not self.docks:  # closed before it was built: nothing started, nothing to save
            event.accept()
            return
        leave = False  # a run on a host: left training there, or stopped, as the user answers
        if self.runner.training and self.runner.remote is not None and not self.runner.closing:
            leave = self.hosts.ask_to_close()
            if leave is None:
                event.ignore()
                return
        if not self.runner.closing and not self.queue.ask_to_close():  # work queued: go on, pause or cancel it
            event.ignore()
            return
        self.runs.flush_edits()  # a name, tags or a note still being typed are written before anything closes
        save_window(self)
        if self.runner.training:
            self.hide()  # the run stops within a step (longer while compiling); no frozen window meanwhile
        if not self.runner.shutdown(leave=leave):
            QTimer.singleShot(0, self.close)  # still compiling: try again, never kill the thread mid-step
            event.ignore()
            return
        self.kernel.close()  # jobs still waiting on it end now
        self.queue.closing()  # a host's run being taken back is left there; the sweep's study told
        self.tasks.wait()  # a report being written finishes its atomic write
        self.runs.close_store()
        self.queue.close()
        event.accept()
