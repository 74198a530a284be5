"""Shared fixtures for every test folder.

- Every test gets its own WORKBENCH_DATA_DIR / WORKBENCH_CACHE_DIR and XDG_DATA_HOME (the desktop trash a deleted
  run's folder goes to), so no test reads or writes the user's folders.
- Tests marked `cuda` are skipped when no CUDA device is usable.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .helpers import MNIST_TEST_DIR, PLANTED_BREAK, SAMPLES_DIR, TrainedRun


@pytest.fixture(autouse=True)
def _isolated_workbench_dirs(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path_factory.mktemp("wb-data")))
    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(tmp_path_factory.mktemp("wb-cache")))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path_factory.mktemp("xdg-data")))


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def pytest_collection_modifyitems(config, items):
    for item in items:  # end to end is the slow tier by definition: real CLI processes, torchrun, a built wheel
        if item.path.parent.name == "e2e":
            item.add_marker(pytest.mark.slow)
    cuda_items = [item for item in items if item.get_closest_marker("cuda")]
    if cuda_items and not _cuda_available():
        skip = pytest.mark.skip(reason="needs a CUDA device")
        for item in cuda_items:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def trained_run(tmp_path_factory) -> TrainedRun:
    """One run of the defaults for 2 epochs on the bundled sample (~91% right; a couple of seconds on one thread),
    trained and recorded once for the whole test run, for the tests that read a trained model, its files or its
    record (evaluate, predict, export, report, the kernel's jobs, the panels)."""
    import torch

    from workbench.core.ground.config import TrainConfig
    from workbench.core.ground.events import RunFinished
    from workbench.core.history.runs import RunStore
    from workbench.core.kernel.launch import start_run
    from workbench.core.run.run_request import Launch, RunRequest

    folder = tmp_path_factory.mktemp("trained-run")
    config = TrainConfig(epochs=2)
    request = RunRequest(config, out_dir=str(folder / "run"), db=str(folder / "runs.sqlite"),
                         launch=Launch(where="here"))
    events: list = []
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # see one_torch_thread
    try:
        with pytest.MonkeyPatch.context() as patch:  # its own folders, as every test gets (_isolated_workbench_dirs)
            patch.setenv("WORKBENCH_DATA_DIR", str(folder / "data"))
            patch.setenv("WORKBENCH_CACHE_DIR", str(folder / "cache"))
            result = start_run(request, events.append)
    finally:
        torch.set_num_threads(threads)
    assert isinstance(result, RunFinished) and not result.stopped, result
    with RunStore(request.db) as store:
        [record] = store.list()
    return TrainedRun(config=config, out_dir=folder / "run", checkpoint=folder / "run" / "checkpoint.pt",
                      db=folder / "runs.sqlite", run_id=record.id, events=tuple(events), result=result)


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


@pytest.fixture(scope="session")
def ssh_server(tmp_path_factory):
    """A real sshd on 127.0.0.1 with throw-away keys, for the whole test run (tests/support/sshd.py); skipped without
    OpenSSH's server (`make test` installs it where it can)."""
    from .support.sshd import SSHD, start_sshd

    if SSHD is None:
        pytest.skip("OpenSSH's sshd is not installed (apt-get install openssh-server)")
    server = start_sshd(tmp_path_factory.mktemp("sshd"))
    yield server
    server.stop()


@pytest.fixture(scope="session")
def loopback_hosts(tmp_path_factory):
    """Three "hosts": OpenSSH servers on 127.0.0.2, .3 and .4 (all of 127/8 is this machine), each with folders of
    its own, one ssh command for all (a shared user key and known_hosts: the first's ssh_command). The third's
    Python finds an older torch first (a planted dist-info): a version mismatch."""
    from .support.sshd import SSHD, start_sshd

    if SSHD is None:
        pytest.skip("OpenSSH's sshd is not installed (apt-get install openssh-server)")
    root = tmp_path_factory.mktemp("hosts")
    planted = root / "old-torch" / "torch-2.0.0.dist-info"
    planted.mkdir(parents=True)
    (planted / "METADATA").write_text("Metadata-Version: 2.1\nName: torch\nVersion: 2.0.0\n")
    first = start_sshd(root / "a", "127.0.0.2")
    servers = [first, start_sshd(root / "b", "127.0.0.3", keys=first.folder),
               start_sshd(root / "c", "127.0.0.4", keys=first.folder, python_path=planted.parent)]
    yield servers
    for server in servers:
        server.stop()


@pytest.fixture
def remote(ssh_server, monkeypatch):
    """The sshd's host as a Remote, reached with its own key and known_hosts (WORKBENCH_SSH)."""
    from workbench.core.run.remote.ssh import Remote

    monkeypatch.setenv("WORKBENCH_SSH", ssh_server.ssh_command)
    return Remote.parse(ssh_server.address, ssh_server.remote_python)
