"""The batch-size finder: the ladder it climbs, the runs it measures with, where it stops on a device with too little
memory, and the rule that suggests."""

from __future__ import annotations

import pytest

from workbench.core.engine import Trainer
from workbench.core.engine.instruments.layer_statistics import LayerStatistics
from workbench.core.engine.instruments.payback import PaybackCalibration
from workbench.core.engine.instruments.system_metrics import SystemMetrics
from workbench.core.ground.events import RunFailed, RunFinished
from workbench.core.kernel import batch_finder
from workbench.core.ground.finder_results import BatchFinding, BatchPoint
from workbench.core.ground.results import RunResults
from workbench.core.kernel.batch_finder import BatchFinderError, find_batch_size, ladder, suggest

from ..helpers import SMALL_NET as SMALL



def test_the_ladder_doubles_from_16_up_to_the_largest_or_the_split():
    assert ladder(4000) == [16, 32, 64, 128, 256, 512, 1024, 2048]
    assert ladder(4000, largest=100) == [16, 32, 64]
    assert ladder(10) == []


def test_the_ladder_includes_a_size_equal_to_the_largest_or_to_the_split():
    assert ladder(4000, largest=64) == [16, 32, 64]
    assert ladder(64) == [16, 32, 64] and ladder(16) == [16]  # a split of exactly one batch still has it


@pytest.fixture
def runs(monkeypatch):
    """Every run the finder starts: its config, and what the real engine answered."""
    seen = []
    real = Trainer.run

    def spy(self, config, emit, stop=None):
        seen.append(config)
        kinds = {type(instrument) for instrument in self.instruments()}
        # the finders' short runs: no system sampler, no payback calibration; the rest as a real run has them
        assert SystemMetrics not in kinds and PaybackCalibration not in kinds and LayerStatistics in kinds
        return real(self, config, emit, stop)

    monkeypatch.setattr(Trainer, "run", spy)
    return seen


@pytest.mark.slow
def test_each_batch_size_is_a_short_real_run_of_the_same_settings(runs):
    heard = []
    finding = find_batch_size(SMALL.replace(lr=1e-3), on_point=heard.append, largest=64)
    assert [config.batch_size for config in runs] == [16, 16, 32, 64]  # first, an unmeasured warm-up run
    assert [config.max_steps for config in runs] == [10, 512, 256, 128]  # then 8,192 examples each
    assert all(config.lr == 1e-3 and config.hidden_dim == 16 for config in runs)
    assert isinstance(finding, BatchFinding) and isinstance(finding.points, tuple)
    assert tuple(heard) == finding.points and [point.batch_size for point in heard] == [16, 32, 64]
    assert all(point.samples_per_s > 0 and point.peak_memory_mib > 0 and point.fits for point in heard)
    assert finding.device == "cpu" and finding.memory_total_mib is None
    assert finding.ended == "measured every batch size up to 64"
    assert finding.suggestion == max(heard, key=lambda point: point.samples_per_s).batch_size


def test_the_rule_is_the_fastest_on_the_cpu_and_the_largest_that_fits_on_cuda():
    points = [BatchPoint(16, 100.0, 10.0), BatchPoint(32, 300.0, 20.0), BatchPoint(64, 200.0, 40.0),
              BatchPoint(128, 900.0, 95.0, fits=False)]
    assert suggest(points, cuda=False, train_size=60_000) == 32
    assert suggest(points, cuda=True, train_size=60_000) == 64
    assert suggest([BatchPoint(16, 1.0, 99.0, fits=False)], cuda=True, train_size=60_000) is None


# The bundled sample's 4,000 training images, measured on a CPU: faster per sample the bigger the batch.
SAMPLE_POINTS = [BatchPoint(size, speed, 100.0) for size, speed in [
    (16, 9_000.0), (32, 15_000.0), (64, 21_000.0), (128, 26_000.0), (256, 29_000.0), (512, 30_500.0),
    (1024, 31_000.0), (2048, 33_800.0)]]


def test_the_suggestion_leaves_enough_optimizer_steps_an_epoch():
    assert batch_finder.MIN_STEPS_PER_EPOCH == 50
    # 4,000 images: 64 gives 62 steps an epoch, 128 only 31; the fastest, 2048, gives 1
    assert suggest(SAMPLE_POINTS, cuda=False, train_size=4000) == 64
    assert suggest(SAMPLE_POINTS, cuda=True, train_size=4000) == 64
    assert suggest(SAMPLE_POINTS, cuda=False, train_size=4000, min_steps=0) == 2048  # the old rule
    assert suggest(SAMPLE_POINTS, cuda=False, train_size=60_000) == 1024  # 58 steps; 2048 gives 29
    # a split too small for 50 steps at any batch: the smallest batch, which gives the most
    assert suggest(SAMPLE_POINTS, cuda=False, train_size=500) == 16
    assert suggest([BatchPoint(16, 1.0, 1.0, fits=False), *SAMPLE_POINTS[1:]], cuda=True, train_size=500) == 32


def test_exactly_fifty_steps_an_epoch_is_enough_and_one_fewer_is_not():
    # 3,200 images: batch 64 gives exactly 50 steps an epoch; 3,199 give 49 (the partial last batch is dropped)
    assert suggest(SAMPLE_POINTS, cuda=False, train_size=3200) == 64
    assert suggest(SAMPLE_POINTS, cuda=False, train_size=3199) == 32


def test_the_finding_says_which_batch_the_floor_passed_over(monkeypatch):
    speeds = {point.batch_size: point for point in SAMPLE_POINTS}
    monkeypatch.setattr(batch_finder, "_measure", lambda config, stop, total_mib, steps=None:
                        speeds[config.batch_size])
    finding = find_batch_size(SMALL)  # the bundled sample
    assert (finding.train_size, finding.min_steps_per_epoch) == (4000, 50)
    assert finding.suggestion == 64 and finding.passed_over == 2048
    assert finding.steps_per_epoch(64) == 62 and finding.steps_per_epoch(2048) == 1
    assert "at least 50 optimizer steps an epoch" in finding.rule
    assert BatchFinding.from_dict(finding.to_dict()) == finding  # it crosses the kernel's process as a dict
    finding = find_batch_size(SMALL, largest=64)
    assert finding.suggestion == 64 and finding.passed_over is None  # the fastest gives enough steps: nothing to say


def test_on_cuda_the_suggestion_is_the_largest_batch_whose_peak_leaves_a_tenth_of_the_device_free(monkeypatch):
    total = 1000.0  # MiB
    peaks = {16: 850.0, 32: 890.0, 64: 910.0, 128: 950.0}  # 85 %, 89 %, 91 %, 95 % of the device
    monkeypatch.setattr(Trainer, "run", lambda self, config, emit, stop=None: RunFinished(
        steps=10, epochs=1, seconds=1.0, stopped=False,
        results=RunResults(samples_per_s=10.0 * config.batch_size, peak_memory_mib=peaks[config.batch_size])))
    points = [batch_finder._measure(SMALL.replace(batch_size=size), _never(), total) for size in peaks]
    assert [(point.batch_size, point.peak_memory_mib) for point in points] == list(peaks.items())
    assert [point.fits for point in points] == [True, True, False, False]
    assert suggest(points, cuda=True, train_size=60_000) == 32  # not 128, the largest below 100 %
    peaks[32] = 900.0  # exactly 90 %: a tenth is still free
    assert batch_finder._measure(SMALL.replace(batch_size=32), _never(), total).fits


def test_a_batch_past_the_headroom_is_measured_and_marked_not_fitting():
    point = batch_finder._measure(SMALL.replace(batch_size=16), stop=_never(), total_mib=1.0)
    assert point is not None and not point.fits  # the run's peak memory is more than 90% of 1 MiB


@pytest.mark.parametrize("past, ended, measured", [
    (32, "batch 32 leaves less than 10% of the device's memory free", [16, 32]),
    (None, "batch 64 ran out of memory", [16, 32])])
def test_the_ladder_ends_at_the_first_batch_past_the_headroom_or_out_of_memory(monkeypatch, past, ended, measured):
    def measure(config, stop, total_mib, steps=None):
        if config.batch_size == 64:
            return None  # out of memory
        return BatchPoint(config.batch_size, 1.0, 1.0, fits=config.batch_size != past)

    monkeypatch.setattr(batch_finder, "_measure", measure)
    finding = find_batch_size(SMALL)
    assert finding.ended == ended and [point.batch_size for point in finding.points] == measured


def test_a_stop_during_a_measurement_keeps_the_sizes_measured_before_it_and_not_the_one_cut_short(monkeypatch):
    import threading

    stop = threading.Event()

    def measure(config, stop_flag, total_mib, steps=None):
        if config.batch_size == 64 and steps is None:
            stop.set()  # Stop pressed while batch 64 is measured: its run ends early, with a partial figure
        return BatchPoint(config.batch_size, 1.0, 1.0)

    monkeypatch.setattr(batch_finder, "_measure", measure)
    heard = []
    finding = find_batch_size(SMALL, on_point=heard.append, stop=stop)
    assert finding.ended == "stopped" and finding.stopped and [point.batch_size for point in finding.points] == [16, 32]
    assert tuple(heard) == finding.points and finding.suggestion in (16, 32)


def test_out_of_memory_is_no_measurement_and_other_failures_are_errors(monkeypatch):
    answer = [RunFailed(kind="out_of_memory", message="CUDA out of memory")]
    monkeypatch.setattr(Trainer, "run", lambda self, config, emit, stop=None: answer[0])
    assert batch_finder._measure(SMALL.replace(batch_size=16), _never(), None) is None
    answer[0] = RunFailed(kind="data", message="the data is gone")
    with pytest.raises(BatchFinderError, match="batch 16 failed: the data is gone"):
        batch_finder._measure(SMALL.replace(batch_size=16), _never(), None)


def _never():
    class Never:
        def is_set(self):
            return False
    return Never()
