"""Continuing a run from its checkpoint (config.resume): the same steps, losses and weights as one run that never
stopped — on the CPU, in eager fp32, bit for bit."""

from __future__ import annotations

import threading

import pytest
import torch

from workbench.core.domain import checkpoint
from workbench.core.engine import TrainedModel, Trainer
from workbench.core.ground.config import TrainConfig
from workbench.core.ground.events import EpochEnd, RunFailed, RunFinished, RunStarted, Step

from ..helpers import of, steps

CONFIG = TrainConfig(epochs=5, hidden_dim=16, batch_size=250)  # 16 steps an epoch: five epochs in a moment
PER_EPOCH = 4000 // 250


def save_to(path):
    def save(trained: TrainedModel) -> str:
        return str(checkpoint.save(path, trained.model, trained.config, results=trained.results,
                                   versions=trained.versions, classes=trained.classes,
                                   training_state=trained.training_state))
    return save


def train(config: TrainConfig, path, stop_when=None):
    """Events and result of a run saving its checkpoint to `path`; `stop_when(event)` asks it to stop."""
    events: list = []
    stop = threading.Event()

    def emit(event):
        events.append(event)
        if stop_when is not None and stop_when(event):
            stop.set()

    # A read-back after every step: a stop asked at a Step event lands before the next step.
    result = Trainer(save_checkpoint=save_to(path), flush_seconds=0.0).run(config, emit, stop)
    return events, result


@pytest.fixture(scope="module")
def straight(tmp_path_factory):
    """One run of five epochs, with the one intra-op thread every test here has (tests/conftest.py): the float
    sums of a matrix product split by thread, so bit for bit holds between runs with the same thread count."""
    path = tmp_path_factory.mktemp("straight") / "checkpoint.pt"
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        events, result = train(CONFIG, path)
    finally:
        torch.set_num_threads(threads)
    assert isinstance(result, RunFinished) and result.steps == 5 * PER_EPOCH
    return events, checkpoint.load(path)


def _same_weights(a: checkpoint.Checkpoint, b: checkpoint.Checkpoint) -> bool:
    return a.state_dict.keys() == b.state_dict.keys() and all(
        torch.equal(a.state_dict[k], b.state_dict[k]) for k in a.state_dict)


@pytest.mark.parametrize("stop_when, stopped_at", [
    (lambda e: isinstance(e, EpochEnd) and e.epoch == 3, 3 * PER_EPOCH),  # 3 + 2 epochs
    (lambda e: isinstance(e, Step) and e.step == 2 * PER_EPOCH + 5, 2 * PER_EPOCH + 5),  # mid-epoch
], ids=["after-epoch-3", "mid-epoch-3"])
@pytest.mark.slow
def test_stopping_and_continuing_trains_exactly_what_one_run_does(straight, tmp_path, stop_when, stopped_at):
    straight_events, straight_ckpt = straight
    first_events, first = train(CONFIG, tmp_path / "first.pt", stop_when)
    assert first.stopped and first.steps == stopped_at
    events, result = train(CONFIG.replace(resume=str(tmp_path / "first.pt")), tmp_path / "second.pt")
    assert isinstance(result, RunFinished) and not result.stopped and result.steps == 5 * PER_EPOCH
    started = of(events, RunStarted)[0]
    assert started.resumed_step == stopped_at and started.total_steps == 5 * PER_EPOCH
    assert [s.step for s in steps(events)] == list(range(stopped_at + 1, 5 * PER_EPOCH + 1))  # the same step axis
    assert [s.loss for s in steps(first_events) + steps(events)] == [s.loss for s in steps(straight_events)]
    assert [(e.epoch, e.train_loss, e.val_accuracy) for e in of(events, EpochEnd)] == [
        (e.epoch, e.train_loss, e.val_accuracy) for e in of(straight_events, EpochEnd) if e.epoch >= 3
        and (e.epoch > 3 or stopped_at < 3 * PER_EPOCH)]
    assert _same_weights(checkpoint.load(tmp_path / "second.pt"), straight_ckpt)  # bit for bit
    assert result.results.best_val_accuracy == max(e.val_accuracy for e in of(straight_events, EpochEnd))


@pytest.mark.slow
def test_a_finished_run_goes_on_for_more_epochs_and_compiles_again(tmp_path):
    _, first = train(CONFIG.replace(epochs=2), tmp_path / "first.pt")
    events, result = train(CONFIG.replace(epochs=3, resume=str(tmp_path / "first.pt"), backend="aot_eager"),
                           tmp_path / "second.pt")
    assert isinstance(result, RunFinished) and result.steps == 3 * PER_EPOCH
    first_step = steps(events)[0]
    assert first_step.step == 2 * PER_EPOCH + 1 and first_step.compiling  # this run's first step compiles
    assert [e.epoch for e in of(events, EpochEnd)] == [3]


@pytest.fixture(scope="module")
def one_epoch(tmp_path_factory):
    """A finished one-epoch run's checkpoint, continued (or not) by the refusal cases."""
    path = tmp_path_factory.mktemp("one-epoch") / "checkpoint.pt"
    train(CONFIG.replace(epochs=1), path)
    return path


@pytest.mark.parametrize("changes, words", [
    ({"lr": 0.01}, "lr: 0.004 → 0.01"),
    ({"hidden_dim": 32}, "hidden_dim: 16 → 32"),
    ({}, "nothing is left to train"),  # the same epochs: the run is already complete
])
@pytest.mark.slow
def test_a_continued_run_that_cannot_be_is_refused_with_the_reason(one_epoch, tmp_path, changes, words):
    events, result = train(CONFIG.replace(epochs=1, resume=str(one_epoch), **changes), tmp_path / "second.pt")
    assert isinstance(result, RunFailed) and result.kind == "config" and words in result.message
    assert not steps(events)


def test_an_exported_copy_continues_and_weights_alone_do_not(one_epoch, tmp_path):
    first = checkpoint.load(one_epoch)
    checkpoint.export(first, tmp_path / "copy.pt")  # File → Export checkpoint: the training state goes along
    _, result = train(CONFIG.replace(epochs=2, resume=str(tmp_path / "copy.pt")), tmp_path / "second.pt")
    assert isinstance(result, RunFinished) and result.steps == 2 * PER_EPOCH
    checkpoint.save(tmp_path / "weights.pt", first.build_model(), first.config, results=first.results,
                    versions=first.versions, classes=first.classes)  # as an older Workbench wrote them
    _, result = train(CONFIG.replace(epochs=2, resume=str(tmp_path / "weights.pt")), tmp_path / "third.pt")
    assert isinstance(result, RunFailed) and "no training state" in result.message
