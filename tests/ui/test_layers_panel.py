"""The Model dock, fed made-up events (no training): the layer table and its totals, one curve a layer for the
figure picked, a distribution's quantile bands, the empty state and a new run's reset; and a real run's events."""

from __future__ import annotations

import math

import numpy as np
import pytest

from workbench.core.ground.alerts import Alert
from workbench.core.ground.config import TrainConfig
from workbench.core.ground.events import MemorySample, RunStarted, Step
from workbench.core.ground.layer_stats import Histogram, LayerRow, LayerStat, LayerStats, ModelSummary
from workbench.ui.panels.layers.layers import LayersPanel
from workbench.ui.panels.layers.views import QUANTILES

from ..helpers import VERSIONS

SUMMARY = ModelSummary(batch=32, rows=(
    LayerRow(name="", kind="TinyNet", depth=0, output_shape=(32, 10), params=0, trainable=False, mult_adds=0),
    LayerRow(name="body", kind="Sequential", depth=1, output_shape=(32, 16), params=0, trainable=False, mult_adds=0),
    LayerRow(name="body.fc1", kind="Linear", depth=2, output_shape=(32, 16), params=12_560, trainable=True,
             mult_adds=401_920),
    LayerRow(name="body.act", kind="ReLU", depth=2, output_shape=(32, 16), params=0, trainable=False, mult_adds=0),
    LayerRow(name="head", kind="Linear", depth=1, output_shape=(32, 10), params=170, trainable=False,
             mult_adds=5_440)))
UNIFORM = Histogram(lo=0.0, hi=4.0, counts=(1.0, 1.0, 1.0, 1.0))  # uniform on [0, 4]: its quantile q is 4q
ONE_BIN = Histogram(lo=-1.0, hi=1.0, counts=(0.0, 2.0, 0.0, 0.0))  # uniform on [-0.5, 0]: q → -0.5 + 0.5q


def layer(name: str, grad: float, weights: Histogram = UNIFORM, dead: float = 0.0) -> LayerStat:
    return LayerStat(name=name, weight_norm=3.0, grad_norm=grad, update_ratio=grad / 1000, dead_fraction=dead,
                     weights=weights, grads=weights, activations=weights)


def stats(step: int, fc1_grad: float, head_grad: float = 1.0, fc1_weights: Histogram = UNIFORM) -> LayerStats:
    return LayerStats(step=step, layers=(layer("body.fc1", fc1_grad, fc1_weights), layer("head", head_grad)))


def started(every: int = 100) -> RunStarted:
    return RunStarted(config=TrainConfig(stats_every=every), device="cpu", device_name="CPU", versions=VERSIONS,
                      train_size=4000, val_size=1000, steps_per_epoch=125, total_steps=250)


@pytest.fixture
def panel(qtbot):
    widget = LayersPanel()
    qtbot.addWidget(widget)
    widget.resize(520, 800)
    return widget


def test_the_layer_table_nests_each_module_under_its_parent_with_its_figures_and_the_totals(panel):
    panel.add_events([started(), SUMMARY])
    rows = panel.table.rows()
    assert [[row.text(column) for column in range(5)] for row in rows] == [
        ["(model)", "TinyNet", "—", "—", "[32, 10]"],
        ["body", "Sequential", "—", "—", "[32, 16]"],
        ["fc1", "Linear", "12,560", "401,920", "[32, 16]"],
        ["act", "ReLU", "—", "—", "[32, 16]"],
        ["head", "Linear", "170", "5,440", "[32, 10]"]]

    def depth(item) -> int:
        return 0 if item.parent() is None else 1 + depth(item.parent())

    assert [depth(row) for row in rows] == [row.depth for row in SUMMARY.rows]  # indented as deep as it sits
    assert rows[2].parent() is rows[1] and rows[4].parent() is rows[0]
    assert rows[2].toolTip(0) == "body.fc1"
    assert panel.totals.text() == ("Total: 12,730 parameters (170 frozen), 0.05 MB as fp32 · 407,360 mult-adds a "
                                   "forward of a batch of 32")
    assert panel.header.text().startswith("TinyNet: 12,730 parameters · statistics from step 1, then every 100 steps")


def test_each_layer_is_a_curve_over_the_sampled_steps_of_the_figure_picked(panel):
    panel.add_events([started(), SUMMARY, stats(1, 0.0), stats(2, 0.5, head_grad=2.0), stats(4, 0.25)])
    panel.redraw()
    curves = panel.curves.curves
    assert list(curves) == ["body.fc1", "head"]
    x, y = curves["head"].getOriginalDataset()
    assert list(x) == [1, 2, 4] and list(y) == [1.0, 2.0, 1.0]
    assert panel.curves.plot.getPlotItem().getAxis("left").logMode  # gradient norms span decades
    # A gradient of 0 has no place on a log axis: a gap, and the caption names the layer.
    x, y = curves["body.fc1"].getOriginalDataset()
    assert len(x) == 3 and math.isnan(y[0]) and list(y[1:]) == [0.5, 0.25]
    assert "body.fc1" in panel.curves.caption.text() and not panel.curves.caption.isHidden()
    legend = [label.text for _sample, label in panel.curves.plot.getPlotItem().legend.items]
    assert legend == ["body.fc1", "head"]

    panel.curves.set_figure("dead_fraction")  # another figure: the same curves, its values, a linear axis
    assert list(curves["body.fc1"].getOriginalDataset()[1]) == [0.0, 0.0, 0.0]
    assert not panel.curves.plot.getPlotItem().getAxis("left").logMode and panel.curves.caption.isHidden()
    assert panel.curves.plot.getPlotItem().titleLabel.text == "Dead inputs (share)"

    panel.add_events([stats(8, 0.125)])  # a new sample is drawn at the next redraw
    panel.redraw()
    assert [len(curve.getOriginalDataset()[0]) for curve in curves.values()] == [4, 4]


def test_a_distribution_is_bands_between_its_quantiles_and_its_median_over_the_steps(panel):
    panel.add_events([started(), stats(1, 1.0, fc1_weights=UNIFORM), stats(2, 1.0, fc1_weights=ONE_BIN)])
    panel.redraw()
    view = panel.distributions
    assert view.layer_box.currentData() == "body.fc1" and view.tensor_box.currentData() == "weights"
    assert [view.layer_box.itemData(i) for i in range(view.layer_box.count())] == ["body.fc1", "head"]
    expected = {1: [4 * q for q in QUANTILES], 2: [-0.5 + 0.5 * q for q in QUANTILES]}
    for i, (low, high) in enumerate(view.edges):  # 0–100 %, 7–93 %, 16–84 %, 31–69 %
        for edge, q in ((low, i), (high, -1 - i)):
            x, y = edge.getOriginalDataset()
            assert list(x) == [1, 2]
            np.testing.assert_allclose(y, [expected[1][q], expected[2][q]], atol=1e-12)
    np.testing.assert_allclose(view.edges[1][0].getOriginalDataset()[1], [0.2672, -0.4666])  # 6.68 %
    np.testing.assert_allclose(view.median.getOriginalDataset()[1], [2.0, -0.25])
    assert view.plot.getPlotItem().titleLabel.text == "body.fc1 · weights"
    view.select("head", "grads")
    np.testing.assert_allclose(view.median.getOriginalDataset()[1], [2.0, 2.0])
    assert view.plot.getPlotItem().titleLabel.text == "head · gradients"


def test_steps_alone_draw_nothing_and_a_sample_draws_once_shortly_after(panel, qtbot):
    panel.add_events([Step(step=n, epoch=1, loss=1.0, samples_per_s=1e3, step_seconds=0.01, memory=MemorySample())
                      for n in range(1, 1001)])
    assert not panel.timer.isActive() and not panel.history.samples
    panel.add_events([stats(100, 1.0), stats(200, 1.0)])
    assert panel.timer.isActive() and not panel.curves.curves  # one drawing for both, on the timer
    qtbot.waitUntil(lambda: len(panel.curves.curves) == 2, timeout=2000)


def test_the_empty_state_says_when_statistics_come_and_a_new_run_empties_the_dock(panel):
    assert panel.header.text() == ("Per-layer statistics appear here while a run trains (every 100 steps, and at "
                                   "steps 1, 2, 4 … 32).")
    panel.add_events([started(), SUMMARY, stats(1, 1.0), stats(2, 1.0)])
    panel.redraw()
    assert panel.header.text() == "TinyNet: 12,730 parameters · statistics of 2 layers at 2 steps, the last 2"
    panel.add_events([started(every=25)])
    assert panel.table.topLevelItemCount() == 0 and panel.totals.text() == ""
    assert not panel.curves.curves and panel.distributions.layer_box.count() == 0
    assert not panel.distributions.median.getOriginalDataset()[0]
    assert panel.header.text().startswith("Per-layer statistics appear here while a run trains (every 25 steps")
    panel.add_events([started(every=0)])
    assert "no per-layer statistics" in panel.header.text() and "Layer statistics every (steps): 0" in \
        panel.header.text()


def test_an_alert_about_a_layer_shows_it_in_the_figure_that_saw_it(panel):
    panel.add_events([started(), SUMMARY, stats(1, 1.0), stats(2, 1.0)])
    panel.show_alert(Alert(step=2, rule="dead_units", severity="warning", title="t", advice="a", panel="model",
                           layer="head"))
    assert panel.tabs.currentWidget() is panel.statistics
    assert panel.curves.figure.key == "dead_fraction"
    assert panel.curves.curves["head"].opts["pen"].width() > panel.curves.curves["body.fc1"].opts["pen"].width()
    assert panel.distributions.layer_box.currentData() == "head"
    assert panel.table.currentItem().text(0) == "head"


def test_a_real_runs_summary_and_statistics_fill_the_dock(panel, trained_run):
    summary = next(e for e in trained_run.events if isinstance(e, ModelSummary))
    samples = [e for e in trained_run.events if isinstance(e, LayerStats)]
    panel.add_events(list(trained_run.events))
    panel.redraw()
    assert len(panel.table.rows()) == len(summary.rows) and f"{summary.params:,} parameters" in panel.totals.text()
    names = [stat.name for stat in samples[0].layers]
    assert list(panel.curves.curves) == names and len(names) >= 2
    for curve in panel.curves.curves.values():
        assert list(curve.getOriginalDataset()[0]) == [sample.step for sample in samples]
    low, high = panel.distributions.edges[0]
    assert np.all(low.getOriginalDataset()[1] <= panel.distributions.median.getOriginalDataset()[1])
    assert np.all(panel.distributions.median.getOriginalDataset()[1] <= high.getOriginalDataset()[1])
