"""The batch-size finder: samples/s for each batch size of a doubling ladder, each measured by a short real run of
the engine (the same step, data, AMP and compile as training; nothing saved), and on CUDA the largest batch that
fits with headroom.

A bigger batch is faster per sample until the device is busy; past that it only costs memory. It also changes the
optimisation (fewer steps an epoch; the learning rate usually has to grow with the batch), so the finder suggests
and the user decides.
"""

from __future__ import annotations

import threading
from typing import Callable

import torch

from ..domain import devices
from ..domain.data import load_splits
from ..engine import StopFlag, Trainer
from ..ground.config import TrainConfig
from ..ground.errors import WorkbenchError
from ..ground.events import RunFailed
from ..ground.findings import BatchFinding, BatchPoint

FIRST, LARGEST = 16, 4096  # the ladder: 16, 32, 64, … up to this or the training split, whichever is smaller
# Per batch size, enough steps for this many examples (at least MIN_STEPS): a small batch's first slow steps
# (allocations, a compile's warm-up) then weigh as little in its samples/s as a large batch's do.
SAMPLES, MIN_STEPS = 8192, 10
HEADROOM = 0.10  # on CUDA, a tenth of the device's memory stays free: fragmentation, evaluation, other processes
EPOCHS_ENOUGH = 100_000  # each measurement ends at its step count, not at an epoch count
RULES = {"cuda": f"the largest batch whose peak memory leaves {HEADROOM:.0%} of the device free",
         "cpu": "the fastest batch (samples/s); on the CPU memory does not bound it"}


class BatchFinderError(WorkbenchError):
    kind = "config"


def ladder(train_size: int, first: int = FIRST, largest: int = LARGEST) -> list[int]:
    """Doubling batch sizes from `first` that a training split of `train_size` examples can fill."""
    sizes, size = [], first
    while size <= min(largest, train_size):
        sizes.append(size)
        size *= 2
    return sizes


def find_batch_size(config: TrainConfig, *, on_point: Callable[[BatchPoint], None] = lambda point: None,
                    stop: StopFlag | None = None, largest: int = LARGEST) -> BatchFinding:
    """Measure each batch size of the ladder with `config`'s other settings; `on_point` hears each as it is
    measured. Ends at the top of the ladder, at the first batch past the headroom or out of memory (CUDA), or
    when `stop` is set."""
    stop = stop or threading.Event()
    device = devices.resolve_device(config.device)
    train, _ = load_splits(config.dataset, config.data_root)
    sizes = ladder(len(train), largest=largest)
    if not sizes:
        raise BatchFinderError(f"the training split has {len(train)} examples, fewer than the smallest batch tried "
                               f"({FIRST})")
    total = torch.cuda.get_device_properties(device).total_memory / devices.MIB if device.type == "cuda" else None
    points: list[BatchPoint] = []
    ended = f"measured every batch size up to {sizes[-1]}"
    # The first run in a process pays once for what every later one reuses (thread pools, allocator caches, the
    # data's pages): a short run of the first size, not measured, keeps that off the first batch size's figure.
    _measure(config.replace(batch_size=sizes[0]), stop, total, steps=MIN_STEPS)
    for size in sizes:
        point = _measure(config.replace(batch_size=size), stop, total)
        if stop.is_set():  # a measurement cut short (or never begun) says nothing of its batch size
            ended = "stopped"
            break
        if point is None:
            ended = f"batch {size} ran out of memory"
            break
        points.append(point)
        on_point(point)
        if not point.fits:
            ended = f"batch {size} leaves less than {HEADROOM:.0%} of the device's memory free"
            break
    return BatchFinding(device=str(device), points=tuple(points), suggestion=suggest(points, cuda=total is not None),
                        rule=RULES["cuda" if total else "cpu"], memory_total_mib=total, ended=ended)


def suggest(points: list[BatchPoint], *, cuda: bool) -> int | None:
    """The rule of RULES for the device: the largest batch within the headroom on CUDA, the fastest on the CPU."""
    fitting = [point for point in points if point.fits]
    if not fitting:
        return None
    if cuda:
        return max(fitting, key=lambda point: point.batch_size).batch_size
    return max(fitting, key=lambda point: point.samples_per_s).batch_size


def _measure(config: TrainConfig, stop: StopFlag, total_mib: float | None,
             steps: int | None = None) -> BatchPoint | None:
    """One short run at config.batch_size (SAMPLES' worth of steps unless `steps`): its steady samples/s and peak
    memory; None when it ran out of memory."""
    steps = steps or max(MIN_STEPS, SAMPLES // config.batch_size)
    run_config = config.replace(max_steps=steps, epochs=EPOCHS_ENOUGH, profile_steps=0, compile_trace=False)
    result = Trainer(system_metrics=False, payback=False).run(run_config, lambda event: None, stop)
    if total_mib is not None:
        torch.cuda.empty_cache()  # the next size starts from an empty cache, as a fresh run would
    if isinstance(result, RunFailed):
        if result.kind == "out_of_memory":
            return None
        raise BatchFinderError(f"batch {config.batch_size} failed: {result.message}", result.hint)
    peak = result.results.peak_memory_mib
    return BatchPoint(config.batch_size, result.results.samples_per_s, peak,
                      fits=total_mib is None or peak <= (1 - HEADROOM) * total_mib)
