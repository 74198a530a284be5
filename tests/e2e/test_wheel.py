"""The wheel is the product: it must carry every resource and run with no source tree anywhere near it."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    build = subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out),
                            str(REPO)], capture_output=True, text=True, timeout=600)
    assert build.returncode == 0, build.stderr[-2000:]
    [path] = out.glob("workbench-*.whl")
    return path


def test_the_wheel_carries_the_bundled_data_icons_samples_and_example(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for name in ("workbench/resources/mnist_sample/MNIST/raw/train-images-idx3-ubyte",
                 "workbench/resources/mnist_sample/MNIST/raw/t10k-labels-idx1-ubyte",
                 "workbench/resources/mnist_sample/ATTRIBUTION.md",
                 "workbench/resources/icons/workbench.svg", "workbench/resources/icons/workbench-256.png",
                 "workbench/resources/samples/digit_7.png", "workbench/resources/examples/planted_break.py"):
        assert name in names, name
    assert not any(name.startswith(("tests/", "scripts/")) for name in names)


def test_the_installed_wheel_runs_from_anywhere(wheel, tmp_path):
    site = tmp_path / "site"
    install = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(site),
                              str(wheel)], capture_output=True, text=True, timeout=600)
    assert install.returncode == 0, install.stderr
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    # The installed copy comes first on the path; nothing is imported from the repository.
    env = {**os.environ, "PYTHONPATH": str(site), "WORKBENCH_DATA_DIR": str(tmp_path / "data")}

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, *args], cwd=elsewhere, env=env, capture_output=True, text=True,
                              timeout=600)

    where = run("-c", "import workbench.core.data as d; print(d.__file__); print(d.resource_path('samples'))")
    assert where.returncode == 0, where.stderr
    module_file, samples = where.stdout.split()
    assert module_file.startswith(str(site)) and samples.startswith(str(site))
    from workbench import appinfo

    version = run("-m", "workbench", "--version")
    assert version.stdout.strip() == f"workbench {appinfo.version()}"
    train = run("-m", "workbench", "train", "--epochs", "1", "--out", "run", "--db", str(tmp_path / "runs.sqlite"))
    assert train.returncode == 0, train.stderr
    assert (elsewhere / "run" / "checkpoint.pt").is_file() and "val accuracy" in train.stdout
