"""A fast smoke test of `workbench bench`, so the benchmark cannot rot. It checks structure, not speed."""

from __future__ import annotations

import json
import statistics

from .test_cli import call


def test_quick_bench_prints_the_table_reference_rows_ratios_and_method(tmp_path, capsys):
    out = tmp_path / "bench.json"
    code, stdout, err = call(capsys, "bench", "--quick", "--backends", "eager,aot_eager,cudagraphs", "--amp",
                             "off,fp16", "--json", out)
    assert code == 0, err
    for row in ("plain loop (reference)", "article recipe (reference)", "matmul bound (reference)",
                "engine · eager · off", "engine · aot_eager · off"):
        assert row in stdout
    assert "ratio engine eager / plain loop" in stdout and "method:" in stdout
    data = json.loads(out.read_text())
    rows = {r["name"]: r for r in data["rows"]}
    assert rows["engine · eager · off"]["speedup"] == 1.0
    assert all(r["samples_per_s"] > 0 for r in rows.values())
    assert rows["engine · aot_eager · off"]["compile_seconds"] > 0
    plain = rows["plain loop (reference)"]
    assert len(plain["windows"]) == data["settings"]["windows"] == 2  # --quick's two timed windows
    assert plain["samples_per_s"] == statistics.median(plain["windows"]) and plain["step_p50_ms"] > 0
    if "cuda" not in data["device_name"].lower() and "CPU" in data["device_name"]:
        # what the CPU cannot run is listed as skipped, with the reason, not silently dropped
        assert any("cudagraphs" in s and "CUDA" in s for s in data["skipped"])
        assert any("fp16" in s for s in data["skipped"])


def test_quick_recording_overhead_measurement(capsys):
    code, stdout, err = call(capsys, "bench", "--recording", "--quick")
    assert code == 0, err
    assert "recording the run history:" in stdout and "× the samples/s of not recording" in stdout
