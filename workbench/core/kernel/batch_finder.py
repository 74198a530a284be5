"""The batch-size finder: samples/s for each batch size of a doubling ladder, each measured by a short real run of
the engine (the same step, data, AMP and compile as training; nothing saved), and on CUDA the largest batch that
fits with headroom.

A bigger batch is faster per sample until the device is busy; past that it only costs memory. It also changes the
optimisation (fewer steps an epoch; the learning rate usually has to grow with the batch), so the finder suggests
and the user decides. Fastest per sample is not best: on a small training split the fastest batch leaves an epoch
a handful of optimizer steps, and a run of a few epochs learns little. So the suggestion is the device's choice
among the batches that still give MIN_STEPS_PER_EPOCH steps an epoch, and the finding names the batch that rule
passed over, for the window to say what it would have cost.
"""

from __future__ import annotations

import threading
from typing import Callable

import torch

from ..domain import devices
from ..domain.data import load_splits
from ..engine import StopFlag, Trainer, standard_instruments
from ..engine.instruments.payback import PaybackCalibration
from ..engine.instruments.system_metrics import SystemMetrics
from ..ground.config import TrainConfig
from ..ground.errors import WorkbenchError
from ..ground.events import RunFailed
from ..ground.finder_results import BatchFinding, BatchPoint
from ..ground.forecast import steps_per_epoch

FIRST, LARGEST = 16, 4096  # the ladder: 16, 32, 64, … up to this or the training split, whichever is smaller
# Per batch size, enough steps for this many examples (at least MIN_STEPS): a small batch's first slow steps
# (allocations, a compile's warm-up) then weigh as little in its samples/s as a large batch's do.
SAMPLES, MIN_STEPS = 8192, 10
HEADROOM = 0.10  # on CUDA, a tenth of the device's memory stays free: fragmentation, evaluation, other processes
EPOCHS_ENOUGH = 100_000  # each measurement ends at its step count, not at an epoch count
# The finders' short runs: no system sampler (nobody sees it), no payback (their steps teach nothing about a real
# run's); the rest as a real run has them (the layer statistics and alerts still catch a run that blows up).
FINDER_INSTRUMENTS = standard_instruments(leave_out=(SystemMetrics, PaybackCalibration))
# The fewest optimizer steps an epoch a suggested batch may leave. On the bundled sample (4,000 training images,
# 5 epochs, the other settings the defaults) a run reached 93.4 % at batch 32 (125 steps an epoch), 92.3 % at 64
# (62), 92.1 % at 128 (31), 91.1 % at 256 (15), 89.4 % at 512 (7) and 81.4 % at 2048 (1): fewer steps cost
# accuracy that the larger batch's speed does not buy back. 50 keeps a run within about a point of the small
# batches there and still lets a large split take a large batch (1,024 on MNIST's 60,000 images: 58 steps).
MIN_STEPS_PER_EPOCH = 50
_ENOUGH_STEPS = f"that gives at least {MIN_STEPS_PER_EPOCH} optimizer steps an epoch (the smallest when none does)"
RULES = {"cuda": f"the largest batch whose peak memory leaves {HEADROOM:.0%} of the device free {_ENOUGH_STEPS}",
         "cpu": f"the fastest batch (samples/s) {_ENOUGH_STEPS}; on the CPU memory does not bound it"}


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
    cuda = total is not None
    suggestion = suggest(points, cuda=cuda, train_size=len(train))
    unbounded = suggest(points, cuda=cuda, train_size=len(train), min_steps=0)  # what the device alone would pick
    return BatchFinding(device=str(device), points=tuple(points), suggestion=suggestion,
                        passed_over=None if unbounded == suggestion else unbounded, train_size=len(train),
                        min_steps_per_epoch=MIN_STEPS_PER_EPOCH, rule=RULES["cuda" if cuda else "cpu"],
                        memory_total_mib=total, ended=ended)


def suggest(points: list[BatchPoint], *, cuda: bool, train_size: int,
            min_steps: int = MIN_STEPS_PER_EPOCH) -> int | None:
    """The rule of RULES for the device: the largest batch within the headroom on CUDA, the fastest on the CPU,
    among those that give at least `min_steps` optimizer steps an epoch of `train_size` images; when none does,
    the smallest batch that fits (it gives the most)."""
    fitting = [point for point in points if point.fits]
    if not fitting:
        return None
    enough = [point for point in fitting if steps_per_epoch(point.batch_size, train_size) >= min_steps]
    candidates = enough or [min(fitting, key=lambda point: point.batch_size)]
    if cuda:
        return max(candidates, key=lambda point: point.batch_size).batch_size
    return max(candidates, key=lambda point: point.samples_per_s).batch_size


def _measure(config: TrainConfig, stop: StopFlag, total_mib: float | None,
             steps: int | None = None) -> BatchPoint | None:
    """One short run at config.batch_size (SAMPLES' worth of steps unless `steps`): its steady samples/s and peak
    memory; None when it ran out of memory."""
    steps = steps or max(MIN_STEPS, SAMPLES // config.batch_size)
    run_config = config.replace(max_steps=steps, epochs=EPOCHS_ENOUGH, profile_steps=0, compile_trace=False)
    result = Trainer(instruments=FINDER_INSTRUMENTS).run(run_config, lambda event: None, stop)
    if total_mib is not None:
        torch.cuda.empty_cache()  # the next size starts from an empty cache, as a fresh run would
    if isinstance(result, RunFailed):
        if result.kind == "out_of_memory":
            return None
        raise BatchFinderError(f"batch {config.batch_size} failed: {result.message}", result.hint)
    peak = result.results.peak_memory_mib
    return BatchPoint(config.batch_size, result.results.samples_per_s, peak,
                      fits=total_mib is None or peak <= (1 - HEADROOM) * total_mib)
