"""The run history at scale: the Runs dock and `workbench runs` over 2,000 runs (scripts/fill_history.py).

Method: a history of `--runs` synthetic runs (50 of 20,000 steps; made once, or given with --db) is opened in the
real window (offscreen). Each action is repeated `--repeats` times and its median printed, with the longest stall
of the GUI thread while it ran: a 10 ms PreciseTimer heartbeat on the GUI thread, whose largest delay beyond its
interval is what a user would feel as a frozen window.
- open: the dock lists the history (refresh → the listing shown), as at start-up;
- filter: a query typed into the search box (`backend=inductor acc>0.9 -tag:bug`) → the table shows its matches;
- sort: the table sorted by Disk, then by When (each a click on a header);
- overlay: 20 of the long runs selected and compared → their curves (and seed groups) drawn and painted on the
  plots (read off the GUI thread, each as a view of its steps: history/step_levels.py);
- zoom the overlay: its x range set to 1,000 steps → every step there read again for each run drawn alone and drawn
  (after the zoom has settled for 150 ms: plots/compared.py DETAIL_MS);
- reopen: one run of 20,000 steps, not in the window's cache of read runs, brought back (its curves read and
  drawn, as a double-click does); zoom: its plots' x range set to 1,000 of its steps and every plot painted.
`workbench runs` is timed as a shell runs it (a new interpreter each time). The history's size on disk is its file
(and its -wal) after the fill; bytes a step: a history holding one run of 2,000 steps (fill_history.py, with its
epochs, system samples and end), less the same history empty, over its 2,000 steps.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, default=None, help="a filled history (default: fill one now)")
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="workbench-scale-"))
    for name in ("WORKBENCH_DATA_DIR", "WORKBENCH_CACHE_DIR", "XDG_CONFIG_HOME", "XDG_DATA_HOME"):
        os.environ[name] = str(tmp / name.lower())
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    db = args.db or tmp / "history.sqlite"
    if args.db is None:
        subprocess.run([sys.executable, str(ROOT / "scripts" / "fill_history.py"), str(db), "--runs",
                        str(args.runs)], check=True)
    size = sum(path.stat().st_size for path in db.parent.glob(db.name + "*"))
    print(__doc__.split("Method: ", 1)[1].strip(), "\n")
    print(f"history: {db} ({size / 1e6:,.0f} MB on disk)")
    print(f"a run of 2,000 steps: {_bytes_a_step(tmp):.0f} bytes a step")
    _cli(db, args.repeats)
    _window(db, args.repeats)
    return 0


def _bytes_a_step(tmp: Path) -> float:
    from workbench.core.history.runs import RunStore

    def size(db: Path) -> int:
        with RunStore(db):  # a last checkpoint of the WAL into the file, as a closed history is
            pass
        return sum(path.stat().st_size for path in db.parent.glob(db.name + "*"))

    empty, one = tmp / "empty" / "history.sqlite", tmp / "one" / "history.sqlite"
    empty.parent.mkdir()
    one.parent.mkdir()
    RunStore(empty).close()
    subprocess.run([sys.executable, str(ROOT / "scripts" / "fill_history.py"), str(one), "--runs", "1", "--long",
                    "1", "--long-steps", "2000"], check=True, stdout=subprocess.DEVNULL)
    return (size(one) - size(empty)) / 2000


def _cli(db: Path, repeats: int) -> None:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "workbench", "runs", "--db", str(db)], check=True,
                       stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - started)
    print(f"workbench runs: {statistics.median(times):.2f} s (median of {repeats}; "
          f"{min(times):.2f}–{max(times):.2f})")


class Heartbeat:
    """The GUI thread's longest delay beyond a 10 ms timer's interval while `measure` runs."""

    def __init__(self):
        from PySide6.QtCore import Qt, QTimer

        self.timer = QTimer()
        self.timer.setTimerType(Qt.PreciseTimer)
        self.timer.setInterval(10)
        self.timer.timeout.connect(self._beat)
        self.last = 0.0
        self.worst = 0.0

    def _beat(self) -> None:
        now = time.perf_counter()
        self.worst = max(self.worst, now - self.last - 0.010)
        self.last = now

    def start(self) -> None:
        self.worst, self.last = 0.0, time.perf_counter()
        self.timer.start()

    def stop(self) -> float:
        self.timer.stop()
        self._beat()
        return max(0.0, self.worst)


def _window(db: Path, repeats: int) -> None:
    import numpy as np
    from PySide6.QtCore import Qt

    from workbench.core.history.runs import RunStore
    from workbench.ui.app import create_app
    from workbench.ui.main_window import MainWindow
    from workbench.ui.panels.runs.runs import COLUMNS

    app = create_app([])
    window = MainWindow(runs_dir=db.parent / "runs", db=db, prestart=False)
    window.resize(1400, 880)
    window.show()
    _wait(app, lambda: window.kernel.capabilities.known, 180)
    window.docks["runs"].raise_()
    with RunStore(db) as store:
        long_ids = [r.id for r in store.list() if r.steps >= 10_000][:20]
    beat = Heartbeat()
    rows: dict[str, list[tuple[float, float]]] = {}

    def measure(name: str, act, done) -> None:
        beat.start()
        started = time.perf_counter()
        act()
        _wait(app, done, 300)
        rows.setdefault(name, []).append((time.perf_counter() - started, beat.stop()))
        _settle(app)

    runs = window.runs
    for _ in range(repeats):
        listed: list = []
        runs.refreshed.connect(lambda: listed.append(1))
        measure("open (list 2,000 runs)", runs.refresh, lambda: bool(listed))
        runs.refreshed.disconnect()
        runs.set_query_text("")
        _settle(app)
        measure("filter (a 3-term query)", lambda: runs.set_query_text("backend=inductor acc>0.9 -tag:bug"),
                lambda: runs.query_text and runs.model.rowCount() < 1000)
        runs.set_query_text("")
        _settle(app)
        for column in ("Disk", "When (UTC)"):
            if column in COLUMNS:
                measure(f"sort by {column}",
                        lambda c=column: runs.table.sortByColumn(COLUMNS.index(c), Qt.DescendingOrder), lambda: True)
        window.plots.set_overlays([])
        window.plots.set_group_overlays([])
        _settle(app)
        runs.select_ids(long_ids)
        measure(f"overlay {len(long_ids)} runs of 20,000 steps", runs.compare_selected,
                lambda: len(window.plots.overlays) >= len(long_ids) and all(
                    plot.updatesEnabled() for plot in window.plots.plots))  # every run and group drawn, painted
        _settle(app)

        def every_step_zoomed() -> bool:
            xs = [items[0].recorded[0] for items in window.plots._run_items.values()]
            return len(xs) == len(window.plots._overlaid) and all(np.count_nonzero((x >= 10_000) & (x <= 11_000)) > 1000
                                                    for x in xs)

        measure("zoom the overlay to 1,000 steps (read finer)",
                lambda: window.plots.loss_plot.setXRange(10_000, 11_000, padding=0), every_step_zoomed)
        window.plots.loss_plot.getPlotItem().enableAutoRange()
        runs.select_ids([])
        window.plots.set_overlays([])
        window.plots.set_group_overlays([])
        runs.loader.cache.clear()  # read from the history, as a run not opened lately is
        _settle(app)
        shown = window.plots.shown_at
        measure("reopen a run of 20,000 steps",
                lambda: runs.load_runs(long_ids[:1], lambda loaded: window.recorded_runs.show(loaded[0])),
                lambda: window.plots.shown_at != shown and window.plots.step_loss.buffer.size >= 20_000)
        _settle(app)

        def zoom() -> None:
            window.plots.loss_plot.setXRange(10_000, 11_000, padding=0)
            for plot in window.plots.plots:  # painted now, not at the next frame
                plot.repaint()

        measure("zoom that run to 1,000 steps", zoom, lambda: True)
        window.plots.loss_plot.getPlotItem().enableAutoRange()
    print(f"\n{'':42}{'median':>10}{'GUI stall (longest, median)':>30}")
    for name, values in rows.items():
        took = statistics.median(v[0] for v in values)
        stall = statistics.median(v[1] for v in values)
        print(f"{name:42}{took * 1000:8.0f} ms{stall * 1000:24.0f} ms")
    window.close()


def _wait(app, condition, timeout_s: float) -> None:
    from PySide6.QtCore import QEventLoop

    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"waited {timeout_s:.0f} s")
        app.processEvents(QEventLoop.AllEvents, 5)
        time.sleep(0.002)  # not a busy loop: the listing and loading threads need the other core


def _settle(app, seconds: float = 0.3) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        app.processEvents()
        time.sleep(0.01)


if __name__ == "__main__":
    sys.exit(main())
