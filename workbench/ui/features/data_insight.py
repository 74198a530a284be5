"""What the data and a trained model look like: the Dataset dock's preview of the form's dataset (before any run),
and the Evaluate dock's scores of a model on its split. Both are kernel jobs; a preview also tells the window the
dataset's split sizes, which the What-if forecast needs."""

from __future__ import annotations

from typing import Callable

from PySide6.QtCore import QObject, QTimer, Signal

from ...core.ground.answers import DatasetPreview, EvaluationView
from ...core.ground.errors import WorkbenchError, with_hint
from ...core.history.naming import run_name
from ..actions import ActionSpec
from ..window_state import LOCAL_DATASETS, DataChoice, EvaluationTarget
from .checkpoints import Checkpoints
from .parts import WindowParts

EVALUATING, PREVIEWING = "evaluating", "previewing a dataset"  # task slots: a newer ask supersedes an older one
PREVIEW_DELAY_MS = 400  # a dataset choice (or data folder) this long unchanged is previewed


class DataInsight(QObject):
    # For tests and scripts, each job's outcome once shown
    evaluationFinished = Signal(object)  # an EvaluationView, or the error that stopped it
    datasetPreviewed = Signal(object)  # a DatasetPreview, or the error that stopped it

    def __init__(self, parts: WindowParts, checkpoints: Checkpoints, *, sizes_learned: Callable[[], None]):
        """`sizes_learned()`: a preview brought split sizes."""
        panels = parts.panels
        super().__init__(panels.dataset)
        self.kernel, self.state, self.setup = parts.kernel, parts.state, panels.setup
        self.evaluation, self.dataset, self.runs, self.checkpoints = panels.evaluation, panels.dataset, panels.runs, \
            checkpoints
        self.show_evaluation, self.sizes_learned = lambda: parts.show_dock("evaluate"), sizes_learned
        self.dataset_shown = False  # the Dataset tab is the one on show (isVisible() lags visibilityChanged)
        self.previewed_choice: DataChoice | None = None  # what the Dataset dock shows
        self.preview_timer = QTimer(self)
        self.preview_timer.setSingleShot(True)
        self.preview_timer.setInterval(PREVIEW_DELAY_MS)
        self.preview_timer.timeout.connect(self._preview_if_changed)
        self.evaluation.evaluateRequested.connect(self.evaluate)
        checkpoints.checkpointLoaded.connect(lambda _answer: self.show_target())
        self.runs.table.selectionModel().selectionChanged.connect(lambda *_: self.show_target())
        self.dataset.refreshRequested.connect(self.preview)
        self.setup.changed.connect(self.preview_timer.start)  # soon: typing a folder name is one change per key

    # -- Evaluate -------------------------------------------------------------------------------------------------
    def target(self) -> EvaluationTarget | None:
        """The run selected in the Runs dock, else the model Predict uses; None when there is none."""
        return self.state.evaluation_target(self._selected_run())

    def show_target(self) -> None:
        """The Evaluate dock says what it would score (the selected run, else the loaded model)."""
        target = self.target()
        self.evaluation.set_target(target.description if target is not None else None)

    def _selected_run(self) -> EvaluationTarget | None:
        ids = self.runs.selected_ids()
        if len(ids) != 1 or self.runs.store is None:
            return None
        try:
            record = self.runs.store.get(ids[0])
        except WorkbenchError:
            return None
        return EvaluationTarget(record.checkpoint, run_name(record.id), False) if record.checkpoint else None

    def actions(self) -> tuple[ActionSpec, ...]:
        return (ActionSpec("evaluate", "Evaluate model", lambda: self.evaluate(), "Run", 50, "Ctrl+Shift+V",
                           name="evaluateAction"),)

    def evaluate(self, target: EvaluationTarget | None = None) -> bool:
        """Score a model on its dataset's test (else validation) split in the service kernel; the Evaluate dock
        shows the result. False: there is no model to evaluate."""
        target = target or self.target()
        if target is None:
            self.evaluation.set_error("Nothing to evaluate yet: train a run, select one in the Runs dock, or open "
                                      "a checkpoint (File → Open checkpoint…).")
            return False
        self.evaluation.set_busy(f"Evaluating {target.description}…")
        self.show_evaluation()
        self.kernel.ask(EVALUATING,
                        self.kernel.service.evaluate_view(target.checkpoint, trust_model_code=target.trusted),
                        lambda view: self._evaluated(view, target), lambda error: self._not_evaluated(error, target))
        return True

    def _evaluated(self, view: EvaluationView, target: EvaluationTarget) -> None:
        self.evaluation.set_result(view, target.description)
        self.evaluationFinished.emit(view)

    def _not_evaluated(self, error: BaseException, target: EvaluationTarget) -> None:
        trusted = EvaluationTarget(target.checkpoint, target.description, True)
        if self.checkpoints.retried_with_consent(error, target.trusted, lambda: self.evaluate(trusted)):
            return
        self.evaluation.set_error(f"Could not evaluate {target.description}: {with_hint(error)}")
        self.evaluationFinished.emit(error)

    # -- the dataset ----------------------------------------------------------------------------------------------
    def dataset_visible(self, visible: bool) -> None:
        self.dataset_shown = visible
        self.preview_timer.start()

    def _preview_if_changed(self) -> None:
        """Preview a local dataset (bundled, IDX, image folder) when the Dataset dock is on show and the choice
        has changed; the torchvision sets may download, so they wait for the Preview button."""
        if not self.dataset_shown or not self.kernel.capabilities.known:
            return
        choice = (self.setup.value("dataset"), self.setup.value("data_root"))
        if choice == self.previewed_choice:
            return
        if choice[0] in LOCAL_DATASETS:
            self.preview()
        else:
            self.previewed_choice = choice
            self.dataset.set_waiting(f"{choice[0]} is read by torchvision and may need a download first: press "
                                     f"Preview to read it.")

    def preview(self, choice: DataChoice | None = None) -> None:
        """A dataset (the form's when not given; valid or not: a preview is how a bad folder is found)."""
        dataset, data_root = self.previewed_choice = choice or (self.setup.value("dataset"),
                                                                self.setup.value("data_root"))
        self.dataset.set_busy(f"Reading {dataset}…")
        self.kernel.ask(PREVIEWING, self.kernel.service.preview_dataset(dataset, data_root), self._previewed,
                        self._not_previewed)

    def _previewed(self, preview: DatasetPreview) -> None:
        self.dataset.set_preview(preview)
        sizes = preview.split_sizes()
        if sizes is not None and self.previewed_choice is not None:
            self.state.split_sizes[self.previewed_choice] = sizes
            self.sizes_learned()
        self.datasetPreviewed.emit(preview)

    def _not_previewed(self, error: BaseException) -> None:
        self.dataset.set_error(f"Could not read the dataset: {error}")
        self.datasetPreviewed.emit(error)
