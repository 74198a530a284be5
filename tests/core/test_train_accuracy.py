"""Training accuracy: counted on the device in the training step, read back with the losses, recorded per Step."""

from __future__ import annotations

import contextlib

import pytest
import torch
from torch import nn

from workbench.core import engine
from workbench.core.ground.config import TrainConfig
from workbench.core.ground.events import RunFinished, Step


def _session(model: nn.Module) -> engine.Session:
    optimizer = torch.optim.SGD(model.parameters(), lr=0.0)
    return engine.Session(model=model, train_model=model, optimizer=optimizer, scaler=None, compiled=False,
                           autocast=contextlib.nullcontext())


def test_the_step_counts_right_predictions_by_hand():
    model = nn.Linear(3, 3, bias=False)
    with torch.no_grad():
        model.weight.copy_(torch.eye(3))  # the logits are the inputs: the argmax is where each row is largest
    x = torch.tensor([[5.0, 0, 0], [0, 5, 0], [0, 0, 5], [5, 0, 0]])
    y = torch.tensor([0, 2, 2, 1])  # rows 0 and 2 are right
    loss, correct = engine.train_step(_session(model), x, y, TrainConfig(), torch.device("cpu"))
    assert int(correct) == 2 and loss.ndim == 0


@pytest.fixture(scope="module")
def recorded(trained_run):
    """The shared 2-epoch run: its events as emitted and the history that recorded them."""
    return list(trained_run.events), trained_run.db


def test_every_step_carries_a_rising_training_accuracy(recorded):
    events, _ = recorded
    steps = [e for e in events if isinstance(e, Step)]
    accuracy = [s.accuracy for s in steps]
    batch = TrainConfig().batch_size
    assert all(a is not None and 0.0 <= a <= 1.0 for a in accuracy)
    assert all(abs(a * batch - round(a * batch)) < 1e-6 for a in accuracy)  # a count over the batch
    first, last = sum(accuracy[:10]) / 10, sum(accuracy[-10:]) / 10
    assert last > first + 0.3, (first, last)


def test_the_recorded_runs_curves_carry_the_training_accuracy(recorded):
    from workbench.core.history.curves import curves_from_events
    from workbench.core.history.runs import RunStore

    events, db = recorded
    store = RunStore(db)
    try:
        record = store.get(store.list()[0].id, with_events=True)
    finally:
        store.close()
    curves = curves_from_events(record.events)
    live = [s.accuracy for s in events if isinstance(s, Step)]
    assert curves.accuracy.tolist() == pytest.approx(live)
    assert len(curves.val_accuracy) == 2 and 0.5 < curves.val_accuracy[-1] <= 1.0


def test_two_processes_report_the_global_fraction():
    """Each rank reads the mean count over the processes (the all_reduce the losses ride) and divides it by its own
    share of the batch (16 of 32 here): a count over that share, never above 1."""
    from ..helpers import SMALL, run
    from ..support.two_ranks import OneOfTwoRanks

    events, result = run(SMALL.replace(max_steps=4, batch_size=32), distributed=OneOfTwoRanks.make(0))
    assert isinstance(result, RunFinished)
    for step in (e for e in events if isinstance(e, Step)):
        assert 0.0 <= step.accuracy <= 1.0 and (step.accuracy * 16) == pytest.approx(round(step.accuracy * 16))
