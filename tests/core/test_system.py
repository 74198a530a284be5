"""System metrics: the sampler's readings, a run's samples and summary, and NVML's absence said once."""

from __future__ import annotations

import os
import time

import psutil
import pytest
import torch

from workbench.core.domain import system
from workbench.core.domain.system import SystemSampler, summary
from workbench.core.engine import Trainer
from workbench.core.ground.config import TrainConfig
from workbench.core.ground.events import GpuReading, RunFinished, Step, SystemSample, from_json, to_json
from workbench.core.ground.results import GpuSummary, SystemSummary


def test_a_reading_is_this_process_and_this_machine():
    wall, cpu = time.perf_counter(), time.process_time()
    sampler = SystemSampler(torch.device("cpu"), started=time.perf_counter() - 3.0)
    end = time.process_time() + 0.3
    while time.process_time() < end:  # busy: this process uses a core while the interval runs
        pass
    reading = sampler.sample()
    # what this process really got of a core over the interval (a loaded machine gives a spinning thread less)
    share = 100.0 * (time.process_time() - cpu) / (time.perf_counter() - wall)
    assert reading.seconds >= 3.0
    assert reading.cpu_process > 0.5 * share > 0.0  # this process's CPU time, not another's nor the machine's
    assert 0.0 <= reading.cpu_machine <= 100.0
    rss = psutil.Process(os.getpid()).memory_info().rss / system.MIB
    assert abs(reading.rss_mib - rss) < 64  # the same process's resident memory
    assert reading.gpu == {}  # the CPU: no GPU figures, and no problem to report
    assert sampler.gpu_problem == ""


def test_the_thread_samples_at_its_interval_until_stopped():
    sampler = SystemSampler(torch.device("cpu"), started=time.perf_counter(), interval=0.05).start()
    deadline = time.monotonic() + 10
    while len(sampler._pending) < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    sampler.stop()
    samples = sampler.drain()
    assert len(samples) >= 3 and sampler.drain() == []
    sampler.finish()  # the run's end: one more reading, however short the run
    [last] = sampler.drain()
    assert last.seconds >= samples[-1].seconds
    assert [s.seconds for s in samples] == sorted(s.seconds for s in samples)
    assert not sampler._thread.is_alive()


def test_the_first_reading_of_the_thread_already_sees_the_machine_busy():
    """psutil keeps the machine's CPU counter per thread: a counter started on another thread left the sampler's
    first reading at 0 % while the run kept a core busy (seen in the app's System plot)."""
    sampler = SystemSampler(torch.device("cpu"), started=time.perf_counter(), interval=0.2).start()
    deadline = time.monotonic() + 10
    while not sampler._pending and time.monotonic() < deadline:
        pass  # this thread spins: one core of the machine is busy throughout the first interval
    sampler.finish()
    first, *_ = sampler.drain()
    assert first.cpu_machine > 10.0, first


def test_without_nvml_the_gpu_figures_are_absent_and_said_once(monkeypatch):
    calls = []

    def no_nvml(index):
        calls.append(index)
        raise ModuleNotFoundError("pynvml does not seem to be installed")

    monkeypatch.setattr(torch.cuda, "utilization", no_nvml)
    sampler = SystemSampler(torch.device("cuda", 0), started=time.perf_counter())
    assert sampler._gpu() == {} and sampler._gpu() == {}
    assert calls == [0]  # tried once, then not again every half second
    assert sampler.gpu_problem.startswith("GPU metrics unavailable: ModuleNotFoundError")


def test_gpu_figures_come_from_nvml_in_watts_and_mib(monkeypatch):
    monkeypatch.setattr(torch.cuda, "utilization", lambda i: 87)
    monkeypatch.setattr(torch.cuda, "device_memory_used", lambda i: 3 * system.MIB)
    monkeypatch.setattr(torch.cuda, "power_draw", lambda i: 412_500)  # NVML: milliwatts
    monkeypatch.setattr(torch.cuda, "temperature", lambda i: 61)
    sampler = SystemSampler(torch.device("cuda", 1), started=time.perf_counter())
    assert sampler._gpu() == {"cuda:1": GpuReading(util=87.0, memory_mib=3.0, power_w=412.5, temp_c=61.0)}


def test_the_summary_gives_means_and_peaks():
    gpu = [{"cuda:0": GpuReading(util=50.0, memory_mib=100.0, power_w=200.0, temp_c=60.0)},
           {"cuda:0": GpuReading(util=100.0, memory_mib=300.0, power_w=250.0, temp_c=70.0)}]
    samples = [SystemSample(seconds=0.5, cpu_process=100.0, cpu_machine=40.0, rss_mib=500.0, gpu=gpu[0]),
               SystemSample(seconds=1.0, cpu_process=200.0, cpu_machine=60.0, rss_mib=700.0, gpu=gpu[1])]
    assert summary(samples) == SystemSummary(samples=2, cpu_process_mean=150.0, cpu_machine_mean=50.0,
                                             rss_peak_mib=700.0, gpus={"cuda:0": GpuSummary(
                                                 util_mean=75.0, memory_peak_mib=300.0, power_peak_w=250.0,
                                                 temp_peak_c=70.0)})
    # Stored as it always was: the GPUs beside the means, by name.
    assert summary(samples).to_dict() == {"samples": 2, "cpu_process_mean": 150.0, "cpu_machine_mean": 50.0,
                                          "rss_peak_mib": 700.0,
                                          "cuda:0": {"util_mean": 75.0, "memory_peak_mib": 300.0,
                                                     "power_peak_w": 250.0, "temp_peak_c": 70.0}}
    assert summary([]) is None
    assert from_json(to_json(samples[1])) == samples[1]


def test_a_run_emits_its_samples_on_its_thread_and_keeps_their_summary(monkeypatch):
    monkeypatch.setattr(system, "SAMPLE_SECONDS", 0.02)
    events: list = []
    result = Trainer().run(TrainConfig(epochs=2, max_steps=120, hidden_dim=16), events.append)
    assert isinstance(result, RunFinished)
    samples = [e for e in events if isinstance(e, SystemSample)]
    assert len(samples) >= 2 and result.results.system == summary(samples)
    assert result.results.system.rss_peak_mib > 0
    # Emitted after the steps of the read-back they came with: never after the run's end.
    assert events.index(samples[-1]) < events.index(result)
    assert any(isinstance(e, Step) for e in events[:events.index(samples[0])])


def test_a_run_shorter_than_one_interval_still_has_its_end_sampled(monkeypatch):
    """The sampler's first reading is one interval in: a run over before it gets one reading at its end."""
    monkeypatch.setattr(system, "SAMPLE_SECONDS", 3600.0)
    events: list = []
    result = Trainer().run(TrainConfig(epochs=1, max_steps=2, hidden_dim=16), events.append)
    assert isinstance(result, RunFinished)
    samples = [e for e in events if isinstance(e, SystemSample)]
    assert len(samples) == 1 and result.results.system.samples == 1
    assert events.index(samples[0]) < events.index(result)


@pytest.mark.cuda
def test_a_cuda_run_samples_its_gpu_through_nvml():
    result = Trainer().run(TrainConfig(device="cuda", epochs=1, max_steps=300), lambda e: None)
    figures = result.results.system
    gpu = next(value for key, value in figures.gpus.items() if key.startswith("cuda:"))
    assert gpu.memory_peak_mib > 0 and gpu.power_peak_w > 0 and 0 <= gpu.util_mean <= 100
