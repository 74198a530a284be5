"""The wheel is the product: it must carry every resource and run with no source tree anywhere near it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
RESOURCES = REPO / "resources"  # the top-level folder, installed as the package workbench.resources


def _pyproject() -> dict:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    return tomllib.loads((REPO / "pyproject.toml").read_text())


def source_copy(dest: Path) -> Path:
    """The files git would commit (tracked, or new and not ignored), copied to `dest`. Building from the
    repository itself would leave build/ and *.egg-info there, and setuptools reuses a stale build/lib: a
    resource dropped from the package data would still reach the wheel from an earlier build."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                            capture_output=True, check=True).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = REPO / name
        if source.is_file():  # not a file deleted from the working tree but not yet from git
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)
    return dest


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    source = source_copy(tmp_path_factory.mktemp("source"))
    build = subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out),
                            str(source)], capture_output=True, text=True, timeout=600)
    assert build.returncode == 0, build.stderr[-2000:]
    [path] = out.glob("workbench-*.whl")
    return path


def test_pyproject_lists_every_package_and_maps_the_resources_folder():
    """The package-dir mapping rules out `packages.find`, so a new subpackage must be added to the list by hand."""
    setuptools = _pyproject()["tool"]["setuptools"]
    assert setuptools["package-dir"] == {"workbench": "workbench", "workbench.resources": "resources"}
    on_disk = {".".join(init.parent.relative_to(REPO).parts) for init in (REPO / "workbench").rglob("__init__.py")}
    assert set(setuptools["packages"]) == on_disk | {"workbench.resources"}
    assert (RESOURCES / "__init__.py").is_file() and not (REPO / "workbench" / "resources").exists()


def test_the_wheel_carries_the_bundled_data_icons_samples_and_example(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for name in ("workbench/resources/__init__.py",
                 "workbench/resources/mnist_sample/MNIST/raw/train-images-idx3-ubyte",
                 "workbench/resources/mnist_sample/MNIST/raw/t10k-labels-idx1-ubyte",
                 "workbench/resources/mnist_sample/ATTRIBUTION.md",
                 "workbench/resources/icons/workbench.svg", "workbench/resources/icons/workbench-256.png",
                 "workbench/resources/samples/digit_7.png", "workbench/resources/examples/planted_break.py",
                 "workbench/resources/guide/index.html", "workbench/resources/guide/reference/cli.html",
                 "workbench/resources/guide/assets/vendor/iframe-worker-shim.js"):  # the guide: setup.py builds it
        assert name in names, name
    # Every file of the top-level resources/ folder, and nothing of it outside workbench/resources/.
    tracked = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "resources"],
                             cwd=REPO, capture_output=True, check=True).stdout.decode()
    for name in filter(None, tracked.split("\0")):
        if (REPO / name).is_file():
            assert f"workbench/{name}" in names, name
    assert not any(name.startswith(("tests/", "scripts/", "resources/", "packaging/")) for name in names)


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

    where = run("-c", "import workbench.core.ground.resources as r, workbench.core.domain.data as d;"
                      "import workbench.core.ground.appinfo as a; print(r.__file__); print(r.resource_path('samples'));"
                      "print(d.resource_path('mnist_sample')); print(a.icon_path(256));"
                      "print(r.resource_path('examples', 'planted_break.py')); print(r.guide_index())")
    assert where.returncode == 0, where.stderr
    module_file, *found = where.stdout.split()
    assert module_file.startswith(str(site))
    for path in found:
        assert path.startswith(str(site / "workbench" / "resources")) and Path(path).exists(), path
    from workbench.core.ground import appinfo

    version = run("-m", "workbench", "--version")
    assert version.stdout.strip() == f"workbench {appinfo.version()}"
    train = run("-m", "workbench", "train", "--epochs", "1", "--out", "run", "--db", str(tmp_path / "runs.sqlite"))
    assert train.returncode == 0, train.stderr
    assert (elsewhere / "run" / "checkpoint.pt").is_file() and "val accuracy" in train.stdout
