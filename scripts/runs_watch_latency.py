"""How long a run started from the command line takes to appear in an open window's Runs dock.

    QT_QPA_PLATFORM=offscreen .venv/bin/python scripts/runs_watch_latency.py [--tries 5]

Method: an offscreen window on a fresh history; `workbench train --epochs 1 --max-steps 3 --db <that history>` is
started as a subprocess, and the clock runs from the moment the subprocess is started to the moment the dock's
listing shows the new run (Qt events processed every 10 ms meanwhile). That includes the command's own start (Python,
its imports) before it records the run; the dock's watch asks once a second. Median of the tries."""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from PySide6.QtWidgets import QApplication


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tries", type=int, default=5)
    args = parser.parse_args()
    app = QApplication(sys.argv)
    from workbench.core.run.client import KernelClient
    from workbench.ui.main_window import MainWindow

    starts = []
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "runs.sqlite"
        kernel = KernelClient([sys.executable, "-c", "import time; time.sleep(600)"])
        window = MainWindow(runs_dir=Path(folder) / "runs", db=db, prestart=False, kernel=kernel)
        window.runs.refresh()
        for attempt in range(args.tries):
            known = window.runs.model.total
            began = time.time()
            child = subprocess.Popen([sys.executable, "-m", "workbench", "train", "--epochs", "1", "--max-steps",
                                      "3", "--hidden-dim", "16", "--db", str(db), "--out",
                                      str(Path(folder) / f"run{attempt}")],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            while window.runs.model.total == known:
                app.processEvents()
                time.sleep(0.01)
            starts.append(time.time() - began)
            child.wait()
            print(f"try {attempt + 1}: {starts[-1]:.2f} s from the command's start to its row", flush=True)
        window.close()
        kernel.close()
    print(f"median of {args.tries}: {statistics.median(starts):.2f} s from the command's start to its row")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
