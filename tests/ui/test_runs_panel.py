"""The Runs dock: every run is listed, two selected runs overlay their curves, one can be re-opened."""

from __future__ import annotations

import shutil
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from workbench.core.ground.answers import Written
from workbench.core.ground.events import RunFinished

from ..helpers import set_config
from ..support.runs_export import read_csv, record_history, values
from ..support.runs_history import listed, open_panel, record, shown


def _train(window, qtbot, **changes):
    set_config(window, **changes)
    with qtbot.waitSignal(window.training.runFinished, timeout=120_000) as finished:
        window.training.train()
    assert isinstance(finished.args[0], RunFinished)
    return finished.args[0]


def _column(window, name):
    from workbench.ui.panels.runs.runs import COLUMNS

    return COLUMNS.index(name)


@pytest.fixture(scope="module")
def _two_runs_folder(tmp_path_factory):
    return tmp_path_factory.mktemp("two-runs")


@pytest.fixture
def two_runs(_two_runs_folder, qtbot, kernel, one_torch_thread, tmp_path):
    """tmp_path/runs.sqlite: a run history of two runs trained in a window, #1 eager and #2 aot_eager (40 steps of
    hidden 32 each). They are trained once for the module, by the first test that asks (a run kernel each and a
    compile: the slow part of these tests), in a window with settings of its own. Every test gets a copy of that
    history and of those settings, so its window opens as the app does after those two runs (run #2 shown, its
    model loading); the runs' folders stay where they were written. Ask for it before `window`, which opens it."""
    from workbench.core.ground import paths
    from workbench.ui.main_window import MainWindow

    folder = _two_runs_folder
    if not (folder / "trained").is_file():
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("WORKBENCH_CONFIG_DIR", str(folder / "config"))
            trainer = MainWindow(runs_dir=folder / "runs", db=folder / "runs.sqlite", prestart=False, kernel=kernel)
            qtbot.addWidget(trainer)
            _train(trainer, qtbot, epochs=1, max_steps=40, hidden_dim=32)
            _train(trainer, qtbot, epochs=1, max_steps=40, hidden_dim=32, backend="aot_eager")
            assert trainer.runner.shutdown()
            trainer.close()  # writes its settings, the last run among them
        (folder / "trained").touch()
    with closing(sqlite3.connect(folder / "runs.sqlite")) as source, \
            closing(sqlite3.connect(tmp_path / "runs.sqlite")) as copy:
        source.backup(copy)
    shutil.copy(folder / "config" / "settings.ini", paths.config_dir() / "settings.ini")


@pytest.mark.slow
def test_runs_are_listed_compared_and_reopened(two_runs, window, qtbot):
    runs = window.runs
    listed(runs, qtbot)
    assert runs.proxy.rowCount() == 2
    statuses = {runs.proxy.index(r, _column(window, "Status")).data() for r in range(2)}
    assert statuses == {"finished"}

    with qtbot.waitSignal(runs.compareRequested, timeout=30_000):  # events are read on a pool thread
        runs.table.selectAll()  # two runs → their curves overlay the plots, labelled by what differs
    labels = [item.name() for _plot, item in window.plots.overlays]
    assert len(window.plots.overlays) == 8  # loss, accuracy, throughput, memory for each run
    assert any(label.startswith("#1 eager") for label in labels)
    assert any(label.startswith("#2 aot_eager") for label in labels)

    runs.select_ids([1])  # one run: the overlay goes away
    assert window.plots.overlays == []
    with qtbot.waitSignal(runs.openRequested, timeout=30_000):
        runs.open_selected()
    assert window.state_label.text() == "Run #1 (finished)"
    assert window.plots.point_counts()["loss"] == 40
    # one figure for samples/s: the table's, the headline's and the status bar's, for the run on show
    row = next(r for r in range(2) if runs.proxy.index(r, 0).data(Qt.UserRole + 1) == 1)
    rate = runs.proxy.index(row, _column(window, "Samples/s")).data()
    assert rate != "—" and window.plots.headline.figures()["samples_per_s"] == rate
    assert window.speed_label.text() == f"{rate} samples/s"
    # its model is opened in the kernel (a newer request replaces the last run's, still loading or not)
    qtbot.waitUntil(lambda: "run #1" in window.predict.source.text(), timeout=60_000)
    assert window.predict.model is not None


def test_table_sorts_numerically(window, qtbot, tmp_path):
    from workbench.core.ground.config import TrainConfig
    from workbench.core.history.runs import RunStore

    with RunStore(tmp_path / "runs.sqlite") as store:  # the window's database (see conftest)
        for speed in (9_000.0, 10_500.0, 950.0):  # as text, "10,500" < "9,000" < "950"
            run_id = store.start_run(TrainConfig().to_dict())
            store.append_events(run_id, 0, [], {"samples_per_s": speed, "status": "finished"})
    runs = window.runs
    listed(runs, qtbot)
    column = _column(window, "Samples/s")
    runs.table.sortByColumn(column, Qt.AscendingOrder)
    speeds = [float(runs.proxy.index(r, column).data().replace(",", "")) for r in range(runs.proxy.rowCount())]
    assert speeds == [950.0, 9_000.0, 10_500.0]


def test_an_unreadable_run_database_is_reported_and_training_still_works(qtbot, tmp_path, kernel):
    from workbench.ui.main_window import MainWindow

    db = tmp_path / "runs.sqlite"
    db.write_bytes(b"not a database" * 50)
    window = MainWindow(runs_dir=tmp_path / "runs", db=db, kernel=kernel)  # the suite's kernel: not what is tested
    qtbot.addWidget(window)
    qtbot.waitUntil(lambda: "Run history unavailable" in window.runs.message.text())  # opened off the GUI thread
    assert "damaged" in window.runs.message.text()
    set_config(window, epochs=1, max_steps=10, hidden_dim=16)
    with qtbot.waitSignal(window.training.runFinished, timeout=60_000) as finished:
        window.training.train()
    assert isinstance(finished.args[0], RunFinished)
    warnings = [window.log.item(i).text() for i in range(window.log.count())]
    assert any("not recorded in the run history" in w for w in warnings)
    window.close()


def test_export_report_writes_html_for_the_last_run(window, qtbot, tmp_path):
    assert not window.named_actions["export_report"].isEnabled()  # nothing to report on yet
    _train(window, qtbot, epochs=1, max_steps=30, hidden_dim=32)
    assert window.named_actions["export_report"].isEnabled()
    assert window.exports.report_run_ids() == [1]
    with qtbot.waitSignal(window.exports.reportFinished, timeout=60_000) as written:
        assert window.exports.export_report(tmp_path / "last.html", window.exports.report_run_ids())
    assert isinstance(written.args[0], Written) and Path(written.args[0].paths[0]) == tmp_path / "last.html"
    html = (tmp_path / "last.html").read_text()
    assert "Configuration and environment" in html and (tmp_path / "last.json").is_file()
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with qtbot.waitSignal(window.exports.reportFinished, timeout=60_000) as failed:
        window.exports.export_report(blocker / "r.html", [1])
    assert isinstance(failed.args[0], Exception)
    assert "Could not write the report" in window.banner.label.text()
    assert not window.exports.export_report(tmp_path / "none.html", [])  # nothing selected: nothing to do


def test_export_report_writes_html_for_selected_runs(two_runs, window, qtbot, tmp_path):
    listed(window.runs, qtbot)
    window.runs.table.selectAll()
    assert window.exports.report_run_ids() == [1, 2]
    with qtbot.waitSignal(window.exports.reportFinished, timeout=60_000):
        assert window.exports.export_report(tmp_path / "both.html", [1, 2])
    assert "Comparison" in (tmp_path / "both.html").read_text()


def test_opened_runs_are_kept_as_curves_and_only_the_last_few(window, qtbot, tmp_path):
    from workbench.core.ground.config import TrainConfig
    from workbench.core.ground.events import MemorySample, Step
    from workbench.core.history.runs import RunStore
    from workbench.ui.panels.runs.runs import CACHED_RUNS

    steps = [Step(step=i, epoch=1, loss=1.0 / i, samples_per_s=1000.0, step_seconds=0.01,
                  memory=MemorySample(rss=100.0), compiling=False) for i in range(1, 6)]
    with RunStore(tmp_path / "runs.sqlite") as store:  # the window's database (see conftest)
        for _ in range(CACHED_RUNS + 2):
            run_id = store.start_run(TrainConfig().to_dict())
            store.append_events(run_id, 0, steps, {"status": "finished"})
    runs = window.runs
    listed(runs, qtbot)
    with qtbot.waitSignal(runs.compareRequested, timeout=30_000) as compared:
        runs.table.selectAll()
    loaded = compared.args[0]
    assert len(loaded) == CACHED_RUNS + 2 and all(len(run.curves.step) == 5 for run in loaded)
    assert len(runs.loader.cache) == CACHED_RUNS  # bounded, and curves rather than every event
    assert all(run.record.events == [] for run in runs.loader.cache.values())


def test_overlay_legend_entries_survive_a_new_run_starting(window):
    import numpy as np

    from workbench.core.history.curves import Curves

    x = np.arange(1.0, 4.0)
    curves = Curves(step=x, loss=x, throughput_step=x, throughput=x, memory={"rss": x})
    window.plots.set_overlays([("#1 eager", curves), ("#2 aot_eager", curves)])
    window.plots.reset()  # what a new run's RunStarted does
    legend = window.plots.memory_plot.getPlotItem().legend
    assert [label.text for _sample, label in legend.items] == ["#1 eager (rss)", "#2 aot_eager (rss)"]


# -- columns, on a panel of its own (no kernel, no training) -----------------------------------------------------
@pytest.fixture
def panel(qtbot, tmp_path):
    yield from open_panel(qtbot, tmp_path)


def test_runs_are_named_as_everywhere_else_and_show_their_model(panel, qtbot, tmp_path):
    from workbench.core.history.naming import run_label, run_name
    from workbench.core.history.runs import RunStore

    with RunStore(tmp_path / "runs.sqlite") as store:
        record(store)
        record(store, model="/home/me/models/net.py:TinyNet")
    listed(panel, qtbot)
    panel.table.sortByColumn(0, Qt.AscendingOrder)
    assert shown(panel, "Run") == [run_name(1), run_name(2)] == ["#1", "#2"]
    assert run_label(2, {"backend": "eager", "amp": "off"}, []).startswith("#2 ")
    assert shown(panel, "Model") == ["Sandwich", "net.py:TinyNet"]


def test_duration_shows_how_long_a_run_took_and_sorts_numerically(panel, qtbot, tmp_path):
    from workbench.core.history.runs import RunStore
    from workbench.ui.panels.runs.runs import COLUMNS

    with RunStore(tmp_path / "runs.sqlite") as store:
        for seconds in (70, 9, 600):  # as text "10:00" < "1:10": only a numeric sort puts 1:10 first
            record(store, seconds=seconds)
        record(store, seconds=30, status="running")  # still going: no duration yet
    listed(panel, qtbot)
    panel.table.sortByColumn(COLUMNS.index("Duration"), Qt.AscendingOrder)
    assert shown(panel, "Duration") == ["—", "0:09", "1:10", "10:00"]
    panel.table.sortByColumn(COLUMNS.index("Duration"), Qt.DescendingOrder)
    assert shown(panel, "Run") == ["#3", "#1", "#2", "#4"]


def test_a_run_is_named_by_its_output_folder(panel, tmp_path):
    from workbench.core.history.runs import RunStore

    with RunStore(tmp_path / "runs.sqlite") as store:
        for _ in range(6):
            record(store)
        record(store, out_dir=str((tmp_path / "out").resolve()))
    assert panel.name_for_out_dir(tmp_path / "out") == "#7"
    assert panel.name_for_out_dir(tmp_path / "elsewhere") is None


def test_the_table_shows_several_runs_however_small_the_dock(panel, qtbot):
    from workbench.ui.panels.runs.runs import VISIBLE_ROWS

    assert panel.table.minimumHeight() >= VISIBLE_ROWS * panel.table.verticalHeader().defaultSectionSize()
    panel.show()
    qtbot.waitExposed(panel)
    panel.resize(600, 50)
    qtbot.waitUntil(lambda: panel.height() > 50)
    assert panel.table.height() >= panel.table.minimumHeight()


# -- export, on a panel of its own ------------------------------------------------------------------------------
def _export(panel, qtbot, monkeypatch, action: str, dialog: str, chosen) -> str:
    """Choose `chosen` in the file dialog that `action` of Export runs… opens; the message once it is done."""
    from PySide6.QtGui import QAction

    from workbench.ui.support import file_dialogs

    monkeypatch.setattr(file_dialogs, dialog, lambda *args: str(chosen))
    panel.findChild(QAction, action).trigger()
    assert panel.message.text() == "Exporting runs…"  # on a pool thread, not in the click
    qtbot.waitUntil(lambda: panel.message.text() != "Exporting runs…", timeout=30_000)
    return panel.message.text()


def test_export_runs_as_csv_writes_the_selected_runs(panel, qtbot, monkeypatch, tmp_path):
    record_history(tmp_path / "runs.sqlite")
    listed(panel, qtbot)
    panel.select_ids([2])
    message = _export(panel, qtbot, monkeypatch, "exportCsvAction", "save_file", tmp_path / "chosen.csv")
    assert message == f"Exported run #2 to {tmp_path / 'chosen.csv'}"
    rows = read_csv(tmp_path / "chosen.csv")
    assert {r["run_id"] for r in rows} == {"2"} and values(rows, 2, "train/loss") == {1: 2.1, 2: 1.1}


def test_export_runs_for_tensorboard_writes_every_run_when_none_is_selected(panel, qtbot, monkeypatch, tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    record_history(tmp_path / "runs.sqlite")
    listed(panel, qtbot)
    message = _export(panel, qtbot, monkeypatch, "exportTbAction", "choose_folder", tmp_path / "tb")
    assert message == f"Exported every run to {tmp_path / 'tb'}"
    assert sorted(p.name for p in (tmp_path / "tb").iterdir()) == ["run-1-eager-off", "run-2-aot_eager-bf16"]
    assert len(EventAccumulator(str(tmp_path / "tb" / "run-1-eager-off")).Reload().Scalars("train/loss")) == 6


def test_an_export_that_fails_says_why_in_the_dock(panel, qtbot, monkeypatch, tmp_path):
    record_history(tmp_path / "runs.sqlite")
    blocker = tmp_path / "file"
    blocker.write_text("x")
    message = _export(panel, qtbot, monkeypatch, "exportCsvAction", "save_file", blocker / "runs.csv")
    assert message.startswith(f"Could not export the runs: cannot write {blocker / 'runs.csv'}")
    assert message.endswith("choose a path in a folder you can write to")


def test_tab_leaves_the_runs_table_and_selects_nothing(panel, qtbot, tmp_path):
    """Arrows move within the table; Tab moves on to the next control (it used to walk every cell and wrap from
    the last run to the first, so the focus never left, selecting runs as it went)."""
    from PySide6.QtWidgets import QApplication, QLineEdit, QVBoxLayout, QWidget

    from workbench.core.history.runs import RunStore

    with RunStore(tmp_path / "runs.sqlite") as store:
        for seed in (1, 2):
            record(store, seed=seed)
    listed(panel, qtbot)
    holder, after = QWidget(), QLineEdit()
    layout = QVBoxLayout(holder)
    layout.addWidget(panel)
    layout.addWidget(after)
    qtbot.addWidget(holder)
    holder.show()
    qtbot.waitExposed(holder)
    panel.table.setFocus()
    qtbot.waitUntil(panel.table.hasFocus)
    for _ in range(3):
        qtbot.keyClick(QApplication.focusWidget(), Qt.Key_Tab)
        if not panel.table.hasFocus():
            break
    left = not panel.table.hasFocus()
    selected = panel.table.selectionModel().selectedRows()
    panel.setParent(None)  # the fixture closes the panel, not the holder
    assert left and not selected


def test_a_continued_run_is_marked_with_the_run_it_continues(panel, qtbot, tmp_path):
    from workbench.core.ground.config import TrainConfig
    from workbench.core.history.runs import RunStore

    checkpoint = tmp_path / "first" / "checkpoint.pt"
    with RunStore(tmp_path / "runs.sqlite") as store:
        first = store.start_run(TrainConfig().to_dict(), out_dir=str(checkpoint.parent))
        store.append_events(first, 0, [], {"status": "stopped", "checkpoint": str(checkpoint)})
        record(store, resume=str(checkpoint), epochs=4)
        record(store)  # a run of its own
    listed(panel, qtbot)
    panel.table.sortByColumn(0, Qt.AscendingOrder)
    assert shown(panel, "Run") == ["#1", "#2 ↳ #1", "#3"]
    assert panel.proxy.index(1, 0).data(Qt.ToolTipRole) == "#2 continues #1 from its checkpoint"


def test_a_sweeps_trials_are_marked_with_their_sweep(panel, qtbot, tmp_path):
    """Read off the GUI thread (the studies are another file, which a running sweep writes to)."""
    import optuna

    from workbench.core.history.runs import RunStore
    from workbench.core.run.sweep import storage_url

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(study_name="lr search", storage=storage_url(tmp_path / "runs.sqlite"))
    with RunStore(tmp_path / "runs.sqlite") as store:
        record(store)  # a run of its own
        for number in range(2):  # as run/sweep.py leaves a trial: its run's folder, then its id
            folder = str((tmp_path / f"trial-{number}").resolve())
            trial = study.ask()
            trial.set_user_attr("out_dir", folder)
            trial.set_user_attr("run_id", record(store, out_dir=folder))
            study.tell(trial, 0.9)
    listed(panel, qtbot)
    panel.table.sortByColumn(0, Qt.AscendingOrder)
    qtbot.waitUntil(lambda: shown(panel, "Run") == ["#1", "#2 · trial 0 of sweep lr search",
                                                     "#3 · trial 1 of sweep lr search"])
    assert panel.proxy.index(2, 0).data(Qt.ToolTipRole).startswith("#3 was trial 1 of sweep lr search")
    # A trial's name does not widen the Run column past its cap (it pushed Status off a 1366-px screen): cut, whole
    # in the tooltip; a plain name is not cut.
    metrics = panel.table.fontMetrics()
    assert panel.table.columnWidth(0) < metrics.horizontalAdvance("#3 · trial 1 of sweep lr search")
    assert panel.table.columnWidth(0) > metrics.horizontalAdvance("#3 · trial 1")


def test_an_older_history_is_upgraded_off_the_gui_thread_saying_how_far_it_has_got(qtbot, tmp_path, monkeypatch):
    """Upgrading a history of thousands of runs takes tens of seconds: the dock says how far it has got while the
    window stays usable, then lists the runs."""
    from workbench.core.history import schema

    monkeypatch.setattr(schema._Progress, "INTERVAL_S", 0.0)  # a line for every run of this small history
    shutil.copy(Path(__file__).parents[1] / "data" / "previous-release" / "history-v3.sqlite", tmp_path / "runs.sqlite")
    said: list[str] = []
    for panel in open_panel(qtbot, tmp_path):
        panel._upgrading.connect(said.append)
        panel.refresh()
        assert panel.store is None and panel.message.text() == "Opening the run history…"  # not opened here
        qtbot.waitUntil(lambda: panel.model.total == 4)
        assert any("levels of long runs: 1 of 1 runs" in line for line in said)
        assert panel.store is not None and panel.message.text().startswith("Select two or more runs")
