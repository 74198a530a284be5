"""setuptools' build (pyproject.toml says the rest), plus the user guide: built from docs/ (mkdocs.yml) into the
package's resources, so the installed app opens its own copy offline (Help → User guide)."""

import os
import subprocess
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildPyWithGuide(build_py):
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):  # an editable install reads resources/ itself (make docs builds it)
            return
        guide = Path(self.build_lib).resolve() / "workbench" / "resources" / "guide"
        if not (guide / "index.html").is_file():
            subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", str(guide)],
                           check=True, cwd=Path(__file__).resolve().parent,
                           env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})


setup(cmdclass={"build_py": BuildPyWithGuide})
