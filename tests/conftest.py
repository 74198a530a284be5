"""Shared fixtures for every test folder.

- Every test gets its own WORKBENCH_DATA_DIR / WORKBENCH_CACHE_DIR, so no test reads or writes the user's folders.
- Tests marked `cuda` are skipped when no CUDA device is usable.
"""

from __future__ import annotations

from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
# The official MNIST test split (md5-checked), kept outside the repository and never bundled.
MNIST_TEST_DIR = REPO_ROOT.parent / "shared" / "data" / "mnist-test"
PLANTED_BREAK = REPO_ROOT / "resources" / "examples" / "planted_break.py"
SAMPLES_DIR = REPO_ROOT / "resources" / "samples"


@pytest.fixture(autouse=True)
def _isolated_workbench_dirs(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path_factory.mktemp("wb-data")))
    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(tmp_path_factory.mktemp("wb-cache")))


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def pytest_collection_modifyitems(config, items):
    cuda_items = [item for item in items if item.get_closest_marker("cuda")]
    if cuda_items and not _cuda_available():
        skip = pytest.mark.skip(reason="needs a CUDA device")
        for item in cuda_items:
            item.add_marker(skip)


@pytest.fixture
def cold_kernels(monkeypatch):
    """The kernels started from now on fork from a new fork server, still importing PyTorch, as at the app's
    launch (a kernel is otherwise ready in milliseconds): a changed variable that PyTorch could read at import
    gets a server of its own (see workbench/core/run/forkserver.py)."""
    import uuid

    monkeypatch.setenv("TESTS_COLD_KERNELS", uuid.uuid4().hex)


@pytest.fixture
def mnist_test_dir() -> Path:
    """The official MNIST test split; tests using it are skipped where it is absent."""
    if not (MNIST_TEST_DIR / "t10k-images-idx3-ubyte.gz").is_file():
        pytest.skip(f"official MNIST test split not present at {MNIST_TEST_DIR}")
    return MNIST_TEST_DIR


@pytest.fixture
def planted_break_spec() -> str:
    return f"{PLANTED_BREAK}:PlantedBreakNet"


@pytest.fixture
def samples_dir() -> Path:
    """The bundled sample digits digit_0.png … digit_9.png (28×28 MNIST validation images)."""
    return SAMPLES_DIR


@pytest.fixture
def planted_break_line() -> int:
    """1-based line number of the planted `print(` in planted_break.py, read from the file (never hard-coded)."""
    lines = PLANTED_BREAK.read_text(encoding="utf-8").splitlines()
    hits = [i for i, line in enumerate(lines, 1) if line.strip().startswith("print(")]
    assert len(hits) == 1, f"expected exactly one print( line in {PLANTED_BREAK}, found {hits}"
    return hits[0]


@pytest.fixture
def one_torch_thread(monkeypatch):
    """Train with one intra-op thread (restored afterwards), and tell child processes to do the same.

    The sandwich net's matrices are tiny: on a 2-core machine that is also running something else (another test
    suite, a GUI thread) OpenMP's spinning worker threads make a run 20-40× slower, while one thread is as fast
    as two on an idle machine. Thread count does not change what these tests check.
    """
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    yield
    torch.set_num_threads(before)


def processes_with_env(name: str, value: str) -> list[tuple[int, str]]:
    """(pid, RANK) of every live process, other than this one, whose environment has name=value. A variable set
    for a launch is inherited by every process it starts, so this finds whatever a run left behind."""
    import os

    needle = f"{name}={value}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            env = Path(f"/proc/{entry}/environ").read_bytes().split(b"\0")
            status = Path(f"/proc/{entry}/status").read_text()
        except OSError:
            continue
        if needle in env and "State:\tZ" not in status:
            rank = next((e.decode()[5:] for e in env if e.startswith(b"RANK=")), "")
            found.append((int(entry), rank))
    return found + forked_kernels_with_env(name, value)


def forked_kernels_with_env(name: str, value: str) -> list[tuple[int, str]]:
    """(pid, "") of the kernels this process forked (workbench/core/run/forkserver.py) that are still alive and
    were given name=value: /proc shows them with their fork server's environment, so the scan above misses them."""
    from workbench.core.run import forkserver

    return [(child.pid, "") for child in forkserver.live_children() if child.env.get(name) == value]
