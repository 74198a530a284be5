"""What the Runs dock's tests share: a dock of its own over a history written row by row (no training), and ways to
read what it shows. The dock lists the history off the GUI thread: `listed` waits for the listing."""

from __future__ import annotations

from pathlib import Path


def open_panel(qtbot, tmp_path: Path):
    """A Runs dock over tmp_path/runs.sqlite, shown (keys go to it); closed with its jobs done."""
    from workbench.ui.panels.runs.runs import RunsPanel
    from workbench.ui.support.tasks import Tasks

    panel = RunsPanel(Tasks(), db=tmp_path / "runs.sqlite")
    qtbot.addWidget(panel)
    panel.resize(1000, 400)
    yield panel
    panel.tasks.wait()
    panel.close_store()


def record(store, *, seconds=None, status="finished", out_dir=None, name="", tags=(), notes="", **changes) -> int:
    """A run in the history as training would leave it (`seconds` from its start to its end), with what its user
    said about it."""
    from workbench.core.ground.config import TrainConfig

    run_id = store.start_run(TrainConfig(**changes).to_dict(), out_dir=out_dir)
    store.append_events(run_id, 0, [], {"status": status})
    if seconds is not None:
        store.db.execute("UPDATE runs SET created = '2026-01-02T03:00:00+00:00', updated = ? WHERE id = ?",
                         (f"2026-01-02T03:{seconds // 60:02d}:{seconds % 60:02d}+00:00", run_id))
    if name:
        store.rename(run_id, name)
    if tags:
        store.set_tags(run_id, tags)
    if notes:
        store.set_notes(run_id, notes)
    return run_id


def stored(tmp_path: Path, run_id: int):
    """The run as the history has it now."""
    from workbench.core.history.runs import RunStore

    with RunStore(tmp_path / "runs.sqlite") as store:
        return store.get(run_id)


def listed(panel, qtbot) -> None:
    """List the history again and wait until the dock shows it."""
    with qtbot.waitSignal(panel.refreshed, timeout=30_000):
        panel.refresh()


def shown(panel, name: str, role=None) -> list:
    """A column as the dock shows it, top to bottom."""
    from PySide6.QtCore import Qt

    from workbench.ui.panels.runs.runs import COLUMNS

    column = COLUMNS.index(name)
    return [panel.proxy.index(row, column).data(role or Qt.DisplayRole) for row in range(panel.proxy.rowCount())]
