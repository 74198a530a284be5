"""This computer vs a host over SSH (OpenSSH on 127.0.0.1, as the tests start it), side by side in the real app.

Method: two offscreen windows of the app in this process: one with its kernels here (a spare run kernel started
ahead, as the app does), one connected to the loopback sshd (`workbench --host`'s path: every run a RemoteRun under
the host's supervisor, the service kernel a RemoteKernel). Runs alternate, local then remote, in `--pairs` pairs of
the same config, each started once the machine is quiet (the spares started after a run have imported PyTorch);
medians are quoted, ratios are remote / local of the medians.
- Train → first point: the Train click (Training.train) to the first Step event arriving on the GUI thread.
- Steady samples/s: the trainer's own figure (RunFinished.results.samples_per_s, compile excluded), and the rate at
  which the window heard the steady steps (steps × batch / seconds between the first and the last steady Step's
  arrival): what the plots live through.
- Predict round trip: ServiceClient.predict of 4 images on a checkpoint this computer has, answered (the remote one
  copies the checkpoint to the host once: that first call is reported apart), `--predicts` calls alternating.
- Re-attach: a finished `--reattach-steps`-step run on the host, followed again from its first event
  (RemoteRun.attach: every event replayed, recorded here afresh), timed headless and in the window (Runs on this
  host… → attach: to RunFinished, with the plots' point count); beside it, reading this computer's record of the
  same run (RunStore.get with events), which is what showing a local run costs.
Run it on a quiet machine: `.venv/bin/python scripts/remote_compare.py`.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--predicts", type=int, default=20)
    parser.add_argument("--reattach-steps", type=int, default=5000)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="workbench-remote-compare-"))
    for name in ("WORKBENCH_DATA_DIR", "WORKBENCH_CACHE_DIR", "XDG_CONFIG_HOME"):
        os.environ[name] = str(tmp / name.lower())
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from tests.support.sshd import start_sshd

    server = start_sshd(tmp / "sshd")
    os.environ["WORKBENCH_SSH"] = server.ssh_command
    try:
        print(__doc__.split("Method: ", 1)[1].split("Run it on")[0].strip(), "\n", flush=True)
        _compare(args, tmp, server)
    finally:
        server.stop()
    return 0


def _compare(args, tmp: Path, server) -> None:
    from workbench.core.ground.config import TrainConfig
    from workbench.core.run.remote.ssh import Remote
    from workbench.ui.app import create_app
    from workbench.ui.main_window import MainWindow

    app = create_app([])
    remote = Remote.parse(server.address, server.remote_python)
    here = MainWindow(runs_dir=tmp / "here-runs", db=tmp / "here.sqlite")
    there = MainWindow(runs_dir=tmp / "there-runs", db=tmp / "there.sqlite", remote=remote)
    for window in (here, there):
        window.resize(1400, 880)
        window.show()
    _wait(app, lambda: here.kernel.capabilities.known and there.hosts.remote == remote
          and there.kernel.capabilities.known, 180, "both kernels ready")
    _settle(app)
    config = TrainConfig(epochs=args.epochs)
    rows: dict[str, dict[str, list[float]]] = {"local": {}, "ssh": {}}
    checkpoint = None
    for pair in range(args.pairs):
        for side, window in (("local", here), ("ssh", there)):
            measured = _train(app, window, config)
            for key, value in measured.items():
                if key != "checkpoint":
                    rows[side].setdefault(key, []).append(value)
            if side == "local":
                checkpoint = measured["checkpoint"]
            print(f"pair {pair + 1} {side:5}: first point {measured['first_point_s']:.2f} s, trainer "
                  f"{measured['trainer_sps']:,.0f} samples/s, heard {measured['heard_sps']:,.0f} samples/s",
                  flush=True)
            _settle(app)  # each window starts its next spare kernel after a run: not during the next one
    print()
    _table(rows, [("first_point_s", "Train → first point (s)"), ("trainer_sps", "steady samples/s (trainer)"),
                  ("heard_sps", "steady samples/s (heard by the window)")])
    _predicts(here, there, checkpoint, args.predicts)
    _reattach(app, there, remote, args.reattach_steps, tmp)
    for window in (here, there):
        window.runner.shutdown()
        window.close()


def _train(app, window, config) -> dict:
    from workbench.core.ground.events import RunFinished, Step

    window.setup.set_config(config)
    heard: list[tuple[float, Step]] = []
    ended: list = []

    def listen(batch) -> None:
        now = time.perf_counter()
        heard.extend((now, event) for event in batch if isinstance(event, Step))

    window.runner.events.connect(listen)
    window.training.runFinished.connect(ended.append)
    clicked = time.perf_counter()
    if not window.training.train():
        raise RuntimeError(f"the window did not start the run: {window.banner.label.text()}")
    _wait(app, lambda: bool(ended), 900, "the run's end")
    window.runner.events.disconnect(listen)
    window.training.runFinished.disconnect(ended.append)
    result = ended[0]
    if not isinstance(result, RunFinished):
        raise RuntimeError(f"the run failed: {result}")
    steady = [(at, step) for at, step in heard if not step.compiling]
    seconds = steady[-1][0] - steady[0][0]
    samples = (steady[-1][1].step - steady[0][1].step) * config.batch_size
    return {"first_point_s": heard[0][0] - clicked, "trainer_sps": result.results.samples_per_s,
            "heard_sps": samples / seconds, "checkpoint": result.results.checkpoint}


def _predicts(here, there, checkpoint: str, count: int) -> None:
    import numpy as np

    images = [np.random.default_rng(seed).integers(0, 256, (28, 28), dtype=np.uint8) for seed in range(4)]
    started = time.perf_counter()
    there.kernel.service.predict(checkpoint, images).result(120)  # the checkpoint is copied to the host once
    first = time.perf_counter() - started
    times: dict[str, list[float]] = {"local": [], "ssh": []}
    for _ in range(count):
        for side, window in (("local", here), ("ssh", there)):
            started = time.perf_counter()
            window.kernel.service.predict(checkpoint, images).result(120)
            times[side].append((time.perf_counter() - started) * 1000)
    local, ssh = statistics.median(times["local"]), statistics.median(times["ssh"])
    print(f"\npredict round trip (4 images, median of {count}): local {local:.1f} ms, ssh {ssh:.1f} ms "
          f"(+{ssh - local:.1f} ms); the first remote call, copying the checkpoint "
          f"({Path(checkpoint).stat().st_size / 1e6:.1f} MB) to the host: {first * 1000:.0f} ms")


def _reattach(app, there, remote, steps: int, tmp: Path) -> None:
    from workbench.core.ground.config import TrainConfig
    from workbench.core.ground.events import RunFinished, Step
    from workbench.core.history.runs import RunStore
    from workbench.core.run.remote.kernels import RemoteRun, host_runs
    from workbench.core.run.run_request import RunRequest

    db = str(tmp / "reattach.sqlite")
    request = RunRequest(TrainConfig(epochs=1000, max_steps=steps), out_dir="", db=db)
    started = time.perf_counter()
    run = RemoteRun(remote, db=db)
    result = run.run(request, lambda event: None, threading.Event())
    print(f"\nre-attach: a {result.steps:,}-step run trained on the host in {time.perf_counter() - started:.1f} s")
    key = run.started.key
    [info] = [info for info in host_runs(remote) if info.key == key]
    events: list = []
    started = time.perf_counter()
    again = RemoteRun(remote, db=db).attach(key, events.append, threading.Event())
    headless = time.perf_counter() - started
    steps_heard = [event.step for event in events if isinstance(event, Step)]
    assert isinstance(again, RunFinished) and steps_heard == list(range(1, result.steps + 1)), "a step lost/repeated"
    with RunStore(db) as store:
        [record] = store.list()
        started = time.perf_counter()
        store.get(record.id, with_events=True)
        read_local = time.perf_counter() - started
    ended: list = []
    there.training.runFinished.connect(ended.append)
    started = time.perf_counter()
    if not there.hosts.attach(info):
        raise RuntimeError("the window did not attach")
    _wait(app, lambda: bool(ended), 600, "the attached run's end")
    in_app = time.perf_counter() - started
    there.plots.redraw()
    points = there.plots.point_counts()["loss"]
    print(f"re-attach of the finished run (events replayed: {len(events):,}, steps {len(steps_heard):,}, each once): "
          f"headless {headless:.2f} s, in the window {in_app:.2f} s (to RunFinished; the loss plot holds {points:,} "
          f"points); reading this computer's record of it: {read_local:.2f} s")


def _table(rows: dict, measures: list[tuple[str, str]]) -> None:
    """Medians of each side, their ratio, and the median of the pairs' own ratios (a pair ran back to back)."""
    print(f"{'':42}{'local':>12}{'ssh':>12}{'ratio':>9}{'pairs':>9}")
    for key, label in measures:
        local, ssh = statistics.median(rows["local"][key]), statistics.median(rows["ssh"][key])
        paired = statistics.median(s / h for h, s in zip(rows["local"][key], rows["ssh"][key]))
        print(f"{label:42}{local:12,.2f}{ssh:12,.2f}{ssh / local:9.3f}{paired:9.3f}")
    print("(ratio: ssh / local of the medians; pairs: the median of each pair's ssh / local)")


def _wait(app, condition, timeout_s: float, what: str) -> None:
    from PySide6.QtCore import QEventLoop

    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"waited {timeout_s:.0f} s for {what}")
        app.processEvents(QEventLoop.AllEvents, 50)
        time.sleep(0.005)


def _settle(app, quiet_s: float = 1.5, busy_below: float = 0.15, timeout_s: float = 90) -> None:
    """Until the machine has been quiet (all cores under `busy_below` busy, from /proc/stat) for `quiet_s`: a spare
    kernel importing PyTorch in the background must not share the CPU with the next measured run."""
    def busy_and_total() -> tuple[int, int]:
        fields = [int(value) for value in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
        idle = fields[3] + fields[4]  # idle + iowait
        return sum(fields) - idle, sum(fields)

    deadline = time.monotonic() + timeout_s
    quiet_since = None
    busy, total = busy_and_total()
    while time.monotonic() < deadline:
        end = time.monotonic() + 0.25
        while time.monotonic() < end:
            app.processEvents()
            time.sleep(0.02)
        now_busy, now_total = busy_and_total()
        fraction = (now_busy - busy) / max(1, now_total - total)
        busy, total = now_busy, now_total
        if fraction >= busy_below:
            quiet_since = None
        elif quiet_since is None:
            quiet_since = time.monotonic()
        elif time.monotonic() - quiet_since >= quiet_s:
            return


if __name__ == "__main__":
    sys.exit(main())
