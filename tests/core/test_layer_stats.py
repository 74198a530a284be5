"""Per-layer statistics: the histograms, the layer table, and the LayerStats a run emits at its sampled steps, their
figures checked against what the optimizer provably did."""

import math

import pytest
import torch

from tests.helpers import SMALL, STATS, run
from workbench.core.domain.layer_stats import HISTOGRAM_SAMPLE, histograms, model_summary
from workbench.core.domain.model import SandwichNet
from workbench.core.engine import standard_instruments
from workbench.core.engine.instruments.layer_statistics import LayerStatistics, sampled
from workbench.core.ground import events as ev
from workbench.core.ground.layer_stats import LayerStats, ModelSummary


def layer_stats(events):
    return [e for e in events if isinstance(e, LayerStats)]


def test_a_histogram_counts_over_the_tensors_own_range():
    values = torch.cat([torch.full((3000,), -1.0), torch.full((1000,), 3.0)])
    [row] = histograms([values], bins=4)
    assert row[:2].tolist() == [-1.0, 3.0]
    assert row[2:].tolist() == [3000.0, 0.0, 0.0, 1000.0]


def test_a_large_tensors_histogram_is_a_spread_sample_scaled_to_its_size():
    weight = torch.zeros(128, 784)
    weight[:, 0] = 1.0  # one column of a matrix: a fixed stride of 784 would see all of it or none
    [row] = histograms([weight], bins=2)
    counts = row[2:].tolist()
    assert sum(counts) == pytest.approx(weight.numel())
    assert counts[1] / weight.numel() == pytest.approx(1 / 784, rel=0.5)
    assert weight.numel() > HISTOGRAM_SAMPLE


def test_the_sampled_steps_are_the_early_ones_and_every_nth():
    assert [s for s in range(1, 121) if sampled(s, 50)] == [1, 2, 4, 8, 16, 32, 50, 100]
    assert not any(sampled(s, 0) for s in range(1, 200))


def test_the_layer_table_counts_parameters_shapes_and_mult_adds():
    torch.manual_seed(0)
    model = SandwichNet(hidden_dim=16)
    table = model_summary(model, torch.zeros(8, 1, 28, 28, dtype=torch.uint8))
    rows = {row.name: row for row in table.rows}
    assert rows["core_block.fc1"].output_shape == (8, 16) and rows["core_block.fc1"].params == 784 * 16 + 16
    assert rows["core_block.fc1"].mult_adds == 8 * 16 * 784 and rows["core_block.fc2"].mult_adds == 8 * 10 * 16
    assert rows[""].depth == 0 and rows["core_block.fc1"].depth == 2 and rows["core_block"].params == 0
    assert table.params == sum(p.numel() for p in model.parameters()) and table.batch == 8
    assert model.training  # the table's forward left the model as it was


@pytest.fixture(scope="module")
def sgd_run():
    """SGD without weight decay at a constant rate: the first update is exactly -lr × the gradient."""
    config = SMALL.replace(optimizer="sgd", lr=0.05, lr_schedule="constant", weight_decay=0.0, stats_every=5)
    return config, run(config)


def test_a_run_emits_its_layer_table_and_the_sampled_steps_statistics(sgd_run):
    config, (events, result) = sgd_run
    assert isinstance(result, ev.RunFinished)
    [table] = [e for e in events if isinstance(e, ModelSummary)]
    assert [r.name for r in table.rows if r.params] == ["core_block.fc1", "core_block.fc2"]
    samples = layer_stats(events)
    assert [s.step for s in samples] == [1, 2, 4, 5, 8, 10, 15, 16, 20]
    assert all([layer.name for layer in s.layers] == ["core_block.fc1", "core_block.fc2"] for s in samples)
    assert all(ev.from_json(ev.to_json(s)) == s for s in samples)


def test_the_first_samples_figures_are_the_seeded_models_and_the_optimizers(sgd_run):
    config, (events, _) = sgd_run
    first = layer_stats(events)[0]
    torch.manual_seed(config.seed)
    model = SandwichNet(hidden_dim=config.hidden_dim)
    for layer, module in zip(first.layers, (model.core_block.fc1, model.core_block.fc2)):
        expected = math.sqrt(sum(p.detach().square().sum().item() for p in module.parameters()))
        assert layer.weight_norm == pytest.approx(expected, rel=1e-5)
        # SGD's first step moves the weights by lr × the gradient: the update measured against the gradient measured
        assert layer.update_ratio * layer.weight_norm == pytest.approx(config.lr * layer.grad_norm, rel=1e-4)
        assert layer.grad_norm > 0
        assert layer.weights.total == pytest.approx(module.weight.numel())
        assert layer.weights.lo == pytest.approx(module.weight.min().item())
        assert layer.activations.total == pytest.approx(SMALL.batch_size * module.out_features)


def test_a_healthy_runs_relus_are_mostly_alive(sgd_run):
    _, (events, _) = sgd_run
    for sample in layer_stats(events):
        fc1, fc2 = sample.layers
        assert fc1.dead_fraction == 0.0  # normalised pixels are rarely exactly 0
        assert fc2.dead_fraction < 0.5


def test_statistics_off_emit_none():
    events, result = run(SMALL.replace(max_steps=3, **STATS))
    assert [s.step for s in layer_stats(events)] == [1, 2]
    events, result = run(SMALL.replace(max_steps=3, stats_every=0))
    assert isinstance(result, ev.RunFinished) and not layer_stats(events)
    events, _ = run(SMALL.replace(max_steps=3, **STATS), instruments=standard_instruments(leave_out=(LayerStatistics,)))
    assert not layer_stats(events) and not [e for e in events if isinstance(e, ModelSummary)]


def test_under_fp16_the_gradients_are_read_unscaled():
    """The GradScaler multiplies the loss by 65,536: the probe must read the gradients after unscaling them."""
    plain, _ = run(SMALL.replace(max_steps=1, **STATS))
    scaled, _ = run(SMALL.replace(max_steps=1, amp="fp16", **STATS))
    for a, b in zip(layer_stats(plain)[0].layers, layer_stats(scaled)[0].layers):
        assert b.grad_norm == pytest.approx(a.grad_norm, rel=0.05)


def test_a_compiled_model_is_sampled_eagerly_without_recompiling():
    events, result = run(SMALL.replace(max_steps=8, backend="aot_eager", stats_every=3))
    assert isinstance(result, ev.RunFinished)
    assert [s.step for s in layer_stats(events)] == [1, 2, 3, 4, 6, 8]
    # the only recompile is the validation's (no gradients), as in every compiled run: the probe's eager forward
    # and its hooks cost the training graph nothing
    recompiles = [e for e in events if isinstance(e, ev.CompileEvent) and e.kind == "recompile"]
    assert [e.phase for e in recompiles] == ["eval"]
