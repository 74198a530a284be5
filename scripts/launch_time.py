"""Time from launching the app to its first painted window, and how much memory the idle app holds.

    .venv/bin/python scripts/launch_time.py [--runs 5] [--source DIR]

Each launch is a fresh `python -c` that starts the app as `workbench` does (workbench.cli.main with no arguments);
an application-wide event filter, installed as soon as the QApplication exists, notes the first Paint event of the
main window. The clock is CLOCK_MONOTONIC, shared by the launching and the launched process, read just before the
process is spawned. Offscreen unless DISPLAY is set (then the real screen: run it under xvfb-run with
QT_QPA_PLATFORM=xcb). `--source DIR` times another checkout (e.g. a `git worktree` of an older commit) with the same
interpreter. Printed: every launch, the median, and the RSS of the window's process (and of its kernel, if it has
one) a few seconds after the first paint.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHILD = r"""
import json, os, sys, time
from PySide6.QtCore import QEvent, QObject, QTimer
from PySide6.QtWidgets import QApplication, QMainWindow

started = float(sys.argv[1])
marks = {}

class FirstPaint(QObject):
    def eventFilter(self, obj, event):
        if event.type() == QEvent.Paint and isinstance(obj, QMainWindow) and "paint" not in marks:
            marks["paint"] = time.monotonic() - started
            QTimer.singleShot(int(float(sys.argv[2]) * 1000), finish)
        return False

def rss(pid):
    try:
        with open(f"/proc/{pid}/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except OSError:
        return None

def finish():
    window = next(w for w in QApplication.topLevelWidgets() if isinstance(w, QMainWindow))
    kernel = getattr(getattr(window, "kernel", None), "client", None)
    marks["gui_rss_mib"] = rss(os.getpid())
    marks["kernel_rss_mib"] = rss(kernel.pid) if kernel is not None and kernel.pid else None
    marks["torch_in_gui"] = "torch" in sys.modules
    print("LAUNCH " + json.dumps(marks), flush=True)
    window.close()

_init = QApplication.__init__
def _patched(self, *args):
    _init(self, *args)
    self._first_paint = FirstPaint()
    self.installEventFilter(self._first_paint)
QApplication.__init__ = _patched

from workbench.cli import main
main([])
"""


def launch(python: str, source: Path | None, settle: float) -> dict:
    env = {**os.environ, "WORKBENCH_CONFIG_DIR": tempfile.mkdtemp(prefix="wb-launch-config-")}
    env.setdefault("QT_QPA_PLATFORM", "xcb" if os.environ.get("DISPLAY") else "offscreen")
    if source is not None:
        env["PYTHONPATH"] = str(source)
    started = time.monotonic()
    out = subprocess.run([python, "-c", CHILD, repr(started), str(settle)], capture_output=True, text=True,
                         env=env, cwd=source or Path.cwd(), timeout=300)
    line = next((x for x in out.stdout.splitlines() if x.startswith("LAUNCH ")), None)
    if line is None:
        raise SystemExit(f"the app did not report a paint:\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}")
    return json.loads(line[len("LAUNCH "):])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--source", type=Path, default=None, help="another checkout to time (same interpreter)")
    parser.add_argument("--settle", type=float, default=8.0, help="seconds after the paint before reading RSS")
    args = parser.parse_args()
    results = [launch(sys.executable, args.source, args.settle) for _ in range(args.runs)]
    for i, r in enumerate(results, 1):
        print(f"launch {i}: first paint {r['paint']:.2f} s · GUI RSS {r['gui_rss_mib']:.0f} MiB · kernel RSS "
              + (f"{r['kernel_rss_mib']:.0f} MiB" if r.get("kernel_rss_mib") else "—")
              + f" · torch in the window's process: {r['torch_in_gui']}")
    print(f"median first paint: {statistics.median(r['paint'] for r in results):.2f} s over {len(results)} launches "
          f"({os.environ.get('QT_QPA_PLATFORM') or ('xcb' if os.environ.get('DISPLAY') else 'offscreen')})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
