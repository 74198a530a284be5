"""Help → User guide from an installed wheel, outside the source tree: the wheel built from the files git would
commit, installed into a temporary folder, the window opened from another folder with only that copy on the path,
its Help → User guide triggered; prints the URL the browser is handed and photographs that page (headless Chromium,
1440×900).

    .venv/bin/python scripts/guide_from_wheel.py docs/screenshots/guide/help-user-guide-from-wheel.png
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scripts.guide_shots import shoot  # noqa: E402
from tests.e2e.test_wheel import source_copy  # noqa: E402

WINDOW = """
import sys
from PySide6.QtGui import QDesktopServices
from workbench.ui.app import create_app
from workbench.ui.main_window import MainWindow
app = create_app(sys.argv[:1])
handed = []
QDesktopServices.openUrl = lambda url: handed.append(url.toString()) or True  # the browser's part, recorded
window = MainWindow(prestart=False)
window.named_actions["user_guide"].trigger()
print(handed[0])
window.close()
"""


def main() -> int:
    out = Path(sys.argv[1]).resolve()
    with tempfile.TemporaryDirectory() as temp:
        temp = Path(temp)
        source = source_copy(temp / "source")
        subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(temp / "dist"),
                        str(source)], check=True, capture_output=True)
        [wheel] = (temp / "dist").glob("workbench-*.whl")
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(temp / "site"),
                        str(wheel)], check=True)
        (temp / "elsewhere").mkdir()
        env = {**os.environ, "PYTHONPATH": str(temp / "site"), "QT_QPA_PLATFORM": "offscreen",
               "WORKBENCH_DATA_DIR": str(temp / "data"), "WORKBENCH_CONFIG_DIR": str(temp / "config")}
        opened = subprocess.run([sys.executable, "-c", WINDOW], cwd=temp / "elsewhere", env=env, capture_output=True,
                                text=True, check=True, timeout=300).stdout.strip().splitlines()[-1]
        print(f"wheel: {wheel.name}\nHelp → User guide handed the browser: {opened}")
        assert opened.startswith((temp / "site").as_uri()), "not the installed copy"
        shoot(opened, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
