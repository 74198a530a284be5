"""Settings: the form is built from TrainConfig's declarations, what the machine cannot run is disabled with the
core's reason, invalid values are explained, and the settings survive a restart.

The panel is torch-free: what the machine can run comes in as `Capabilities` (the kernel measures it), so these
tests hand it made-up machines."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QCheckBox, QComboBox, QDoubleSpinBox, QGroupBox, QLineEdit, QSpinBox, QWidget

from workbench.core.ground.capabilities import Capabilities, DeviceInfo
from workbench.core.ground.config import ALERTS, GROUPS, TrainConfig, settings
from workbench.ui.panels.setup import _row_of

from ..helpers import set_config

INDUCTOR_PROBLEM = "Inductor on the CPU needs a C++ compiler and none was found"
CPU_ONLY = Capabilities(known=True, torch_version="2.x", devices=(DeviceInfo("cpu", "CPU"),),
                        backend_problems={"cpu": {"inductor": INDUCTOR_PROBLEM}})
ONE_GPU = Capabilities(known=True, torch_version="2.x", cuda_version="12.x",
                       devices=(DeviceInfo("cuda:0", "NVIDIA H200", 143_771.0, "9.0"), DeviceInfo("cpu", "CPU")))
TWO_GPUS = Capabilities(known=True, devices=(DeviceInfo("cuda:0", "GPU A"), DeviceInfo("cuda:1", "GPU B"),
                                             DeviceInfo("cpu", "CPU")))
SHOWN = [s for s in settings() if s.form]
OBJECT_NAMES = {"dataset": "datasetCombo", "data_root": "dataRootEdit", "model": "modelCombo",
                "device": "deviceCombo", "hidden_dim": "hiddenSpin", "epochs": "epochsSpin", "batch_size": "batchSpin",
                "lr": "lrSpin", "optimizer": "optimizerCombo", "seed": "seedSpin", "backend": "backendCombo",
                "mode": "modeCombo", "fullgraph": "fullgraphCheck", "dynamic": "dynamicCombo",
                "allow_eager_fallback": "fallbackCheck", "compile_trace": "compileTraceCheck",
                "on_recompile": "onRecompileCombo", "eager_first_call": "eagerFirstCallCheck",
                "recompile_limit": "recompileLimitSpin", "amp": "ampCombo",
                "matmul_precision": "matmulPrecisionCombo", "profile_steps": "profileStepsSpin",
                "stats_every": "statsEverySpin", "alert_grad_factor": "alertGradFactorSpin",
                "alert_plateau_steps": "alertPlateauStepsSpin", "alert_throughput_drop": "alertThroughputDropSpin",
                "alert_memory_share": "alertMemoryShareSpin", "alert_recompile_storm": "alertRecompileStormSpin"}


@pytest.fixture
def panel(qtbot):
    from workbench.ui.panels.setup import SetupPanel

    widget = SetupPanel()
    qtbot.addWidget(widget)
    return widget


def _item(combo, value):
    index = combo.findData(value)
    assert index >= 0, value
    return combo.model().item(index), combo.itemData(index, 3)  # 3 = Qt.ToolTipRole


def _combo(panel, name) -> QComboBox:
    return panel.findChild(QComboBox, name)


# -- built from the declarations --------------------------------------------------------------------------------
def test_every_shown_setting_has_its_widget_and_only_those(panel):
    assert set(panel.fields) == {s.name for s in SHOWN} == set(OBJECT_NAMES)
    for s in SHOWN:
        widget = panel.findChild(QWidget, OBJECT_NAMES[s.name])
        assert widget is panel.fields[s.name], s.name
        assert s.help in widget.toolTip() or s.name == "mode"
    for name in ("processesSpin", "configProblem"):
        assert panel.findChild(QWidget, name) is not None
    for s in settings():
        if not s.form:
            assert s.name not in panel.fields


def test_each_group_of_settings_is_a_box_of_the_form_holding_its_settings(panel):
    boxes = panel.findChildren(QGroupBox)
    assert [box.title() for box in boxes] == [*GROUPS, "Process"]
    for box, group in zip(boxes, GROUPS):
        assert {name for name, field in panel.fields.items() if box.isAncestorOf(field)} == \
            {s.name for s in SHOWN if s.group == group}, group
    assert GROUPS[-1] == ALERTS and panel.fields["stats_every"].isVisibleTo(panel)


@pytest.mark.parametrize("declared", [s for s in SHOWN if s.kind in (int, float) and s.name != "lr"],
                         ids=lambda s: s.name)
def test_each_spin_box_spans_exactly_the_declared_range(panel, declared):
    spin = panel.fields[declared.name]
    assert isinstance(spin, (QSpinBox, QDoubleSpinBox))
    assert (spin.minimum(), spin.maximum()) == (declared.low, declared.high)
    spin.setValue(declared.high)  # the form's maximum is a value the core accepts
    assert getattr(panel.config(), declared.name) == declared.high


@pytest.mark.parametrize("declared", [s for s in SHOWN if s.choices], ids=lambda s: s.name)
def test_each_combo_offers_exactly_the_declared_choices(panel, declared):
    combo = panel.fields[declared.name]
    assert [combo.itemData(i) for i in range(combo.count())] == list(declared.choices)
    assert [combo.itemText(i) for i in range(combo.count())] == [declared.choice_label(v) for v in declared.choices]


def _type_rate(panel, qtbot, text: str):
    """Clear the learning rate and type `text` into it, key by key, as a user would."""
    lr = panel.fields["lr"]
    lr.setFocus()
    lr.clear()
    qtbot.keyClicks(lr, text)
    return lr


@pytest.mark.parametrize("typed, rate, shown", [
    ("1e-5", 1e-5, "1e-05"), ("5e-6", 5e-6, "5e-06"), ("0.000005", 5e-6, "5e-06"), ("3e-4", 3e-4, "0.0003"),
    ("0.1", 0.1, "0.1"), ("1.04e-03", 1.04e-3, "0.00104"), ("0.0012345678", 0.0012345678, "0.0012345678")])
def test_the_learning_rate_reads_scientific_notation_and_plain_decimals(panel, qtbot, typed, rate, shown):
    lr = _type_rate(panel, qtbot, typed)
    assert panel.config().lr == rate and panel.problem_text() == ""
    qtbot.keyClick(lr, Qt.Key_Return)
    assert lr.text() == shown and panel.config().lr == rate  # shown compactly, the value unchanged


@pytest.mark.parametrize("typed", ["1e-", "abc", "0,001", ""])
def test_a_learning_rate_the_form_cannot_read_is_refused_visibly_and_kept(panel, qtbot, typed):
    lr = _type_rate(panel, qtbot, typed)
    qtbot.keyClick(lr, Qt.Key_Return)
    assert panel.valid_config() is None and not panel.problem.isHidden()
    assert panel.problem_text() == f"Learning rate: {typed!r} is not a number (allowed: > 0 and ≤ 100)"
    assert lr.text() == typed  # not silently turned into a number
    lr.clearFocus()
    assert lr.text() == typed and panel.valid_config() is None
    lr.stepUp()  # the arrows have no number to double
    assert lr.text() == typed and lr.stepEnabled() == lr.StepEnabledFlag.StepNone


def test_a_learning_rate_out_of_range_is_refused_by_the_core(panel, qtbot):
    _type_rate(panel, qtbot, "200")
    assert panel.problem_text() == "Learning rate: 200.0 is too large (allowed: up to 100)"
    _type_rate(panel, qtbot, "-1e-3")
    assert panel.problem_text().startswith("Learning rate: -0.001 must be greater than 0")


def test_the_learning_rate_arrows_double_and_halve_it_within_its_range(panel, qtbot):
    lr = panel.fields["lr"]
    lr.setValue(0.004)
    lr.stepUp()
    assert panel.config().lr == 0.008 and lr.text() == "0.008"
    lr.setFocus()
    qtbot.keyClick(lr, Qt.Key_Down)
    qtbot.keyClick(lr, Qt.Key_Down)
    assert panel.config().lr == 0.002 and lr.text() == "0.002"
    lr.setValue(1e-6)
    lr.stepDown()
    assert panel.config().lr == 5e-7 and lr.text() == "5e-07"  # below the LR finder's sweep, still a rate
    lr.setValue(80.0)
    lr.stepUp()
    assert panel.config().lr == 100.0  # the declared top, not 160
    assert not lr.stepEnabled() & lr.StepEnabledFlag.StepUpEnabled


def test_switches_are_check_boxes_and_the_automatic_switch_a_combo(panel):
    assert isinstance(panel.fields["fullgraph"], QCheckBox)
    assert isinstance(panel.fields["allow_eager_fallback"], QCheckBox)
    dynamic = panel.fields["dynamic"]
    assert [dynamic.itemData(i) for i in range(dynamic.count())] == [None, True, False]
    assert isinstance(panel.fields["data_root"], QLineEdit)


def test_set_config_and_config_round_trip_every_shown_setting(panel):
    panel.set_capabilities(ONE_GPU)
    panel.local_files = False  # a GPU host's settings: its folders (/data) are not this computer's
    config = TrainConfig(dataset="kmnist", data_root="/data", model="/models/net.py:Net", device="cuda:0",
                         hidden_dim=64, epochs=3, batch_size=48, lr=0.01, optimizer="sgd", seed=2**32 - 1,
                         backend="inductor", mode="max-autotune", dynamic=False, fullgraph=True,
                         allow_eager_fallback=True, compile_trace=True, amp="fp16", matmul_precision="high",
                         profile_steps=30, loss_scale=1024.0, resume="/runs/one/checkpoint.pt",
                         dropout=0.5, weight_decay=0.3, lr_schedule="constant", max_steps=9, on_recompile="fail",
                         eager_first_call=True, recompile_limit=8, warm_from=3,  # not shown: kept
                         stats_every=50, alert_grad_factor=20.0, alert_plateau_steps=300, alert_throughput_drop=0.4,
                         alert_memory_share=0.8, alert_recompile_storm=3)
    assert all(getattr(config, s.name) != s.default for s in settings()), "set every setting here"
    panel.set_config(config)
    assert panel.config() == config
    assert panel.problem.text() == ""


def test_settings_the_form_does_not_show_come_from_the_base_config(panel):
    panel.set_config(TrainConfig(dropout=0.5, weight_decay=0.3, lr_schedule="constant", max_steps=9))
    panel.fields["epochs"].setValue(2)
    config = panel.config()
    assert (config.dropout, config.weight_decay, config.lr_schedule, config.max_steps, config.epochs) == \
        (0.5, 0.3, "constant", 9, 2)


def test_there_is_no_choice_of_training_in_the_window(panel):
    assert panel.findChild(QWidget, "runnerCombo") is None
    for gone in ("runnerChanged", "in_process", "set_in_process"):
        assert not hasattr(panel, gone)


# -- what this machine can run ----------------------------------------------------------------------------------
def test_a_cuda_device_is_listed_and_fp16_enabled(panel):
    panel.set_capabilities(ONE_GPU)
    device = _combo(panel, "deviceCombo")
    assert [device.itemData(i) for i in range(device.count())] == ["auto", "cuda:0", "cpu"]
    assert "NVIDIA H200" in device.itemText(1)
    for value in ("fp16", "bf16", "off"):
        item, tip = _item(_combo(panel, "ampCombo"), value)
        assert item.isEnabled() and not tip
    item, _ = _item(_combo(panel, "backendCombo"), "cudagraphs")
    assert item.isEnabled()
    set_panel = panel.fields["amp"]
    set_panel.setCurrentIndex(set_panel.findData("fp16"))
    assert panel.config().amp == "fp16" and panel.problem.text() == ""


def test_without_cuda_fp16_stays_enabled(panel):  # GradScaler("cpu"): loss scaling runs on the CPU too
    panel.set_capabilities(CPU_ONLY)
    device = _combo(panel, "deviceCombo")
    assert [device.itemData(i) for i in range(device.count())] == ["auto", "cpu"]
    item, tip = _item(_combo(panel, "ampCombo"), "fp16")
    assert item.isEnabled() and not tip


def test_cuda_only_choices_are_disabled_with_the_reason(panel):
    panel.set_capabilities(CPU_ONLY)
    item, tip = _item(_combo(panel, "backendCombo"), "cudagraphs")
    assert not item.isEnabled() and "CUDA" in tip
    item, tip = _item(_combo(panel, "modeCombo"), "reduce-overhead")
    assert not item.isEnabled() and "CUDA" in tip
    item, tip = _item(_combo(panel, "modeCombo"), "max-autotune")  # the inductor's own problem is the backend's
    assert item.isEnabled() and not tip


def test_a_backend_the_kernel_found_broken_is_disabled_with_its_reason(panel):
    panel.set_capabilities(CPU_ONLY)
    item, tip = _item(_combo(panel, "backendCombo"), "inductor")
    assert not item.isEnabled() and INDUCTOR_PROBLEM in tip
    panel.set_capabilities(ONE_GPU)
    item, tip = _item(_combo(panel, "backendCombo"), "inductor")
    assert item.isEnabled() and not tip


def test_a_known_machine_steps_off_what_it_cannot_run(panel):
    panel.set_capabilities(ONE_GPU)
    panel.set_config(TrainConfig(backend="cudagraphs"))
    panel.set_capabilities(CPU_ONLY)
    assert panel.config().backend != "cudagraphs" and panel.problem.text() == ""


def test_until_the_kernel_answers_saved_choices_are_kept_and_explained(panel):
    panel.set_config(TrainConfig(device="cuda:1", amp="fp16"))  # Capabilities.unknown(): the CPU only
    assert panel.fields["device"].currentData() == "cuda:1" and panel.fields["amp"].currentData() == "fp16"
    assert "device" in panel.problem.text() and panel.valid_config() is None
    panel.set_capabilities(TWO_GPUS)
    assert panel.config() == TrainConfig(device="cuda:1", amp="fp16")
    assert "GPU B" in panel.fields["device"].currentText()


def test_a_device_this_machine_does_not_have_is_refused(panel):
    panel.set_config(TrainConfig(device="cuda:1"))
    panel.set_capabilities(ONE_GPU)
    assert panel.fields["device"].currentData() == "cuda:1"
    assert "device" in panel.problem.text() and "cuda:0" in panel.problem.text()
    panel.fields["device"].setCurrentIndex(panel.fields["device"].findData("auto"))
    assert panel.problem.text() == ""


def test_mode_and_compile_options_only_apply_to_compiled_backends(panel):
    panel.set_config(TrainConfig(backend="eager"))
    assert not panel.fields["mode"].isEnabled() and not panel.fields["fullgraph"].isEnabled()
    assert not panel.fields["dynamic"].isEnabled() and not panel.fields["allow_eager_fallback"].isEnabled()
    panel.set_config(TrainConfig(backend="aot_eager"))
    assert not panel.fields["mode"].isEnabled() and panel.fields["fullgraph"].isEnabled()
    panel.set_config(TrainConfig(backend="inductor"))
    assert panel.fields["mode"].isEnabled() and panel.fields["fullgraph"].isEnabled()


def test_an_invalid_value_is_explained_inline(panel, qtbot):
    with qtbot.waitSignal(panel.changed):
        panel.fields["lr"].setValue(0.0)
    assert panel.problem_text() == "Learning rate: 0.0 must be greater than 0 (allowed: > 0 and ≤ 100)"
    assert panel.valid_config() is None
    panel.fields["lr"].setValue(0.01)
    assert panel.problem.text() == "" and panel.valid_config().lr == 0.01


def test_the_reason_sits_right_under_the_field_it_is_about(panel):
    panel.fields["lr"].setValue(0.0)
    lr, problem = panel.fields["lr"], panel.problem
    assert not problem.isHidden() and "greater than 0" in problem.text()
    assert problem.text() == "⚠ " + panel.problem_text()
    assert problem.parentWidget() is lr.parentWidget()  # in lr's group, the row under it
    form = lr.parentWidget().layout()
    assert form.getWidgetPosition(problem)[0] == _row_of(form, lr) + 1  # (lr shares its row with Find…)
    panel.fields["lr"].setValue(0.01)
    assert problem.isHidden() and panel.problem_text() == ""


@pytest.mark.parametrize("name, value, words", [
    ("batch_size", 0, "Batch size: 0 is out of range (allowed: 1 to 1048576)"),
    ("hidden_dim", 0, "Hidden size: 0 is out of range (allowed: 1 to 65536)")])
def test_a_problem_names_the_setting_by_the_forms_label(panel, name, value, words):
    panel.fields[name].setMinimum(0)  # the spin box stops at 1: reach the core's check all the same
    panel.fields[name].setValue(value)
    assert panel.problem_text() == words


def test_a_choice_this_machine_cannot_run_is_explained_by_the_forms_label(panel):
    panel.set_capabilities(CPU_ONLY)
    _item_, tip = _item(_combo(panel, "backendCombo"), "cudagraphs")
    assert tip.startswith("Backend: 'cudagraphs' needs a CUDA device")


def test_a_process_count_problem_sits_under_the_process_count(panel):
    panel.set_config(TrainConfig(batch_size=33))
    panel.set_processes(2)
    form = panel.processes_spin.parentWidget().layout()
    assert form.getWidgetPosition(panel.problem)[0] == form.getWidgetPosition(panel.processes_spin)[0] + 1
    assert "split evenly" in panel.problem_text()


@pytest.fixture
def scrolled(panel, qtbot):
    """The panel in a scroll area too short for it, as the main window shows it."""
    from PySide6.QtWidgets import QScrollArea

    area = QScrollArea()
    area.setWidgetResizable(True)
    area.setWidget(panel)
    area.resize(420, 240)
    qtbot.addWidget(area)
    area.show()
    qtbot.waitExposed(area)
    return area


def _wheel(area, widget, up: bool) -> None:
    """A real wheel notch over the widget's centre (sent as the window system would: QApplication.sendEvent's
    wheel events are not passed on to the parent when ignored)."""
    from PySide6.QtCore import QPoint, QPointF
    from PySide6.QtTest import QTest

    QTest.wheelEvent(area.windowHandle(), QPointF(widget.mapTo(area, widget.rect().center())),
                     QPoint(0, 120 if up else -120))


def _value(widget):
    return widget.currentIndex() if isinstance(widget, QComboBox) else widget.value()


@pytest.mark.parametrize("name", ["datasetCombo", "lrSpin", "ampCombo", "processesSpin"])
def test_the_wheel_scrolls_the_form_unless_the_box_has_focus(panel, scrolled, qtbot, name):
    panel.fields["lr"].setValue(0.01)
    panel.set_processes(2)
    box = panel.findChild(QWidget, name)
    if isinstance(box, QComboBox):
        box.setCurrentIndex(1)  # the wheel can change it either way
    bar = scrolled.verticalScrollBar()
    scrolled.ensureWidgetVisible(box)
    up = bar.value() > bar.maximum() // 2  # the way the form can still scroll
    box.clearFocus()  # the first box takes the focus when the window shows
    before, position = _value(box), bar.value()
    _wheel(scrolled, box, up)
    assert _value(box) == before and not box.hasFocus()  # the wheel did not take the focus either
    assert bar.value() != position  # the panel scrolled instead
    scrolled.ensureWidgetVisible(box)
    box.setFocus()
    qtbot.waitUntil(box.hasFocus)
    position = bar.value()
    _wheel(scrolled, box, up)
    assert _value(box) != before and bar.value() == position


def test_focus_problem_scrolls_to_the_field_and_focuses_it(panel, scrolled, qtbot):
    panel.fields["lr"].setValue(0.0)
    bar = scrolled.verticalScrollBar()
    bar.setValue(bar.maximum())
    lr = panel.fields["lr"]
    assert lr.visibleRegion().isEmpty()  # scrolled out of sight
    panel.focus_problem()
    qtbot.waitUntil(lr.hasFocus)
    assert not lr.visibleRegion().isEmpty() and not panel.problem.visibleRegion().isEmpty()


# -- processes ----------------------------------------------------------------------------------------------------
def test_the_process_count_is_checked_by_the_run_layer(panel, qtbot):
    panel.set_config(TrainConfig(batch_size=33))
    with qtbot.waitSignal(panel.processesChanged) as changed:
        panel.set_processes(2)
    assert changed.args == [2] and panel.processes() == 2
    assert "split evenly over 2 processes" in panel.problem.text()
    panel.fields["batch_size"].setValue(32)
    assert panel.problem.text() == ""
    panel.set_capabilities(ONE_GPU)  # nccl: one GPU per process
    assert "1 CUDA device" in panel.problem.text()
    panel.fields["device"].setCurrentIndex(panel.fields["device"].findData("cpu"))  # gloo
    assert panel.problem.text() == ""


def test_the_process_count_reaches_past_64_on_a_machine_with_more_gpus(panel):
    assert panel.findChild(QSpinBox, "processesSpin").maximum() == 64
    many = Capabilities(known=True, devices=(*(DeviceInfo(f"cuda:{i}", "GPU") for i in range(80)),
                                             DeviceInfo("cpu", "CPU")))
    panel.set_capabilities(many)
    assert panel.findChild(QSpinBox, "processesSpin").maximum() == 80


# -- the window process never imports torch ----------------------------------------------------------------------
def test_the_setup_panel_needs_no_torch():
    script = (
        "import sys, json\n"
        "sys.modules['torch'] = None\n"  # any `import torch` now raises ImportError
        "from PySide6.QtWidgets import QApplication\n"
        "app = QApplication([])\n"
        "from workbench.ui.panels.setup import SetupPanel\n"
        "panel = SetupPanel()\n"
        "print(json.dumps({'config': panel.config().to_dict(), 'modules': sorted(m for m, module in\n"
        "    sys.modules.items() if module is not None\n"
        "    and m.startswith(('workbench.core.domain', 'workbench.core.engine', 'torch')))}))\n")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                            env={**os.environ, "QT_QPA_PLATFORM": "offscreen"})
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout.splitlines()[-1])
    assert answer["modules"] == [] and answer["config"] == TrainConfig().to_dict()


# -- in the window ------------------------------------------------------------------------------------------------
def test_an_invalid_value_disables_train(window):
    window.setup.lr.setValue(0.0)
    assert not window.named_actions["train"].isEnabled()
    window.setup.lr.setValue(0.01)
    assert window.named_actions["train"].isEnabled()



def test_an_unreadable_learning_rate_disables_train_and_the_banner_names_the_field(waiting_window, qtbot):
    window = waiting_window
    _type_rate(window.setup, qtbot, "1e-")
    why = "Learning rate: '1e-' is not a number (allowed: > 0 and ≤ 100)"
    train = window.named_actions["train"]
    assert not train.isEnabled() and train.toolTip() == f"Cannot train: {why}"
    assert not window.training.train()
    assert window.banner.label.text() == f"Cannot start: {why}"
    qtbot.keyClicks(window.setup.fields["lr"], "5")
    assert window.named_actions["train"].isEnabled() and window.setup.config().lr == 1e-5


def test_a_dataset_that_needs_a_folder_is_refused_by_the_form_before_train(waiting_window):
    window = waiting_window
    window.setup.set_value("dataset", "idx")
    assert "reads a folder" in window.setup.problem_text() and not window.named_actions["train"].isEnabled()
    assert not window.training.train()  # nothing starts, not even a kernel: said where the user looks
    assert window.banner.label.text().startswith("Cannot start: Data folder: dataset 'idx' reads a folder")


def test_settings_persist_across_launches(qtbot, tmp_path, kernel):
    from workbench.ui.main_window import MainWindow
    from workbench.ui.settings import SETTINGS_VERSION, open_settings

    first = MainWindow(runs_dir=tmp_path, prestart=False, kernel=kernel)
    qtbot.addWidget(first)
    first.setup.set_config(TrainConfig(epochs=7, batch_size=48, backend="aot_eager", amp="bf16", seed=3,
                                       stats_every=50, alert_memory_share=0.8))
    first.setup.set_processes(2)
    first.plots.set_x_axis("elapsed")
    first.close()
    settings = open_settings()
    assert int(settings.value("settings_version")) == SETTINGS_VERSION
    second = MainWindow(runs_dir=tmp_path, prestart=False, kernel=kernel)
    qtbot.addWidget(second)
    config = second.setup.config()
    assert (config.epochs, config.batch_size, config.backend, config.amp, config.seed) == (7, 48, "aot_eager",
                                                                                           "bf16", 3)
    assert (config.stats_every, config.alert_memory_share) == (50, 0.8)  # the statistics and alerts group too
    assert second.setup.processes() == 2
    assert second.plots.x_axis == "elapsed"  # the plots' x axis too
    second.close()


def test_unusable_saved_settings_fall_back_to_defaults_with_a_note(qtbot, tmp_path, kernel):
    from workbench.ui.main_window import MainWindow
    from workbench.ui.settings import open_settings

    settings = open_settings()
    settings.setValue("settings_version", 1)
    settings.setValue("config", '{"epochs": 0}')
    settings.sync()
    window = MainWindow(runs_dir=tmp_path, prestart=False, kernel=kernel)
    qtbot.addWidget(window)
    assert window.setup.config() == TrainConfig()
    notes = [window.log.item(i).text() for i in range(window.log.count())]
    assert any("saved settings were not usable" in n for n in notes)
    window.close()


def test_settings_of_a_newer_workbench_are_not_written_over(qtbot, tmp_path, kernel):
    from workbench.ui.main_window import MainWindow
    from workbench.ui.settings import SETTINGS_VERSION, open_settings

    newer = TrainConfig(epochs=9).to_json()
    settings = open_settings()
    settings.setValue("settings_version", SETTINGS_VERSION + 1)
    settings.setValue("config", newer)
    settings.sync()
    window = MainWindow(runs_dir=tmp_path, prestart=False, kernel=kernel)
    qtbot.addWidget(window)
    set_config(window, epochs=3)
    window.close()  # saves settings on close
    settings = open_settings()
    assert int(settings.value("settings_version")) == SETTINGS_VERSION + 1 and settings.value("config") == newer


def test_a_missing_data_folder_is_said_in_the_form_before_train(panel, tmp_path):
    """Not after Train, once PyTorch has started: the form checks the folder on this computer while the kernels are
    here; connected to a host, the host checks its own."""
    panel.set_value("dataset", "imagefolder")
    panel.set_value("data_root", str(tmp_path / "nope"))
    assert "does not exist or is not a folder" in panel.problem_text() and "Data folder" in panel.problem_text()
    panel.local_files = False  # the kernels are on a host: its folders are not ours to check
    panel.set_value("data_root", str(tmp_path / "there"))
    assert panel.problem_text() == ""
    panel.local_files = True
    (tmp_path / "here").mkdir()
    panel.set_value("data_root", str(tmp_path / "here"))
    assert "does not exist" not in panel.problem_text()
