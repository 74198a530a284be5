"""Consent to import a model file, in the window: per file (path + content), asked once, remembered, revocable —
and never implied by a run history row."""

from __future__ import annotations

import shutil

import pytest
from PySide6.QtWidgets import QMessageBox

from workbench.core.ground.consent import ModelConsent
from workbench.core.history.runs import RunStore
from workbench.ui.panels.runs.runs import load_run


@pytest.fixture
def recorded_run(tmp_path, planted_break_spec):
    """A recorded run (in its own database) of a copy of the planted-break network: (its run, its model spec)."""
    from workbench.core.ground.config import TrainConfig
    from workbench.core.kernel.launch import start_run
    from workbench.core.run.run_request import Launch, RunRequest

    model = tmp_path / "models" / "net.py"
    model.parent.mkdir()
    shutil.copy(planted_break_spec.rpartition(":")[0], model)
    spec = f"{model}:PlantedBreakNet"
    db = tmp_path / "history.sqlite"
    config = TrainConfig(model=spec, epochs=1, max_steps=3, hidden_dim=16)
    start_run(RunRequest(config, out_dir=str(tmp_path / "run"), db=str(db), record=True,
                         launch=Launch(where="here")), lambda event: None)
    with RunStore(db) as store:
        (record,) = store.list()
        run = load_run(store, record.id)
    assert run.record.config["model"] == spec and run.record.checkpoint
    return run, spec


def show(window, qtbot, run):
    """Open a recorded run as the Runs panel does; the kernel's final answer about its checkpoint."""
    with qtbot.waitSignal(window.checkpoints.checkpointLoaded, timeout=60_000) as loaded:
        window.recorded_runs.show(run)
    return loaded.args[0]


def test_opening_a_recorded_run_asks_once_per_file_and_again_when_it_changes(window, qtbot, monkeypatch,
                                                                           recorded_run):
    run, spec = recorded_run
    asked = []
    monkeypatch.setattr(window.checkpoints, "confirm_model_code", lambda s: asked.append(s) or False)
    answer = show(window, qtbot, run)  # a history row implies no consent: the dialog, and No opens nothing
    assert getattr(answer, "kind", None) == "untrusted_code" and asked == [spec]
    assert window.predict.model is None and not ModelConsent().is_trusted(spec)

    monkeypatch.setattr(window.checkpoints, "confirm_model_code", lambda s: asked.append(s) or True)
    answer = show(window, qtbot, run)
    assert not isinstance(answer, Exception) and asked == [spec, spec] and window.predict.model is not None
    assert ModelConsent().is_trusted(spec)  # Yes is remembered

    answer = show(window, qtbot, run)  # remembered: nothing asked
    assert not isinstance(answer, Exception) and asked == [spec, spec]

    model_file = spec.rpartition(":")[0]
    with open(model_file, "a", encoding="utf-8") as fh:
        fh.write("# changed after it was trusted\n")
    monkeypatch.setattr(window.checkpoints, "confirm_model_code", lambda s: asked.append(s) or False)
    answer = show(window, qtbot, run)  # another content: asked again
    assert getattr(answer, "kind", None) == "untrusted_code" and asked == [spec, spec, spec]


def test_forget_trusted_model_files_revokes_consent(window, qtbot, monkeypatch, recorded_run):
    run, spec = recorded_run
    ModelConsent().trust(spec)
    asked = []
    monkeypatch.setattr(window.checkpoints, "confirm_model_code", lambda s: asked.append(s) or False)
    assert not isinstance(show(window, qtbot, run), Exception) and asked == []

    monkeypatch.setattr(QMessageBox, "question", staticmethod(lambda *args: QMessageBox.No))
    assert not window.checkpoints.forget_trusted() and ModelConsent().is_trusted(spec)  # the confirm said No
    monkeypatch.setattr(QMessageBox, "question", staticmethod(lambda *args: QMessageBox.Yes))
    assert window.findChild(type(window.named_actions["open_checkpoint"]), "forgetTrustedModelsAction") is not None
    assert window.checkpoints.forget_trusted() and ModelConsent().trusted() == []
    assert getattr(show(window, qtbot, run), "kind", None) == "untrusted_code" and asked == [spec]


def test_a_report_from_the_window_evaluates_a_user_model_only_with_remembered_consent(qtbot, tmp_path, kernel,
                                                                                      recorded_run):
    from workbench.ui.main_window import MainWindow

    run, spec = recorded_run
    window = MainWindow(runs_dir=tmp_path / "runs", db=tmp_path / "history.sqlite", prestart=False, kernel=kernel)
    qtbot.addWidget(window)

    def report(name: str) -> str:
        with qtbot.waitSignal(window.exports.reportFinished, timeout=120_000) as written:
            assert window.exports.export_report(tmp_path / name, [run.record.id])
        assert not isinstance(written.args[0], Exception), written.args[0]
        return (tmp_path / name).read_text()

    assert "needs consent" in report("without.html")  # no consent remembered: the model file is not imported
    ModelConsent().trust(spec)
    assert "needs consent" not in report("with.html")  # the user said yes to this very file before
    window.close()
