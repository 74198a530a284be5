"""Settings: what the machine cannot run is disabled with a reason, invalid values are explained, and the
settings survive a restart."""

from __future__ import annotations

import pytest
import torch

from workbench.core.config import TrainConfig

from .conftest import set_config

def _item(combo, value):
    index = combo.findData(value)
    return combo.model().item(index), combo.itemData(index, 3)  # 3 = Qt.ToolTipRole


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU-only choices")
def test_cuda_only_choices_are_disabled_with_the_reason(window):
    setup = window.setup
    item, tip = _item(setup.findChild(object, "ampCombo"), "fp16")
    assert not item.isEnabled() and "CUDA" in tip
    item, tip = _item(setup.findChild(object, "backendCombo"), "cudagraphs")
    assert not item.isEnabled() and "CUDA" in tip
    set_config(window, backend="inductor")
    item, tip = _item(setup.findChild(object, "modeCombo"), "reduce-overhead")
    assert not item.isEnabled() and "CUDA" in tip


def test_mode_and_compile_options_only_apply_to_compiled_backends(window):
    set_config(window, backend="eager")
    assert not window.setup.mode.isEnabled() and not window.setup.fullgraph.isEnabled()
    set_config(window, backend="inductor")
    assert window.setup.mode.isEnabled() and window.setup.fullgraph.isEnabled()


def test_an_invalid_value_is_explained_inline_and_train_is_disabled(window):
    window.setup.lr.setValue(0.0)
    problem = window.setup.findChild(object, "configProblem")
    assert "lr" in problem.text() and "greater than 0" in problem.text()
    assert not window.train_action.isEnabled()
    window.setup.lr.setValue(0.01)
    assert problem.text() == "" and window.train_action.isEnabled()


def test_a_dataset_that_needs_a_folder_fails_with_a_message(window, qtbot):
    set_config(window, dataset="idx", epochs=1)
    with qtbot.waitSignal(window.runFinished, timeout=30_000) as finished:
        window.train()
    assert finished.args[0].kind == "data"
    assert "--data-root" in window.banner.label.text() or "folder" in window.banner.label.text()


def test_settings_persist_across_launches(qtbot, tmp_path):
    from workbench.ui.main_window import MainWindow, open_settings

    first = MainWindow(runs_dir=tmp_path, prestart=False)
    qtbot.addWidget(first)
    first.setup.set_config(TrainConfig(epochs=7, batch_size=48, backend="aot_eager", amp="bf16", seed=3))
    first.close()
    settings = open_settings()
    assert int(settings.value("settings_version")) == 1
    second = MainWindow(runs_dir=tmp_path, prestart=False)
    qtbot.addWidget(second)
    config = second.setup.config()
    assert (config.epochs, config.batch_size, config.backend, config.amp, config.seed) == (7, 48, "aot_eager",
                                                                                           "bf16", 3)
    second.close()


def test_unusable_saved_settings_fall_back_to_defaults_with_a_note(qtbot, tmp_path):
    from workbench.ui.main_window import MainWindow, open_settings

    settings = open_settings()
    settings.setValue("settings_version", 1)
    settings.setValue("config", '{"epochs": 0}')
    settings.sync()
    window = MainWindow(runs_dir=tmp_path, prestart=False)
    qtbot.addWidget(window)
    assert window.setup.config() == TrainConfig()
    notes = [window.log.item(i).text() for i in range(window.log.count())]
    assert any("saved settings were not usable" in n for n in notes)
    window.close()


def test_settings_of_a_newer_workbench_are_not_written_over(qtbot, tmp_path):
    from workbench.ui.main_window import SETTINGS_VERSION, MainWindow, open_settings

    newer = TrainConfig(epochs=9).to_json()
    settings = open_settings()
    settings.setValue("settings_version", SETTINGS_VERSION + 1)
    settings.setValue("config", newer)
    settings.sync()
    window = MainWindow(runs_dir=tmp_path, prestart=False)
    qtbot.addWidget(window)
    set_config(window, epochs=3)
    window.close()  # saves settings on close
    settings = open_settings()
    assert int(settings.value("settings_version")) == SETTINGS_VERSION + 1 and settings.value("config") == newer
