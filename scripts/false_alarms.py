"""How many alerts healthy runs raise: the false-alarm count of the alert rules (ground.alerts).

    .venv/bin/python scripts/false_alarms.py [--runs 10] [--epochs 5] [--set alert_plateau_steps=300 ...]

Trains `--runs` runs of the default config (the bundled MNIST sample, eager, fp32, on this machine's default
device) in this process, seeds 0, 1, 2, …, each with its per-layer statistics and every alert rule on as a run has
them (plus any `--set NAME=VALUE` changes), and prints each run's alerts and the total. Every default run is healthy
(it trains to ~95% validation accuracy): every alert it raises is a false alarm.
"""

from __future__ import annotations

import argparse
import json
import time

from workbench.core.engine import Trainer
from workbench.core.ground.alerts import Alert, alert_line
from workbench.core.ground.config import TrainConfig
from workbench.core.ground.events import RunFinished


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--epochs", type=int, default=TrainConfig().epochs)
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                        help="a setting changed in every run (the value read as JSON)")
    args = parser.parse_args()
    changes = {name: json.loads(value) for name, _, value in (item.partition("=") for item in args.set)}
    total = 0
    for seed in range(args.runs):
        config = TrainConfig(epochs=args.epochs, seed=seed, **changes)
        events: list = []
        started = time.perf_counter()
        result = Trainer().run(config, events.append)
        raised = [e for e in events if isinstance(e, Alert)]
        total += len(raised)
        accuracy = (f"{result.results.val_accuracy:.1%}" if isinstance(result, RunFinished)
                    and result.results.val_accuracy is not None else type(result).__name__)
        print(f"seed {seed}: {result.steps if isinstance(result, RunFinished) else '—'} steps, val accuracy "
              f"{accuracy}, {len(raised)} alert(s), {time.perf_counter() - started:.1f} s")
        for alert in raised:
            print("   ", alert_line(alert))
    print(f"false alarms: {total} in {args.runs} healthy runs of the defaults ({args.epochs} epochs, seeds 0–"
          f"{args.runs - 1}{', ' + ', '.join(args.set) if args.set else ''}); method: each run trained in this "
          "process with every alert rule on, every alert counted")
    return 0 if total == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
