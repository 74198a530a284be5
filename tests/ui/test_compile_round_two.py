"""The second round of compile insight in the window: Compare numerics (a kernel job, its table in a dialog), Code…
(the code Inductor wrote, read from the run's trace), the Stages tab, a warm start beside the compile time and the
payback's cold and warm launch lines, Warm start from this… in the Runs dock, and the recompile stance and limit in
the Setup form."""

from __future__ import annotations

import json

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from workbench.core.ground.compile_stages import GraphCompileTime
from workbench.core.ground.config import TrainConfig
from workbench.core.ground.events import CompileReport, RunFinished, RunStarted
from workbench.core.ground.payback import Payback
from workbench.core.ground.results import CompileTrace, RunResults
from workbench.core.history.runs import RunStore
from workbench.core.history.warm_starts import CACHE_FILE, KEY_FILE, CompileCache, WarmKey
from workbench.ui.features.compile_insight import NO_TRACE
from workbench.ui.panels.compile.compile import CompilePanel

from ..helpers import VERSIONS, set_config
from ..support.recorded_inductor import recorded_trace
from ..support.runs_history import listed, record


def _started(backend="inductor") -> RunStarted:
    return RunStarted(config=TrainConfig(backend=backend, mode="default"), device="cpu", device_name="CPU",
                      versions=VERSIONS, train_size=100, val_size=10, steps_per_epoch=4, total_steps=4)


def _finished(**results) -> RunFinished:
    return RunFinished(steps=4, epochs=1, seconds=30.0, stopped=False,
                       results=RunResults(backend_used="inductor", **results))


@pytest.fixture
def panel(qtbot):
    panel = CompilePanel()
    qtbot.addWidget(panel)
    return panel


def test_compare_numerics_asks_the_kernel_and_shows_every_row_in_a_dialog(window, qtbot):
    set_config(window, backend="aot_eager", hidden_dim=16)
    with qtbot.waitSignal(window.compile_insight.numericsCompared, timeout=120_000) as done:
        qtbot.mouseClick(window.compile_panel.numerics_button, Qt.LeftButton)
        dialog = window.compile_insight.numerics_dialog
        assert dialog.isVisible() and dialog.verdict.text().startswith("Comparing eager and compiled numerics")
        assert not window.compile_panel.numerics_button.isEnabled()  # one kernel job at a time
    report = done.args[0]
    assert report.passed, report.verdict()  # aot_eager runs eager's own kernels
    assert dialog.verdict.text() == report.verdict() and dialog.verdict.text().startswith("PASS")
    assert dialog.table.rowCount() == len(report.rows) > 3  # layers, ops and the loss
    names = [dialog.table.item(r, 0).text() for r in range(dialog.table.rowCount())]
    assert any("fc1" in name for name in names)
    assert not window.busy and window.compile_panel.numerics_button.isEnabled()
    # A row's source line goes to the clipboard as editors take it.
    with_line = next(row for row in report.rows if row.file)
    dialog.sourceRequested.emit(with_line.file, with_line.line)
    assert QApplication.clipboard().text() == f"{with_line.file}:{with_line.line}"
    dialog.close()


def test_compare_numerics_on_eager_says_to_choose_a_compiled_backend(window):
    set_config(window, backend="eager")
    window.named_actions["numerics"].trigger()
    assert "choose a compiled backend" in window.banner.label.text()
    assert window.compile_insight.numerics_dialog is None and not window.busy


def test_code_shows_the_runs_compiled_graphs_read_from_its_trace(window, qtbot, tmp_path):
    folder, _model = recorded_trace(tmp_path / "compile-trace")
    panel = window.compile_panel
    panel.add_events([_started(), _finished(compile_trace=CompileTrace(path=str(folder / "html" / "index.html")))])
    assert panel.code_button.isVisibleTo(panel)
    with qtbot.waitSignal(window.compile_insight.codeShown, timeout=30_000) as shown:
        qtbot.mouseClick(panel.code_button, Qt.LeftButton)
    view = shown.args[0].view
    assert view.graphs.count() == 2 and view.tabs.count() == 5  # forward + backward, and the inference graph
    # A run that recorded no trace: the button is there, and says how to get the code.
    panel.add_events([_started(), _finished()])
    assert panel.code_button.isVisibleTo(panel)
    with qtbot.waitSignal(window.compile_insight.codeShown, timeout=30_000) as shown:
        qtbot.mouseClick(panel.code_button, Qt.LeftButton)
    assert shown.args[0] is window.compile_insight.code_dialog  # one dialog, now this run's
    assert view.graphs.count() == 0 and view.status.text() == NO_TRACE
    # one message where the panes would be, and the fix as a button: the setting on, in front in the form
    assert view.pages.currentWidget().isAncestorOf(view.empty) and view.empty.text() == NO_TRACE
    assert view.fix.isVisibleTo(view) and "compile trace" in view.fix.text()
    window.setup.set_value("compile_trace", False)
    view.fix.click()
    assert window.setup.config().compile_trace and not shown.args[0].isVisible()
    # a run with a trace shows its panes again
    view.show_code(view.code)
    assert view.pages.currentIndex() == 0


def test_an_eager_run_has_no_code_button(panel):
    panel.add_events([_started("eager"), RunFinished(steps=4, epochs=1, seconds=3.0, stopped=False,
                                                     results=RunResults(backend_used="eager"))])
    assert not panel.code_button.isVisibleTo(panel)


def test_the_stages_tab_shows_the_reports_graph_times(panel):
    times = (GraphCompileTime(compile_id="0/0", function="forward", dynamo=0.4, aot=0.3, lowering=0.5, codegen=0.2,
                              kernel_compile=2.5),)
    panel.add_events([_started(), CompileReport(compiled=True, backend="inductor", mode="default", graph_count=1,
                                                compile_seconds=3.9, graph_times=times)])
    assert panel.tabs.tabText(panel.tabs.indexOf(panel.stages)) == "Stages"
    assert not panel.stages.bars.isHidden() and panel.stages.note.isHidden()
    assert {(time.compile_id, key) for _rect, time, key in panel.stages.bars.segments()} >= {("0/0", "kernel_compile")}
    panel.clear()
    assert not panel.stages.note.isHidden() and panel.stages.bars.isHidden()


def test_a_warm_run_says_so_beside_its_compile_time_and_the_payback_has_both_launches(panel):
    report = CompileReport(compiled=True, backend="inductor", mode="default", graph_count=2, compile_seconds=4.1,
                           warm_from=7, cold_run=5, cold_compile_seconds=16.3)
    payback = Payback(eager_step_s=0.010, compiled_step_s=0.005, compile_s=4.1, steps=2000, method="side by side",
                      warm_from=7, cold_compile_s=16.3, cold_run=5)
    panel.add_events([_started(), report, _finished(payback=payback)])
    seconds = panel.fields["seconds"].text()
    assert seconds.endswith(" · warm start from #7's compile cache (cold launch 16.3 s, #5)"), seconds
    lines = panel.fields["payback"].text().splitlines()
    assert lines == ["paid for itself at step 820 (compiled steps are 2.00× as fast as eager)",
                     "cold launch: pays off at step 3,260 (compile 16.3 s, measured in run #5)"]
    cold = CompileReport(compiled=True, backend="inductor", mode="default", compile_seconds=16.3)
    panel.add_events([_started(), cold])
    assert "warm" not in panel.fields["seconds"].text()


def test_warm_start_from_this_puts_the_runs_settings_in_the_form_with_its_cache(window, qtbot):
    """The form takes the run's settings and its id as warm_from; whether the run left a cache is checked when Train
    starts the run (history.warm_starts.warm_source, tested in tests/core/test_warm_start.py), not here."""
    with RunStore(window.db) as store:
        first = record(store, backend="inductor", lr=0.004)
        second = record(store, backend="inductor", lr=0.005)
    listed(window.runs, qtbot)
    rows = {row.id: row for row in window.runs.model.rows}
    window.runs.warmRequested.emit(rows[first])
    config = window.setup.config()
    assert (config.warm_from, config.lr) == (first, 0.004)
    assert window.setup.derived_from == f"#{first}, warm from its compile cache"
    window.runs.warmRequested.emit(rows[second])
    assert (window.setup.config().warm_from, window.setup.config().lr) == (second, 0.005)
    window.runs.cloneRequested.emit(rows[first])  # New run from this…: automatic again
    assert window.setup.config().warm_from is None


def test_the_recompile_stance_and_limit_are_in_the_setup_form(window):
    set_config(window, backend="inductor")
    form = window.setup
    combo = form.findChild(object, "onRecompileCombo")
    combo.setCurrentIndex(combo.findData("fail"))
    form.findChild(object, "eagerFirstCallCheck").setChecked(True)
    form.findChild(object, "recompileLimitSpin").setValue(4)
    config = form.config()
    assert (config.on_recompile, config.eager_first_call, config.recompile_limit) == ("fail", True, 4)


def test_a_recorded_cold_run_opened_again_shows_the_warm_launch_measured_after_it(tmp_path):
    """The Runs dock reads a run for the plots and the Compile panel (runs_loading.load_run): a cold run read after
    a warm run started from its cache carries that warm launch in its payback."""
    from workbench.core.ground.config import TrainConfig
    from workbench.ui.panels.runs.loading import load_run

    key = WarmKey(settings={}, input_shape=(32, 28, 28), model_hash="0" * 64, torch="2.14.1", device="cpu")
    payback = Payback(eager_step_s=0.010, compiled_step_s=0.005, compile_s=16.3, steps=2000)
    with RunStore(tmp_path / "runs.sqlite") as store:
        ids = []
        for name, seconds, warm_from, cold_seconds in (("cold", 16.3, None, None), ("warm", 4.1, 1, 16.3)):
            folder = tmp_path / name
            folder.mkdir()
            (folder / CACHE_FILE).write_bytes(b"artefacts")
            cache = CompileCache(key=key, artifacts={"inductor": 3}, bytes=9, compile_seconds=seconds,
                                 warm_from=warm_from, cold_run=warm_from, cold_compile_seconds=cold_seconds)
            (folder / KEY_FILE).write_text(json.dumps(cache.to_dict()), encoding="utf-8")
            ids.append(store.start_run(TrainConfig(backend="inductor").to_dict(), out_dir=str(folder)))
        store.append_events(ids[0], 0, [RunFinished(steps=2000, epochs=1, seconds=60.0, stopped=False,
                                                    results=RunResults(payback=payback))], {"status": "finished"})
        loaded = load_run(store, ids[0])
    [finished] = [e for e in loaded.panel_events if isinstance(e, RunFinished)]
    assert finished.results.payback.launch_lines()[1] == (
        f"next launch (warm): pays off at step 820 (compile 4.1 s, measured in run #{ids[1]})")
