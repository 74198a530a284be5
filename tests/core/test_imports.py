"""`workbench import tensorboard` and `workbench import mlflow`: a log written by torch.utils.tensorboard's
SummaryWriter, and a file store written by MLflow's own client, become runs of the history (loss, accuracy,
validation, wall times, matching hyperparameters), saying what was not kept."""

from __future__ import annotations

import pytest

pytest.importorskip("tensorboard")

from torch.utils.tensorboard import SummaryWriter  # noqa: E402

from workbench.cli import main  # noqa: E402
from workbench.core.history.curves import curves_from_events  # noqa: E402
from workbench.core.history.imports import LogImportError, import_mlflow, import_tensorboard  # noqa: E402
from workbench.core.history.runs import RunStore  # noqa: E402


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    """Two runs as a user's training script logs them: loss and accuracy (in percent) each step, validation every
    10 steps, the learning rate, and hyperparameters with add_hparams."""
    root = tmp_path_factory.mktemp("tb")
    for name, lr in (("baseline", 0.01), ("higher-lr", 0.05)):
        writer = SummaryWriter(root / name)
        for step in range(50):
            writer.add_scalar("Loss/train", 2.0 / (step + 1), step)
            writer.add_scalar("Accuracy/train", 100.0 * step / 50, step)
            writer.add_scalar("lr", lr, step)
            if step % 10 == 9:
                writer.add_scalar("Loss/val", 1.0 / (step + 1), step)
                writer.add_scalar("Accuracy/val", step / 55, step)
        writer.add_hparams({"lr": lr, "batch_size": 64, "momentum": 0.9}, {"hparam/accuracy": 0.9})
        writer.close()
    return root


def test_a_summarywriter_log_becomes_a_run_with_its_curves_settings_and_origin(logs, tmp_path):
    with RunStore(tmp_path / "runs.sqlite") as store:
        imported = import_tensorboard(store, [logs])
        assert [run.folder.name for run in imported] == ["baseline", "higher-lr"]  # not the hparams subfolders
        run = store.get(imported[0].run_id, with_events=True)
    assert run.name == "baseline" and run.status == "finished" and run.checkpoint is None  # cannot be continued
    assert run.config["lr"] == 0.01 and run.config["batch_size"] == 64
    origin = run.environment["imported_from"]
    assert origin["source"] == "TensorBoard" and origin["not_kept"] == ["lr"]
    assert origin["hparams_not_settings"] == ["momentum"] and origin["step_shift"] == 1
    curves = curves_from_events(run.events)
    assert curves.step.tolist() == list(range(1, 51))  # TensorBoard's step 0 is Workbench's step 1
    assert curves.loss[0] == 2.0 and curves.accuracy[-1] == pytest.approx(0.98)  # percent read as a fraction
    assert curves.val_step.tolist() == [10, 20, 30, 40, 50]
    assert curves.val_accuracy[-1] == pytest.approx(49 / 55) == run.best_val_accuracy
    assert curves.wall[0] > 1e9  # the log's wall times: the time axes work


def test_a_folder_without_a_loss_scalar_is_refused_with_what_to_give(tmp_path):
    writer = SummaryWriter(tmp_path / "other")
    writer.add_scalar("reward", 1.0, 0)
    writer.close()
    with RunStore(tmp_path / "runs.sqlite") as store:
        with pytest.raises(LogImportError, match="no TensorBoard run with a loss"):
            import_tensorboard(store, [tmp_path / "other"])


def test_the_command_says_what_it_imported(logs, tmp_path, capsys):
    assert main(["import", "tensorboard", str(logs / "baseline"), "--db", str(tmp_path / "runs.sqlite")]) == 0
    out = capsys.readouterr().out
    assert "imported #1 from" in out and "loss ← Loss/train" in out and "not kept: lr" in out
    assert "batch_size=64" in out and "lr=0.01" in out


@pytest.fixture(scope="module")
def mlruns(tmp_path_factory):
    """A file store as MLflow's client writes it: one experiment, a run with params, a tag and metrics by step."""
    mlflow = pytest.importorskip("mlflow")
    root = tmp_path_factory.mktemp("mlflow") / "mlruns"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # MLflow 3.18 keeps the file store in maintenance mode
        mlflow.set_tracking_uri(root.as_uri())
        mlflow.set_experiment("digits")
        with mlflow.start_run(run_name="mlp-baseline"):
            mlflow.log_params({"learning_rate": 0.002, "batch_size": 128, "momentum": 0.9})
            mlflow.set_tag("team", "vision")
            for step in range(1, 31):
                mlflow.log_metric("train_loss", 3.0 / step, step=step)
                mlflow.log_metric("train_acc", step / 31, step=step)
                if step % 10 == 0:
                    mlflow.log_metric("val_loss", 2.0 / step, step=step)
                    mlflow.log_metric("val_acc", step / 32, step=step)
            mlflow.log_metric("gpu_temp", 60.0, step=1)
    return root


def test_an_mlflow_file_store_becomes_a_run_with_its_params_and_tags(mlruns, tmp_path):
    with RunStore(tmp_path / "runs.sqlite") as store:
        [imported] = import_mlflow(store, [mlruns])
        run = store.get(imported.run_id, with_events=True)
    assert run.name == "mlp-baseline" and run.config["lr"] == 0.002 and run.config["batch_size"] == 128
    origin = run.environment["imported_from"]
    assert origin["source"] == "MLflow" and origin["experiment"] == "digits" and origin["tags"] == {"team": "vision"}
    assert origin["not_kept"] == ["gpu_temp"] and origin["hparams_not_settings"] == ["momentum"]
    assert origin["step_shift"] == 0  # MLflow's steps here start at 1
    curves = curves_from_events(run.events)
    assert curves.step.tolist() == list(range(1, 31)) and curves.loss[-1] == pytest.approx(0.1)
    assert curves.val_step.tolist() == [10, 20, 30] and curves.val_accuracy[-1] == pytest.approx(30 / 32)
    assert 1e9 < curves.wall[0] < 1e10  # milliseconds read as seconds


def test_a_folder_that_is_no_mlflow_store_is_refused(tmp_path):
    with RunStore(tmp_path / "runs.sqlite") as store:
        with pytest.raises(LogImportError, match="no MLflow run with a loss metric"):
            import_mlflow(store, [tmp_path])
