"""scripts/fill_history.py, which the scale benchmarks and the window's screenshots of a managed history stand on,
writes runs this Workbench reads as it reads a recorded run: events of the current types, curves and seed groups."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from workbench.core.history.curves import curves_from_events
from workbench.core.history.groups import seed_groups
from workbench.core.history.runs import RunStore

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "fill_history.py"


def test_a_filled_history_reads_back_as_recorded_runs(tmp_path):
    db = tmp_path / "runs.sqlite"
    subprocess.run([sys.executable, str(SCRIPT), str(db), "--runs", "6", "--long", "0", "--seed", "3"], check=True,
                   capture_output=True)
    with RunStore(db) as store:
        records = [store.get(row.id, with_events=True) for row in store.list()]
    assert len(records) == 6
    for record in records:
        curves = curves_from_events(record.events)
        assert len(curves.step) > 0 and len(curves.val_accuracy) > 0
    assert [len(group.run_ids) for group in seed_groups(records)] == [3, 3]
