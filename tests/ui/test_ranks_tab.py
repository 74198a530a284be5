"""The Ranks tab of a run of several processes (ui/panels/plots/ranks.py): shown with the first RankTimes, a row
per rank with its host and forward time against the others', a badge naming the straggler once the rule has; a
run of one process has no such tab, and the next run starts without it."""

from __future__ import annotations

import pytest

from workbench.core.ground.events import RankTimes
from workbench.core.ground.straggler import StragglerWatch
from workbench.ui.panels.plots.plots import PlotsPanel


@pytest.fixture
def panel(qtbot):
    panel = PlotsPanel()
    qtbot.addWidget(panel)
    return panel


def _cells(panel) -> list[list[str]]:
    table = panel.ranks.table
    return [[table.item(row, column).text() for column in range(table.columnCount())]
            for row in range(table.rowCount())]


def test_ranks_are_listed_and_the_straggler_is_named(panel):
    tabs = panel.machine_tabs
    assert not tabs.isTabVisible(2)  # one process: no Ranks tab
    hosts = ("gpu-a", "gpu-b")
    panel.add_events([RankTimes(step=20, forward_seconds=(0.010, 0.012), hosts=hosts, between_seconds=(0.002, 0.0),
                                memory_mib=(700.0, 1234.0))])
    assert tabs.isTabVisible(2) and tabs.tabText(2) == "Ranks"
    assert _cells(panel) == [["0", "gpu-a", "10.0 ms", "0.8×", "2.0 ms", "700 MiB"],
                             ["1", "gpu-b", "12.0 ms", "1.2×", "0.0 ms", "1,234 MiB"]]
    assert panel.ranks.badge.text().startswith("No straggler")
    watch = StragglerWatch(hosts)
    alert = next(a for step in range(1, 100) if (a := watch.add(step, [0.010, 0.050])) is not None)
    panel.add_events([alert, RankTimes(step=60, forward_seconds=(0.010, 0.050), hosts=hosts)])
    assert panel.ranks.badge.text().startswith(f"⚠ Straggler since step {alert.step}: rank 1 on gpu-b is a "
                                               "straggler")
    assert _cells(panel)[1] == ["1 ⚠", "gpu-b", "50.0 ms", "5.0×", "—", "—"]  # (a run recorded before them)
    assert alert.step in panel.alerts.lines  # its marker on the loss plot, as any alert's
    panel.reset()
    assert not tabs.isTabVisible(2) and panel.ranks.table.rowCount() == 0
    assert panel.ranks.badge.text().startswith("No straggler")
