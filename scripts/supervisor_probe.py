"""How often a just-started remote-run supervisor is judged gone: by its /proc/PID/cmdline (the judgement before)
and by its ALIVE lock (run/remote/host.py: RunFolder.supervised, now), each right after the start returns.

    .venv/bin/python scripts/supervisor_probe.py [--tries 300] [--load 4]

Each try makes a run folder on a throw-away data folder with a request that cannot be read, so the supervisor
starts as a real one does (`python -m workbench.core.run.remote.host supervise KEY`), takes its lock, then fails and
ends within a second: nothing trains. Before: the supervisor is started without waiting and judged at once by the
old rule (the pid answers and its command line names the host program). Now: `_supervise_detached` (which returns once
the supervisor holds its lock) and `supervised()`. A judgement "gone" counts as wrong when the supervisor is still
running after it (it was alive when judged). `--load N` keeps N busy Python processes spinning meanwhile (the
machine is shared: how loaded it was is printed with the result).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

SPIN = "while True: pass"


def old_judgement(pid: int) -> bool:
    """The rule before: the pid answers and /proc/PID/cmdline names the host program's module."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        return b"workbench.core.run.remote.host" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return True


def probe(tries: int) -> dict[str, list[int]]:
    from workbench.core.run.remote import host as remote_host

    wrong = {"before (cmdline)": [0, 0], "now (lock)": [0, 0]}  # [misjudged, judged while alive]
    for _ in range(tries):
        for way in wrong:
            folder = remote_host._new_folder()
            (folder.path / remote_host.REQUEST).write_text("not a request")
            if way.startswith("before"):
                with open(folder.path / "supervisor.log", "ab") as log:
                    process = subprocess.Popen([sys.executable, "-m", "workbench.core.run.remote.host",
                                                "supervise", folder.key], stdin=subprocess.DEVNULL, stdout=log,
                                               stderr=log, start_new_session=True)
                judged = old_judgement(process.pid)
            else:
                process = remote_host._supervise_detached(folder)
                judged = folder.supervised()
            alive_after = process.poll() is None
            if alive_after:
                wrong[way][1] += 1
                wrong[way][0] += not judged
            process.wait()
    return wrong


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tries", type=int, default=300)
    parser.add_argument("--load", type=int, default=0, help="busy processes beside the probe")
    args = parser.parse_args()
    spinners = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(args.load)]
    try:
        with tempfile.TemporaryDirectory() as data:
            os.environ["WORKBENCH_DATA_DIR"] = data
            wrong = probe(args.tries)
        load = os.getloadavg()[0]
    finally:
        for spinner in spinners:
            spinner.kill()
    print(f"{args.tries} starts each way on {os.cpu_count()} cores, {args.load} busy processes beside "
          f"(1-minute load average at the end: {load:.1f})")
    for way, (misjudged, judged) in wrong.items():
        print(f"  {way:18} judged gone while it ran: {misjudged} of {judged} "
              f"({100 * misjudged / max(judged, 1):.1f} %)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
