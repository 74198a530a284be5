from __future__ import annotations


import pytest

from ..helpers import TrainStarter


@pytest.fixture(autouse=True)
def _one_torch_thread(one_torch_thread):
    """See tests/conftest.py: fast, contention-proof CPU training."""


@pytest.fixture
def start_train(tmp_path):
    """`start_train(*args)` starts `workbench train *args --db tmp_path/runs.sqlite` in a subprocess and returns
    (process, mark); every process of the run inherits WORKBENCH_TEST_MARK=mark. A test checks itself that nothing
    is left; when it fails or times out first, teardown SIGKILLs whatever the run left running (the CLI's own
    session, and the session its children get), so no training process outlives the test."""
    starter = TrainStarter(tmp_path / "runs.sqlite")
    yield starter.start
    starter.kill_leftovers()
