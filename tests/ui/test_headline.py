"""The headline figures above the plots, fed synthetic events."""

from __future__ import annotations

import numpy as np

from workbench.core.ground.config import TrainConfig
from workbench.core.ground.events import CompileFinished, EpochEnd, MemorySample, RunStarted, Step
from workbench.core.ground.figures import steady_rate
from workbench.core.history.curves import Curves
from workbench.ui.panels.plots.headline import HeadlineBar

from ..helpers import VERSIONS


def _run(total_steps: int = 100) -> list:
    started = RunStarted(config=TrainConfig(epochs=2), device="cpu", device_name="cpu", versions=VERSIONS,
                         train_size=3200, val_size=100, steps_per_epoch=50, total_steps=total_steps)
    steps = [Step(step=i, epoch=1, loss=1.0, samples_per_s=2000.0 + i, step_seconds=0.5,
                  memory=MemorySample(rss=300.0 + i), compiling=i == 1) for i in range(1, 11)]
    return [started, CompileFinished("inductor", "default", 12.06), *steps,
            EpochEnd(epoch=1, train_loss=1.0, val_loss=1.0, val_accuracy=0.8123, seconds=5.0),
            CompileFinished("inductor", "default", 1.5, phase="eval"),
            EpochEnd(epoch=2, train_loss=1.0, val_loss=1.0, val_accuracy=0.75, seconds=9.0)]


def test_a_batch_of_events_sets_every_figure(qtbot):
    bar = HeadlineBar()
    qtbot.addWidget(bar)
    assert set(bar.figures().values()) == {"—"}
    bar.add_events(_run())
    steady = steady_rate(e.samples_per_s for e in _run() if isinstance(e, Step) and e.steady)
    assert f"{steady:,.0f}" != "2,010"  # the latest steady block's rate, which the headline used to show
    assert bar.figures() == {"best_val_accuracy": "81.23%",  # the best epoch, not the last
                             "samples_per_s": f"{steady:,.0f}",  # the run's steady figure so far
                             "compile": "13.6 s",  # every phase
                             "peak_memory": "310 MiB",
                             "eta": "0:45"}  # Progress's: 90 steps left at the steady 0.5 s
    bar.add_events([_run()[0]])  # a new run starts from nothing
    assert bar.figures()["best_val_accuracy"] == "—" and bar.figures()["compile"] == "—"


def test_a_recorded_run_shows_its_figures_without_an_eta(qtbot):
    bar = HeadlineBar()
    qtbot.addWidget(bar)
    x = np.arange(1.0, 6.0)
    curves = Curves(step=x, loss=x, throughput_step=x, throughput=np.array([10.0, 1000, 1100, 1200, 5]),
                    memory={"peak": np.array([1.0, 2048, 3000, 4, 5])}, val_step=np.array([5.0]),
                    val_accuracy=np.array([0.5]), compile_seconds=3.3, samples_per_s=1234.4)
    bar.show_run(curves)
    # samples/s: the run's own figure (as the Runs table shows it), not a statistic of its throughput curve
    assert bar.figures() == {"best_val_accuracy": "50.00%", "samples_per_s": "1,234", "compile": "3.3 s",
                             "peak_memory": "2.93 GiB", "eta": "—"}
