"""As many runs at once as a place has devices (run/queue_worker.py): a slot per CUDA device, each entry trained on
its slot's device, never two on one device; an entry naming its device waits for that device's slot; the CPU trains
one at a time."""

from __future__ import annotations

import threading

import pytest

from workbench.core.ground.config import TrainConfig
from workbench.core.ground.events import RunFinished
from workbench.core.ground.results import RunResults
from workbench.core.history.queue import FINISHED, QueueError, RunQueue
from workbench.core.run import queue_worker
from workbench.core.run.queue_worker import slot_devices, work

BASE = TrainConfig(epochs=1, hidden_dim=16)


def test_each_cuda_device_trains_an_entry_at_once_and_never_two(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path / "data"))  # the slots' locks
    db = str(tmp_path / "runs.sqlite")
    together = threading.Barrier(2, timeout=30)  # the first two entries must train at the same time
    guard, training, trained = threading.Lock(), {}, {}

    def start_run(request, emit, stop, process=None):
        config = request.config
        with guard:
            assert config.device not in training, f"two runs on {config.device} at once"
            training[config.device] = config.seed
            trained[config.seed] = config.device
        try:
            if config.seed in (1, 2):
                together.wait()
        finally:
            with guard:
                del training[config.device]
        return RunFinished(steps=1, epochs=1, seconds=1.0, stopped=False, results=RunResults(samples_per_s=1.0))

    monkeypatch.setattr(queue_worker, "start_run", start_run)
    with RunQueue(db) as queue:
        for seed, device in ((1, "auto"), (2, "cuda"), (3, "cuda:1"), (4, "cpu"), (5, "auto")):
            queue.add(BASE.replace(seed=seed, device=device))
    done = work(db, threading.Event(), cuda_devices=2, say=lambda line: None)
    assert sorted(state for _entry, state in done.ended) == [FINISHED] * 5
    assert sorted([trained[1], trained[2]]) == ["cuda:0", "cuda:1"]  # one each, at once
    assert trained[3] == "cuda:1" and trained[4] == "cpu"  # a named device is kept
    assert trained[5] in ("cuda:0", "cuda:1")


def test_an_entry_naming_a_cuda_device_is_left_to_that_devices_slot(tmp_path):
    with RunQueue(tmp_path / "runs.sqlite") as queue:
        second = queue.add(BASE.replace(device="cuda:1"))
        either = queue.add(BASE)
        assert queue.claim(device="cuda:0").id == either  # the first entry waits for cuda:1
        assert queue.claim(device="cuda:0") is None
        assert queue.claim(device="cuda:1").id == second


def test_the_slots_are_one_per_device_and_one_on_the_cpu():
    assert slot_devices(0, None) == [""] and slot_devices(2, None) == ["cuda:0", "cuda:1"]
    assert slot_devices(2, 1) == ["cuda:0"]
    assert slot_devices(0, None, "gpu-box") == [""] and slot_devices(0, 2, "gpu-box") == ["cuda:0", "cuda:1"]
    with pytest.raises(QueueError, match="no CUDA device: its runs train one at a time on the CPU") as refused:
        slot_devices(0, 2)
    assert refused.value.hint == "--parallel 1 at most"
    with pytest.raises(QueueError, match="2 CUDA device"):
        slot_devices(2, 3)
    with pytest.raises(QueueError, match="0 runs at once is none"):
        slot_devices(1, 0)


def test_the_command_line_asks_for_as_many_runs_at_once_as_parallel_says(tmp_path, capsys):
    from workbench.cli import main

    code = main(["queue", "--db", str(tmp_path / "runs.sqlite"), "work", "--parallel", "2"])  # this CPU machine
    assert code != 0 and "2 runs at once asked for, but this computer has no CUDA device" in capsys.readouterr().err
