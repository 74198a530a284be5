"""Fill a run history with synthetic runs, for measuring the Runs dock and `workbench runs` at scale.

    .venv/bin/python scripts/fill_history.py HISTORY.sqlite [--runs 2000] [--long 50] [--long-steps 20000]

Realistic rows and event counts, without training: every run is written as a recorder writes one (RunStarted, a
Step per optimizer step with loss, accuracy, throughput and memory, an EpochEnd per epoch, a SystemSample every
50 steps, RunFinished with its results), in one transaction per run. Most runs have 2–8 epochs of 125 steps (the
bundled sample's 4,000 images at batch 32); `--long` of them run `--long-steps` steps. Settings vary as a user's
do: backend, AMP, learning rate, hidden size, batch size, and repeated seeds (groups of 3); a few runs failed or
were stopped; a tenth are archived, some are named, tagged and noted; events carry wall times (the last three
months). Deterministic (`--seed`).
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from workbench.core.ground.config import TrainConfig  # noqa: E402
from workbench.core.ground import appinfo  # noqa: E402
from workbench.core.ground.events import (EpochEnd, MemorySample, RunFailed, RunFinished, RunStarted, Step,  # noqa: E402
                                          SystemSample, Versions)
from workbench.core.ground.results import RunResults  # noqa: E402
from workbench.core.history.runs import RunStore  # noqa: E402

STEPS_PER_EPOCH = 125
VERSIONS = Versions(workbench=appinfo.version(), torch="2.14.1", python="3.11", cuda="")
TAGS = ("baseline", "amp", "sweep", "ablation", "lr", "paper", "bug")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("db", type=Path)
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--long", type=int, default=50)
    parser.add_argument("--long-steps", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.db.exists():
        print(f"{args.db} exists: choose a new file", file=sys.stderr)
        return 2
    rng = random.Random(args.seed)
    long_ids = set(rng.sample(range(args.runs), args.long))
    started = time.perf_counter()
    events_written = 0
    with RunStore(args.db) as store:
        for index in range(args.runs):
            events_written += _write_run(store, rng, index, index in long_ids, args.long_steps)
            if (index + 1) % 200 == 0:
                print(f"{index + 1:,} runs, {events_written:,} events, {time.perf_counter() - started:.0f} s",
                      flush=True)
    size = sum(path.stat().st_size for path in args.db.parent.glob(args.db.name + "*"))
    print(f"wrote {args.runs:,} runs ({args.long} of {args.long_steps:,} steps), {events_written:,} events in "
          f"{time.perf_counter() - started:.0f} s: {args.db} is {size / 1e6:,.0f} MB")
    return 0


def _write_run(store: RunStore, rng: random.Random, index: int, long: bool, long_steps: int) -> int:
    group = index // 3  # runs come in threes that differ only by seed
    settings = random.Random(group)
    config = TrainConfig(
        backend=settings.choice(("eager", "eager", "inductor", "aot_eager")),
        amp=settings.choice(("off", "off", "bf16", "fp16")),
        lr=settings.choice((1e-3, 2e-3, 4e-3, 1e-2)),
        hidden_dim=settings.choice((64, 128, 256)),
        batch_size=32,
        epochs=max(1, long_steps // STEPS_PER_EPOCH) if long else settings.randint(2, 8),
        seed=index % 3)
    steps = config.epochs * STEPS_PER_EPOCH
    run_id = store.start_run(config.to_dict(), out_dir=f"/nonexistent/runs/synthetic-{index:05d}")
    events = _events(rng, config, steps)
    if rng.random() < 0.2:
        store.rename(run_id, f"{config.backend} {config.amp} lr {config.lr:g}")
    if rng.random() < 0.3:
        store.set_tags(run_id, rng.sample(TAGS, rng.randint(1, 3)))
    if rng.random() < 0.1:
        store.set_notes(run_id, f"# run {index}\n\nlr {config.lr:g} looked {'high' if config.lr > 4e-3 else 'fine'}")
    if rng.random() < 0.1:
        store.set_archived([run_id], True)
    end = events[-1]
    summary = {"status": "failed" if isinstance(end, RunFailed) else
               ("stopped" if end.stopped else "finished"), "steps": sum(isinstance(e, Step) for e in events)}
    if isinstance(end, RunFinished):
        summary.update(best_val_accuracy=end.results.best_val_accuracy, samples_per_s=end.results.samples_per_s,
                       compile_seconds=end.results.compile_seconds, peak_memory_mib=end.results.peak_memory_mib)
    store.append_events(run_id, 0, events, summary)
    return len(events)


def _events(rng: random.Random, config: TrainConfig, steps: int) -> list:
    speed = {"eager": 24_000.0, "inductor": 31_000.0, "aot_eager": 20_000.0}[config.backend] * rng.uniform(0.8, 1.1)
    wall = time.time() - rng.uniform(0, 90 * 86_400)  # some time in the last three months
    events: list = [RunStarted(wall=wall, config=config, device="cpu", device_name="CPU (x86_64, 2 cores)",
                               versions=VERSIONS, train_size=4000, val_size=1000,
                               steps_per_epoch=STEPS_PER_EPOCH, total_steps=steps)]
    fails = rng.random() < 0.03
    stops = not fails and rng.random() < 0.05
    last = steps if not (fails or stops) else rng.randint(1, steps)
    accuracy = 0.0
    seconds = 0.0
    for step in range(1, last + 1):
        progress = step / steps
        loss = 2.3 * math.exp(-6 * progress) + 0.08 + rng.gauss(0, 0.03)
        accuracy = min(0.99, 0.1 + 0.88 * (1 - math.exp(-8 * progress)) + rng.gauss(0, 0.01))
        step_seconds = config.batch_size / speed
        seconds += step_seconds
        events.append(Step(wall=wall + seconds, step=step, epoch=(step - 1) // STEPS_PER_EPOCH + 1, loss=loss,
                           samples_per_s=speed, step_seconds=step_seconds,
                           memory=MemorySample(rss=510.0 + rng.random() * 20), accuracy=accuracy,
                           compiling=step == 1 and config.backend != "eager"))
        if step % 50 == 0:
            events.append(SystemSample(seconds=seconds, cpu_process=95.0, cpu_machine=52.0, rss_mib=520.0))
        if step % STEPS_PER_EPOCH == 0:
            events.append(EpochEnd(wall=wall + seconds, epoch=step // STEPS_PER_EPOCH, train_loss=loss,
                                   val_loss=loss * 1.1, val_accuracy=accuracy - 0.01, seconds=seconds,
                                   val_samples=1000))
    if fails:
        events.append(RunFailed(kind="diverged", message=f"the loss became nan at step {last}",
                                hint="lower the learning rate"))
        return events
    results = RunResults(best_val_accuracy=accuracy - 0.01, val_accuracy=accuracy - 0.01, samples_per_s=speed,
                         compile_seconds=0.0 if config.backend == "eager" else rng.uniform(4, 12),
                         peak_memory_mib=530.0, backend_used=config.backend,
                         epochs_completed=last // STEPS_PER_EPOCH)
    events.append(RunFinished(steps=last, epochs=last // STEPS_PER_EPOCH, seconds=seconds + 2, stopped=stops,
                              results=results))
    return events


if __name__ == "__main__":
    sys.exit(main())
