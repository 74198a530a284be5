"""Recorded runs read back off the GUI thread: a comparison reads only what curves need, a run shown reads what its
panels show too, and a run read for comparing is read again (not taken from the cache) when it is shown."""

from __future__ import annotations

from workbench.core.ground.config import TrainConfig
from workbench.core.ground.events import CompileFinished, MemorySample, Step, SystemSample
from workbench.core.history.runs import RunStore
from workbench.ui.panels.runs.loading import RunLoader
from workbench.ui.support.tasks import Tasks


def test_a_compared_run_is_read_without_its_panels_and_shown_with_them(qtbot, tmp_path):
    db = tmp_path / "runs.sqlite"
    with RunStore(db) as store:
        run_id = store.start_run(TrainConfig().to_dict())
        steps = [Step(step=n, epoch=1, loss=1.0 / n, samples_per_s=10.0, step_seconds=0.1, memory=MemorySample(rss=1.0))
                 for n in (1, 2)]
        store.append_events(run_id, 0, [CompileFinished("inductor", "default", 3.5), *steps,
                                        SystemSample(seconds=1.0, cpu_process=50.0, cpu_machine=20.0, rss_mib=1.0)],
                            {"status": "finished"})
    tasks = Tasks()
    loader = RunLoader(tasks, db, on_error=lambda exc: (_ for _ in ()).throw(exc))
    delivered = []
    loader.load([run_id], delivered.append, "slot", panels=False)
    qtbot.waitUntil(lambda: len(delivered) == 1)
    [compared] = delivered[0]
    assert compared.panel_events is None and compared.curves.step.tolist() == [1, 2]
    assert compared.curves.compile_seconds == 3.5  # its compile marker's figure, from the events its curves read
    loader.load([run_id], delivered.append, "slot")  # shown: its panels' events are read now
    qtbot.waitUntil(lambda: len(delivered) == 2)
    [shown] = delivered[1]
    assert any(isinstance(e, SystemSample) for e in shown.panel_events) and shown.compile_seconds == 3.5
    loader.load([run_id], delivered.append, "slot", panels=False)  # a run read with its panels serves a comparison
    assert delivered[2] == [shown]
