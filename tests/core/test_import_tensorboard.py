"""`workbench import tensorboard`: a log written by torch.utils.tensorboard's SummaryWriter becomes a run of the
history (loss, accuracy, validation, wall times, matching hyperparameters), saying what was not kept."""

from __future__ import annotations

import pytest

pytest.importorskip("tensorboard")

from torch.utils.tensorboard import SummaryWriter  # noqa: E402

from workbench.cli import main  # noqa: E402
from workbench.core.history.curves import curves_from_events  # noqa: E402
from workbench.core.history.import_tensorboard import LogImportError, import_tensorboard  # noqa: E402
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
