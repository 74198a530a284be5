"""Fixtures for the pytest-qt tests: an isolated main window and a trained checkpoint to predict with."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


@pytest.fixture(autouse=True)
def _isolated_settings(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("WORKBENCH_CONFIG_DIR", str(tmp_path_factory.mktemp("wb-config")))


@pytest.fixture
def trained_checkpoint(trained_run, tmp_path):
    """The shared trained run's checkpoint, copied into this test's folder: the window writes beside a checkpoint
    it opens (exports, reports), and no test may see another's leftovers."""
    import shutil

    folder = tmp_path / "trained"
    folder.mkdir()
    return Path(shutil.copy2(trained_run.checkpoint, folder / "checkpoint.pt"))


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


@pytest.fixture
def waiting_window(qtbot, tmp_path):
    """A window whose kernel never says PyTorch is ready: the form, its banner and the dialogs without a training
    process or a measurement."""
    import sys

    from workbench.core.run.client import KernelClient
    from workbench.ui.main_window import MainWindow

    starting = KernelClient([sys.executable, "-c", "import time; time.sleep(600)"])
    win = MainWindow(runs_dir=tmp_path / "runs", db=tmp_path / "runs.sqlite", prestart=False, kernel=starting)
    qtbot.addWidget(win)
    yield win
    win.close()
    starting.close()
