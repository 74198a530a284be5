"""`workbench bench --gui`: the real app, offscreen, training while a 10 ms heartbeat measures the event loop.

Method: the same config trains headless (the CLI's path: start_run in the benchmark's own process, no Qt event loop
running) and inside the app (Train button path: a pool thread driving a run kernel, live plots, a 10 ms
PreciseTimer heartbeat), in alternating pairs; ratios are of medians; no headless run overlaps the pre-started
kernel's import of PyTorch.
Headless uses every core; the app's child all but one (the GUI's). The heartbeat's delay beyond its interval is the
stall a user feels.
"While compiling" covers the Train click up to the end of the first epoch's validation (which compiles the eval
graph too), with an empty Inductor cache so the compile is cold; "steady state" is the rest of the run.
"Explain" covers the Explain click up to its answer from the service kernel (the window itself imports no torch).
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path

from ..core.ground.config import TrainConfig
from typing import Callable

from ..core.ground.events import EpochEnd, RunFinished, Step

HEARTBEAT_METHOD = __doc__.split("Method: ", 1)[1].strip()


def _app_run(window, config: TrainConfig, heartbeat) -> dict:
    from PySide6.QtCore import QEventLoop, QTimer

    marks: dict[str, float] = {}

    def watch(batch) -> None:
        now = time.perf_counter()
        for event in batch:
            if isinstance(event, Step) and not event.compiling:
                marks.setdefault("first_steady_step", now)
            elif isinstance(event, EpochEnd):
                marks.setdefault("first_epoch_end", now)

    form = window.setup.valid_config()
    if form != config:  # the form steps off what this machine cannot run: measure nothing else than asked
        raise RuntimeError(f"the app cannot train this configuration here: {window.setup.problem.text() or form}")
    window.runner.events.connect(watch)
    loop = QEventLoop()
    results, refused = [], []
    window.training.runFinished.connect(lambda result: (results.append(result), loop.quit()))

    def click() -> None:
        heartbeat.start()
        marks.setdefault("clicked", time.perf_counter())
        if not window.training.train():  # refused: no run will end the loop
            refused.append(f"the app did not start the run: {window.banner.label.text()}")
            loop.quit()

    QTimer.singleShot(200, click)
    loop.exec()
    heartbeat.stop()
    window.training.runFinished.disconnect()
    window.runner.events.disconnect(watch)
    if refused:
        raise RuntimeError(refused[0])
    result = results[0]
    if not isinstance(result, RunFinished):
        raise RuntimeError(f"the in-app run failed: {result.message}")
    warm_until = marks.get("first_epoch_end") if config.compiled else marks.get("first_steady_step")
    return {
        "samples_per_s": result.results.samples_per_s,
        "compiling": heartbeat.stats(since=marks["clicked"], until=warm_until),
        "steady": heartbeat.stats(since=warm_until),
    }


def _explain_run(window, heartbeat) -> dict:
    """The heartbeat while the service kernel explains the form's model (the window waits on a socket)."""
    from PySide6.QtCore import QEventLoop, QTimer

    loop = QEventLoop()
    window.compile_insight.explainFinished.connect(lambda _report: loop.quit())
    started = {}

    def click() -> None:
        heartbeat.start()
        started["at"] = time.perf_counter()
        window.compile_insight.explain()

    QTimer.singleShot(200, click)
    loop.exec()
    heartbeat.stop()
    window.compile_insight.explainFinished.disconnect()
    return {"seconds": time.perf_counter() - started["at"], **heartbeat.stats(since=started["at"])}


def run_gui_bench(config: TrainConfig, headless: Callable[[TrainConfig, Path], float], pairs: int = 2,
                  compile_config: TrainConfig | None = None, progress=lambda text: None) -> dict:
    """`headless(config, out)`: the samples/s of the same run without the app (the caller's process trains it:
    this module imports no torch). Everything it writes (runs, settings, the cold Inductor cache) goes to a
    temporary folder, removed after."""
    """Everything it writes (runs, settings, the cold Inductor cache) goes to a temporary folder, removed after."""
    saved = {k: os.environ.get(k) for k in ("WORKBENCH_CONFIG_DIR", "TORCHINDUCTOR_CACHE_DIR")}
    with tempfile.TemporaryDirectory(prefix="workbench-bench-gui-") as folder:
        try:
            os.environ["WORKBENCH_CONFIG_DIR"] = str(Path(folder) / "config")  # the user's settings stay as they are
            return _run_gui_bench(Path(folder), config, headless, pairs, compile_config, progress)
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value


def _run_gui_bench(tmp: Path, config: TrainConfig, headless: Callable[[TrainConfig, Path], float], pairs: int,
                   compile_config: TrainConfig | None, progress) -> dict:
    from .app import create_app
    from .support.heartbeat import Heartbeat
    from .main_window import MainWindow

    create_app([])
    window = MainWindow(runs_dir=tmp / "runs", db=tmp / "runs.sqlite")
    window.resize(1400, 880)
    window.show()
    window.setup.set_config(config)
    heartbeat = Heartbeat(parent=window)
    progress("waiting for PyTorch in the kernel…")
    _wait_for_kernel(window)
    app_rates, headless_rates, steady = [], [], []
    for i in range(pairs):
        progress(f"pair {i + 1}/{pairs}: headless…")
        window.runner.settle_spare()  # the next run's kernel imports torch now, not during the headless run
        headless_rates.append(headless(config, tmp / f"headless-{i}"))
        progress(f"pair {i + 1}/{pairs}: in the app…")
        measured = _app_run(window, config, heartbeat)
        app_rates.append(measured["samples_per_s"])
        steady.append(measured["steady"])
    report = {
        "config": config.to_dict(),
        "pairs": pairs,
        "in_app_samples_per_s": app_rates,
        "headless_samples_per_s": headless_rates,
        "ratio": statistics.median(app_rates) / statistics.median(headless_rates),
        "steady": max(steady, key=lambda s: s["max_ms"]),  # the worst pair
        "runner": "run kernel (child process)",
        "method": HEARTBEAT_METHOD,
    }
    progress("explaining in the service kernel…")
    report["explain"] = _explain_run(window, heartbeat)
    if compile_config is not None:
        progress("compiling in the app (cold Inductor cache)…")
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(tmp / "inductor-cache")
        window.runner.restart_spare()  # the pre-started kernel must inherit the empty cache
        window.setup.set_config(compile_config)
        measured = _app_run(window, compile_config, heartbeat)
        report["compile_run"] = {"config": compile_config.to_dict(), **measured}
    window.close()
    return report


def _wait_for_kernel(window) -> None:
    from PySide6.QtCore import QEventLoop

    if window.kernel.capabilities.known:
        return
    loop = QEventLoop()
    window.kernel.capabilitiesChanged.connect(lambda _caps: loop.quit())
    loop.exec()


def format_gui_report(report: dict) -> str:
    s = report["steady"]
    lines = [
        f"GUI benchmark ({report['runner']}, offscreen, {report['pairs']} pair(s)):",
        f"  in-app {statistics.median(report['in_app_samples_per_s']):,.0f} samples/s vs headless "
        f"{statistics.median(report['headless_samples_per_s']):,.0f} → ratio {report['ratio']:.2f}×",
        f"  steady state: longest stall {s['max_ms']:.1f} ms · p99 {s['p99_ms']:.1f} ms · p50 {s['p50_ms']:.2f} ms "
        f"({s['ticks']} ticks, worst pair)",
    ]
    if "compile_run" in report:
        c = report["compile_run"]["compiling"]
        st = report["compile_run"]["steady"]
        lines.append(f"  {report['compile_run']['config']['backend']} run, while compiling: longest stall "
                     f"{c['max_ms']:.1f} ms · p99 {c['p99_ms']:.1f} ms ({c['ticks']} ticks); then steady: longest "
                     f"{st['max_ms']:.1f} ms · p99 {st['p99_ms']:.1f} ms")
    if "explain" in report:
        e = report["explain"]
        lines.append(f"  Explain in the kernel ({e['seconds']:.2f} s): longest stall {e['max_ms']:.1f} ms · p99 "
                     f"{e['p99_ms']:.1f} ms ({e['ticks']} ticks)")
    lines += ["", "method: " + report["method"].replace("\n", "\n        ")]
    return "\n".join(lines)
