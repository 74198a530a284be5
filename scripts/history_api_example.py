"""The Python API in a few lines: the three best compiled runs of a history, and how their loss ended.

    .venv/bin/python scripts/history_api_example.py [HISTORY.sqlite]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workbench.api import open_history  # noqa: E402


def main() -> int:
    with open_history(sys.argv[1] if len(sys.argv) > 1 else None) as history:
        runs = history.runs("backend!=eager status=finished")
        best = sorted(runs, key=lambda run: -(run.results.best_val_accuracy or 0))[:3]
        print(f"{len(runs)} finished compiled runs in {history.path}; the best three:")
        for run in best:
            steps = run.steps()
            last = steps["loss"][-100:]
            print(f"  {run.label:<24} {run.settings['backend']:<10} lr {run.settings['lr']:<6} "
                  f"best val {run.results.best_val_accuracy:.2%}  {len(steps['step']):>6,} steps, "
                  f"loss over the last 100: {last.mean():.3f} ± {last.std():.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
