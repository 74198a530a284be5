import pytest


@pytest.fixture(autouse=True)
def _one_torch_thread(one_torch_thread):
    """See tests/conftest.py: fast, contention-proof CPU training."""
