"""How quickly the window answers: a run kernel's start (launch → ready), Train → first point on the loss plot, and
the round trip of one dropped image (decode here, predict in the service kernel, shown in the gallery).

    .venv/bin/python scripts/window_latency.py [--runs 5] [--drops 20]
    WORKBENCH_FORKSERVER=0 .venv/bin/python scripts/window_latency.py   # every kernel a new interpreter (before)

Offscreen unless DISPLAY is set. Method: first, `--runs` run kernels are started one after the other as the window
starts one (ChildProcess()), each timed from the call to its "ready" (PyTorch imported, connected), then closed; the
first of them also pays for starting the fork server, so the median is over the others. Then the window is opened
as `workbench` opens it; once the service kernel is
ready and the spare run kernel has imported torch, Train is triggered (the clock starts) and the first batch of
Step events handed to the window stops it; the run is then stopped and the next spare awaited before the next
try. For Predict, the checkpoint of the first run is opened, and one bundled digit is dropped at a time: the clock
runs from the drop to the gallery row. Medians are printed with every sample. The window's RSS is read idle (before
the first run) and during a run, with the run kernel's.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "xcb" if os.environ.get("DISPLAY") else "offscreen")
os.environ.setdefault("WORKBENCH_CONFIG_DIR", tempfile.mkdtemp(prefix="wb-latency-config-"))

from PySide6.QtCore import QEventLoop, QTimer  # noqa: E402

from workbench.core.ground.config import TrainConfig  # noqa: E402
from workbench.core.ground.events import Step  # noqa: E402
from workbench.core.ground.resources import resource_path  # noqa: E402
from workbench.core.run import forkserver  # noqa: E402
from workbench.core.run.process import ChildProcess  # noqa: E402
from workbench.ui.app import create_app  # noqa: E402
from workbench.ui.main_window import MainWindow  # noqa: E402


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def wait(until, timeout_s: float = 300.0) -> None:
    loop, deadline = QEventLoop(), time.monotonic() + timeout_s
    timer = QTimer()
    timer.timeout.connect(lambda: (until() or time.monotonic() > deadline) and loop.quit())
    timer.start(2)
    loop.exec()
    timer.stop()
    if not until():
        raise SystemExit("timed out waiting")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--drops", type=int, default=20)
    args = parser.parse_args()
    starts = []
    for _ in range(args.runs + 1):
        started = time.perf_counter()
        kernel = ChildProcess()
        kernel.connect()
        starts.append(time.perf_counter() - started)
        kernel.close()
    print(f"run kernel start, launch → ready ({'fork server' if forkserver.enabled() else 'new interpreter'}): "
          + ", ".join(f"{s * 1000:.0f}" for s in starts) + f" ms → median of the last {args.runs} "
          f"{statistics.median(starts[1:]) * 1000:.0f} ms (the first {starts[0] * 1000:.0f} ms)")
    app = create_app(sys.argv[:1])
    folder = Path(tempfile.mkdtemp(prefix="wb-latency-"))
    window = MainWindow(runs_dir=folder / "runs", db=folder / "runs.sqlite")
    window.resize(1400, 880)
    window.show()
    window.setup.set_config(TrainConfig(epochs=1000))
    wait(lambda: window.kernel.capabilities.known)
    idle = rss_mib(os.getpid())

    first_points, marks, during, run_kernel = [], {}, [], []

    def on_events(batch) -> None:
        if "clicked" in marks and "point" not in marks and any(isinstance(e, Step) for e in batch):
            marks["point"] = time.perf_counter()

    window.runner.events.connect(on_events)
    for _ in range(args.runs):
        wait(lambda: window.runner.spare is not None)
        window.runner.settle_spare()
        marks.clear()
        marks["clicked"] = time.perf_counter()
        window.training.train()
        wait(lambda: "point" in marks)
        first_points.append(marks["point"] - marks["clicked"])
        during.append(rss_mib(os.getpid()))
        run_kernel.append(rss_mib(window.runner.process.process.pid))
        window.training.stop()
        wait(lambda: not window.runner.training)
    print("Train → first point on the loss plot (warm kernel): "
          + ", ".join(f"{s * 1000:.0f}" for s in first_points)
          + f" ms → median {statistics.median(first_points) * 1000:.0f} ms")

    wait(lambda: window.predict.model is not None)  # the last run's checkpoint, opened in the kernel
    digit = str(resource_path("samples", "digit_7.png"))
    trips = []
    rows = window.predict.gallery.model()
    for _ in range(args.drops):
        started = {"at": time.perf_counter()}
        done = {}
        rows.rowsInserted.connect(lambda *_: done.setdefault("at", time.perf_counter()))
        window.predict.add_files([digit])
        wait(lambda: "at" in done and not window.predict.busy)
        rows.rowsInserted.disconnect()
        assert window.predict.entries[0].prediction is not None, window.predict.entries[0].error
        trips.append(done["at"] - started["at"])
    print("Predict one dropped image, round trip: " + ", ".join(f"{s * 1000:.1f}" for s in trips)
          + f" ms → median {statistics.median(trips) * 1000:.1f} ms")
    kernel_rss = rss_mib(window.kernel.client.pid)
    print(f"window process RSS: idle {idle:.0f} MiB, during a run {statistics.median(during):.0f} MiB · service "
          f"kernel RSS {kernel_rss:.0f} MiB · run kernel RSS during a run {statistics.median(run_kernel):.0f} MiB · "
          f"torch in the window's process: {'torch' in sys.modules}")
    window.close()
    app.processEvents()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
