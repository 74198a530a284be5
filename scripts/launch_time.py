"""Time from launching the app to its first painted window and to a ready window, beside a bare window.

    .venv/bin/python scripts/launch_time.py [--runs 5] [--source DIR] [--load]

Each launch is a fresh `python -c`, with a fresh profile (settings and history), that starts the app as `workbench`
does (workbench.cli.main with no arguments); an application-wide event filter, installed as soon as the QApplication
exists, notes the first Paint event of the main window or any widget in it ("paint"), and a 20 ms poll notes when
the window is ready: its panels built and its PyTorch kernel's capabilities known ("ready": Train can start). The
same number of launches of a bare window follows, measured the same way: a fresh `python -c` that imports PySide6
and pyqtgraph and shows a QMainWindow holding one PlotWidget (its paint is its ready). The clock is CLOCK_MONOTONIC,
shared by the launching and the launched process, read just before the process is spawned. Offscreen unless DISPLAY
is set (then the real screen: run it under xvfb-run with QT_QPA_PLATFORM=xcb). `--source DIR` times another checkout
(e.g. a `git worktree` of an older commit) with the same interpreter. `--load` keeps one headless training run going
in another process (`workbench train`, 1,000 epochs, stopped at the end) while every launch is timed: the user who
opens the window while a run trains. Printed: every launch, the medians, the app's over the bare window's, and the
RSS of the window's process (and of its kernel, if it has one) a few seconds after the first paint.
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

MARKS = r"""
import json, os, sys, time
from PySide6.QtCore import QEvent, QObject, QTimer
from PySide6.QtWidgets import QApplication, QMainWindow

started = float(sys.argv[1])
settle = float(sys.argv[2])
marks = {}

def rss(pid):
    try:
        with open(f"/proc/{pid}/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except OSError:
        return None

def main_window():
    return next((w for w in QApplication.topLevelWidgets() if isinstance(w, QMainWindow)), None)

def report():
    window = main_window()
    kernel = getattr(getattr(window, "kernel", None), "client", None)
    marks["gui_rss_mib"] = rss(os.getpid())
    marks["kernel_rss_mib"] = rss(kernel.pid) if kernel is not None and kernel.pid else None
    marks["torch_in_gui"] = "torch" in sys.modules
    print("LAUNCH " + json.dumps(marks), flush=True)
    window.close()

def settled():
    if "ready" in marks and time.monotonic() - started >= marks["paint"] + settle:
        report()
    else:
        QTimer.singleShot(100, settled)

class FirstPaint(QObject):
    def eventFilter(self, obj, event):
        if (event.type() == QEvent.Paint and "paint" not in marks and obj.isWidgetType()
                and isinstance(obj.window(), QMainWindow)):
            marks["paint"] = time.monotonic() - started
            QTimer.singleShot(0, settled)
        return False
"""

APP = MARKS + r"""
def poll_ready():
    window = main_window()
    kernel = getattr(window, "kernel", None)
    if window is not None and getattr(window, "docks", None) and kernel is not None and kernel.capabilities.known:
        marks["ready"] = time.monotonic() - started
    else:
        QTimer.singleShot(20, poll_ready)

_init = QApplication.__init__
def _patched(self, *args):
    _init(self, *args)
    self._first_paint = FirstPaint()
    self.installEventFilter(self._first_paint)
    QTimer.singleShot(0, poll_ready)
QApplication.__init__ = _patched

from workbench.cli import main
main([])
"""

BARE = MARKS + r"""
import pyqtgraph as pg

app = QApplication(sys.argv[:1])
app._first_paint = FirstPaint()
app.installEventFilter(app._first_paint)
window = QMainWindow()
window.setWindowTitle("bare")
window.setCentralWidget(pg.PlotWidget())
window.resize(1400, 880)
window.show()
def ready_at_paint():
    if "paint" in marks:
        marks["ready"] = marks["paint"]
    else:
        QTimer.singleShot(20, ready_at_paint)
ready_at_paint()
app.exec()
"""


def launch(python: str, child: str, source: Path | None, settle: float) -> dict:
    env = {**os.environ, "WORKBENCH_CONFIG_DIR": tempfile.mkdtemp(prefix="wb-launch-config-"),
           "WORKBENCH_DATA_DIR": tempfile.mkdtemp(prefix="wb-launch-data-")}  # a fresh profile
    env.setdefault("QT_QPA_PLATFORM", "xcb" if os.environ.get("DISPLAY") else "offscreen")
    if source is not None:
        env["PYTHONPATH"] = str(source)
    started = time.monotonic()
    out = subprocess.run([python, "-c", child, repr(started), str(settle)], capture_output=True, text=True,
                         env=env, cwd=source or Path.cwd(), timeout=300)
    line = next((x for x in out.stdout.splitlines() if x.startswith("LAUNCH ")), None)
    if line is None:
        raise SystemExit(f"the window did not report a paint:\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}")
    return json.loads(line[len("LAUNCH "):])


def training_load() -> subprocess.Popen:
    """One headless run that outlasts the measurement, in a folder of its own."""
    folder = tempfile.mkdtemp(prefix="wb-launch-load-")
    workbench = Path(sys.executable).with_name("workbench")
    return subprocess.Popen([str(workbench), "train", "--epochs", "1000"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, cwd=folder, env={**os.environ, "WORKBENCH_DATA_DIR": folder})


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--source", type=Path, default=None, help="another checkout to time (same interpreter)")
    parser.add_argument("--settle", type=float, default=3.0, help="seconds after the paint before reading RSS")
    parser.add_argument("--load", action="store_true", help="time every launch while a training run goes on")
    args = parser.parse_args()
    load = training_load() if args.load else None
    try:
        if load is not None:
            time.sleep(15)  # the load's torch import and first epoch: measure beside steady training
        app = [launch(sys.executable, APP, args.source, args.settle) for _ in range(args.runs)]
        bare = [launch(sys.executable, BARE, None, 0.5) for _ in range(args.runs)]
    finally:
        if load is not None:
            load.terminate()
            load.wait(timeout=60)
    for i, r in enumerate(app, 1):
        print(f"launch {i}: first paint {r['paint']:.2f} s · ready {r['ready']:.2f} s · GUI RSS "
              f"{r['gui_rss_mib']:.0f} MiB · kernel RSS "
              + (f"{r['kernel_rss_mib']:.0f} MiB" if r.get("kernel_rss_mib") else "—")
              + f" · torch in the window's process: {r['torch_in_gui']}")
    print("bare PySide6 + pyqtgraph window, first paint: " + " ".join(f"{r['paint']:.2f}" for r in bare))
    paint, ready = (statistics.median(r[key] for r in app) for key in ("paint", "ready"))
    bare_paint = statistics.median(r["paint"] for r in bare)
    platform = os.environ.get("QT_QPA_PLATFORM") or ("xcb" if os.environ.get("DISPLAY") else "offscreen")
    print(f"medians over {len(app)} launches ({platform}{', one training run going' if load else ''}): "
          f"first paint {paint:.2f} s · ready {ready:.2f} s · bare window {bare_paint:.2f} s · "
          f"paint / bare {paint / bare_paint:.2f}×")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
