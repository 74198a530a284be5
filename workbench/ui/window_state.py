"""What the window knows, as plain data: the model it has open, the run it trained last, the split sizes it has
seen, where a Train is waiting. Qt-free (napari's ViewerModel before its QtViewer): the rules that read this state
are tested without a widget, and the window's features share it instead of each other's attributes."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..core.ground.answers import CheckpointInfo
from ..core.ground.capabilities import Capabilities
from ..core.ground.figures import FINAL_VAL_ACCURACY

LOCAL_DATASETS = ("mnist-sample", "idx", "imagefolder")  # read without a download: previewed as soon as chosen
DataChoice = tuple[str, "str | None"]  # (dataset, data root)


@dataclass(frozen=True)
class LoadedModel:
    """The checkpoint open for Predict, Evaluate and exports: what the kernel said it holds, how the window names
    it, and whether its model file has the user's consent."""

    info: CheckpointInfo
    description: str
    trusted: bool

    @property
    def label(self) -> str:
        """How Predict and the export dialog name it: "last run (#7) · final val accuracy 93.30%" (the checkpoint's
        accuracy is its last epoch's, called so beside the headline's best)."""
        accuracy = self.info.val_accuracy
        return self.description + (f" · {FINAL_VAL_ACCURACY.name} {accuracy:.2%}" if accuracy is not None else "")


@dataclass(frozen=True)
class EvaluationTarget:
    """A checkpoint to evaluate, as the window names it."""

    checkpoint: str
    description: str
    trusted: bool


@dataclass
class WindowState:
    model: LoadedModel | None = None
    last_run_dir: Path | None = None  # the run this window trained last (reopened at the next launch)
    shown_run: int | None = None  # the run the plots and panels show (opened, or trained here); None: none known
    compared: tuple[int, ...] = ()  # the runs overlaid on the plots
    train_waiting: bool = False  # Train was pressed before PyTorch was ready: it starts when it is
    stopping: bool = False  # Stop was pressed: said until the run has ended
    kernel_restarting: bool = False  # the kernel died and a new one is starting
    split_sizes: dict[DataChoice, tuple[int, int]] = field(default_factory=dict)  # (train, val) images seen
    sizes_asked: set[DataChoice] = field(default_factory=set)  # previews asked for only to learn the sizes

    def kernel_label(self, state: str, capabilities: Capabilities) -> str:
        """The status bar's word on PyTorch: always whether it is there, never a crash. Also notes a restart (a
        'crashed' kernel) until the next is ready."""
        if state in ("crashed", "ready"):
            self.kernel_restarting = state == "crashed"
        starting = "PyTorch restarting…" if self.kernel_restarting else "Starting PyTorch…"
        return {"idle": starting, "starting": starting,
                "ready": f"torch {capabilities.torch_version}" if capabilities.known else "PyTorch ready",
                "crashed": "PyTorch restarting…", "failed": "PyTorch kernel down", "closed": ""}.get(state, state)

    def evaluation_target(self, selected: EvaluationTarget | None) -> EvaluationTarget | None:
        """What Evaluate scores: the run selected in the Runs dock, else the model Predict uses (the last run, a
        re-opened run, an opened checkpoint); None when there is none."""
        if selected is not None:
            return selected
        if self.model is not None:
            return EvaluationTarget(self.model.info.path, self.model.description, self.model.trusted)
        return None

    def takes_over(self, stopped: bool, val_accuracy: float | None) -> bool:
        """Whether a run this window just trained becomes the model Predict, Evaluate and exports use: a finished
        run always does; a stopped one only when no model is open or it is at least as accurate (a run stopped
        early must not quietly replace a better one)."""
        if not stopped or self.model is None:
            return True
        current = self.model.info.val_accuracy
        return current is None or (val_accuracy is not None and val_accuracy >= current)

    @staticmethod
    def report_run_ids(selected: list[int], last_run_id: int | None) -> list[int]:
        """What a report covers: the runs selected in the Runs dock, else the run trained last in this window."""
        return list(selected) or ([last_run_id] if last_run_id is not None else [])

    def sizes_to_ask(self, choice: DataChoice, kernel_ready: bool) -> bool:
        """Whether the What-if forecast should ask for a preview to learn `choice`'s split sizes: a local dataset
        not yet seen nor asked for (a torchvision set may download; it waits for its own Preview)."""
        if choice in self.split_sizes or choice in self.sizes_asked or choice[0] not in LOCAL_DATASETS:
            return False
        if kernel_ready:
            self.sizes_asked.add(choice)
        return kernel_ready
