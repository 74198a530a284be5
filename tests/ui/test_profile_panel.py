"""The profile panel, fed synthetic events (no profiler, no torch): the op table, the timeline, memory, AMP, header."""

from __future__ import annotations

from dataclasses import replace

import pytest
from PySide6.QtCore import QPointF, Qt

from workbench.core.ground.amp_census import AmpCensus, CallsByGroup, CensusRow
from workbench.core.ground.config import TrainConfig
from workbench.core.ground.events import AmpReport, AmpSkipped, MemorySample, ProfileReport, RunStarted, Step
from workbench.core.ground.memory_trace import Allocation, MemoryTimeline
from workbench.core.ground.profile_trace import OpRow, ProfileCost, ProfileTables, RegionRow, Span, StepTime
from workbench.ui.panels.profile import profile
from workbench.ui.panels.profile.profile import ProfilePanel
from workbench.ui.panels.profile.amp import AMP_OFF, NO_SCALING
from workbench.ui.panels.profile.ops import WARNING
from workbench.ui.panels.profile.timeline import TIMELINE_HINT, span_at

from ..helpers import VERSIONS

MIB = 2**20
TRACE = "/runs/r7/profile/trace.json.gz"


def _op(name, region, calls, self_cpu_ms, cpu_ms, self_device_ms=0.0, device_ms=0.0, shapes="[]") -> OpRow:
    return OpRow(name=name, region=region, calls=calls, self_cpu_us=1000 * self_cpu_ms, cpu_us=1000 * cpu_ms,
                 self_device_us=1000 * self_device_ms, device_us=1000 * device_ms, shapes=shapes)


# Six ops in three regions; the two heaviest are 10.0 and 9.0 ms of self CPU (text sorting puts "9" above "10").
OPS = (
    _op("aten::addmm", "compiled 0/0", 60, 10.0, 12.5, 6.0, 6.0, "[[128], [64, 784], [784, 128]]"),
    _op("aten::mm", "compiled 0/0", 40, 9.0, 9.0, 4.0, 4.0, "[[64, 128], [128, 10]]"),
    _op("aten::cross_entropy_loss", "", 20, 4.0, 7.0, 0.5, 1.0, "[[64, 10], [64]]"),
    _op("aten::_foreach_add_", "optimizer", 20, 3.0, 3.0, 2.0, 2.0),
    _op("aten::relu", "", 20, 2.5, 2.5, 0.2, 0.2, "[[64, 128]]"),
    _op("Optimizer.step#Adam.step", "optimizer", 20, 1.5, 4.5, 0.0, 2.0),
)
REGIONS = (RegionRow(region="compiled 0/0", self_cpu_us=19_000.0, self_device_us=10_000.0, calls=100),
           RegionRow(region="", self_cpu_us=6_500.0, self_device_us=700.0, calls=40),
           RegionRow(region="optimizer", self_cpu_us=4_500.0, self_device_us=2_000.0, calls=40))
STEPS = tuple(StepTime(step=s, start_us=10_000.0 * i, dur_us=9_500.0) for i, s in enumerate((12, 13, 14)))


def _span(lane, name, kind, depth, start_ms, dur_ms) -> Span:
    return Span(lane=lane, start_us=1000 * start_ms, dur_us=1000 * dur_ms, name=name, kind=kind, depth=depth)


CPU_SPANS = (
    *(_span("CPU", f"ProfilerStep#{s.step}", "step", 0, s.start_us / 1000, 9.5) for s in STEPS),
    _span("CPU", "Torch-Compiled Region: 0/0", "region", 1, 0.5, 5.0),  # as profile_trace names them
    _span("CPU", "aten::addmm", "op", 2, 1.0, 2.0),
    _span("CPU", "Optimizer.step#Adam.step", "region", 1, 7.0, 2.0),
    _span("CPU", "aten::_foreach_add_", "op", 2, 7.5, 0.8),
    _span("CPU thread 10", "autograd::engine::evaluate_function: MmBackward0", "op", 0, 5.6, 0.4),
    _span("CPU thread 2", "autograd::engine::evaluate_function: AddmmBackward0", "op", 0, 5.6, 1.2),
)
GPU_SPANS = (_span("GPU 0 stream 7", "sm90_xmma_gemm_f32f32_tf32f32", "kernel", 0, 1.1, 0.3),
             _span("GPU 0 stream 7", "triton_poi_fused_relu_0", "kernel", 0, 1.5, 0.05))


def _summary(device="cpu") -> ProfileTables:
    spans = CPU_SPANS + (GPU_SPANS if device == "cuda" else ())
    return ProfileTables(ops=OPS, regions=REGIONS, steps=STEPS, spans=spans, spans_left_out=0, origin_us=1.7e12,
                         window_us=29_500.0, device=device, cost=ProfileCost(profiled_step_ms=9.5, steady_step_ms=7.25))


TIMES_US = (0.0, 2000.0, 4000.0, 6000.0, 8000.0, 10_000.0)
CATEGORY_MIB = {  # in no particular order: the panel stacks them in its own
    "activations": [0, 6, 12, 3, 1, 0], "other": [0.5] * 6, "parameters": [4] * 6, "gradients": [0, 0, 0, 4, 4, 0],
    "optimizer state": [8] * 6}
PEAK_INDEX = 2  # 4 + 0 + 8 + 12 + 0.5 = 24.5 MiB at 4 ms
LARGEST = (
    Allocation(bytes=4 * MIB, category="parameters", where="model.py:10 in __init__", stack=(), start_us=0.0,
               end_us=None),
    Allocation(bytes=6 * MIB, category="activations", where="aten::addmm",
               stack=("train.py:88 in step", "model.py:12 in forward"), start_us=1500.0, end_us=5200.0),
    Allocation(bytes=512 * 1024, category="gradients", where="aten::mm", stack=("train.py:90 in step",),
               start_us=6000.0, end_us=9000.0),
)


def _memory(source="profiler", **changes) -> MemoryTimeline:
    memory = MemoryTimeline(source=source, device="cpu", times_us=TIMES_US,
                            categories={name: tuple(int(m * MIB) for m in mib) for name, mib in CATEGORY_MIB.items()},
                            peak_bytes=int(24.5 * MIB), peak_us=4000.0, largest=LARGEST,
                            note="CPU: sizes from the profiler's allocation events")
    return replace(memory, **changes)


def _report(device="cpu", **changes) -> ProfileReport:
    fields = dict(first_step=12, last_step=14, device=device, summary=_summary("cuda" if device != "cpu" else "cpu"),
                  memory=_memory(), trace=TRACE, trace_bytes=1_400_000)
    return ProfileReport(**{**fields, **changes})


# As amp.dtype_census sorts it (low, fp32, other; each by calls), its groups counting calls.
CENSUS = AmpCensus(ops=(CensusRow(op="aten.mm", calls=10, dtype="float16", group="low"),
                        CensusRow(op="aten.addmm", calls=3, dtype="float16", group="low"),
                        CensusRow(op="aten._log_softmax", calls=1, dtype="float32", group="fp32"),
                        CensusRow(op="aten.nll_loss_forward", calls=1, dtype="float32", group="fp32"),
                        CensusRow(op="aten.argmax", calls=1, dtype="int64", group="other")),
                   groups=CallsByGroup(low=13, fp32=2, other=1))
AMP = AmpReport(dtype="fp16", device="cuda:0", census=CENSUS,
                recommendation="bf16: this GPU has bf16, which needs no loss scaling (fp16 overflowed here)")
SKIPPED = [AmpSkipped(step=1, scale=65536.0, param="core.0.weight"), AmpSkipped(step=2, scale=32768.0),
           AmpSkipped(step=9, scale=16384.0, param="head.bias")]


def _steps(n=40) -> list[Step]:
    """fp16 steps: the scale after each step's update, halved by each skipped step."""
    skipped = {e.step for e in SKIPPED}
    steps, scale = [], 65536.0
    for i in range(1, n + 1):
        scale /= 2 if i in skipped else 1
        steps.append(Step(step=i, epoch=1, loss=1.0, samples_per_s=1e4, step_seconds=0.01, memory=MemorySample(),
                          loss_scale=scale))
    return steps


@pytest.fixture
def panel(qtbot):
    panel = ProfilePanel()
    qtbot.addWidget(panel)
    return panel


def _column(view, column) -> list[str]:
    model = view.model()
    return [model.index(row, column).data() for row in range(model.rowCount())]


def _legend(plot) -> list[str]:
    return [label.text for _, label in plot.getPlotItem().legend.items]


# -- empty state and clear ---------------------------------------------------------------------------------------
def _assert_empty(panel):
    assert panel.header.text().startswith("No profile yet: set <b>Profile steps</b> in the Setup panel")
    assert not panel.open_trace.isEnabled()
    assert panel.ops_model.rowCount() == 0 and panel.region_filter.count() == 1
    assert panel.region_totals.text() == "" and panel.op_filter.text() == ""
    assert panel.lanes == [] and panel.timeline_bars == {} and panel.step_labels == []
    assert panel.memory_curves == {} and panel.peak_line is None and panel.largest_model.rowCount() == 0
    assert panel.open_snapshot.isHidden()
    assert panel.amp_recommendation.text() == AMP_OFF and panel.amp_body.isHidden()
    assert panel.scale.size == 0 and panel.scale_curve.getOriginalDataset()[0] is None
    assert panel.skipped_model.rowCount() == 0 and panel.census_model.rowCount() == 0


def test_before_any_profile_the_panel_says_how_to_get_one(panel):
    _assert_empty(panel)
    panel.add_events([RunStarted(config=TrainConfig(), device="cpu", device_name="CPU", versions=VERSIONS, train_size=1,
                                 val_size=1,
                                 steps_per_epoch=1, total_steps=1)])  # not its kind of event: ignored
    _assert_empty(panel)


def test_clear_resets_every_tab(panel):
    panel.add_events([_report("cuda:0", snapshot="/runs/r7/profile/snapshot.pickle"), AMP, *_steps(), *SKIPPED])
    panel.op_filter.setText("add")
    panel.redraw()
    assert panel.ops_model.rowCount() and panel.scale.size and panel.skipped_model.rowCount()
    panel.clear()
    _assert_empty(panel)
    assert not panel.ops_view.isColumnHidden(0) and panel.ops_view.isColumnHidden(5)  # a cpu-less table again
    assert not panel.timer.isActive()


# -- ops -------------------------------------------------------------------------------------------------------------
def test_the_op_table_fills_heaviest_first_and_sorts_numbers_as_numbers(panel):
    panel.add_event(_report())
    assert panel.ops_model.rowCount() == 6
    assert _column(panel.ops_view, 0)[:2] == ["aten::addmm", "aten::mm"]  # 10.000 above 9.000
    panel.ops_view.sortByColumn(3, Qt.AscendingOrder)  # a click on "Self CPU (ms)"
    self_cpu = _column(panel.ops_view, 3)
    assert self_cpu == ["1.500", "2.500", "3.000", "4.000", "9.000", "10.000"]
    panel.ops_view.sortByColumn(2, Qt.DescendingOrder)
    assert _column(panel.ops_view, 2) == ["60", "40", "20", "20", "20", "20"]
    assert _column(panel.ops_view, 1).count("eager") == 2  # region "" reads "eager"
    headers = [panel.ops_model.headerData(c, Qt.Horizontal) for c in range(panel.ops_model.columnCount())]
    assert headers == ["Op", "Region", "Calls", "Self CPU (ms)", "CPU total (ms)", "Self device (ms)",
                       "Device total (ms)", "Input shapes"]
    assert "not in the ops it called" in panel.ops_model.headerData(3, Qt.Horizontal, Qt.ToolTipRole)
    addmm = panel.ops_model.index(0, 0)
    assert "compiled 0/0" in addmm.data(Qt.ToolTipRole) and "60 calls" in addmm.data(Qt.ToolTipRole)
    assert panel.ops_model.index(0, 7).data() == "[[128], [64, 784], [784, 128]]"


def test_the_region_and_name_filters(panel):
    panel.add_event(_report())
    combo = panel.region_filter
    assert [combo.itemText(i) for i in range(combo.count())] == ["All regions", "compiled 0/0", "eager", "optimizer"]
    combo.setCurrentIndex(combo.findText("optimizer"))
    assert sorted(_column(panel.ops_view, 0)) == ["Optimizer.step#Adam.step", "aten::_foreach_add_"]
    combo.setCurrentIndex(combo.findText("eager"))
    assert sorted(_column(panel.ops_view, 0)) == ["aten::cross_entropy_loss", "aten::relu"]
    combo.setCurrentIndex(0)
    panel.op_filter.setText("ADD")  # any case
    assert sorted(_column(panel.ops_view, 0)) == ["aten::_foreach_add_", "aten::addmm"]
    combo.setCurrentIndex(combo.findText("compiled 0/0"))
    assert _column(panel.ops_view, 0) == ["aten::addmm"]
    panel.op_filter.setText("")
    assert sorted(_column(panel.ops_view, 0)) == ["aten::addmm", "aten::mm"]


def test_device_columns_show_only_for_a_cuda_profile(panel):
    panel.add_event(_report())
    assert [panel.ops_view.isColumnHidden(c) for c in (3, 4, 5, 6)] == [False, False, True, True]
    panel.add_event(_report("cuda:0"))
    assert [panel.ops_view.isColumnHidden(c) for c in (3, 4, 5, 6)] == [False, False, False, False]
    assert _column(panel.ops_view, 5) == ["6.000", "4.000", "0.500", "2.000", "0.200", "0.000"]  # as summarised
    panel.ops_view.sortByColumn(6, Qt.DescendingOrder)
    assert _column(panel.ops_view, 6) == ["6.000", "4.000", "2.000", "2.000", "1.000", "0.200"]


def test_the_region_totals_line_gives_each_regions_share_of_self_time(panel):
    panel.add_event(_report())  # self CPU 19 + 6.5 + 4.5 ms
    assert panel.region_totals.text() == "Self CPU time by region: compiled 0/0 63 % · eager 22 % · optimizer 15 %"
    panel.add_event(_report("cuda:0"))  # self device 10 + 0.7 + 2 ms
    assert panel.region_totals.text() == ("Self device time by region: compiled 0/0 79 % · optimizer 16 % · "
                                          "eager 6 %")
    assert "Self CPU time: compiled 0/0 63 %" in panel.region_totals.toolTip()
    # A summary without a region table: the shares are added up from its ops.
    panel.add_event(_report(summary=replace(_summary(), regions=())))
    assert panel.region_totals.text().endswith("compiled 0/0 63 % · eager 22 % · optimizer 15 %")


# -- timeline ---------------------------------------------------------------------------------------------------------
def test_the_timeline_has_a_lane_per_thread_and_stream_and_a_bar_per_span(panel):
    panel.add_event(_report())
    assert panel.lanes == ["CPU", "CPU thread 2", "CPU thread 10"]
    ticks = panel.timeline_plot.getPlotItem().getAxis("left")._tickLevels[0]
    assert [name for _, name in ticks] == panel.lanes
    assert set(panel.timeline_bars) == {"step", "compiled", "region", "op"}
    assert len(panel.timeline_bars["op"].opts["x0"]) == 4 and len(panel.timeline_bars["step"].opts["x0"]) == 3
    assert [label.toPlainText() for label in panel.step_labels] == ["12", "13", "14"]
    assert _legend(panel.timeline_plot) == ["step", "compiled region", "optimizer", "op"]
    assert panel.timeline_info.text() == TIMELINE_HINT
    panel.add_event(_report("cuda:0"))
    assert panel.lanes == ["CPU", "CPU thread 2", "CPU thread 10", "GPU 0 stream 7"]
    assert list(panel.timeline_bars["kernel"].opts["x0"]) == pytest.approx([1.1, 1.5])  # ms
    y0 = panel.timeline_bars["kernel"].opts["y0"]
    assert all(3 < y < 4 for y in y0)  # in the fourth lane's band
    panel.add_event(_report("cuda:0", summary=replace(_summary("cuda"), spans_left_out=1234)))
    assert panel.timeline_info.text().endswith("1,234 short ops and kernels not drawn (the trace has them all)")


def test_span_at_finds_the_span_under_a_point_and_none_between_spans():
    spans = _summary("cuda").spans
    assert span_at(spans, 0, 1.5).name == "aten::addmm"  # the deepest there
    assert span_at(spans, 0, 1.5, depth=1).name == "Torch-Compiled Region: 0/0"
    assert span_at(spans, 0, 1.5, depth=0).name == "ProfilerStep#12"
    assert span_at(spans, 0, 12.0).name == "ProfilerStep#13"
    assert span_at(spans, 0, 9.7) is None  # between step 12 (ends at 9.5 ms) and step 13 (10 ms)
    assert span_at(spans, 1, 6.0).name.endswith("AddmmBackward0")  # "CPU thread 2" before "CPU thread 10"
    assert span_at(spans, 3, 1.2).name == "sm90_xmma_gemm_f32f32_tf32f32"
    assert span_at(spans, 3, 1.45) is None
    assert span_at(spans, 4, 1.2) is None and span_at(spans, -1, 1.2) is None


def test_pointing_at_a_bar_names_it_under_the_plot(panel, qtbot):
    panel.resize(900, 600)
    panel.show()
    qtbot.waitExposed(panel)
    panel.add_event(_report("cuda:0"))
    panel.show_tab("timeline")
    box = panel.timeline_plot.getPlotItem().getViewBox()
    box.setRange(xRange=(0, 10), yRange=(-0.35, 4), padding=0)
    top, height = panel.timeline_tab._band(0, 2)  # the CPU lane's ops row
    panel.timeline_tab._point(box.mapViewToScene(QPointF(2.0, top + height / 2)))
    assert panel.timeline_info.text() == "aten::addmm · op on the CPU · 2.000 ms · CPU, from 1.000 ms"
    top, height = panel.timeline_tab._band(0, 1)
    panel.timeline_tab._point(box.mapViewToScene(QPointF(2.0, top + height / 2)))
    assert panel.timeline_info.text().startswith("Torch-Compiled Region: 0/0 · compiled region · 5.000 ms")
    panel.timeline_tab._point(box.mapViewToScene(QPointF(8.0, top + height / 2)))
    assert panel.timeline_info.text().startswith("Optimizer.step#Adam.step · region · 2.000 ms")
    top, height = panel.timeline_tab._band(3, 0)
    panel.timeline_tab._point(box.mapViewToScene(QPointF(1.2, top + height / 2)))
    assert panel.timeline_info.text().startswith("sm90_xmma_gemm_f32f32_tf32f32 · GPU kernel · 0.300 ms")
    panel.timeline_tab._point(box.mapViewToScene(QPointF(9.7, top + height / 2)))
    assert panel.timeline_info.text() == TIMELINE_HINT


# -- memory -----------------------------------------------------------------------------------------------------------
def test_memory_stacks_the_categories_in_a_fixed_order_up_to_the_peak(panel):
    panel.add_event(_report())
    assert list(panel.memory_curves) == ["parameters", "gradients", "optimizer state", "activations", "other"]
    assert len(panel.memory_fills) == 5
    x, top = panel.memory_curves["other"].getData()
    assert list(x) == pytest.approx([0, 2, 4, 6, 8, 10])  # ms
    assert top[PEAK_INDEX] == pytest.approx(sum(mib[PEAK_INDEX] for mib in CATEGORY_MIB.values())) == 24.5
    _, below_activations = panel.memory_curves["optimizer state"].getData()
    _, activations = panel.memory_curves["activations"].getData()
    assert activations - below_activations == pytest.approx(CATEGORY_MIB["activations"])  # each band its category
    assert panel.peak_line.value() == pytest.approx(4.0)
    assert panel.peak_line.label.toPlainText() == "peak 24.5 MiB"
    caption = panel.memory_caption.text()
    assert "from the profiler's memory events" in caption and "peak 24.5 MiB at 4.00 ms" in caption
    assert caption.endswith("CPU: sizes from the profiler's allocation events")
    assert _legend(panel.memory_plot) == list(panel.memory_curves)
    assert panel.open_snapshot.isHidden()


def test_the_cuda_allocator_history_in_event_numbers_and_a_profile_without_memory(panel):
    memory = _memory("cuda allocator", time_unit="event", times_us=(0, 1, 2, 3, 4, 5), peak_us=2)
    panel.add_event(_report("cuda:0", memory=memory, snapshot="/runs/r7/profile/snapshot.pickle"))
    assert "from the CUDA allocator history" in panel.memory_caption.text()
    assert panel.peak_line.value() == 2
    assert _column(panel.largest_table, 3)[:2] == ["event 1,500 – 5,200", "event 0 – end"]  # not ms
    assert not panel.open_snapshot.isHidden() and "pytorch.org/memory_viz" in panel.open_snapshot.toolTip()
    assert panel.memory_plot.getPlotItem().getAxis("bottom").labelText == "allocation event"
    panel.add_event(_report("cuda:0", memory=_memory("cuda allocator")))
    assert panel.memory_plot.getPlotItem().getAxis("bottom").labelText == "ms since the allocator's first event"
    panel.add_event(_report(memory=None))
    assert panel.memory_curves == {} and panel.peak_line is None
    assert panel.memory_caption.text() == "Memory was not recorded in this profile."
    empty = _memory(times_us=(), categories={c: () for c in CATEGORY_MIB}, note="no [memory] events")
    panel.add_event(_report(memory=empty))  # what memory_trace gives when the profiler saw no memory events
    assert panel.memory_caption.text() == "Memory was not recorded in this profile: no [memory] events"


def test_the_largest_allocations_table_with_its_stacks(panel):
    panel.add_event(_report())
    table = panel.largest_table
    assert _column(table, 0) == ["6.0", "4.0", "0.5"]  # MiB, largest first
    assert _column(table, 1) == ["activations", "parameters", "gradients"]
    assert _column(table, 2)[0] == "aten::addmm"
    assert _column(table, 3) == ["1.500 – 5.200 ms", "0.000 ms – end", "6.000 – 9.000 ms"]
    tip = table.model().index(0, 2).data(Qt.ToolTipRole)
    assert tip == "Allocated at (innermost last):\ntrain.py:88 in step\nmodel.py:12 in forward"
    assert table.model().index(1, 0).data(Qt.ToolTipRole) == "No stack was recorded"


# -- AMP --------------------------------------------------------------------------------------------------------------
def test_amp_tab_recommendation_census_skipped_steps_and_the_scale_curve(panel, qtbot):
    panel.add_events([AMP, *_steps(), *SKIPPED])
    assert panel.amp_recommendation.text() == AMP.recommendation and panel.amp_recommendation.font().bold()
    assert not panel.amp_body.isHidden()
    # Drawn by the timer, not per event: nothing yet, then everything at once.
    assert panel.timer.isActive() and panel.scale_curve.getOriginalDataset()[0] is None
    qtbot.waitUntil(lambda: panel.skipped_model.rowCount() == 3, timeout=2000)
    x, y = panel.scale_curve.getOriginalDataset()  # a step function: each scale holds until the next change
    assert list(x) == [1, 2, 2, 9, 9, 40, 40]  # the steps that changed it, and the last
    assert list(y) == [32768, 32768, 16384, 16384, 8192, 8192, 8192]
    axis = panel.scale_plot.getPlotItem().getAxis("left")
    assert axis.logMode  # a log axis: the scale halves and doubles
    assert [label for _, label in axis._tickLevels[0]] == ["8,192", "16,384", "32,768", "65,536"]  # powers of 2
    assert not panel.scale_plot.isHidden() and panel.scale_note.isHidden()
    assert list(panel.skip_points.getData()[0]) == [1, 2, 9]
    assert _column(panel.skipped_table, 0) == ["1", "2", "9"]
    assert _column(panel.skipped_table, 1) == ["65,536", "32,768", "16,384"]
    assert _column(panel.skipped_table, 2) == ["core.0.weight", "(none seen)", "head.bias"]
    assert panel.skipped_count.text() == "3 optimizer steps skipped of 40 (7.5 %): gradients overflowed in fp16"
    assert _column(panel.census_table, 0) == [row.op for row in CENSUS.ops]  # in the census's order
    assert _column(panel.census_table, 3) == ["low", "low", "fp32", "fp32", "other"]
    panel.census_table.sortByColumn(1, Qt.AscendingOrder)
    assert _column(panel.census_table, 1) == ["1", "1", "1", "3", "10"]  # numbers, not text ("10" < "3")
    assert panel.census_groups.text() == ("2 ops ran in fp16 (13 calls), 2 ops stayed in fp32 (2 calls), "
                                          "1 op other (1 call: integer, boolean or no-tensor ops)")
    low, other = (panel.census_table.model().index(row, 3).data(Qt.ToolTipRole) for row in (4, 0))
    assert low.startswith("ran in the lower precision") and other.startswith(("kept in fp32", "neither"))


def test_the_loss_scale_holds_between_the_steps_that_changed_it(panel):
    # A re-opened run: only the Steps where the scale changed, and the last step.
    panel.add_events([Step(step=step, epoch=1, loss=1.0, samples_per_s=1.0, step_seconds=0.1, memory=MemorySample(),
                           loss_scale=scale) for step, scale in ((1, 1024.0), (2, 512.0), (50, 512.0))])
    panel.redraw()
    x, y = panel.scale_curve.getOriginalDataset()
    assert list(x) == [1, 2, 2, 50, 50] and list(y) == [1024, 1024, 512, 512, 512]
    flat = [(x0, x1, y0) for x0, x1, y0, y1 in zip(x, x[1:], y, y[1:]) if y0 == y1 and x0 != x1]
    assert flat == [(1, 2, 1024), (2, 50, 512)]  # not a slope from 1024 at step 1 to 512 at step 2
    assert all(x0 == x1 for x0, x1, y0, y1 in zip(x, x[1:], y, y[1:]) if y0 != y1)  # changes are vertical


def test_a_bf16_run_has_no_scale_curve_and_no_report_means_amp_is_off(panel):
    census = AmpCensus(groups=CallsByGroup(low=12, fp32=5, other=0))  # rows left out: the calls still count
    panel.add_events([AmpReport(dtype="bf16", device="cpu", census=census, recommendation="bf16: fine here"),
                      *(Step(step=i, epoch=1, loss=1.0, samples_per_s=1.0, step_seconds=0.1, memory=MemorySample())
                        for i in range(1, 6))])
    panel.redraw()
    assert panel.scale_plot.isHidden() and not panel.scale_note.isHidden()
    assert panel.scale_note.text() == NO_SCALING
    assert panel.census_groups.text() == "12 calls ran in bf16, 5 calls stayed in fp32"
    panel.clear()
    assert panel.amp_recommendation.text() == AMP_OFF and not panel.amp_recommendation.font().bold()


# -- header -----------------------------------------------------------------------------------------------------------
class _Desktop:
    opened: list[str] = []

    @classmethod
    def openUrl(cls, url):
        cls.opened.append(url.toLocalFile())


def test_the_header_and_the_open_trace_button(panel, qtbot, monkeypatch):
    monkeypatch.setattr(profile, "QDesktopServices", _Desktop)
    _Desktop.opened = []
    panel.add_event(_report())
    assert panel.header.text() == "Steps 12–14 profiled (cpu) · trace 1.4 MB"
    assert "took 9.50 ms (median), a steady one 7.25 ms" in panel.header.toolTip()
    assert panel.open_trace.isEnabled()
    assert "ui.perfetto.dev" in panel.open_trace.toolTip() and "chrome://tracing" in panel.open_trace.toolTip()
    qtbot.mouseClick(panel.open_trace, Qt.LeftButton)
    assert _Desktop.opened == ["/runs/r7/profile"]

    panel.add_event(_report(trimmed="memory events after 200,000", trace_bytes=81_234))
    assert panel.header.text() == "Steps 12–14 profiled (cpu) · trace 81.2 kB · trimmed: memory events after 200,000"

    panel.add_event(_report(trace="", trace_bytes=0, problem="the trace could not be written: disk full"))
    text = panel.header.text()
    assert text.startswith("Steps 12–14 profiled (cpu) · no trace written")
    assert f'<span style="color:{WARNING}">⚠ the trace could not be written: disk full</span>' in text
    assert not panel.open_trace.isEnabled() and "disk full" in panel.open_trace.toolTip()
    qtbot.mouseClick(panel.open_trace, Qt.LeftButton)
    assert _Desktop.opened == ["/runs/r7/profile"]  # a disabled button opens nothing


def test_the_snapshot_button_opens_its_folder_and_show_tab(panel, qtbot, monkeypatch):
    monkeypatch.setattr(profile, "QDesktopServices", _Desktop)
    _Desktop.opened = []
    panel.add_event(_report("cuda:0", snapshot="/runs/r7/profile/snapshot.pickle"))
    panel.show_tab("Memory")
    assert panel.tabs.tabText(panel.tabs.currentIndex()) == "Memory"
    qtbot.mouseClick(panel.open_snapshot, Qt.LeftButton)
    assert _Desktop.opened == ["/runs/r7/profile"]
    panel.show_tab("amp")
    assert panel.tabs.currentIndex() == 3
    with pytest.raises(ValueError):
        panel.show_tab("nope")


def test_step_labels_thin_out_so_they_never_overlap(panel):
    from workbench.ui.panels.profile.timeline import MAX_STEP_LABELS

    steps = tuple(StepTime(step=n, start_us=(n - 5) * 100.0, dur_us=90.0) for n in range(5, 25))  # 20 steps
    spans = tuple(Span(lane="CPU", start_us=s.start_us, dur_us=s.dur_us, name=f"ProfilerStep#{s.step}", kind="step",
                       depth=0) for s in steps)
    panel.show_report(ProfileReport(first_step=5, last_step=24, device="cpu",
                                    summary=ProfileTables(steps=steps, spans=spans, device="cpu")))
    labels = [label.toPlainText() for label in panel.step_labels]
    assert labels == ["5", "8", "11", "14", "17", "20", "23"] and len(labels) <= MAX_STEP_LABELS
