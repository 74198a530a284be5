"""A fast smoke test of `workbench bench`, so the benchmark cannot rot. It checks structure, not speed."""

from __future__ import annotations

import json
import statistics

import torch

from ..helpers import call


def test_quick_bench_prints_the_table_reference_rows_ratios_and_method(tmp_path, capsys):
    out = tmp_path / "bench.json"
    code, stdout, err = call(capsys, "bench", "--quick", "--backends", "eager,aot_eager,cudagraphs", "--amp",
                             "off,fp16", "--json", out)
    assert code == 0, err
    data = json.loads(out.read_text())
    precision = data["matmul_precision"]
    for row in ("plain loop (reference)", "article recipe (reference)", "matmul bound · ",
                "engine · eager · off", "engine · aot_eager · off"):
        assert row in stdout
    assert "ratio engine eager / plain loop" in stdout and "method:" in stdout
    assert precision == torch.get_float32_matmul_precision() and f"fp32 matmul precision {precision}" in stdout
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
        assert "engine · eager · fp16" in rows  # fp16 runs on the CPU too (GradScaler("cpu"))
        assert [r for r in rows if r.startswith("matmul bound")] == [f"matmul bound · {precision} (reference)"]
    else:  # CUDA: the GEMM bound in true fp32 and with TF32
        assert {"matmul bound · highest/fp32 (reference)", "matmul bound · high/TF32 (reference)"} <= set(rows)


def test_quick_bench_at_a_chosen_matmul_precision_states_it_and_restores_it(tmp_path, capsys):
    out = tmp_path / "bench.json"
    before = torch.get_float32_matmul_precision()
    code, stdout, err = call(capsys, "bench", "--quick", "--backends", "eager", "--modes", "default", "--amp", "off",
                             "--matmul-precision", "medium", "--json", out)
    assert code == 0, err
    assert "fp32 matmul precision medium" in stdout.splitlines()[0]
    data = json.loads(out.read_text())
    assert data["matmul_precision"] == data["settings"]["matmul_precision"] == "medium"
    assert torch.get_float32_matmul_precision() == before  # set for the benchmark only


def test_quick_recording_overhead_measurement(capsys):
    code, stdout, err = call(capsys, "bench", "--recording", "--quick")
    assert code == 0, err
    assert "recording the run history:" in stdout and "× the samples/s of not recording" in stdout


def test_instruments_prices_each_instrument_on_against_off(tmp_path, capsys):
    out = tmp_path / "instruments.json"
    code, stdout, err = call(capsys, "bench", "--instruments", "--quick", "--json", out)
    assert code == 0, err
    data = json.loads(out.read_text())["instruments"]
    stats = "per-layer statistics (every 100 steps, and steps 1–32)"
    assert set(data) == {"profiler (steady steps outside a 20-step window)",
                         "fp16 step health (loss scale + gradient check)", "system sampler (2 Hz)", stats}
    for name, figures in data.items():
        assert len(figures["ratios"]) == 1 and figures["median_ratio"] > 0
        assert f"{name}: on = {figures['median_ratio']:.3f}× the samples/s of off" in stdout
    assert data["profiler (steady steps outside a 20-step window)"]["window_step_ratio"] > 0
    assert "method: 1 epoch(s) of the default config" in stdout
    # the statistics are priced within the run too: a sampled step against the steady ones (on the CPU, exactly)
    assert data[stats]["sampled_step_ratio"] > 1 and "a sampled step takes" in stdout
    assert data["system sampler (2 Hz)"]["sampled_step_ratio"] is None
