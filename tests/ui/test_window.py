"""The window as a whole: its first size, what comes back on relaunch, exports that confirm, the toolbar, dark mode."""

from __future__ import annotations

from concurrent.futures import Future
from pathlib import Path

import pytest
from PySide6.QtCore import Qt, QUrl
from PySide6.QtGui import QDesktopServices, QGuiApplication
from PySide6.QtWidgets import QMessageBox

from workbench.core.ground.answers import DatasetPreview, EvaluationView
from workbench.core.ground.config import TrainConfig
from workbench.core.ground.events import RunFinished
from workbench.core.ground.job_requests import EvaluateView, PreviewDataset

from ..helpers import set_config
from ..support.runs_history import listed


def ask_kernel(window, asked: list) -> None:
    """Every job the window asks of its kernel from now on goes into `asked` (its typed request) instead, and is
    never answered."""
    window.kernel.service.submit = lambda request, on_progress=None: asked.append(request) or Future()


def test_on_a_1366_by_768_screen_the_window_fits_and_the_plots_keep_their_height(qtbot, tmp_path, kernel):
    """The first window on a small laptop screen: inside its available area, status bar included, and the plots
    get the height (the Log does not keep it)."""
    from PySide6.QtCore import QRect

    from workbench.ui.main_window import MainWindow

    window = MainWindow(runs_dir=tmp_path / "runs", db=tmp_path / "runs.sqlite", prestart=False, kernel=kernel)
    qtbot.addWidget(window)
    window.fit_to_screen(QRect(0, 0, 1366, 768))
    window.show()
    qtbot.waitExposed(window)
    assert window.width() <= 1366 and window.height() <= 768 - 32  # the title bar is not in the available area
    status = window.statusBar()
    assert status.isVisible() and status.geometry().bottom() < window.height()
    qtbot.waitUntil(lambda: min(plot.height() for plot in window.plots.plots) >= 200)  # once laid out
    heights = [plot.height() for plot in window.plots.plots]
    assert window.docks["log"].height() < min(heights)


def test_a_finished_run_comes_back_on_relaunch_with_its_model(window, qtbot, kernel, tmp_path):
    from workbench.ui.main_window import MainWindow

    set_config(window, epochs=1, max_steps=20)
    with qtbot.waitSignal(window.training.runFinished, timeout=60_000) as finished:
        window.training.train()
    assert isinstance(finished.args[0], RunFinished)
    qtbot.waitUntil(lambda: window.predict.model is not None, timeout=60_000)
    steps = finished.args[0].steps
    window.close()

    again = MainWindow(runs_dir=tmp_path / "runs", db=tmp_path / "runs.sqlite", prestart=False, kernel=kernel)
    qtbot.addWidget(again)
    again.show()
    with qtbot.waitSignal(again.checkpoints.checkpointLoaded, timeout=60_000):
        pass
    again.plots.redraw()
    assert again.plots.point_counts()["loss"] == steps  # the curves, as they were
    assert again.predict.model is not None and again.named_actions["export_checkpoint"].isEnabled()
    assert again.named_actions["export_report"].isEnabled()  # the last run can be reported on straight away
    again.close()


def test_an_export_says_where_it_went_with_open_and_show_in_folder(window, qtbot, monkeypatch, tmp_path):
    opened: list[QUrl] = []
    monkeypatch.setattr(QDesktopServices, "openUrl", lambda url: opened.append(url) or True)
    written = tmp_path / "exports" / "model.pt"
    written.parent.mkdir()
    written.write_bytes(b"")
    box = window.exports.show_written(written)
    assert box.isVisible() and str(written) in box.text()
    buttons = {b.text(): b for b in box.buttons()}
    qtbot.mouseClick(buttons["Show in folder"], Qt.LeftButton)
    assert [Path(u.toLocalFile()) for u in opened] == [written.parent]
    box = window.exports.show_written(written)
    qtbot.mouseClick({b.text(): b for b in box.buttons()}["Open"], Qt.LeftButton)
    assert Path(opened[-1].toLocalFile()) == written
    assert not box.isVisible()  # Open closes the message; Show in folder leaves it up
    assert isinstance(box, QMessageBox)


def test_the_toolbar_offers_explain_and_export_report(window):
    toolbar = window.findChild(object, "runToolbar")
    assert {window.named_actions["explain"], window.named_actions["export_report"]} <= set(toolbar.actions())


def test_the_plots_follow_the_desktops_dark_scheme(window, qtbot):
    hints = QGuiApplication.styleHints()
    light = window.plots.loss_plot.backgroundBrush().color().lightness()
    hints.colorSchemeChanged.emit(Qt.ColorScheme.Dark)  # as the desktop does when the user switches
    try:
        assert light > 200 and window.plots.loss_plot.backgroundBrush().color().lightness() < 80
        for chart in (window.predict.chart, window.dataset.chart):  # every chart of the window, not only the plots
            assert chart.backgroundBrush().color().lightness() < 80
        assert window.banner.dark
    finally:
        hints.colorSchemeChanged.emit(hints.colorScheme())


def test_evaluate_scores_the_opened_model_in_the_kernel(window, qtbot, trained_checkpoint):
    from workbench.ui.panels.evaluate import EMPTY_TEXT

    assert window.evaluation.message.text() == EMPTY_TEXT  # nothing loaded: what to do first
    with qtbot.waitSignal(window.checkpoints.checkpointLoaded, timeout=60_000):
        window.checkpoints.load(trained_checkpoint, "trained.pt")
    # loaded: the empty state names what Evaluate will score, not "train a run or open a checkpoint"
    assert window.evaluation.message.text().startswith("Press Evaluate to score trained.pt")
    with qtbot.waitSignal(window.data_insight.evaluationFinished, timeout=60_000) as done:
        window.named_actions["evaluate"].trigger()
    answer = done.args[0]
    assert isinstance(answer, EvaluationView), answer
    panel = window.evaluation
    assert panel.evaluation.size == answer.size == sum(map(sum, answer.confusion))
    assert panel.headline.text().startswith(f"accuracy {answer.accuracy:.1%}")
    assert "trained.pt" in panel.source.text()
    assert window.minimumSizeHint().width() <= 1366  # the result does not widen the window past a laptop screen


def test_evaluate_without_a_model_says_what_to_do(window):
    assert not window.data_insight.evaluate()
    assert "Nothing to evaluate yet" in window.evaluation.message.text()


def test_the_dataset_dock_previews_the_chosen_dataset_when_shown(window, qtbot):
    with qtbot.waitSignal(window.data_insight.datasetPreviewed, timeout=60_000) as done:
        window.docks["dataset"].raise_()
    answer = done.args[0]
    assert isinstance(answer, DatasetPreview), answer
    assert answer.dataset == "mnist-sample" and not answer.problems
    assert len(window.dataset.rows) == 10


@pytest.mark.slow
def test_a_new_local_dataset_is_previewed_and_a_torchvision_set_waits_for_preview(window, qtbot, tmp_path):
    from PySide6.QtGui import QImage

    with qtbot.waitSignal(window.data_insight.datasetPreviewed, timeout=60_000):
        window.docks["dataset"].raise_()
    asked = []
    ask_kernel(window, asked)
    assert window.dataset.rows  # the bundled sample's images, a row per class
    set_config(window, dataset="mnist")  # may download: not previewed until the user asks
    qtbot.waitUntil(lambda: not window.data_insight.preview_timer.isActive())
    assert asked == []
    # and the bundled sample's images are gone: never shown under another dataset's name
    assert window.dataset.rows == [] and "press Preview" in window.dataset.status.text()
    for name in ("cats", "dogs"):
        (tmp_path / name).mkdir()
        QImage(28, 28, QImage.Format_Grayscale8).save(str(tmp_path / name / "a.png"))
    set_config(window, dataset="imagefolder", data_root=str(tmp_path))
    qtbot.waitUntil(lambda: bool(asked), timeout=5_000)
    assert asked == [PreviewDataset(dataset="imagefolder", data_root=str(tmp_path))]


def test_evaluate_takes_the_run_selected_in_the_runs_dock(window, qtbot, trained_checkpoint):
    from workbench.core.history.runs import RunStore

    with RunStore(window.db) as store:
        run_id = store.start_run(TrainConfig().to_dict(), out_dir=str(trained_checkpoint.parent))
        store.append_events(run_id, 0, [], {"status": "finished", "checkpoint": str(trained_checkpoint)})
    listed(window.runs, qtbot)
    window.runs.select_ids([run_id])
    asked = []
    ask_kernel(window, asked)
    assert window.data_insight.evaluate()
    assert asked == [EvaluateView(checkpoint_path=str(trained_checkpoint), trust_model_code=False)]
    assert f"#{run_id}" in window.evaluation.message.text()


def test_at_the_default_size_the_runs_dock_shows_several_runs(qtbot, tmp_path, kernel):
    from PySide6.QtCore import QRect

    from workbench.ui.dock_layout import DEFAULT_SIZE, SIDE_SHARE
    from workbench.ui.main_window import MainWindow

    window = MainWindow(runs_dir=tmp_path / "runs", db=tmp_path / "runs.sqlite", prestart=False, kernel=kernel)
    qtbot.addWidget(window)
    window.fit_to_screen(QRect(0, 0, 1920, 1080))
    window.show()
    window.docks["runs"].raise_()
    qtbot.waitExposed(window)
    assert (window.width(), window.height()) == DEFAULT_SIZE
    table = window.runs.table
    qtbot.waitUntil(lambda: table.isVisible())
    assert table.viewport().height() >= 4 * table.verticalHeader().defaultSectionSize()
    side = SIDE_SHARE * DEFAULT_SIZE[0]  # each side's docks' share of the width, once laid out
    # ... but for the right docks' tabs, which read whole (six titles need more than a share): what they take
    # beyond it comes out of the Setup form's share, down to the form's least width.
    tabs = window._dock_tabs(window.docks["compile"])
    right = max(side, sum(tabs.tabSizeHint(i).width() for i in range(tabs.count())))
    left = max(2 * side - right, window.docks["setup"].minimumSizeHint().width())
    qtbot.waitUntil(lambda: abs(window.docks["compile"].width() - right) <= 10
                    and abs(window.docks["setup"].width() - left) <= 10)


def test_why_train_is_off_is_on_its_tooltip_and_in_the_status_bar_and_show_goes_there(window, qtbot):
    window.setup.fields["lr"].setValue(0.0)
    assert not window.named_actions["train"].isEnabled()
    assert "greater than 0" in window.named_actions["train"].toolTip()
    assert window.state_label.text().startswith("⚠ Cannot train: Learning rate") and window.problem_button.isVisible()
    qtbot.mouseClick(window.problem_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: window.setup.fields["lr"].hasFocus())
    window.setup.fields["lr"].setValue(0.01)
    assert window.named_actions["train"].isEnabled() and not window.problem_button.isVisible()
    assert "Ctrl+R" in window.named_actions["train"].toolTip() and "Cannot" not in window.state_label.text()


def test_the_windows_size_and_dock_layout_come_back_on_relaunch(qtbot, tmp_path, kernel):
    from workbench.ui.main_window import MainWindow

    def open_window():
        win = MainWindow(runs_dir=tmp_path / "runs", db=tmp_path / "runs.sqlite", prestart=False, kernel=kernel)
        qtbot.addWidget(win)
        win.show()
        qtbot.waitExposed(win)
        return win

    first = open_window()
    height = first.height() - 40  # (the offscreen test screen is narrower than the window: only heights are free)
    first.resize(first.width(), height)
    first.docks["compile"].setFloating(True)  # the user's own layout
    first.resizeDocks([first.docks["log"]], [260], Qt.Vertical)
    qtbot.waitUntil(lambda: first.height() == height and first.docks["log"].height() > 200)
    log_height = first.docks["log"].height()
    first.close()
    again = open_window()
    assert again.height() == height
    assert again.docks["compile"].isFloating() and again.docks["log"].height() == log_height
    again.close()
