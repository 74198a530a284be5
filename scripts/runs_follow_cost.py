"""What following a run that another process records costs the window, against the run's length.

Method: for each length (2,000, 20,000 and 200,000 steps already recorded), a history holds one run still training;
a writer appends a recorder's batch of 50 steps (and a system sample) every time, as `workbench train` does every
few seconds. After each batch, the follower's read (RunStore.events_after from its cursor, in one snapshot, on a
connection of its own: what panels/runs/following.py does every second) is timed, and so is reading the whole run
as a re-open would (its curves' columns and its other events). Medians of 20 batches; the rows read each time are
counted. A cursor read should cost the same at every length (the new steps only); a whole read grows with the run.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from workbench.core.ground.config import TrainConfig  # noqa: E402
from workbench.core.ground.events import MemorySample, Step, SystemSample  # noqa: E402
from workbench.core.history.runs import RunStore  # noqa: E402

BATCH = 50
BATCHES = 20


def _steps(first: int, n: int) -> list:
    return [Step(step=i, epoch=1 + i // 1000, loss=1.0 / i, samples_per_s=1000.0, step_seconds=0.01,
                 memory=MemorySample(rss=500.0), wall=1.7e9 + i / 100) for i in range(first, first + n)]


def main() -> int:
    print(__doc__.split("Method: ", 1)[1].strip(), "\n")
    print(f"{'steps recorded':>15} {'cursor read':>12} {'events read':>12} {'whole read':>11}")
    for length in (2_000, 20_000, 200_000):
        db = Path(tempfile.mkdtemp(prefix="workbench-follow-")) / "runs.sqlite"
        with RunStore(db) as writer, RunStore(db, recover=False) as reader:
            run_id = writer.start_run(TrainConfig().to_dict())
            seq = 0
            for first in range(1, length + 1, 2_000):  # recorded as a recorder would have, a batch at a time
                writer.append_events(run_id, seq, _steps(first, 2_000))
                seq += 2_000
            cursor = reader.last_seq(run_id)
            cursor_ms, counts, whole_ms = [], [], []
            for done in range(BATCHES):
                batch = [*_steps(length + 1 + done * BATCH, BATCH),
                         SystemSample(seconds=seq / 100, cpu_process=50.0, cpu_machine=20.0, rss_mib=500.0)]
                writer.append_events(run_id, seq, batch)
                seq += len(batch)
                started = time.perf_counter()
                with reader.snapshot():
                    events = reader.events_after(run_id, cursor)
                cursor_ms.append((time.perf_counter() - started) * 1000)
                counts.append(len(events))
                cursor = events[-1][0]
                started = time.perf_counter()
                with reader.snapshot():
                    reader.get(run_id, with_events=True, steps=False)
                    reader.step_block(run_id)
                whole_ms.append((time.perf_counter() - started) * 1000)
        print(f"{length:>15,} {statistics.median(cursor_ms):>9.2f} ms {statistics.median(counts):>12.0f} "
              f"{statistics.median(whole_ms):>8.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
