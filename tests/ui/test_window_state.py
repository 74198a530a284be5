"""WindowState: what the window knows, and the rules that read it, tested without a widget (and without Qt)."""

import subprocess
import sys

from workbench.core.ground.answers import CheckpointInfo
from workbench.core.ground.capabilities import Capabilities
from workbench.core.ground.config import TrainConfig
from workbench.core.ground.results import RunResults
from workbench.ui.window_state import EvaluationTarget, LoadedModel, WindowState


def _model(path: str = "/runs/7/model.safetensors", trusted: bool = True,
           accuracy: float | None = None) -> LoadedModel:
    info = CheckpointInfo(path=path, config=TrainConfig(), results=RunResults(val_accuracy=accuracy),
                          classes=tuple("0123456789"), versions={})
    return LoadedModel(info=info, description="run #7", trusted=trusted)


def test_the_state_module_imports_without_qt():
    code = ("import sys; import workbench.ui.window_state; "
            "print(sorted(m for m in sys.modules if m.startswith(('PySide6', 'pyqtgraph', 'torch'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_kernel_label_says_restarting_after_a_crash_until_the_next_kernel_is_ready():
    state, unknown = WindowState(), Capabilities()
    assert state.kernel_label("starting", unknown) == "Starting PyTorch…"
    assert state.kernel_label("crashed", unknown) == "PyTorch restarting…"
    assert state.kernel_label("starting", unknown) == "PyTorch restarting…"  # the crash is remembered
    assert state.kernel_label("ready", unknown) == "PyTorch ready"
    assert state.kernel_label("starting", unknown) == "Starting PyTorch…"  # and forgotten once one is ready
    assert state.kernel_label("failed", unknown) == "PyTorch kernel down"
    assert state.kernel_label("closed", unknown) == ""


def test_the_kernel_label_names_the_torch_version_once_known():
    known = Capabilities(known=True, torch_version="2.14.1")
    assert WindowState().kernel_label("ready", known) == "torch 2.14.1"


def test_evaluate_scores_the_selected_run_before_the_open_model():
    state = WindowState()
    assert state.evaluation_target(None) is None  # nothing trained, nothing open: nothing to score
    state.model = _model(trusted=False)
    target = state.evaluation_target(None)
    assert target == EvaluationTarget("/runs/7/model.safetensors", "run #7", False)  # consent travels with it
    selected = EvaluationTarget("/runs/9/model.safetensors", "run #9", True)
    assert state.evaluation_target(selected) is selected


def test_a_report_covers_the_selected_runs_else_the_last_one_trained():
    assert WindowState.report_run_ids([3, 5], 8) == [3, 5]
    assert WindowState.report_run_ids([], 8) == [8]
    assert WindowState.report_run_ids([], None) == []


def test_split_sizes_are_asked_once_per_local_dataset_and_never_for_a_download():
    state = WindowState()
    sample = ("mnist-sample", None)
    assert not state.sizes_to_ask(sample, kernel_ready=False)  # no kernel yet: not asked, so asked later
    assert state.sizes_to_ask(sample, kernel_ready=True)
    assert not state.sizes_to_ask(sample, kernel_ready=True)  # already asked
    assert not state.sizes_to_ask(("mnist", None), kernel_ready=True)  # torchvision may download: waits
    folder = ("imagefolder", "/data/digits")
    state.split_sizes[folder] = (900, 100)
    assert not state.sizes_to_ask(folder, kernel_ready=True)  # already known


def test_a_stopped_run_replaces_the_open_model_only_when_it_is_at_least_as_good():
    state = WindowState()
    assert state.takes_over(stopped=True, val_accuracy=0.5)  # nothing open: the stopped run's model is better
    state.model = _model(accuracy=0.935)
    assert state.takes_over(stopped=False, val_accuracy=0.2)  # a finished run always becomes the model
    assert not state.takes_over(stopped=True, val_accuracy=0.673)
    assert not state.takes_over(stopped=True, val_accuracy=None)  # stopped before its first validation
    assert state.takes_over(stopped=True, val_accuracy=0.935)
    state.model = _model(accuracy=None)  # an open model of unknown accuracy is no reason to keep it
    assert state.takes_over(stopped=True, val_accuracy=None)
