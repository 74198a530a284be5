"""The checkpoint the window has open, and the user's consent to model code.

Opening a checkpoint asks the kernel what it holds (read safely there); Predict then scores images with it, and
Evaluate and the exports use it. A checkpoint whose network is defined in a Python file opens only with the user's
consent to that very file (ModelConsent: same path, same content), remembered or asked for; a run this window has
just trained is its user's own choice, consented to and remembered. Every other feature that needs a model file
consented to (Evaluate, a report) asks here too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import QMessageBox, QStyle

from ...core.ground.answers import CheckpointInfo
from ...core.ground.consent import ModelConsent
from ...core.run.protocol import NeedsConsent
from ..actions import ActionSpec
from ..support import file_dialogs
from ..window_state import LoadedModel
from .parts import WindowParts

OPENING = "opening a checkpoint"  # the task slot: a newer Open supersedes an older one's answer


class Checkpoints(QObject):
    # For tests and scripts: how an Open went, once the window has shown it (a CheckpointInfo, or the error)
    checkpointLoaded = Signal(object)

    def __init__(self, parts: WindowParts):
        super().__init__(parts.window)
        self.kernel, self.state, self.feedback, self.predict = parts.kernel, parts.state, parts.feedback, \
            parts.panels.predict
        self.window, self.changed = parts.window, parts.changed

    def actions(self) -> tuple[ActionSpec, ...]:
        return (ActionSpec("open_checkpoint", "Open checkpoint…", self.choose, "File", 10, QKeySequence.Open,
                           QStyle.SP_DialogOpenButton, toolbar=200, name="openCheckpointAction"),
                ActionSpec("forget_trusted", "Forget trusted model files…", self.forget_trusted, "Help", 30,
                           name="forgetTrustedModelsAction"))

    def choose(self) -> None:
        path = file_dialogs.open_file(self.window, "checkpoint", "Open checkpoint",
                                      "Workbench checkpoints (*.pt);;All files (*)")
        if path:
            self.load(path, Path(path).name)

    def load(self, path: str | Path, description: str, *, trust_model_code: bool = False,
             own_run: bool = False) -> None:
        """Ask the kernel what the checkpoint holds; checkpointLoaded says how it went. `own_run`: a run this
        window has just trained, whose model file the user chose: consent given, and remembered."""
        self.kernel.ask(OPENING, self.kernel.service.load_checkpoint(path, trust_model_code=trust_model_code),
                        lambda info: self._loaded(info, description, trust_model_code),
                        lambda error: self._refused(error, path, description, trust_model_code, own_run))

    def forget(self, why: str) -> None:
        """The model open for Predict, Evaluate and exports is no longer there (`why`: said in the Log): Predict says
        it has no model, and nothing is exported from a file that went."""
        model = self.state.model
        if model is None:
            return
        self.state.model = None
        self.predict.set_model(None, (), "")
        self.feedback.note("info", f"{model.description} {why}: open a checkpoint again to predict")
        self.changed()

    def _loaded(self, info: CheckpointInfo, description: str, trusted: bool) -> None:
        self.state.model = LoadedModel(info, description, trusted)
        self.predict.set_model(self._scorer(info.path, trusted), info.classes, self.state.model.label)
        self.feedback.note("info", f"model for prediction: {description}")
        self.changed()
        self.checkpointLoaded.emit(info)

    def _refused(self, error: BaseException, path, description: str, trusted: bool, own_run: bool) -> None:
        if self.retried_with_consent(error, trusted, lambda: self.load(path, description, trust_model_code=True),
                                     own_run):
            return
        if isinstance(error, NeedsConsent):
            self.feedback.show("warning", f"Checkpoint not opened: {error}")
        else:
            self.feedback.show("error", f"Cannot open checkpoint: {error}")
            self.feedback.note("error", f"cannot open checkpoint: {error}")
        self.changed()
        self.checkpointLoaded.emit(error)

    def _scorer(self, checkpoint_path: str, trusted: bool):
        """Images → probabilities, by the kernel (called on a pool thread: it waits for the answer)."""
        service = self.kernel.service

        def score(pixels):
            return service.predict(checkpoint_path, pixels, trust_model_code=trusted).result().probabilities

        return score

    # -- consent ------------------------------------------------------------------------------------------------
    def retried_with_consent(self, error: BaseException, trusted: bool, retry: Callable[[], None],
                             own_run: bool = False) -> bool:
        """A NeedsConsent error: with the user's consent to that model file — remembered, given now, or implied
        (`own_run`) — `retry` with trust and say True; False when there is none."""
        if not isinstance(error, NeedsConsent) or trusted:
            return False
        consent = ModelConsent()
        if not consent.is_trusted(error.model_spec):
            if not (own_run or self.confirm_model_code(error.model_spec)):
                return False
            self._remember(consent, error.model_spec)
        retry()
        return True

    def confirm_model_code(self, model_spec: str) -> bool:
        """Ask whether the user trusts the file of `model_spec` ("path/to/file.py:Class")."""
        answer = QMessageBox.question(
            self.window, "Import model code?",
            f"This checkpoint's network is defined in\n{model_spec.rpartition(':')[0]}\n\nOpening it imports and "
            f"runs that file. "
            f"Continue only if you trust it.", QMessageBox.Yes | QMessageBox.No, QMessageBox.No)
        return answer == QMessageBox.Yes

    def _remember(self, consent: ModelConsent, spec: str) -> None:
        """A config folder that cannot be written costs only the remembering (this time the file is trusted)."""
        try:
            consent.trust(spec)
        except OSError as exc:
            self.feedback.note("warning", f"cannot remember that {spec.rpartition(':')[0]} is trusted: {exc}")

    @staticmethod
    def all_trusted(model_specs: list[str]) -> bool:
        """Whether every user-defined model file among these specs has the user's remembered consent (False when
        none is one: the built-in network needs none)."""
        files = [spec for spec in model_specs if ":" in spec]
        consent = ModelConsent()
        return bool(files) and all(consent.is_trusted(spec) for spec in files)

    def forget_trusted(self) -> bool:
        """Help → Forget trusted model files…: after a confirm, every remembered consent is dropped (opening such a
        checkpoint asks again). False: nothing was forgotten."""
        consent = ModelConsent()
        files = consent.trusted()
        if not files:
            QMessageBox.information(self.window, "Trusted model files", "No model files are remembered as trusted.")
            return False
        shown = "\n".join(files[:10]) + (f"\n… and {len(files) - 10} more" if len(files) > 10 else "")
        answer = QMessageBox.question(
            self.window, "Forget trusted model files?",
            f"Workbench remembers that you trust these model files:\n{shown}\n\nForget them? Opening a checkpoint "
            f"that needs one asks again.", QMessageBox.Yes | QMessageBox.No, QMessageBox.No)
        if answer != QMessageBox.Yes:
            return False
        try:
            consent.clear()
        except OSError as exc:
            self.feedback.show("error", f"Cannot forget the trusted model files: {exc}")
            return False
        self.feedback.note("info", f"forgot {len(files)} trusted model file(s)")
        return True
