"""System metrics of a run, sampled in the training process twice a second: its CPU use and the machine's, its
resident memory, and on NVIDIA GPUs utilisation, memory, power and temperature through NVML.

W&B samples every 15 s and needs an account; the window showed only the process RSS. A sampler thread reads psutil
(and NVML through torch.cuda's wrappers, which map CUDA device indices to NVML's) and queues `SystemSample`s; the
engine emits them at its read-backs, from the training thread, like every other event. Without NVML (no
nvidia-ml-py, or no NVIDIA driver) the GPU figures are simply absent, said once in `gpu_problem`.
"""

from __future__ import annotations

import collections
import threading
import time

import psutil
import torch

from ..ground.events import GpuReading, SystemSample
from ..ground.results import GpuSummary, SystemSummary

SAMPLE_SECONDS = 0.5  # 2 Hz
MIB = 1024 * 1024


class SystemSampler:
    """Samples every SAMPLE_SECONDS on a daemon thread from start() to stop(); drain() hands over the samples."""

    def __init__(self, device: torch.device, started: float, interval: float | None = None):
        self.device, self.started, self.interval = device, started, interval or SAMPLE_SECONDS
        self.process = psutil.Process()
        self.gpu_problem = ""
        self._pending: collections.deque[SystemSample] = collections.deque()
        self._stopped = threading.Event()
        self._last_reading = False  # finish(): one more reading as the thread ends
        self._thread = threading.Thread(target=self._loop, name="workbench-system-sampler", daemon=True)
        # The first cpu_percent(None) of a counter reads 0.0 and starts the interval the next one measures. The
        # process's counter lives on the Process object; the machine's on the calling thread (psutil keeps one
        # per thread), so the sampler's thread starts its own as it begins.
        self.process.cpu_percent(None)
        psutil.cpu_percent(None)

    def start(self) -> SystemSampler:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopped.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5 * self.interval)

    def finish(self) -> None:
        """Stop, with a last reading of the run's end (on the sampler's thread, where its machine counter is): a
        run shorter than one interval has one sample too."""
        if self._thread.is_alive():
            self._last_reading = True
            self.stop()
        else:  # never started, or already stopped
            self._pending.append(self.sample())

    def drain(self) -> list[SystemSample]:
        samples = []
        while self._pending:
            samples.append(self._pending.popleft())  # deque pops are atomic: no lock against the sampler
        return samples

    def _loop(self) -> None:
        psutil.cpu_percent(None)  # this thread's machine counter (see __init__)
        while not self._stopped.wait(self.interval):
            self._pending.append(self.sample())
        if self._last_reading:
            self._pending.append(self.sample())

    def sample(self) -> SystemSample:
        """One reading now (CPU figures over the time since the previous one)."""
        return SystemSample(seconds=time.perf_counter() - self.started, cpu_process=self.process.cpu_percent(None),
                            cpu_machine=psutil.cpu_percent(None), rss_mib=self.process.memory_info().rss / MIB,
                            gpu=self._gpu())

    def _gpu(self) -> dict[str, GpuReading]:
        if self.device.type != "cuda" or self.gpu_problem:
            return {}
        index = self.device.index if self.device.index is not None else torch.cuda.current_device()
        try:
            reading = GpuReading(util=float(torch.cuda.utilization(index)),
                                 memory_mib=torch.cuda.device_memory_used(index) / MIB,
                                 power_w=torch.cuda.power_draw(index) / 1000.0,  # NVML reports milliwatts
                                 temp_c=float(torch.cuda.temperature(index)))
        except Exception as exc:  # no nvidia-ml-py, no NVIDIA driver, a GPU NVML cannot read: no GPU figures
            self.gpu_problem = f"GPU metrics unavailable: {type(exc).__name__}: {exc}"[:200]
            return {}
        return {f"cuda:{index}": reading}


def summary(samples: list[SystemSample]) -> SystemSummary | None:
    """A run's system figures in its results (and so its record and report): means and peaks; None without
    samples."""
    if not samples:
        return None
    n = len(samples)
    gpus = {}
    for name in sorted({name for s in samples for name in s.gpu}):
        readings = [s.gpu[name] for s in samples if name in s.gpu]
        gpus[name] = GpuSummary(util_mean=sum(r.util for r in readings) / len(readings),
                                memory_peak_mib=max(r.memory_mib for r in readings),
                                power_peak_w=max(r.power_w for r in readings),
                                temp_peak_c=max(r.temp_c for r in readings))
    return SystemSummary(samples=n, cpu_process_mean=sum(s.cpu_process for s in samples) / n,
                         cpu_machine_mean=sum(s.cpu_machine for s in samples) / n,
                         rss_peak_mib=max(s.rss_mib for s in samples), gpus=gpus)
