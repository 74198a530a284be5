"""Cold against warm compile seconds: what a warm start (the compile cache of an earlier run) saves, per Inductor mode.

    .venv/bin/python scripts/compile_warm.py [--modes default,max-autotune-no-cudagraphs] [--repeats 3]
                                             [--hidden-dim 128] [--device cpu] [--json FILE]

Method. Every launch is `python -m workbench train` in a fresh process (the built-in network, the bundled sample,
--max-steps 3, one epoch: the first step and the first validation compile), recorded in a history of the script's
own, and its compile seconds are what the run measured (every compile phase: the first step, the first validation).
Three kinds of launch, `--repeats` of each, the median reported:

- cold: a fresh, empty TORCHINDUCTOR_CACHE_DIR and `--warm-from 0`: nothing cached anywhere, every graph compiled
  from scratch. The first cold launch is also the warm launches' source.
- warm: a fresh, empty TORCHINDUCTOR_CACHE_DIR and `--warm-from <the first cold launch>`: only what the warm start
  brings can serve the compile (the mega-cache, torch.compiler.load_cache_artifacts, and the C++ kernels the cold
  run kept, put back into the empty folder). Inductor's precompiled headers stay where torch keeps them, outside
  the cache folder (as on any machine after its first compile).
- on-disk warm: `--warm-from 0` in the first cold launch's TORCHINDUCTOR_CACHE_DIR: Inductor's own on-disk caches
  (FX graphs, AOTAutograd, the compiled C++ kernels) are warm, as they are for a relaunch on the same machine; no
  warm start. This is what a "cold" start measures when its cache folder is not fresh.

Prints the method, a table and, for one warm launch, the payback's two lines (cold launch, next launch warm).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from workbench.core.ground.payback import Payback  # noqa: E402
from workbench.core.history.runs import RunStore  # noqa: E402

KINDS = ("cold", "warm", "on-disk warm")


def launch(root: Path, name: str, mode: str, args: argparse.Namespace, cache_dir: Path, warm_from: int) -> dict:
    """One `workbench train` in a fresh process: its compile seconds (and phases), and what its warm start said."""
    out = root / "runs" / name
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(cache_dir), "WORKBENCH_DATA_DIR": str(root / "data"),
           "WORKBENCH_CACHE_DIR": str(root / "cache")}
    command = [sys.executable, "-m", "workbench", "train", "--backend", "inductor", "--mode", mode, "--device",
               args.device, "--hidden-dim", str(args.hidden_dim), "--epochs", "1", "--max-steps", "3",
               "--warm-from", str(warm_from), "--db", str(root / "runs.sqlite"), "--out", str(out)]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"{name} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    metrics = json.loads((out / "metrics.json").read_text(encoding="utf-8"))["metrics"]
    said = [line for line in done.stdout.splitlines() + done.stderr.splitlines() if "warm start from" in line]
    with RunStore(root / "runs.sqlite") as store:
        run_id = store.id_for_out_dir(out)
    print(f"  {name}: compile {metrics['compile_seconds']:.2f} s "
          f"({', '.join(f'{k} {v:.2f} s' for k, v in metrics['compile_breakdown'].items())}); "
          f"process {time.perf_counter() - started:.1f} s" + "".join(f"\n    {line}" for line in said), flush=True)
    return {"run": run_id, "compile_seconds": metrics["compile_seconds"], "breakdown": metrics["compile_breakdown"],
            "payback": metrics.get("payback"), "said": said}


def measure(root: Path, mode: str, args: argparse.Namespace) -> dict[str, list[dict]]:
    tag = mode.replace("-", "_")
    results: dict[str, list[dict]] = {kind: [] for kind in KINDS}
    source_cache = root / f"inductor-{tag}-cold-0"
    for i in range(args.repeats):
        results["cold"].append(launch(root, f"{tag}-cold-{i}", mode, args, root / f"inductor-{tag}-cold-{i}", 0))
    source = results["cold"][0]["run"]
    for i in range(args.repeats):
        results["warm"].append(launch(root, f"{tag}-warm-{i}", mode, args, root / f"inductor-{tag}-warm-{i}",
                                      source))
    for i in range(args.repeats):
        results["on-disk warm"].append(launch(root, f"{tag}-disk-{i}", mode, args, source_cache, 0))
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modes", default="default,max-autotune-no-cudagraphs")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--hidden-dim", type=int, default=128)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--json", type=Path, help="also write every launch's figures as JSON")
    args = parser.parse_args()
    import torch  # only for the versions the method states

    print(__doc__.split("Prints the method")[0].strip())
    print(f"\ntorch {torch.__version__}, {os.cpu_count()} CPU cores, device {args.device}, built-in network "
          f"(hidden {args.hidden_dim}), batch 32, median of {args.repeats} launches each\n")
    table: dict[str, dict[str, list[dict]]] = {}
    with tempfile.TemporaryDirectory(prefix="compile-warm-") as tmp:
        for mode in args.modes.split(","):
            print(f"inductor · {mode}:", flush=True)
            table[mode] = measure(Path(tmp), mode, args)
    print(f"\n{'inductor mode':<28} {'cold':>9} {'warm':>9} {'on-disk warm':>13} {'warm / cold':>12}")
    for mode, kinds in table.items():
        medians = {kind: statistics.median(r["compile_seconds"] for r in runs) for kind, runs in kinds.items()}
        print(f"{mode:<28} {medians['cold']:>8.2f}s {medians['warm']:>8.2f}s {medians['on-disk warm']:>12.2f}s "
              f"{medians['warm'] / medians['cold']:>11.0%}")
    for mode, kinds in table.items():
        warm = kinds["warm"][-1]
        payback = Payback.from_dict(warm["payback"])
        if payback is not None:
            print(f"\npayback of the last warm launch, {mode} (run #{warm['run']} of the script's history):")
            print(f"  this run: {payback.verdict()}")
            for line in payback.launch_lines():
                print(f"  {line}")
    if args.json:
        args.json.write_text(json.dumps(table, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
