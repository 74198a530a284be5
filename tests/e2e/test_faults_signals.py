"""SIGTERM (kill, a service manager, a scheduler's time limit) and SIGHUP (the terminal closed) mid-run: like a
first Ctrl+C, the run stops after its step with its checkpoint, event log and record kept, and the command exits
with 128 + the signal's number (143, 129); Ctrl+C keeps its 130."""

from __future__ import annotations

import signal

import pytest

from workbench.core.ground.events import RunFinished, from_json
from workbench.core.history.runs import RunStore

from ..helpers import wait_for_epoch

SIGNALS = [getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name)]


@pytest.mark.parametrize("signum", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_a_termination_signal_stops_after_the_step_and_keeps_the_run(tmp_path, start_train, signum):
    out_dir = tmp_path / "run"
    proc, _ = start_train("--epochs", "10000", "--hidden-dim", "16", "--out", str(out_dir))
    wait_for_epoch(proc)  # reads stderr until the first epoch line: the run is training, its files are open
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signum, err
    assert "stopping after this step" in err and "Traceback" not in err
    assert out.startswith("stopped early:")
    assert (out_dir / "checkpoint.pt").is_file() and (out_dir / "metrics.json").is_file()
    lines = (out_dir / "events.jsonl").read_text(encoding="utf-8").splitlines()
    last = from_json(lines[-1])
    assert isinstance(last, RunFinished) and last.stopped
    assert [p.name for p in out_dir.iterdir() if p.name.startswith(".")] == []  # no .events.jsonl.*.tmp left
    with RunStore(tmp_path / "runs.sqlite") as store:
        assert [r.status for r in store.list()] == ["stopped"]
