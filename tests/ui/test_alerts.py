"""A run's alerts in the window: a marker at the alert's step on the loss plot and a line in the Log, each leading
to the fix it names (a setting, the Model or Compile dock, the System plot); the desktop told while the user is in
another window, unless they turned that off; a recorded run's alerts and layer statistics back with it."""

from __future__ import annotations

from dataclasses import replace

import pytest
from PySide6.QtCore import QPointF, Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QWidget

from workbench.core.ground.alerts import Alert, alert_line
from workbench.core.ground.config import TrainConfig
from workbench.core.ground.events import MemorySample, RunFailed, RunFinished, RunStarted, Step
from workbench.core.ground.layer_stats import Histogram, LayerStat, LayerStats
from workbench.core.ground.results import RunResults
from workbench.ui.support.notify import Notifier
from workbench.ui.panels.log import COLOURS

from ..helpers import VERSIONS

LR_ALERT = Alert(step=8, rule="grad_exploding", severity="warning", title="the gradient norm is 56.1 at step 8",
                 advice="lower the learning rate, or clip gradients", panel="setting:lr")
DEAD_ALERT = Alert(step=12, rule="dead_units", severity="warning", title="80% of the inputs of head were 0",
                   advice="check the initialisation", panel="model", layer="head")
ERROR_ALERT = Alert(step=14, rule="loss_exploded", severity="error", title="the loss went from 2.36 to 267",
                    advice="lower the learning rate", panel="setting:lr")
INFO_ALERT = Alert(step=16, rule="loss_plateau", severity="info", title="the loss has not improved",
                   advice="lower the learning rate", panel="setting:lr_schedule")


def started() -> RunStarted:
    return RunStarted(config=TrainConfig(dataset="mnist-sample", backend="eager", mode="default", amp="off",
                                         batch_size=32, hidden_dim=128, lr=1.0, optimizer="sgd", epochs=1,
                                         stats_every=100), device="cpu", device_name="CPU", versions=VERSIONS,
                      train_size=4000, val_size=1000, steps_per_epoch=125, total_steps=125)


def steps(last: int) -> list[Step]:
    return [Step(step=n, epoch=1, loss=2.0 / n, samples_per_s=1000.0, step_seconds=0.01,
                 memory=MemorySample(rss=100.0))
            for n in range(1, last + 1)]


def sample(step: int) -> LayerStats:
    histogram = Histogram(lo=-1.0, hi=1.0, counts=(1.0, 1.0))
    return LayerStats(step=step, layers=tuple(
        LayerStat(name=name, weight_norm=1.0, grad_norm=0.1, update_ratio=1e-3, dead_fraction=0.8, weights=histogram,
                  grads=histogram, activations=histogram) for name in ("body.fc1", "head")))


def log_item(window, alert: Alert):
    return next(window.log.item(i) for i in range(window.log.count())
                if alert_line(alert) in window.log.item(i).text())


def click_log(window, item) -> None:
    window.log.scrollToItem(item)
    QTest.mouseClick(window.log.viewport(), Qt.LeftButton, pos=window.log.visualItemRect(item).center())


def click_marker(window, step: int) -> None:
    window.plots.redraw()
    view = window.plots.loss_plot
    box = view.getPlotItem().getViewBox()
    QTest.mouseClick(view.viewport(), Qt.LeftButton,
                     pos=view.mapFromScene(box.mapViewToScene(QPointF(step, box.viewRect().center().y()))))


def in_front(dock) -> bool:
    return not dock.visibleRegion().isEmpty()


@pytest.fixture
def told(window):
    """What the desktop was told, (title, text, level) each: the window's notifier with a backend of the test's."""
    messages: list[tuple[str, str, str]] = []
    window.notifier.backend = lambda *message: messages.append(message)
    return messages


def elsewhere(qtbot) -> QWidget:
    """Another window, active: the user is not looking at Workbench."""
    other = QWidget()
    qtbot.addWidget(other)
    other.show()
    other.activateWindow()
    qtbot.waitUntil(other.isActiveWindow)
    return other


def test_an_alert_is_a_marker_at_its_step_and_a_log_line_that_leads_to_its_setting(window, qtbot):
    window.runner.events.emit([started(), *steps(20), LR_ALERT])
    window.plots.redraw()
    marker = window.plots.alerts.lines[8]
    assert marker.value() == 8 and marker.isVisible()
    assert marker.pen.color().name() == COLOURS["warning"] and marker.label.toPlainText() == "⚠"
    assert "the gradient norm is 56.1 at step 8" in marker.toolTip() and "clip gradients" in marker.toolTip()
    assert "(click: Setup: Learning rate)" in marker.toolTip()
    item = log_item(window, LR_ALERT)
    assert item.text().endswith(f"{alert_line(LR_ALERT)}  → Setup: Learning rate")
    assert item.data(Qt.UserRole) == "warning" and item.foreground().color().name() == COLOURS["warning"]

    window.activateWindow()
    window.docks["runs"].raise_()
    window.docks["log"].raise_()
    window.docks["setup"].setVisible(False)  # closed: the click shows it again
    click_log(window, item)
    assert window.docks["setup"].isVisible() and in_front(window.docks["setup"])
    assert window.focusWidget() is window.setup.fields["lr"]
    # The marker leads to the same place.
    window.docks["setup"].setVisible(False)
    click_marker(window, 8)
    assert window.docks["setup"].isVisible() and window.focusWidget() is window.setup.fields["lr"]


def test_the_step_axis_reaches_the_alert_of_the_step_a_run_failed_at(qtbot):
    """The run fails at the step whose loss blew up, after its alert and before its Step: the alert's marker
    would be past the end of a recorded run's step axis, off the plot."""
    from workbench.core.history.curves import curves_from_events
    from workbench.ui.panels.plots.plots import PlotsPanel

    panel = PlotsPanel()
    qtbot.addWidget(panel)
    panel.show_curves(curves_from_events([started(), *steps(9)]))
    panel.add_events([replace(ERROR_ALERT, step=10)])
    panel.redraw()
    assert panel.steps.span == (1.0, 10.0) and panel.alerts.lines[10].isVisible()
    assert panel.loss_plot.getViewBox().viewRange()[0][1] > 10


def test_an_alert_about_a_layer_leads_to_the_model_dock_and_its_layer(window, qtbot):
    window.runner.events.emit([started(), sample(1), sample(2), *steps(20), DEAD_ALERT])
    window.docks["compile"].raise_()
    click_marker(window, 12)
    model = window.layers_panel
    assert in_front(window.docks["model"])
    assert model.tabs.currentWidget() is model.statistics and model.curves.figure.key == "dead_fraction"
    assert model.distributions.layer_box.currentData() == "head"


@pytest.mark.parametrize("panel", ["compile", "system"])
def test_an_alert_leads_to_the_compile_dock_or_the_system_plot(window, qtbot, panel):
    alert = Alert(step=5, rule="recompile_storm" if panel == "compile" else "throughput_drop", severity="warning",
                  title="something happened", advice="do this", panel=panel)
    window.runner.events.emit([started(), *steps(10), alert])
    window.docks["evaluate"].raise_()
    click_log(window, log_item(window, alert))
    if panel == "compile":
        assert in_front(window.docks["compile"])
        assert window.compile_panel.tabs.currentWidget() is window.compile_panel.timeline
    else:
        assert window.plots.machine_tabs.currentWidget() is window.plots.system_plot


def test_a_setting_the_form_does_not_show_is_said_with_where_it_is_set(window, qtbot):
    window.runner.events.emit([started(), *steps(20), INFO_ALERT])
    click_log(window, log_item(window, INFO_ALERT))
    assert window.banner.isVisible() and "LR schedule is not in the Setup form" in window.banner.label.text()
    assert "--lr-schedule" in window.banner.label.text()


# -- the desktop ----------------------------------------------------------------------------------------------------
def test_warnings_and_errors_are_told_to_the_desktop_only_while_the_user_is_elsewhere(window, qtbot, told):
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow)
    window.runner.events.emit([started(), *steps(8), LR_ALERT])
    assert told == []  # looking at the window: its marker and Log line say it
    elsewhere(qtbot)
    window.runner.events.emit([*steps(16)[8:], DEAD_ALERT, ERROR_ALERT, INFO_ALERT])
    assert told == [("2 alerts at steps 12–14", "• 80% of the inputs of head were 0.\n• The loss went from 2.36 to "
                                                "267.", "error")]
    assert log_item(window, INFO_ALERT) is not None  # info: the Log only
    window.runner.events.emit([INFO_ALERT])
    assert len(told) == 1
    window.runner.events.emit([LR_ALERT])
    assert told[-1] == ("Warning at step 8", "The gradient norm is 56.1 at step 8. Lower the learning rate, or clip "
                                             "gradients.", "warning")


def test_the_runs_end_is_told_with_its_best_accuracy(window, qtbot, told):
    elsewhere(qtbot)
    window.training.on_run_finished(RunFinished(steps=250, epochs=2, seconds=3.0, stopped=False,
                                                results=RunResults(val_accuracy=0.91, best_val_accuracy=0.9312)))
    window.training.on_run_finished(RunFinished(steps=40, epochs=1, seconds=1.0, stopped=True))
    window.training.on_run_finished(RunFailed(kind="diverged", message="loss exploded", hint="lower the rate"))
    assert told == [("Run finished", "Finished after 250 steps · best validation accuracy 93.12%", "info"),
                    ("Run stopped", "Stopped after 40 steps · no epoch was validated", "info"),
                    ("Run failed", "run failed (diverged): loss exploded — lower the rate", "error")]


def test_notifications_turned_off_stay_off_across_launches(qtbot, tmp_path, kernel):
    from workbench.ui.main_window import MainWindow

    first = MainWindow(runs_dir=tmp_path, prestart=False, kernel=kernel)
    qtbot.addWidget(first)
    action = first.notifications_action
    assert action.isChecked() and first.notifier.enabled and action in first.menuBar().actions()[3].menu().actions()
    told: list = []
    first.notifier.backend = lambda *message: told.append(message)
    action.trigger()  # View → Desktop notifications: off
    assert not first.notifier.enabled
    assert not first.notifier.run_ended(RunFailed(kind="internal", message="x"))
    first.close()
    second = MainWindow(runs_dir=tmp_path, prestart=False, kernel=kernel)
    qtbot.addWidget(second)
    assert not second.notifications_action.isChecked() and not second.notifier.enabled
    second.close()
    assert told == []


def test_the_notifier_tells_its_backend_only_while_its_window_is_inactive(qtbot):
    window = QWidget()
    qtbot.addWidget(window)
    told: list = []
    notifier = Notifier(window, lambda *message: told.append(message))
    window.show()
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow)
    assert not notifier.alerts([ERROR_ALERT]) and told == []
    elsewhere(qtbot)
    assert not notifier.alerts([INFO_ALERT]) and told == []
    assert notifier.alerts([ERROR_ALERT]) and told == [("Error at step 14", "The loss went from 2.36 to 267. Lower "
                                                        "the learning rate.", "error")]


# -- a recorded run -------------------------------------------------------------------------------------------------
def test_a_recorded_run_brings_back_its_alerts_and_its_layers(window, qtbot, trained_run):
    from workbench.core.history.runs import RunStore

    with RunStore(window.db) as store:
        run_id = store.start_run(trained_run.config.to_dict())
        store.append_events(run_id, 0, [*trained_run.events[:-1], LR_ALERT, trained_run.events[-1]],
                            {"status": "finished"})
    window.runs.load_runs([run_id], lambda runs: window.recorded_runs.show(runs[0]))
    qtbot.waitUntil(lambda: window.layers_panel.summary is not None, timeout=30_000)
    samples = [e for e in trained_run.events if isinstance(e, LayerStats)]
    assert window.layers_panel.history.samples == len(samples) > 0
    assert window.layers_panel.curves.curves  # drawn at once, not on the live run's timer
    assert sorted(window.plots.alerts.lines) == [8]
