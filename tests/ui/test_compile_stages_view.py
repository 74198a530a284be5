"""Compile time by stage in the window: a stacked bar per graph on one scale, a legend, a tooltip per segment."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPoint

from workbench.core.ground.compile_stages import STAGES, GraphCompileTime
from workbench.ui.panels.compile.stages import NO_TIMES, CompileStagesView, StageBars

TIMES = (GraphCompileTime("0/0", "forward", dynamo=0.5, aot=1.0, lowering=0.5, codegen=0.5, kernel_compile=2.5),
         GraphCompileTime("0/0", "forward", "backward", aot=0.1, kernel_compile=1.9),
         GraphCompileTime("0/1", "forward", dynamo=0.2, autotune=0.8))


def test_each_graph_is_a_bar_of_its_stages_on_one_scale(qtbot):
    view = CompileStagesView()
    qtbot.addWidget(view)
    view.resize(640, 200)
    view.show_times(TIMES)
    view.show()
    assert view.bars.isVisible() and view.legend.isVisible() and not view.note.isVisible()
    segments = view.bars.segments()
    assert [(t.label, key) for _, t, key in segments] == [
        ("forward 0/0", "dynamo"), ("forward 0/0", "aot"), ("forward 0/0", "lowering"), ("forward 0/0", "codegen"),
        ("forward 0/0", "kernel_compile"), ("forward 0/0 · backward", "aot"),
        ("forward 0/0 · backward", "kernel_compile"), ("forward 0/1", "dynamo"), ("forward 0/1", "autotune")]
    for (before, first, _), (after, second, _) in zip(segments, segments[1:]):
        if first is second:  # a graph's stages follow one another
            assert after.left() == pytest.approx(before.right())
    widths: dict[str, float] = {}
    for rect, time, _ in segments:
        widths[time.label] = widths.get(time.label, 0.0) + rect.width()
    # The longest graph (5 s) spans the bars' width; the others in proportion.
    assert widths["forward 0/0 · backward"] / widths["forward 0/0"] == pytest.approx(2 / 5)
    assert widths["forward 0/1"] / widths["forward 0/0"] == pytest.approx(1 / 5)
    for stage in STAGES.values():
        assert stage.name in view.legend.text()
    assert "forward 0/0 · backward: 2.00 s" in view.bars.accessibleDescription()


def test_a_segment_names_its_stage_seconds_and_share(qtbot):
    bars = StageBars()
    qtbot.addWidget(bars)
    bars.resize(640, 100)
    bars.set_times(TIMES)
    rect, time, key = bars.segments()[4]
    assert bars.segment_at(rect.center().toPoint()) == (time, key)
    assert StageBars.tooltip(time, key) == (f"forward 0/0 · C++ / Triton compile: 2.50 s (50% of 5.00 s)\n"
                                            f"{STAGES['kernel_compile'].meaning}")
    assert bars.segment_at(QPoint(1, 1)) is None  # on a graph's name


def test_without_times_the_view_says_where_they_come_from(qtbot):
    view = CompileStagesView()
    qtbot.addWidget(view)
    view.show()
    assert view.note.isVisible() and view.note.text() == NO_TIMES and not view.bars.isVisible()
    view.show_times(TIMES)
    view.clear()
    assert view.note.isVisible() and view.bars.times == ()
