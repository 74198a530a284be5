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
    from workbench.core.config import TrainConfig
    from workbench.core.engine import Trainer
    from workbench.core.events import RunFinished

    out = tmp_path_factory.mktemp("trained")
    result = Trainer(out_dir=out).run(TrainConfig(epochs=3), emit=lambda e: None)
    assert isinstance(result, RunFinished), result
    return out / "checkpoint.pt"


@pytest.fixture
def window(qtbot, tmp_path, one_torch_thread):
    """One intra-op thread here and in the training children (see one_torch_thread): runs that Stop must end
    within 2 s do not crawl behind OpenMP spinning on a loaded 2-core machine."""
    from workbench.ui.main_window import MainWindow

    win = MainWindow(runs_dir=tmp_path / "runs", db=tmp_path / "runs.sqlite", prestart=False)
    qtbot.addWidget(win)
    win.resize(1400, 880)
    win.show()
    qtbot.waitExposed(win)
    yield win
    win.host.shutdown()
    assert win.host.thread is None, "a worker thread outlived the test"


def set_config(window, **changes):
    """Put settings into the form the way a user would end up with them, through the panel's own API."""
    from workbench.core.config import TrainConfig

    window.setup.set_config(TrainConfig(**changes))
