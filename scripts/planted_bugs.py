# ruff: noqa: E501 - PLANTED_TEXT is a table: one planted bug a line, however long the code it quotes
"""Plant one-line bugs, one at a time, in a copy of this checkout, and see which the tests catch.

    .venv/bin/python scripts/planted_bugs.py [--only N,M] [--list]

Each bug (PLANTED below) is a plausible slip in code that crosses machines, deletes files or judges a run: an
operator turned, a bound moved by one, a line's guard dropped. For each, the copy's file is changed, the tests
that cover that code run in the copy (`pytest -x`, this venv's interpreter, PYTHONPATH pointing at the copy, the
remote tests' "host" running the copy's code too), and the file is put back. A bug is caught when a test fails.
Prints a table: the bug's place (file:line in this checkout), the change, the test that caught it (or SURVIVED), and
the kill rate. The working tree is never touched.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Bug:
    path: str  # in the checkout
    old: str  # exactly once in the file
    new: str
    tests: tuple[str, ...]  # what should catch it

    def line(self) -> int:
        text = (ROOT / self.path).read_text()
        return text[:text.index(self.old)].count("\n") + 1


# Which tests should catch a bug in a file's code.
TESTS = {
    "remote": ("tests/core/test_remote.py", "tests/core/test_remote_faults.py", "tests/core/test_remote_follow.py",
               "tests/core/test_remote_host.py"),
    "fork": ("tests/core/test_forkserver.py", "tests/core/test_child.py"),
    "handshake": ("tests/core/test_handshake.py",),
    "trash": ("tests/core/test_trash.py",),
    "query": ("tests/core/test_query.py",),
    "alerts": ("tests/core/test_alerts.py",),
    "records": ("tests/core/test_records.py", "tests/core/test_results.py", "tests/core/test_events.py"),
}
# One bug a line: file (under workbench/core/) ¦ the code as it is (exactly once in the file; \n a new line) ¦ the
# bug ¦ the tests (a key of TESTS).
PLANTED_TEXT = r"""
run/ssh.py ¦ not 1 <= port <= 65535: ¦ not 0 <= port <= 65535: ¦ remote
run/ssh.py ¦ if self.port and self.port != 22 else self.name ¦ if self.port else self.name ¦ remote
run/ssh.py ¦ options += ["-l", self.user] ¦ options += ["-l", str(self.port)] ¦ remote
run/ssh.py ¦ if symptom in text and code == 255: ¦ if symptom in text and code != 255: ¦ remote
run/ssh.py ¦ in text or "no module named 'workbench" in text: ¦ in text: ¦ remote
run/remote.py ¦ self.started.key, str(self.received)) ¦ self.started.key, str(self.received + 1)) ¦ remote
run/remote.py ¦ store.get(known).host == str(self.remote): ¦ store.get(known).host != str(self.remote): ¦ remote
run/remote.py ¦ if target.exists():\n ¦ if target.is_file():\n ¦ remote
run/remote.py ¦ while self.done < self.size: ¦ while self.done < self.size - 1: ¦ remote
run/remote.py ¦ if self._detached.is_set():\n                    return self._left(recorder)\n                if stop ¦ if self._detached.is_set() and stop.is_set():\n                    return self._left(recorder)\n                if stop ¦ remote
run/remote_host.py ¦ if index >= start: ¦ if index > start: ¦ remote
run/remote_host.py ¦ ("stopped" if last.get("stopped") else "finished") ¦ ("finished" if last.get("stopped") else "stopped") ¦ remote
run/remote_host.py ¦ Path(str(header["name"])).name or "file" ¦ str(header["name"]) or "file" ¦ remote
run/remote_host.py ¦ and message["profile"] > 0: ¦ and message["profile"] >= 0: ¦ remote
run/remote_host.py ¦ folder = RunFolder(Path(key).name)\n    if not folder.claim ¦ folder = RunFolder(key)\n    if not folder.claim ¦ remote
run/forkserver.py ¦ os.killpg(pid, signum)\n        except ProcessLookupError: ¦ os.kill(pid, signum)\n        except ProcessLookupError: ¦ fork
run/forkserver.py ¦ extra = len(_servers) - KEPT_SERVERS ¦ extra = len(_servers) - KEPT_SERVERS - 1 ¦ fork
run/forkserver.py ¦ if now - self._ended_seen > EXIT_REPORT_S: ¦ if now - self._ended_seen < EXIT_REPORT_S: ¦ fork
run/process.py ¦ if len(pending) >= MAX_PENDING_PEERS: ¦ if len(pending) > MAX_PENDING_PEERS * 100: ¦ handshake
run/remote_host.py ¦ (b'{"type":"RunFinished"', b'{"type":"RunFailed"') ¦ (b'{"type":"RunFinished"',) ¦ remote
history/removal.py ¦ if place.is_relative_to(real):\n            return f"its folder {folder} holds {what}" ¦ if real.is_relative_to(place):\n            return f"its folder {folder} holds {what}" ¦ trash
history/removal.py ¦ (place != folder or other < run_id) ¦ (place != folder or other > run_id) ¦ trash
history/removal.py ¦ if r.id not in leaving and r.out_dir and not r.elsewhere] ¦ if r.id not in leaving and r.out_dir] ¦ trash
history/trash.py ¦ if original.is_dir() and not original.is_symlink() else ¦ if original.is_dir() else ¦ trash
history/trash.py ¦ if os.path.isabs(data_home) else ¦ if data_home else ¦ trash
history/trash.py ¦ if os.path.lexists(target):\n            continue ¦ if os.path.isfile(target):\n            continue ¦ trash
history/trash.py ¦ if os.path.lexists(source):  # the copy ¦ if not os.path.lexists(source):  # the copy ¦ trash
history/query.py ¦ (lambda r: read(r) in (None, "")) if op ¦ (lambda r: read(r) is None) if op ¦ query
history/query.py ¦ elif f.fraction and number > 1: ¦ elif f.fraction and number >= 1: ¦ query
ground/alerts.py ¦ self.recompiles[0] <= event.step - RECOMPILE_WINDOW: ¦ self.recompiles[0] < event.step - RECOMPILE_WINDOW: ¦ alerts
ground/alerts.py ¦ key = (rule, layer if per_layer else "") ¦ key = (rule, layer) ¦ alerts
ground/alerts.py ¦ if len(history) >= GRAD_HISTORY and ¦ if len(history) > GRAD_HISTORY and ¦ alerts
ground/alerts.py ¦ step.memory.get("reserved", step.memory.get("rss")) ¦ step.memory.get("allocated", step.memory.get("rss")) ¦ alerts
ground/alerts.py ¦ if self.smoothed < 0.99 * self.best_loss: ¦ if self.smoothed < self.best_loss: ¦ alerts
ground/records.py ¦ if len(args) != len(value): ¦ if len(args) < len(value): ¦ records
ground/records.py ¦ if not isinstance(value, dict) or not all(isinstance(key, str) for key in value): ¦ if not isinstance(value, dict): ¦ records
"""


def planted() -> list[Bug]:
    bugs = []
    for row in filter(None, PLANTED_TEXT.splitlines()):
        path, old, new, tests = (part.replace("\\n", "\n") for part in row.split(" ¦ "))
        bugs.append(Bug("workbench/core/" + path, old, new, TESTS[tests]))
    return bugs


PLANTED = planted()


def copy_checkout(target: Path) -> None:
    """The files git knows of (tracked, and untracked ones it does not ignore), as they are in the working tree."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)


def run_tests(copy: Path, tests: tuple[str, ...]) -> tuple[bool, str]:
    env = {**os.environ, "PYTHONPATH": str(copy), "QT_QPA_PLATFORM": "offscreen", "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "-rf",
                           "-n", "2", "--dist", "loadfile", *tests],
                          cwd=copy, env=env, capture_output=True, text=True, timeout=1800)
    failed = re.findall(r"^FAILED (\S+)", done.stdout, re.MULTILINE)
    return done.returncode != 0, failed[0] if failed else (done.stdout.strip().splitlines() or ["?"])[-1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma-separated bug numbers (1-based)")
    parser.add_argument("--list", action="store_true", help="list the bugs, run nothing")
    args = parser.parse_args()
    chosen = [int(n) for n in args.only.split(",") if n] or list(range(1, len(PLANTED) + 1))
    for bug in PLANTED:
        assert (ROOT / bug.path).read_text().count(bug.old) == 1, f"not exactly once in {bug.path}: {bug.old!r}"
    if args.list:
        for n in chosen:
            bug = PLANTED[n - 1]
            print(f"{n:>2}  {bug.path}:{bug.line()}  {bug.old.strip()!r} → {bug.new.strip()!r}")
        return 0
    caught = 0
    with tempfile.TemporaryDirectory(prefix="planted-") as folder:
        copy = Path(folder)
        copy_checkout(copy)
        print(f"{len(chosen)} planted bugs, each tested in a copy of {ROOT} ({copy})")
        print("| # | where | change | caught by |\n|---|---|---|---|")
        for n in chosen:
            bug = PLANTED[n - 1]
            original = (copy / bug.path).read_text()
            (copy / bug.path).write_text(original.replace(bug.old, bug.new))
            started = time.monotonic()
            try:
                killed, by = run_tests(copy, bug.tests)
            finally:
                (copy / bug.path).write_text(original)
            caught += killed
            change = f"`{bug.old.strip()[:70]}` → `{bug.new.strip()[:70]}`".replace("\n", " ")
            print(f"| {n} | {bug.path}:{bug.line()} | {change} | {by if killed else 'SURVIVED'} "
                  f"({time.monotonic() - started:.0f} s) |", flush=True)
    print(f"caught {caught} of {len(chosen)} ({100 * caught / len(chosen):.0f} %)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
