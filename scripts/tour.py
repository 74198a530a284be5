"""Screenshots of the window in the states a new user meets, on a virtual screen (for notes and the README).

    xvfb-run -a -s "-screen 0 1366x768x24" env QT_QPA_PLATFORM=xcb .venv/bin/python scripts/tour.py SHOT OUT.png

SHOT is one of: readme (the README's screenshot, on a 1440×900 screen: the planted-graph-break example with
aot_eager, mid-run), training (mid-run, default model), compiling (an inductor run, grabbed while it compiles),
reason (learning rate 0: why Train is off), explain (after Explain), evaluate (after a short run: a confusion cell
opened), dataset (the Dataset dock), timeline (after an inductor run of the planted-break example: the compile
timeline's markers on the loss plot, the eval recompile selected, the payback), fixit (the planted-break
example's fix-it card after Explain and Check with fullgraph), whatif (the What-if tab for the form's settings),
system (mid-run, the memory plot's System tab: CPU of the run and of the machine), profile / profile_timeline /
profile_memory (after an inductor run that profiled 20 steps: the Profile panel's Ops, Timeline and Memory tabs),
amp (after an fp16 run with a planted overflow, an initial loss scale of 2^40: the AMP tab's skipped steps),
export (after a short run: File → Export model… as ONNX, the dialog with its parity table; the dialog alone),
lr_finder / batch_finder (a finder's dialog after its measurement), sweep (Run → Sweep…: 12 TPE trials over lr,
batch size, hidden size and backend; the Pareto tab), runs (the Runs dock raised over a history of six runs, written
as training and a sweep leave them: a continued run and two sweep trials among them).
Over SSH (an sshd on 127.0.0.1 with throw-away keys, as the tests start it; `openssh-server` installed): connect
(Kernel → Connect to… after a host name that does not resolve: the step that failed, in words), remote (a run
training on the host, mid-run: the host in the title and the status bar), host_runs (Kernel → Runs on this host…
once a run there has finished), reattached (that run followed again from its first event: its curves, complete).
Managing runs (a synthetic history of nine runs, three seeds each of three settings, from scripts/fill_history.py):
manage (names, tags and the selected run's note in the Runs dock's details), seed_band (a seed group compared: its
mean line and min–max band on every plot), compare (two runs of different settings compared), imported (a run
logged with torch.utils.tensorboard and one with MLflow's client, imported, compared with one of Workbench's), diff
(the Diff dialog of two runs that differ in backend and AMP).
Compile insight, round two: numerics / numerics_bf16 (Compare numerics on the built-in network with inductor, fp32
and bf16 autocast: the dialog), numerics_drift (the same on resources/examples/planted_drift.py), code (an inductor
run of the built-in network with its compile trace and a 20-step profile, then Code…: the fc line clicked, what it
became highlighted, each kernel's profiled time), stages (that run's Compile panel: the Stages tab and the payback).
Inside the network: model (the Model dock mid-run, on resources/examples/planted_vanishing.py with statistics every
25 steps: each layer's gradient norm, falling layer by layer, above the distribution of the last layer's outputs),
layers (the same run's layer table), alert (a run of resources/examples/planted_exploding_lr.json, failed: the
alerts' markers on the loss plot and their lines in the Log), alert_dead and alert_vanishing (one epoch of
resources/examples/planted_dead_relu.py and planted_vanishing.py: their alerts the same way).
The queue: queue (four runs lined up, one of them a model file that is gone, worked by the window one after another:
the Queue dock once they have ended, a fifth queued while paused).
A hang: stacks (a 2-process run whose rank 1 blocks before a collective at step 25: the Ranks tab's notice after
3 s without a step, then Collect stacks; the dialog is OUT, the window beside it OUT's name with "-window").
The window opens at the size it picks for the screen (fit to the available area), with settings and history in a
temporary folder, so nothing of the user's is read or changed.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Callable

TEMP = Path(tempfile.mkdtemp(prefix="workbench-tour-"))
os.environ["WORKBENCH_CONFIG_DIR"] = str(TEMP / "config")
os.environ["WORKBENCH_DATA_DIR"] = str(TEMP / "data")

from PySide6.QtCore import Qt, QTimer  # noqa: E402  (after the folders are set)

from workbench.core.ground.config import BUILTIN_MODEL, TrainConfig  # noqa: E402
from workbench.core.ground.events import CompileStarted, Step  # noqa: E402
from workbench.ui.app import create_app  # noqa: E402
from workbench.ui.main_window import MainWindow  # noqa: E402
from workbench.ui.panels.setup import example_model_spec  # noqa: E402

SHOTS = ("readme", "training", "compiling", "reason", "explain", "evaluate", "dataset", "timeline", "fixit",
         "whatif", "system", "profile", "profile_timeline", "profile_memory", "amp", "export", "export_aoti",
         "lr_finder", "batch_finder", "sweep", "runs", "connect", "remote", "host_runs", "reattached", "manage",
         "seed_band", "compare", "imported", "diff", "numerics", "numerics_bf16", "numerics_drift", "code", "stages",
         "model", "layers", "alert", "alert_dead", "alert_vanishing", "stacks", "queue")
# the planted examples whose alerts a shot shows (alert: the exploding learning rate, a JSON config)
ALERT_SHOTS = {"alert": None, "alert_dead": ("planted_dead_relu.py", "PlantedDeadReluNet"),
               "alert_vanishing": ("planted_vanishing.py", "PlantedVanishingNet")}
MANAGE_SHOTS = ("manage", "seed_band", "compare", "imported", "diff")  # over a synthetic history (fill_history.py)
REMOTE_SHOTS = ("remote", "host_runs", "reattached")  # the window connected to the loopback sshd
FINDER_SHOTS = {"lr_finder": "lr", "batch_finder": "batch"}
PROFILE_TABS = {"profile": "Ops", "profile_timeline": "Timeline", "profile_memory": "Memory", "amp": "AMP"}
README_SHOT = Path(__file__).resolve().parents[1] / "docs" / "screenshot.png"


def record_history() -> None:
    """The runs shot's history, as training and a sweep would leave it, without training: three runs, one that
    continues the first from its checkpoint, and two trials of the sweep "lr-search" (its Optuna study names their
    folders, as run/sweep.py does)."""
    import optuna

    from workbench.core.history.runs import RunStore
    from workbench.core.run.sweep import storage_url

    def record(store: RunStore, name: str, accuracy: float, rate: float, **changes) -> tuple[int, str]:
        folder = TEMP / "data" / "runs" / name
        run_id = store.start_run(TrainConfig(**changes).to_dict(), out_dir=str(folder))
        store.append_events(run_id, 0, [], {"status": "finished", "best_val_accuracy": accuracy,
                                            "samples_per_s": rate, "checkpoint": str(folder / "checkpoint.pt")})
        return run_id, str(folder)

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(study_name="lr-search", storage=storage_url(None), direction="maximize")
    with RunStore() as store:
        first, folder = record(store, "first", 0.923, 13497.0, epochs=2)
        record(store, "inductor", 0.931, 9120.0, epochs=2, backend="inductor")
        record(store, "continued", 0.951, 13210.0, epochs=4, resume=str(Path(folder) / "checkpoint.pt"))
        for number, lr in enumerate((0.004, 0.0012)):
            run_id, folder = record(store, f"trial-{number}", 0.93 - number / 50, 12000.0, epochs=2, lr=lr)
            trial = study.ask()
            trial.set_user_attr("out_dir", folder)
            trial.set_user_attr("run_id", run_id)
            study.tell(trial, 0.93 - number / 50)
        record(store, "fp16", 0.918, 14020.0, epochs=1, amp="fp16")


def fill_synthetic() -> None:
    """Nine runs as scripts/fill_history.py writes them (three settings, three seeds each), into this tour's history."""
    import subprocess

    from workbench.core.history.runs import default_db_path

    subprocess.run([sys.executable, str(Path(__file__).with_name("fill_history.py")), str(default_db_path()),
                    "--runs", "9", "--long", "0", "--seed", "3"], check=True, stdout=subprocess.DEVNULL)


def import_tensorboard_log() -> None:
    """A run logged by a user's own script with torch.utils.tensorboard (750 steps, validation every 125), imported
    into this tour's history: `workbench import tensorboard`."""
    import math

    from torch.utils.tensorboard import SummaryWriter

    from workbench.core.history.imports import import_tensorboard
    from workbench.core.history.runs import RunStore, default_db_path

    writer = SummaryWriter(TEMP / "tensorboard" / "my-old-script")
    for step in range(750):
        loss = 2.3 * math.exp(-step / 150) + 0.12 + 0.03 * math.sin(step)
        writer.add_scalar("Loss/train", loss, step)
        writer.add_scalar("Accuracy/train", 100 * (0.1 + 0.85 * (1 - math.exp(-step / 120))), step)
        if step % 125 == 124:
            writer.add_scalar("Accuracy/val", 0.1 + 0.84 * (1 - math.exp(-step / 120)), step)
            writer.add_scalar("Loss/val", loss * 1.1, step)
    writer.add_hparams({"lr": 0.004, "batch_size": 32}, {"hparam/accuracy": 0.93})
    writer.close()
    with RunStore(default_db_path()) as store:
        import_tensorboard(store, [TEMP / "tensorboard"])


def import_mlflow_store() -> None:
    """A run logged with MLflow's own client into a file store (750 steps, validation every 125), imported into this
    tour's history: `workbench import mlflow`."""
    import math
    import time

    import mlflow
    from mlflow.entities import Metric
    from mlflow.tracking import MlflowClient

    from workbench.core.history.imports import import_mlflow
    from workbench.core.history.runs import RunStore, default_db_path

    os.environ["MLFLOW_ALLOW_FILE_STORE"] = "true"  # MLflow 3.18 keeps the file store in maintenance mode
    root = TEMP / "mlruns"
    mlflow.set_tracking_uri(root.as_uri())
    mlflow.set_experiment("digits")
    with mlflow.start_run(run_name="keras-port") as run:
        mlflow.log_params({"learning_rate": 0.002, "batch_size": 64})
        now = int(time.time() * 1000)
        metrics = []
        for step in range(1, 751):
            loss = 2.2 * math.exp(-step / 110) + 0.09 + 0.04 * math.cos(step / 3)
            metrics += [Metric("train_loss", loss, now + step, step), Metric("train_acc", 0.97 - loss / 2.5, now + step,
                                                                             step)]
            if step % 125 == 0:
                metrics += [Metric("val_loss", loss * 1.05, now + step, step),
                            Metric("val_acc", 0.96 - loss / 2.4, now + step, step)]
        client = MlflowClient()
        for start in range(0, len(metrics), 1000):
            client.log_batch(run.info.run_id, metrics=metrics[start:start + 1000])
    with RunStore(default_db_path()) as store:
        import_mlflow(store, [root])


def start_host():
    """The loopback sshd (the tests' own, tests/support/sshd.py) as a Remote; WORKBENCH_SSH reaches it."""
    import atexit

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.support.sshd import start_sshd
    from workbench.core.run.remote.ssh import Remote

    server = start_sshd(TEMP / "sshd")
    atexit.register(server.stop)
    os.environ["WORKBENCH_SSH"] = server.ssh_command
    return Remote.parse(server.address, server.remote_python)


def train_on(host) -> None:
    """A finished run on the host (3 epochs), as the window would leave one."""
    import threading

    from workbench.core.run.remote.kernels import RemoteRun
    from workbench.core.run.run_request import RunRequest

    RemoteRun(host).run(RunRequest(TrainConfig(epochs=3), out_dir=""), lambda event: None, threading.Event())


def when_connected(window, start) -> None:
    """`start` once the window's kernels are on its host and ready there."""
    if window.hosts.remote is not None and window.kernel.capabilities.known:
        QTimer.singleShot(300, start)
    else:
        QTimer.singleShot(100, lambda: when_connected(window, start))


HANG_MODEL = '''
import os, time
from pathlib import Path
from workbench.core.domain.model import SandwichNet

class HangOnRankOne(SandwichNet):
    calls = 0

    def forward(self, x):
        self.calls += self.training  # training steps only
        if os.environ.get("RANK") == "1" and self.training and self.calls == 25:
            wait_for_release()
        return super().forward(x)

def wait_for_release():  # a rank stuck before a collective: the others wait in it
    while not Path(__file__).with_name("release").exists():
        time.sleep(0.05)
'''


def shoot_queue(window: MainWindow, grab: Callable[[int], None]) -> Callable[[], None]:
    """Four runs queued from the form, worked by the window; the dock once they have ended, a fifth waiting."""
    from workbench.core.history.queue import QUEUED, RUNNING

    feature = window.queue
    window.docks["queue"].raise_()

    def line_up() -> None:
        feature.panel.pause.click()
        tiny = TrainConfig(epochs=1, max_steps=60, hidden_dim=32, device="cpu")
        for config in (tiny, tiny.replace(lr=0.01), tiny.replace(model=str(TEMP / "gone.py:Net")),
                       tiny.replace(hidden_dim=128, seed=3)):
            window.setup.set_config(config)
            feature.queue_form()
        feature.panel.pause.click()
        feature.tick()
        watch()

    def watch() -> None:
        if any(entry.state in (QUEUED, RUNNING) for entry in feature.queue.entries()):
            QTimer.singleShot(500, watch)
            return
        feature.panel.pause.click()
        window.setup.set_config(TrainConfig(epochs=2, hidden_dim=64, device="cpu"))
        feature.queue_form()
        window.resizeDocks([window.docks["queue"]], [330], Qt.Vertical)  # every entry in sight
        grab(600)

    return line_up


def shoot_stacks(window: MainWindow, out: Path, done: list[bool]) -> Callable[[], None]:
    """A 2-process run stuck on rank 1: the window with the Ranks tab's notice, then the stacks dialog."""
    model = TEMP / "hang.py"
    model.write_text(HANG_MODEL)
    window.setup.set_config(TrainConfig(model=f"{model}:HangOnRankOne", epochs=1, max_steps=60, hidden_dim=64))
    window.setup.processes_spin.setValue(2)
    window.stacks.watch.after_s = 3
    window.plots.machine_tabs.setCurrentWidget(window.plots.ranks)

    def dialog_shown() -> None:
        if window.stacks.dialog is None:
            QTimer.singleShot(200, dialog_shown)
            return
        window.stacks.dialog.grab().save(str(out))
        done.append(True)
        (TEMP / "release").touch()
        window.training.runFinished.connect(lambda _result: (window.runner.shutdown(), window.close()))

    def hung() -> None:
        if window.plots.ranks.collect.isHidden():
            QTimer.singleShot(200, hung)
            return
        window.plots.machine_tabs.setCurrentWidget(window.plots.ranks)
        window.grab().save(str(out.with_name(out.stem + "-window.png")))
        window.plots.ranks.collect.click()
        dialog_shown()

    return lambda: (window.training.train(), hung())


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("shot", choices=SHOTS)
    parser.add_argument("out", type=Path, nargs="?", default=README_SHOT)
    parser.add_argument("--at-step", type=int, default=600, help="training: grab once this step has been shown")
    args = parser.parse_args()
    args.out.parent.mkdir(parents=True, exist_ok=True)  # a feature's folder the first time (QPixmap.save won't)
    app = create_app(sys.argv[:1])
    if args.shot == "runs":
        record_history()
    if args.shot in MANAGE_SHOTS:
        fill_synthetic()
    if args.shot == "imported":
        import_tensorboard_log()
        import_mlflow_store()
    host = start_host() if args.shot in REMOTE_SHOTS else None
    if args.shot in ("host_runs", "reattached"):
        train_on(host)
    window = MainWindow(remote=host)
    window.show()
    done: list[bool] = []

    def grab(delay_ms: int = 300) -> None:
        if not done:
            done.append(True)
            window.plots.redraw()
            QTimer.singleShot(delay_ms, lambda: (window.grab().save(str(args.out)), window.runner.shutdown(),
                                                 window.close()))

    def when_ready(start) -> None:
        """`start` once PyTorch is ready in the kernel (the form knows the machine by then)."""
        if window.kernel.capabilities.known:
            QTimer.singleShot(300, start)
        else:
            window.kernel.capabilitiesChanged.connect(lambda _caps: QTimer.singleShot(300, start))

    if args.shot == "readme":
        window.setup.set_config(TrainConfig(model=example_model_spec(), backend="aot_eager", epochs=40))
        window.runner.events.connect(lambda batch: any(isinstance(e, Step) and e.step >= 1800 for e in batch)
                                     and grab())
        when_ready(window.training.train)
    elif args.shot in ("training", "system"):
        window.setup.set_config(TrainConfig(epochs=40))
        if args.shot == "system":
            window.plots.machine_tabs.setCurrentWidget(window.plots.system_plot)
        window.runner.events.connect(lambda batch: any(isinstance(e, Step) and e.step >= args.at_step
                                                       for e in batch) and grab())
        when_ready(window.training.train)
    elif args.shot == "compiling":
        window.setup.set_config(TrainConfig(backend="inductor", epochs=3))
        window.runner.events.connect(lambda batch: any(isinstance(e, CompileStarted) for e in batch)
                                     and QTimer.singleShot(4000, grab))
        when_ready(window.training.train)
    elif args.shot == "reason":
        when_ready(lambda: (window.setup.fields["lr"].setValue(0.0), grab()))
    elif args.shot == "explain":
        window.setup.set_config(TrainConfig(backend="inductor", mode="max-autotune-no-cudagraphs"))
        window.compile_insight.explainFinished.connect(lambda _report: grab())
        when_ready(window.compile_insight.explain)
    elif args.shot == "evaluate":
        window.setup.set_config(TrainConfig(epochs=2))

        def evaluated(_answer) -> None:
            evaluation = window.evaluation.evaluation
            confusion = evaluation.confusion.copy()
            confusion[range(len(confusion)), range(len(confusion))] = -1
            true, predicted = divmod(int(confusion.argmax()), confusion.shape[1])
            window.evaluation.show_cell(true, predicted)  # the largest mistake cell, as a click opens it
            grab()

        window.data_insight.evaluationFinished.connect(evaluated)
        window.checkpoints.checkpointLoaded.connect(lambda _answer: window.data_insight.evaluate())
        when_ready(window.training.train)
    elif args.shot == "timeline":
        window.setup.set_config(TrainConfig(model=example_model_spec(), backend="inductor", epochs=2))

        def finished(_result) -> None:
            steps = sorted(window.plots.timeline.lines)
            window.compile_insight.show_steps((steps[-1],))  # as a click on the last marker does
            grab(600)

        window.training.runFinished.connect(finished)
        when_ready(window.training.train)
    elif args.shot == "fixit":
        window.setup.set_config(TrainConfig(model=example_model_spec(), backend="aot_eager"))
        window.compile_insight.explainFinished.connect(lambda _report: window.compile_insight.check_fullgraph())
        window.compile_insight.fullgraphChecked.connect(lambda _answer: grab(300))
        when_ready(window.compile_insight.explain)
    elif args.shot == "whatif":
        window.setup.set_config(TrainConfig(backend="inductor", dynamic=False, batch_size=1000))
        window.data_insight.datasetPreviewed.connect(lambda _answer: grab(600))
        when_ready(lambda: window.compile_panel.tabs.setCurrentWidget(window.compile_panel.forecast))
    elif args.shot in PROFILE_TABS:
        if args.shot == "amp":
            window.setup.set_config(TrainConfig(amp="fp16", loss_scale=2.0**40, epochs=2))
        else:
            window.setup.set_config(TrainConfig(backend="inductor", epochs=1, profile_steps=20))

        def profiled(_result) -> None:
            window.docks["profile"].raise_()
            window.resizeDocks([window.docks["profile"]], [int(window.width() * 0.55)], Qt.Horizontal)
            window.profile.show_tab(PROFILE_TABS[args.shot])
            grab(800)

        window.training.runFinished.connect(profiled)
        when_ready(window.training.train)
    elif args.shot in ("export", "export_aoti"):
        window.setup.set_config(TrainConfig(epochs=2))

        def exported(_table) -> None:
            done.append(True)
            QTimer.singleShot(300, lambda: (window.exports.export_dialog.grab().save(str(args.out)), window.close()))

        def loaded(_answer) -> None:
            dialog = window.exports.open_model_dialog()
            dialog.folder.setText(str(TEMP / "export"))
            dialog.format.setCurrentIndex(dialog.format.findData("onnx" if args.shot == "export" else "aoti"))
            dialog.export_button.click()

        window.exports.modelExported.connect(exported)
        window.checkpoints.checkpointLoaded.connect(loaded)
        when_ready(window.training.train)
    elif args.shot in FINDER_SHOTS:
        kind = FINDER_SHOTS[args.shot]

        def found(_kind, _finding) -> None:
            done.append(True)
            dialog = window.search.finder_dialogs[kind]
            QTimer.singleShot(300, lambda: (dialog.grab().save(str(args.out)), window.close()))

        window.search.finderDone.connect(found)
        when_ready(lambda: window.search.open_finder(kind).start_button.click())
    elif args.shot == "sweep":  # the sweep of issue 16's closing note: 12 TPE trials of the default settings

        def ended(_trials) -> None:
            done.append(True)
            dialog.tabs.setCurrentWidget(dialog.pareto)
            QTimer.singleShot(500, lambda: (dialog.grab().save(str(args.out)), window.close()))

        def start() -> None:
            dialog.parameter_boxes["backend"].setChecked(True)  # with lr, batch_size and hidden_dim
            dialog.sampler.setCurrentText("tpe")
            dialog.trial_count.setValue(12)
            dialog.start()

        dialog = window.search.open_sweep()
        dialog.sweepEnded.connect(ended)
        when_ready(lambda: QTimer.singleShot(1000, start))  # after the stored sweeps' names are read
    elif args.shot == "runs":
        window.docks["runs"].raise_()
        when_ready(lambda: QTimer.singleShot(1000, grab))  # after the sweeps are read for the Runs table
    elif args.shot in MANAGE_SHOTS:
        runs = window.runs
        window.docks["runs"].raise_()
        if args.shot not in ("seed_band", "compare", "imported"):  # the band needs the plots' height
            window.resizeDocks([window.docks["runs"]], [330], Qt.Vertical)

        def chosen() -> None:
            records = {r.id: r for r in runs.model.rows}
            if args.shot == "manage":
                runs.select_ids([next(i for i, r in records.items() if r.notes and r.tags)])
                runs.details_button.setChecked(True)
                grab(600)
            elif args.shot in ("seed_band", "compare", "imported"):
                window.docks["log"].raise_()  # the plots take the window's height
                window.resizeDocks([window.docks["log"]], [90], Qt.Vertical)
                if args.shot == "seed_band":
                    runs.select_ids([max(records)])  # one run of a seed group: Compare takes the whole group
                    runs.compare_selected()
                elif args.shot == "imported":  # the imported runs (the newest two) beside a run of Workbench's
                    runs.select_ids([max(records), max(records) - 1, 4])
                else:  # two runs of different settings: selecting them compares them
                    runs.select_ids([max(records), min(records)])

                def banded() -> None:
                    if window.plots.group_bands or (args.shot in ("compare", "imported") and window.plots.overlays):
                        grab(800)
                    else:
                        QTimer.singleShot(100, banded)

                banded()
            else:
                first = records[min(records)]
                differs = sorted(records.values(), key=lambda r: -((r.config["backend"] != first.config["backend"])
                                                                   + (r.config["amp"] != first.config["amp"])))
                other = differs[0]  # backend and AMP both differ, if any run's do
                runs.select_ids([first.id, other.id])
                runs.diff_selected()

                def shown() -> None:
                    if runs.diff_dialog is None or not runs.diff_dialog.isVisible():
                        QTimer.singleShot(100, shown)
                        return
                    done.append(True)
                    QTimer.singleShot(400, lambda: (runs.diff_dialog.grab().save(str(args.out)), window.close()))

                shown()

        when_ready(lambda: QTimer.singleShot(1500, chosen))  # after the listing
    elif args.shot.startswith("numerics"):
        from workbench.core.ground.resources import resource_path

        drift = f"{resource_path('examples', 'planted_drift.py')}:PlantedDriftNet"
        window.setup.set_config(TrainConfig(backend="inductor", amp="bf16" if args.shot == "numerics_bf16" else "off",
                                            model=drift if args.shot == "numerics_drift" else BUILTIN_MODEL))

        def compared(_report) -> None:
            done.append(True)
            dialog = window.compile_insight.numerics_dialog
            QTimer.singleShot(400, lambda: (dialog.grab().save(str(args.out)), window.close()))

        window.compile_insight.numericsCompared.connect(compared)
        when_ready(window.compile_insight.compare_numerics)
    elif args.shot in ("code", "stages"):
        window.setup.set_config(TrainConfig(backend="inductor", epochs=1, compile_trace=True, profile_steps=20))

        def coded(dialog) -> None:
            done.append(True)
            view = dialog.view
            fc = next(line for line, text in sorted(view.source.known.get(view.source.file, {}).items())
                      if "self.fc1(" in text)
            view.select_source_line(view.source.file, fc)
            view.tabs.setCurrentIndex(view.tabs.count() - 2)  # the forward's output code, with its kernel table
            QTimer.singleShot(500, lambda: (dialog.grab().save(str(args.out)), window.close()))

        def finished(_result) -> None:
            if args.shot == "stages":
                window.docks["compile"].raise_()
                window.compile_panel.tabs.setCurrentWidget(window.compile_panel.stages)
                grab(600)
            else:
                window.compile_insight.codeShown.connect(coded)
                window.compile_panel.code_button.click()

        window.training.runFinished.connect(finished)
        when_ready(window.training.train)
    elif args.shot == "connect":
        from workbench.core.run.remote.ssh import Remote
        from workbench.ui.dialogs.connect import CONNECT_SLOT

        def failed() -> None:
            if window.tasks.busy(CONNECT_SLOT):
                QTimer.singleShot(100, failed)
                return
            done.append(True)
            QTimer.singleShot(300, lambda: (dialog.grab().save(str(args.out)), dialog.reject(), window.close()))

        dialog = window.hosts.open_connect(Remote.parse("me@gpu-box.invalid"))
        QTimer.singleShot(200, failed)
    elif args.shot == "remote":
        window.setup.set_config(TrainConfig(epochs=40))
        window.runner.events.connect(lambda batch: any(isinstance(e, Step) and e.step >= args.at_step
                                                       for e in batch) and grab())
        when_connected(window, window.training.train)
    elif args.shot == "host_runs":
        def listed() -> None:
            dialog = window.hosts.runs_dialog
            if dialog is None or not dialog.isVisible():
                QTimer.singleShot(100, listed)
                return
            done.append(True)
            QTimer.singleShot(300, lambda: (dialog.grab().save(str(args.out)), dialog.reject(), window.close()))

        when_connected(window, listed)  # the dialog opens by itself: the host has a run
    elif args.shot == "reattached":
        def attach() -> None:
            dialog = window.hosts.runs_dialog
            if dialog is None or not dialog.isVisible():
                QTimer.singleShot(100, attach)
                return
            dialog.attach()

        window.training.runFinished.connect(lambda _result: grab(600))
        when_connected(window, attach)
    elif args.shot in ("model", "layers"):
        from workbench.core.ground.resources import resource_path

        vanishing = f"{resource_path('examples', 'planted_vanishing.py')}:PlantedVanishingNet"
        window.setup.set_config(TrainConfig(model=vanishing, epochs=40, stats_every=25))

        def inside() -> None:
            model = window.layers_panel
            window.docks["model"].raise_()
            window.resizeDocks([window.docks["model"]], [int(window.width() * 0.45)], Qt.Horizontal)
            model.redraw()
            if args.shot == "model":
                model.tabs.setCurrentWidget(model.statistics)
                model.distributions.select(list(model.history.layers)[-1], "activations")
            grab(600)

        window.runner.events.connect(lambda batch: not done and any(isinstance(e, Step) and e.step >= 500
                                                                    for e in batch) and inside())
        when_ready(window.training.train)
    elif args.shot in ALERT_SHOTS:
        from workbench.core.ground.resources import resource_path

        if args.shot == "alert":
            config = TrainConfig.from_json(resource_path("examples", "planted_exploding_lr.json").read_text())
        else:
            file, cls = ALERT_SHOTS[args.shot]
            config = TrainConfig(model=f"{resource_path('examples', file)}:{cls}", epochs=1)
        window.setup.set_config(config)
        window.training.runFinished.connect(lambda _result: grab(600))
        when_ready(window.training.train)
    elif args.shot == "queue":
        when_ready(shoot_queue(window, grab))
    elif args.shot == "stacks":
        when_ready(shoot_stacks(window, args.out, done))
    elif args.shot == "dataset":
        window.data_insight.datasetPreviewed.connect(lambda _answer: grab())
        when_ready(window.docks["dataset"].raise_)
    app.exec()
    print(f"wrote {args.out}" if done else "nothing was grabbed")
    return 0 if done else 1


if __name__ == "__main__":
    raise SystemExit(main())
