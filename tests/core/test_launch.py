"""Starting a run: a `RunRequest` is checked once against the machine (`RunRequest.build`) and then only travels;
`start_run` trains it here or in a fresh run kernel, and every event reaches `emit` in order."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from workbench.core.ground.config import ConfigError, TrainConfig
from workbench.core.ground.events import (EpochEnd, Notice, RunFailed, RunFinished, RunStarted, Step, from_json,
                                          is_terminal)
from workbench.core.history.runs import RunStore
from workbench.core.kernel.launch import start_run
from workbench.core.run.process import ChildProcess
from workbench.core.run.run_request import Launch, LaunchError, RunRequest

from ..helpers import SMALL



# -- the request ------------------------------------------------------------------------------------------------
def test_a_request_round_trips_through_json():
    request = RunRequest(config=SMALL.replace(amp="bf16", lr=0.01, model="/somewhere/net.py:Net"),
                         out_dir="/runs/one", db="/runs/runs.sqlite", record=False,
                         launch=Launch(nproc_per_node=2, nnodes=2, node_rank=1, master_addr="10.0.0.1",
                                       master_port=29500, where="process"))
    assert RunRequest.from_json(request.to_json()) == request
    assert json.loads(request.to_json())["launch"]["nproc_per_node"] == 2  # plain JSON: torchrun's env carries it
    default = RunRequest(config=TrainConfig(), out_dir="/runs/two")
    assert RunRequest.from_json(default.to_json()) == default and default.db is None and default.record


@pytest.mark.parametrize("device,cuda_devices", [("auto", 0), ("cpu", 0), ("cpu", 1)])
def test_build_refuses_cuda_graphs_on_the_cpu(tmp_path, device, cuda_devices):
    with pytest.raises(ConfigError, match="needs a CUDA device") as info:
        RunRequest.build(SMALL.replace(backend="cudagraphs", device=device), cuda_devices=cuda_devices,
                         out_dir=tmp_path)
    assert info.value.field == "backend" and "aot_eager" in info.value.allowed


def test_build_refuses_a_cuda_device_this_machine_does_not_have(tmp_path):
    with pytest.raises(ConfigError, match="'cuda:3' was asked for but this machine has no usable CUDA device"):
        RunRequest.build(SMALL.replace(device="cuda:3"), cuda_devices=0, out_dir=tmp_path)
    with pytest.raises(ConfigError, match=r"'cuda:3' was asked for but this machine has 2 CUDA device\(s\)") as info:
        RunRequest.build(SMALL.replace(device="cuda:3"), cuda_devices=2, out_dir=tmp_path)
    assert info.value.field == "device" and "cuda:1" in info.value.allowed and "cuda:2" not in info.value.allowed
    built = RunRequest.build(SMALL.replace(device="cuda:1"), cuda_devices=2, out_dir=tmp_path)  # it has that one
    assert built.config.device == "cuda:1"


def test_build_gives_a_run_a_folder_of_its_own_here_unless_it_trains_elsewhere(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert RunRequest.build(SMALL, cuda_devices=0, out_dir="").out_dir == ""  # the host gives it one there
    assert list(tmp_path.iterdir()) == []  # and none was made here
    given = RunRequest.build(SMALL, cuda_devices=0, out_dir=tmp_path / "mine")
    assert given.out_dir == str((tmp_path / "mine").resolve())


def test_build_refuses_a_global_batch_that_does_not_split_evenly(tmp_path):
    with pytest.raises(LaunchError, match="the batch size 65 is the global batch and must split evenly over 2 "
                                          "processes") as info:
        RunRequest.build(SMALL.replace(batch_size=65, device="cpu"), cuda_devices=0, out_dir=tmp_path,
                         launch=Launch(nproc_per_node=2))
    assert "e.g. 64" in info.value.hint
    built = RunRequest.build(SMALL.replace(batch_size=64, device="cpu"), cuda_devices=0, out_dir=tmp_path,
                             launch=Launch(nproc_per_node=2))
    assert built.launch.world_size == 2


def test_the_global_batch_must_split_over_every_process_of_every_node(tmp_path):
    # 2 nodes × 2 processes: 4 ranks share the batch. 6 splits over one node's 2 processes but not over all 4.
    # A master on another machine: nothing here is probed, and nothing else about the launch is refused.
    launch = Launch(nproc_per_node=2, nnodes=2, master_addr="10.0.0.1", master_port=29500)
    with pytest.raises(LaunchError, match="the batch size 6 is the global batch and must split evenly over 4 "
                                          "processes") as info:
        RunRequest.build(SMALL.replace(batch_size=6, device="cpu"), cuda_devices=0, out_dir=tmp_path, launch=launch)
    assert "use a multiple of 4, e.g. 4" in info.value.hint
    with pytest.raises(LaunchError, match="must split evenly over 4 processes") as info:
        RunRequest.build(SMALL.replace(batch_size=66, device="cpu"), cuda_devices=0, out_dir=tmp_path,
                         launch=launch)
    assert "e.g. 64" in info.value.hint
    built = RunRequest.build(SMALL.replace(batch_size=8, device="cpu"), cuda_devices=0, out_dir=tmp_path,
                             launch=launch)
    assert built.launch.world_size == 4


def test_build_refuses_several_processes_in_this_one(tmp_path):
    with pytest.raises(LaunchError, match="never in this process"):
        RunRequest.build(SMALL.replace(device="cpu"), cuda_devices=0, out_dir=tmp_path,
                         launch=Launch(nproc_per_node=2, where="here"))
    with pytest.raises(LaunchError, match="unknown place to train 'there'"):
        RunRequest.build(SMALL, cuda_devices=0, out_dir=tmp_path, launch=Launch(where="there"))


@pytest.mark.parametrize("port", [70000, 65536, 0, -1])
def test_build_refuses_a_master_port_outside_tcps_range(tmp_path, port):
    """Regression: a local master's port was probed first, and bind() raised OverflowError for these."""
    with pytest.raises(LaunchError, match=rf"--master-port {port} is not a TCP port \(1…65535\)") as info:
        RunRequest.build(SMALL.replace(device="cpu"), cuda_devices=0, out_dir=tmp_path,
                         launch=Launch(nproc_per_node=1, nnodes=2, master_port=port))
    assert "29500" in info.value.hint
    remote = Launch(nnodes=2, master_addr="10.0.0.1", master_port=65535)  # the highest: allowed (not probed)
    assert RunRequest.build(SMALL.replace(device="cpu"), cuda_devices=0, out_dir=tmp_path, launch=remote)


def test_build_gives_every_run_an_absolute_folder_of_its_own(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path / "data"))
    first = RunRequest.build(SMALL, cuda_devices=0)
    second = RunRequest.build(SMALL, cuda_devices=0)
    for request in (first, second):
        assert Path(request.out_dir).is_absolute()
        assert Path(request.out_dir).parent == (tmp_path / "data" / "runs").resolve()
    assert first.out_dir != second.out_dir  # no shared folder a later run overwrites
    assert first.record and first.db is None and first.launch == Launch()


def test_build_makes_a_given_folder_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    request = RunRequest.build(SMALL, cuda_devices=0, out_dir="out", db=tmp_path / "runs.sqlite", record=False)
    assert request.out_dir == str(tmp_path.resolve() / "out")  # the history keeps it: valid from any folder
    assert request.db == str(tmp_path / "runs.sqlite") and not request.record


# -- starting it ------------------------------------------------------------------------------------------------
def _files(folder: Path) -> list:
    return [from_json(line) for line in (folder / "events.jsonl").read_text(encoding="utf-8").splitlines()]


def test_a_run_here_trains_and_keeps_its_files_and_record(tmp_path):
    request = RunRequest(config=SMALL, out_dir=str(tmp_path / "run"), db=str(tmp_path / "runs.sqlite"),
                         launch=Launch(where="here"))
    events = []
    result = start_run(request, events.append)
    assert isinstance(result, RunFinished) and not result.stopped and result.steps == 20
    assert isinstance(events[0], RunStarted) and events[-1] == result
    assert [e for e in events if is_terminal(e)] == [result]
    folder = tmp_path / "run"
    assert (folder / "checkpoint.pt").is_file()
    assert json.loads((folder / "metrics.json").read_text())["steps"] == 20
    assert _files(folder) == events
    [record] = RunStore(request.db).list()
    assert record.status == "finished" and record.out_dir == request.out_dir


def test_a_run_in_a_run_kernel_streams_its_events_in_order(tmp_path):
    request = RunRequest(config=SMALL, out_dir=str(tmp_path / "run"), record=False)  # where="process": the default
    events = []
    result = start_run(request, events.append)
    assert isinstance(result, RunFinished) and not result.stopped and result.steps == 20, result
    assert isinstance(events[0], RunStarted) and events[-1] == result
    assert [e for e in events if is_terminal(e)] == [result]
    steps = [e.step for e in events if isinstance(e, Step)]
    assert steps and steps == sorted(steps) and steps[-1] <= 20
    assert [e.epoch for e in events if isinstance(e, EpochEnd)] == [1]
    assert _files(tmp_path / "run") == events  # what came through emit is what the kernel wrote, in order
    assert (tmp_path / "run" / "checkpoint.pt").is_file()


def test_a_stop_before_the_run_kernel_is_ready_is_a_stopped_run_with_nothing_trained(tmp_path):
    request = RunRequest(config=SMALL, out_dir=str(tmp_path / "run"), record=False)
    stop = threading.Event()
    stop.set()
    process = ChildProcess()  # still importing torch
    events = []
    result = start_run(request, events.append, stop, process=process)
    assert isinstance(result, RunFinished) and result.stopped and result.steps == 0 and result.epochs == 0
    assert isinstance(events[0], Notice) and "nothing was trained" in events[0].message
    assert events[-1] == result and len(events) == 2
    assert process.process.poll() is not None  # the kernel was ended, not left importing
    assert not (tmp_path / "run" / "checkpoint.pt").exists()


def test_a_run_kernel_refusing_a_run_is_a_failed_run(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("a file where the run's folder should be")
    request = RunRequest(config=SMALL, out_dir=str(blocker / "run"), record=False)
    events = []
    result = start_run(request, events.append)
    assert isinstance(result, RunFailed) and result.kind != "crashed", result
    assert "cannot write to output folder" in result.message
    assert events == [result]


def test_the_windows_launcher_never_trains_in_its_own_process(tmp_path):
    """run.launch is the window's: a run here is the kernel side's (kernel/launch.py), never imported by the window."""
    from workbench.core.run import launch

    request = RunRequest(config=SMALL, out_dir=str(tmp_path / "run"), record=False, launch=Launch(where="here"))
    with pytest.raises(ValueError, match="workbench.core.kernel.launch.start_run"):
        launch.start_run(request, lambda event: None)
