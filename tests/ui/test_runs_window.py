"""The Runs dock's actions that reach the rest of the window: New run from this… fills the form (it says where the
settings came from), Repeat with seeds… opens the seeds dialog for that run, and the dock's query and columns are
kept across launches."""

from __future__ import annotations

from workbench.core.history.runs import RunStore

from ..support.runs_history import listed, record


def test_new_run_from_this_fills_the_form_and_repeat_opens_the_seeds_dialog(window, qtbot):
    with RunStore(window.db) as store:
        run_id = record(store, name="warm-up", lr=0.002, epochs=3, seed=5)
        store.db.execute("UPDATE runs SET config = json_set(config, '$.resume', '/gone/checkpoint.pt') WHERE id = ?",
                         (run_id,))
        store.db.commit()
    listed(window.runs, qtbot)
    [clicked] = [r for r in window.runs.model.rows if r.id == run_id]
    window.runs.cloneRequested.emit(clicked)
    config = window.setup.config()
    assert (config.lr, config.epochs, config.seed, config.resume) == (0.002, 3, 5, None)  # a new run, not a resume
    assert window.setup.derived_from == f"#{run_id} (warm-up)"
    window.runs.repeatRequested.emit(clicked)  # a continued run: another seed cannot repeat it
    dialog = window.search.seeds_dialog
    assert dialog.isVisible() and dialog.config is None and "continue another run" in dialog.status.text()
    with RunStore(window.db) as store:
        plain = record(store, lr=0.003, seed=1)
    listed(window.runs, qtbot)
    window.runs.repeatRequested.emit(next(r for r in window.runs.model.rows if r.id == plain))
    assert window.search.seeds_dialog is dialog and dialog.config.lr == 0.003  # one dialog, now this run's
    dialog.close()


def test_the_runs_query_and_hidden_columns_are_kept_across_launches(qtbot, tmp_path, kernel):
    from workbench.ui.main_window import MainWindow

    first = MainWindow(runs_dir=tmp_path, db=tmp_path / "runs.sqlite", prestart=False, kernel=kernel)
    qtbot.addWidget(first)
    first.runs.set_query_text("tag:baseline acc>0.9")
    first.runs.set_hidden_columns([])  # every column shown: kept as such, not back to the defaults
    first.close()
    second = MainWindow(runs_dir=tmp_path, db=tmp_path / "runs.sqlite", prestart=False, kernel=kernel)
    qtbot.addWidget(second)
    assert second.runs.query_text == "tag:baseline acc>0.9" and second.runs.hidden_columns() == []
    second.close()
