"""What the window lends its features, in one object: the services they share (the tasks' threads, the kernel, the
run in progress, what the window knows, how they speak to the user), its panels, and a few things only the window
can do (bring a dock forward, update what can be done now). A feature's constructor takes these and names only the
other features it works with, so a new feature, or a new panel, changes no other feature's constructor."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from PySide6.QtWidgets import QMainWindow

from ...core.ground.config import TrainConfig
from ...core.ground.errors import WorkbenchError
from ..window_state import WindowState

if TYPE_CHECKING:
    from ..panels.compile.compile import CompilePanel
    from ..panels.dataset import DatasetPanel
    from ..panels.evaluate import EvaluatePanel
    from ..panels.layers.layers import LayersPanel
    from ..panels.log import LogPanel
    from ..panels.plots.plots import PlotsPanel
    from ..panels.predict import PredictPanel
    from ..panels.queue import QueuePanel
    from ..panels.profile.profile import ProfilePanel
    from ..panels.runs.runs import RunsPanel
    from ..panels.setup import SetupPanel
    from ..support.notify import Notifier
    from ..support.tasks import Tasks
    from .feedback import Feedback
    from .kernel import Kernel
    from .run_control import RunControl


@dataclass(frozen=True)
class Panels:
    """The window's panels, one per dock (and the plots in its middle)."""

    setup: SetupPanel
    plots: PlotsPanel
    compile: CompilePanel
    profile: ProfilePanel
    layers: LayersPanel
    predict: PredictPanel
    evaluation: EvaluatePanel
    dataset: DatasetPanel
    log: LogPanel
    runs: RunsPanel
    queue: QueuePanel


@dataclass(frozen=True)
class WindowParts:
    window: QMainWindow  # dialogs' parent
    tasks: Tasks
    kernel: Kernel
    runner: RunControl  # the run the window trains, in a kernel process of its own
    state: WindowState
    feedback: Feedback
    panels: Panels
    runs_dir: Path | None  # where runs get their folders (None: the data folder's runs/)
    db: Path | None  # the run history (None: the default one)
    changed: Callable[[], None]  # what can be done now has changed: the window updates its actions
    show_dock: Callable[[str], None]  # a dock in front, by its key ("compile", "evaluate", …)
    focus_dock: Callable[[str], None]  # a dock in front with the focus in it (where a fix is to be made)
    show_speed: Callable[[str], None]  # the status bar's samples/s
    busy: Callable[[], bool]  # a run is alive or waiting for PyTorch, or Explain is out: the form waits
    kernel_moved: Callable[[], None]  # the kernels have moved (to a host or back): the window says where
    notifier: Notifier  # desktop notifications (the View menu turns them on and off)

    def config_for(self, action: str) -> TrainConfig | None:
        """The form's config, or None with the reason shown (the actions are disabled then, but shortcuts race)."""
        from ..support.form_errors import form_text

        try:
            return self.panels.setup.config()
        except WorkbenchError as exc:
            self.feedback.show("error", f"Cannot {action}: {form_text(exc)}")
            return None

    def form_ready(self) -> bool:
        """What most actions ask before they are offered: nothing is busy, and the form's settings can run."""
        return not self.busy() and not self.panels.setup.problem_text()
