"""How many straggler alerts healthy runs across two hosts raise (the goal is none), and the same run with a planted
straggler, named at which step.

    .venv/bin/python scripts/straggler_false_alarms.py [--runs 10] [--steps 200]

Method: two "hosts", OpenSSH servers on 127.0.0.2 and 127.0.0.3 of this machine (tests/support/sshd.py), each with
its own folders; `workbench train --hosts A,B` (one process a host, Gloo on the CPU, the built-in network) is run
`--runs` times for `--steps` steps, and node 0's events are searched for straggler alerts. Then once with a model
whose forward sleeps 30 ms on rank 1. The rule (ground/straggler.py) judges windows of 20 steps: 200 steps are 10
windows a run.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.sshd import start_sshd  # noqa: E402

SLOW = """
import os, time
from workbench.core.domain.model import SandwichNet

class SlowOnRankOne(SandwichNet):
    def forward(self, x):
        if os.environ.get("RANK") == "1":
            time.sleep(0.03)
        return super().forward(x)
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--steps", type=int, default=200)
    args = parser.parse_args()
    print(__doc__.split("Method: ", 1)[1].strip(), "\n")
    root = Path(tempfile.mkdtemp(prefix="workbench-stragglers-"))
    a = start_sshd(root / "a", "127.0.0.2")
    b = start_sshd(root / "b", "127.0.0.3", keys=a.folder)
    hostfile = root / "hosts"
    hostfile.write_text(f"{a.address} python={a.remote_python}\n{b.address} python={b.remote_python}\n")
    env = {**os.environ, "WORKBENCH_SSH": a.ssh_command, "WORKBENCH_DATA_DIR": str(root / "here")}
    try:
        false = 0
        for run in range(args.runs):
            alerts = _straggler_alerts(hostfile, env, root, args.steps)
            false += len(alerts)
            print(f"healthy run {run + 1}: {len(alerts)} straggler alert(s)" + "".join(f"\n  {t}" for t in alerts))
        (root / "slow.py").write_text(SLOW)
        planted = _straggler_alerts(hostfile, env, root, args.steps, "--model", f"{root / 'slow.py'}:SlowOnRankOne")
        print(f"\n{false} false straggler alert(s) in {args.runs} healthy 2-host runs of {args.steps} steps")
        print("planted straggler:", planted[0] if planted else "NOT NAMED")
    finally:
        a.stop()
        b.stop()
    return 0


def _straggler_alerts(hostfile: Path, env: dict, root: Path, steps: int, *extra: str) -> list[str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.2", 0))
        port = probe.getsockname()[1]
    done = subprocess.run([sys.executable, "-m", "workbench", "train", "--hostfile", str(hostfile), "--device",
                           "cpu", "--epochs", "1", "--max-steps", str(steps), "--rdzv-port", str(port), "--db",
                           str(root / "here.sqlite"), *extra], env=env, capture_output=True, text=True, cwd=ROOT)
    if done.returncode != 0:
        raise SystemExit(f"a run failed: {done.stderr[-2000:]}")
    folder = done.stderr.split("its files are there, in ")[1].split()[0]
    events = [json.loads(line) for line in (Path(folder) / "events.jsonl").read_text().splitlines()]
    return [f"step {e['step']}: {e['title']}" for e in events if e["type"] == "Alert" and e["rule"] == "straggler"]


if __name__ == "__main__":
    sys.exit(main())
