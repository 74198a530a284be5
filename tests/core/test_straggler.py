"""The straggler rule (ground/straggler.py): a rank persistently slower than the others is named once, after the
windows the rule says; a single slow step, a rank slower by less than the gap, or all ranks slow together are not."""

from __future__ import annotations

from workbench.core.ground.straggler import GAP_S, WINDOW, WINDOWS, StragglerWatch


def _run(watch: StragglerWatch, steps: int, per_step) -> list:
    return [alert for step in range(1, steps + 1) if (alert := watch.add(step, per_step(step))) is not None]


def test_a_rank_slower_in_two_windows_running_is_named_once_with_its_host():
    watch = StragglerWatch(["a", "b", "c"])
    alerts = _run(watch, 10 * WINDOW, lambda step: [0.010, 0.040, 0.011])
    [alert] = alerts
    assert alert.step == WINDOW * WINDOWS and alert.rule == "straggler"
    assert alert.title.startswith("rank 1 on b is a straggler: its forward takes 40 ms a step against 10 ms")


def test_noise_is_not_a_straggler():
    spike = StragglerWatch(["a", "b"])  # one slow step a window: the median does not move
    assert not _run(spike, 10 * WINDOW, lambda step: [0.010, 0.5 if step % WINDOW == 3 else 0.010])
    close = StragglerWatch(["a", "b"])  # twice as slow, but by less than the gap: too small to matter
    assert not _run(close, 10 * WINDOW, lambda step: [GAP_S / 4, GAP_S / 2])
    bit = StragglerWatch(["a", "b"])  # slower by more than the gap, but not 1.5×: not the one all wait for
    assert not _run(bit, 10 * WINDOW, lambda step: [0.100, 0.120])
    together = StragglerWatch(["a", "b", "c"])  # every rank slow at once is the run, not a rank
    assert not _run(together, 10 * WINDOW, lambda step: [0.05] * 3 if step > WINDOW else [0.01] * 3)
    once = StragglerWatch(["a", "b"])  # slow in one window only
    assert not _run(once, 10 * WINDOW, lambda step: [0.01, 0.05 if WINDOW < step <= 2 * WINDOW else 0.01])
