"""The report's "Where the time and the memory go": a run's profile and mixed precision, from its events."""

from __future__ import annotations

import re
from pathlib import Path

from workbench.core.ground.amp_census import AmpCensus, CallsByGroup, CensusRow
from workbench.core.ground.events import AmpReport, AmpSkipped, MemorySample, ProfileReport, Step
from workbench.core.ground.memory_trace import Allocation, MemoryTimeline
from workbench.core.ground.profile_trace import OpRow, ProfileCost, ProfileTables
from workbench.core.history.report.insight import TOP_OPS, insight_html

MiB = 2**20
OPS = tuple(OpRow(name=f"aten::op{i}", region="compiled 0/0" if i % 2 else "", calls=20, self_cpu_us=1000.0 - i,
                  cpu_us=2000.0, self_device_us=0.0, device_us=0.0, shapes="[32, 784]") for i in range(20))
MEMORY = MemoryTimeline(
    source="profiler", device="cpu", time_unit="us", times_us=(0.0, 10.0, 20.0),
    categories={"parameters": (MiB, MiB, MiB), "gradients": (0, 2 * MiB, 0),
                "optimizer state": (2 * MiB, 2 * MiB, 2 * MiB), "activations": (0, 3 * MiB, 0), "other": (0, 0, 0)},
    peak_bytes=8 * MiB, peak_us=10.0, note="categories from the enclosing ops",
    largest=(Allocation(bytes=3 * MiB, category="activations", where="aten::addmm [32, 784]", stack=(),
                        start_us=5.0, end_us=15.0),))
PROFILE = ProfileReport(first_step=4, last_step=23, device="cpu",
                        summary=ProfileTables(ops=OPS, device="cpu",
                                              cost=ProfileCost(profiled_step_ms=3.5, steady_step_ms=2.0)),
                        memory=MEMORY, trace="/runs/r1/profile/trace.json.gz", trace_bytes=3 * MiB // 2,
                        trimmed="600 [memory] events")
AMP = AmpReport(dtype="fp16", device="cpu", recommendation="off (fp32): this CPU (AVX512) has no bf16 …",
                census=AmpCensus(ops=(CensusRow(op="aten.addmm", calls=2, dtype="float16", group="low"),
                                      CensusRow(op="aten._log_softmax", calls=1, dtype="float32", group="fp32")),
                                 groups=CallsByGroup(low=2, fp32=1, other=0)))


def scaled(step: int, scale: float) -> Step:
    return Step(step=step, epoch=1, loss=1.0, samples_per_s=1.0, step_seconds=0.1, memory=MemorySample(),
                loss_scale=scale)


def test_the_profile_shows_the_heaviest_ops_the_memory_peak_and_the_trace():
    html = insight_html([PROFILE], "#1f77b4", base=Path("/runs"))
    assert "Profile: steps 4–23 on cpu" in html and "3.50 ms against 2.00 ms" in html
    rows = re.findall(r"<tr><td>aten::op(\d+)</td>", html)
    assert rows == [str(i) for i in range(TOP_OPS)]  # the heaviest first, TOP_OPS of them
    assert "Self device" not in html  # a CPU profile has no device columns
    assert "Memory at its peak (8.00 MiB)" in html and "<td>activations</td><td>3.00 MiB</td>" in html
    assert "href='r1/profile/trace.json.gz'" in html  # relative to the report's folder
    assert "1.5 MiB gzipped" in html and "600 [memory] events" in html


def test_fp16_shows_the_census_the_scale_curve_and_each_skipped_step():
    events = [AMP, scaled(1, 2.0**15), AmpSkipped(step=1, scale=2.0**16, param="core_block.fc1.weight"),
              scaled(2, 2.0**15)]
    html = insight_html(events, "#1f77b4", base=None)
    assert "<b>Recommended for this device:</b> off (fp32)" in html
    assert "2 op call(s) ran in fp16 and 1 in fp32" in html
    assert "<td>aten.addmm</td><td>2</td><td>float16</td><td>low</td>" in html
    assert "<svg" in html and "fp16 loss scale (log2)" in html
    assert "1 of 2 optimizer steps skipped (50.0%)" in html
    assert "<td>1</td><td>65536</td><td><code>core_block.fc1.weight</code></td>" in html


def test_bf16_has_no_scale_curve_and_a_plain_run_has_nothing():
    bf16 = AmpReport(dtype="bf16", device="cpu", recommendation="bf16", census=AmpCensus())
    html = insight_html([bf16], "#1f77b4", base=None)
    assert "Mixed precision (bf16)" in html and "<svg" not in html and "skipped" not in html
    assert insight_html([scaled(1, 1.0)], "#1f77b4", base=None) == ""
