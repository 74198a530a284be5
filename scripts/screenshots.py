"""Every screenshot of the README and the user guide, made again from the real window (scripts/tour.py, one shot a
fresh process) and stored by feature under docs/screenshots/<feature>/ (the README's own at docs/screenshot.png).

    make screenshots          # on a virtual screen: xvfb-run, 1440×900
    .venv/bin/python scripts/screenshots.py fixit sweep   # some of them (on a display you already have)

Prints each shot's seconds; a shot that fails is named at the end (and the run exits 1), the others kept.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHOTS = ROOT / "docs" / "screenshots"
FEATURES = {  # tour.py's shot → the feature whose folder keeps it
    "training": "training", "compiling": "compile", "reason": "compile", "explain": "compile", "timeline": "compile",
    "fixit": "compile", "whatif": "compile", "code": "compile", "stages": "compile", "evaluate": "evaluate",
    "dataset": "dataset", "system": "plots", "profile": "profile", "profile_timeline": "profile",
    "profile_memory": "profile", "amp": "profile", "export": "export", "export_aoti": "export",
    "lr_finder": "finders", "batch_finder": "finders", "sweep": "sweep", "runs": "runs", "manage": "runs",
    "diff": "runs", "seed_band": "runs", "compare": "runs", "imported": "runs", "connect": "remote",
    "remote": "remote", "host_runs": "remote", "reattached": "remote", "numerics": "numerics",
    "numerics_bf16": "numerics", "numerics_drift": "numerics", "model": "model", "layers": "model",
    "alert": "alerts", "alert_dead": "alerts", "alert_vanishing": "alerts", "stacks": "stacks", "queue": "queue",
}
NAMES = {"stacks": "stacks-dialog.png", "queue": "queue-dock.png"}  # the others: SHOT.png


def target(shot: str) -> Path:
    if shot == "readme":
        return ROOT / "docs" / "screenshot.png"
    return SHOTS / FEATURES[shot] / NAMES.get(shot, f"{shot}.png")


def main(shots: list[str]) -> int:
    failed = []
    for shot in shots or ["readme", *FEATURES]:
        started = time.monotonic()
        made = subprocess.run([sys.executable, str(ROOT / "scripts" / "tour.py"), shot, str(target(shot))],
                              capture_output=True, text=True, timeout=900)
        where = f"→ {target(shot).relative_to(ROOT)}" if made.returncode == 0 else "FAILED"
        print(f"{shot:18} {time.monotonic() - started:6.1f} s  {where}", flush=True)
        if made.returncode:
            failed.append(shot)
            print(made.stderr[-1500:], flush=True)
    if failed:
        print(f"failed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
