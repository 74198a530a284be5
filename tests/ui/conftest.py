"""Fixtures for the pytest-qt tests: an isolated main window and a trained checkpoint to predict with."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


@pytest.fixture(autouse=True)
def _isolated_settings(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("WORKBENCH_CONFIG_DIR", str(tmp_path_factory.mktemp("wb-config")))


@pytest.fixture(scope="session")
def trained_checkpoint(tmp_path_factory):
    """A 3-epoch run on the bundled sample (about a second), shared by the tests that need a model."""
    from workbench.core.ground.config import TrainConfig
    from workbench.core.ground.events import RunFinished
    from workbench.core.run.launch import start_run
    from workbench.core.run.request import Launch, RunRequest

    out = tmp_path_factory.mktemp("trained")
    request = RunRequest(TrainConfig(epochs=3), out_dir=str(out), record=False, launch=Launch(where="here"))
    result = start_run(request, lambda event: None)
    assert isinstance(result, RunFinished), result
    return out / "checkpoint.pt"


@pytest.fixture(scope="session")
def kernel():
    """One service kernel for the whole UI suite (a kernel imports torch: seconds each on 2 cores). A window
    handed a kernel uses it and leaves it running when it closes."""
    from workbench.core.run.client import KernelClient

    client = KernelClient()
    yield client
    client.close()


@pytest.fixture
def window(qtbot, tmp_path, one_torch_thread, kernel):
    """One intra-op thread here and in the training children (see one_torch_thread): runs that Stop must end
    within 2 s do not crawl behind OpenMP spinning on a loaded 2-core machine."""
    from workbench.ui.main_window import MainWindow

    win = MainWindow(runs_dir=tmp_path / "runs", db=tmp_path / "runs.sqlite", prestart=False, kernel=kernel)
    qtbot.addWidget(win)
    win.resize(1400, 880)
    win.show()
    qtbot.waitExposed(win)
    qtbot.waitUntil(lambda: win.kernel.capabilities.known, timeout=120_000)  # PyTorch ready in the kernel
    yield win
    assert win.runner.shutdown()
    assert not win.runner.training, "a run outlived the test"


def set_config(window, **changes):
    """Put settings into the form the way a user would end up with them, through the panel's own API."""
    from workbench.core.ground.config import TrainConfig

    window.setup.set_config(TrainConfig(**changes))
