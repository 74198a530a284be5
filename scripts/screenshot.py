"""Take the README screenshot: the real window mid-training, on a virtual screen.

    xvfb-run -a -s "-screen 0 1440x900x24" env QT_QPA_PLATFORM=xcb .venv/bin/python scripts/screenshot.py

It trains the planted-graph-break example with aot_eager (so the Compile panel has something to show) and grabs
the window once the run is well under way.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from PySide6.QtCore import QTimer

from workbench.core.ground.config import TrainConfig
from workbench.core.ground.events import Step
from workbench.ui.app import create_app
from workbench.ui.main_window import MainWindow
from workbench.ui.panels.setup import example_model_spec

OUT = Path(__file__).resolve().parents[1] / "docs" / "screenshot.png"
GRAB_AT_STEP = 1800


def main() -> int:
    app = create_app(sys.argv[:1])
    window = MainWindow(runs_dir=Path(tempfile.mkdtemp()) / "runs")
    window.resize(1440, 900)
    window.show()
    window.setup.set_config(TrainConfig(model=example_model_spec(), backend="aot_eager", epochs=40))
    grabbed = []

    def grab_when_ready(batch) -> None:
        if not grabbed and any(isinstance(e, Step) and e.step >= GRAB_AT_STEP for e in batch):
            grabbed.append(True)
            window.plots.redraw()
            QTimer.singleShot(100, lambda: (window.grab().save(str(OUT)), window.close()))

    window.runner.events.connect(grab_when_ready)
    QTimer.singleShot(500, window.train)
    app.exec()
    print(f"wrote {OUT}" if grabbed else "the run ended before the grab")
    return 0 if grabbed else 1


if __name__ == "__main__":
    raise SystemExit(main())
