"""Runs recorded by another process (the CLI, another window) appear in an open window's Runs dock: the dock asks the
history's change counter once a second and lists the history again only when it moved."""

from workbench.core.ground.config import TrainConfig
from workbench.core.history.runs import RunStore


def test_a_run_another_process_records_appears_and_an_idle_history_is_not_read_again(waiting_window, qtbot):
    runs = waiting_window.runs
    runs.refresh()
    qtbot.waitUntil(lambda: runs.store is not None and runs.watch.isActive())
    listings = []
    runs.refreshed.connect(lambda: listings.append(runs.model.total))
    runs.watch.timeout.emit()  # nothing changed: no listing
    runs.watch.timeout.emit()
    assert listings == []
    with RunStore(runs.db) as elsewhere:  # another connection: as `workbench train --db …` in another process
        run_id = elsewhere.start_run(TrainConfig().to_dict(), "/tmp/elsewhere-run")
    qtbot.waitUntil(lambda: runs.model.total == 1, timeout=10_000)  # at the next look (within a second)
    assert runs.model.record(run_id) is not None and runs.model.row_of(run_id) == 0
    before = len(listings)
    runs.watch.timeout.emit()  # seen: not listed again
    assert len(listings) == before
    with RunStore(runs.db) as elsewhere:  # the run's progress, committed every few seconds while it trains
        elsewhere.append_events(run_id, 0, [], {"steps": 40})
    runs.watch.timeout.emit()
    assert len(listings) == before  # not the whole history listed again for it
    with RunStore(runs.db) as elsewhere:  # it ends: the list shows that
        elsewhere.append_events(run_id, 0, [], {"status": "finished"})
    runs.watch.timeout.emit()
    qtbot.waitUntil(lambda: len(listings) == before + 1)


def test_the_watch_stops_with_the_history(waiting_window, qtbot):
    runs = waiting_window.runs
    runs.refresh()
    qtbot.waitUntil(lambda: runs.watch.isActive())
    runs.close_store()
    assert not runs.watch.isActive()
