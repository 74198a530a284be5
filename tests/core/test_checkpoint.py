"""Checkpoints: atomic writes, weights_only reads, and one clear CheckpointError for every bad file."""

from __future__ import annotations

import io
import json
import os
import pickle
import random
import zipfile
from pathlib import Path

import pytest
import torch
from safetensors import safe_open

from workbench.core.domain import checkpoint
from workbench.core.ground.atomic import write_text_atomic
from workbench.core.domain.checkpoint import CheckpointError
from workbench.core.ground.config import TrainConfig
from workbench.core.ground.results import RunResults
from workbench.core.domain.model import SandwichNet

CLASSES = tuple("0123456789")
CONFIG = TrainConfig(hidden_dim=16, epochs=1, seed=3)


def _model(seed: int = 0, hidden_dim: int = 16) -> SandwichNet:
    torch.manual_seed(seed)
    return SandwichNet(hidden_dim=hidden_dim)


def _inputs() -> torch.Tensor:
    return torch.randint(0, 256, (8, 1, 28, 28), dtype=torch.uint8, generator=torch.Generator().manual_seed(1))


def _save(path: Path, model: torch.nn.Module | None = None, config: TrainConfig = CONFIG) -> Path:
    return checkpoint.save(path, model or _model(), config, results=RunResults(val_accuracy=0.5),
                           versions={"torch": str(torch.__version__)}, classes=CLASSES)


@pytest.fixture
def saved(tmp_path) -> Path:
    return _save(tmp_path / "run" / "checkpoint.pt")


def test_round_trip_gives_identical_predictions(saved):
    original = _model()
    ckpt = checkpoint.load(saved)
    assert ckpt.config == CONFIG
    assert ckpt.classes == CLASSES
    assert ckpt.results == RunResults(val_accuracy=0.5)
    assert "torch" in ckpt.versions
    rebuilt = ckpt.build_model("cpu")
    assert not rebuilt.training
    x = _inputs()
    probs_a, cls_a = original.predict(x)
    probs_b, cls_b = rebuilt.predict(x)
    assert torch.equal(probs_a, probs_b) and torch.equal(cls_a, cls_b)


def test_safetensors_written_beside_with_same_weights(saved):
    path = saved.with_suffix(".safetensors")
    assert path.is_file()
    expected = _model().state_dict()
    with safe_open(str(path), framework="pt") as f:
        assert set(f.keys()) == set(expected)
        for key in f.keys():
            assert torch.equal(f.get_tensor(key), expected[key])
        metadata = f.metadata()
    assert metadata["format"] == checkpoint.FORMAT
    assert TrainConfig.from_json(metadata["config"]) == CONFIG


def test_save_leaves_no_temp_files(saved):
    assert sorted(p.name for p in saved.parent.iterdir()) == ["checkpoint.pt", "checkpoint.safetensors"]


def test_save_overwrites_atomically(saved):
    _save(saved, _model(seed=9))
    assert sorted(p.name for p in saved.parent.iterdir()) == ["checkpoint.pt", "checkpoint.safetensors"]
    rebuilt = checkpoint.load(saved).build_model()
    assert torch.equal(rebuilt.predict(_inputs())[0], _model(seed=9).predict(_inputs())[0])


def test_failed_save_keeps_previous_checkpoint(saved, monkeypatch):
    before = saved.read_bytes()
    written = []

    def broken_save(obj, f, *args, **kwargs):
        Path(f).write_bytes(b"PK\x03\x04 half a zip")  # a partial file, then the disk fills up
        written.append(Path(f))
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(torch, "save", broken_save)
    with pytest.raises(checkpoint.CheckpointWriteError, match="No space left on device"):
        _save(saved, _model(seed=9))
    assert written and written[0] != saved  # the partial write went to a temp file, not the target
    assert saved.read_bytes() == before
    assert sorted(p.name for p in saved.parent.iterdir()) == ["checkpoint.pt", "checkpoint.safetensors"]
    monkeypatch.undo()
    rebuilt = checkpoint.load(saved).build_model()
    assert torch.equal(rebuilt.predict(_inputs())[0], _model().predict(_inputs())[0])


def test_saved_file_mode_follows_umask(saved):
    mask = os.umask(0)
    os.umask(mask)
    assert saved.stat().st_mode & 0o777 == 0o666 & ~mask


class _MakesMarker:
    """Unpickling this calls open(marker, 'w'): a stand-in for any code a malicious checkpoint could run."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


class _RunsShell:
    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch '{self.marker}'",))


def _evil_file(tmp_path: Path, payload_class, writer: str) -> tuple[Path, Path]:
    marker = tmp_path / "pwned"
    path = tmp_path / "evil.pt"
    payload = {"format": checkpoint.FORMAT, "format_version": 1, "config": CONFIG.to_dict(),
               "classes": list(CLASSES), "evil": payload_class(marker)}
    if writer == "torch.save":
        payload["state_dict"] = _model().state_dict()
        torch.save(payload, path)
    else:  # a legacy, non-zip pickle: torch.load must refuse it just the same
        path.write_bytes(pickle.dumps(payload, protocol=2))
    return path, marker


@pytest.mark.parametrize("payload_class", [_MakesMarker, _RunsShell])
@pytest.mark.parametrize("writer", ["torch.save", "pickle"])
def test_checkpoint_that_would_run_code_is_refused(tmp_path, payload_class, writer):
    path, marker = _evil_file(tmp_path, payload_class, writer)
    with pytest.raises(CheckpointError) as info:
        checkpoint.load(path)
    assert not marker.exists()
    assert "evil.pt" in str(info.value)


@pytest.mark.parametrize("writer", ["torch.save", "pickle"])
def test_refusal_names_the_offending_global(tmp_path, writer):
    path, marker = _evil_file(tmp_path, _MakesMarker, writer)
    with pytest.raises(CheckpointError) as info:
        checkpoint.load(path)
    message = str(info.value)
    assert "refused" in message and "could run code" in message
    assert "io.open" in message
    assert "\n" not in message and len(message) < 400  # one readable line, not torch's page of advice
    assert not marker.exists()


@pytest.mark.parametrize("writer", ["torch.save", "pickle"])
def test_refusal_of_os_system_says_refused_and_names_it(tmp_path, writer):
    path, marker = _evil_file(tmp_path, _RunsShell, writer)
    with pytest.raises(CheckpointError) as info:
        checkpoint.load(path)
    assert not marker.exists()
    assert "refused" in str(info.value) and "system" in str(info.value)


def test_random_bytes(tmp_path):
    path = tmp_path / "noise.pt"
    path.write_bytes(random.Random(0).randbytes(4096))
    with pytest.raises(CheckpointError):
        checkpoint.load(path)


def test_empty_file(tmp_path):
    path = tmp_path / "empty.pt"
    path.write_bytes(b"")
    with pytest.raises(CheckpointError, match="empty"):
        checkpoint.load(path)


@pytest.mark.parametrize("fraction", [0.5, 0.1, 0.95])
def test_truncated_checkpoint(saved, tmp_path, fraction):
    data = saved.read_bytes()
    cut = tmp_path / "cut.pt"
    cut.write_bytes(data[: int(len(data) * fraction)])
    with pytest.raises(CheckpointError) as info:
        checkpoint.load(cut)
    assert "cut.pt" in str(info.value)
    assert "\n" not in str(info.value)


def test_foreign_torch_file(tmp_path):
    path = tmp_path / "foreign.pt"
    torch.save({"a": torch.ones(3)}, path)
    with pytest.raises(CheckpointError, match="not a Workbench checkpoint"):
        checkpoint.load(path)


def test_bare_state_dict_is_foreign(tmp_path):
    path = tmp_path / "weights.pt"
    torch.save(_model().state_dict(), path)
    with pytest.raises(CheckpointError, match="not a Workbench checkpoint"):
        checkpoint.load(path)


def _edited(saved: Path, tmp_path: Path, **changes) -> Path:
    payload = torch.load(saved, weights_only=True)
    payload.update(changes)
    path = tmp_path / "edited.pt"
    torch.save(payload, path)
    return path


def test_weights_for_another_hidden_size(saved, tmp_path):
    path = _edited(saved, tmp_path, state_dict=_model(hidden_dim=32).state_dict())
    with pytest.raises(CheckpointError) as info:
        checkpoint.load(path)
    assert "do not fit" in str(info.value)
    assert "\n" not in str(info.value)


def test_weights_mismatch_message_says_what_does_not_fit(saved, tmp_path):
    path = _edited(saved, tmp_path, state_dict=_model(hidden_dim=32).state_dict())
    with pytest.raises(CheckpointError) as info:
        checkpoint.load(path)
    assert "core_block.fc1.weight" in str(info.value)


def test_config_and_weights_disagree(saved, tmp_path):
    config = CONFIG.replace(hidden_dim=64).to_dict()
    with pytest.raises(CheckpointError, match="do not fit"):
        checkpoint.load(_edited(saved, tmp_path, config=config))


def test_newer_format_version(saved, tmp_path):
    with pytest.raises(CheckpointError, match="newer Workbench"):
        checkpoint.load(_edited(saved, tmp_path, format_version=checkpoint.FORMAT_VERSION + 1))


@pytest.mark.parametrize("changes", [
    {"config": {"batch_size": 0}},
    {"config": {"no_such_setting": 1}},
    {"config": "not a dict"},
])
def test_bad_config_in_checkpoint(saved, tmp_path, changes):
    with pytest.raises(CheckpointError, match="incomplete or from an incompatible version"):
        checkpoint.load(_edited(saved, tmp_path, **changes))


def test_missing_classes(saved, tmp_path):
    payload = torch.load(saved, weights_only=True)
    del payload["classes"]
    path = tmp_path / "noclasses.pt"
    torch.save(payload, path)
    with pytest.raises(CheckpointError, match="incomplete"):
        checkpoint.load(path)


def test_model_file_gone(saved, tmp_path):
    config = CONFIG.replace(model=str(tmp_path / "gone.py") + ":Net").to_dict()
    with pytest.raises(CheckpointError, match="needs the model"):
        checkpoint.load(_edited(saved, tmp_path, config=config), trust_model_code=True)


def test_user_model_code_is_not_imported_unless_trusted(saved, tmp_path):
    marker = tmp_path / "imported.txt"
    model_file = tmp_path / "net.py"
    model_file.write_text(f"open({str(marker)!r}, 'w').write('ran')\n"
                          "from workbench.core.domain.model import SandwichNet as Net\n")
    config = CONFIG.replace(model=f"{model_file}:Net").to_dict()
    path = _edited(saved, tmp_path, config=config)
    with pytest.raises(checkpoint.UntrustedModelCode, match="trust"):
        checkpoint.load(path)
    assert not marker.exists()  # refusing happened before any import
    assert checkpoint.load(path, trust_model_code=True).config.model == f"{model_file}:Net"
    assert marker.read_text() == "ran"


def test_folder_and_missing_path(tmp_path):
    with pytest.raises(CheckpointError, match="is a folder"):
        checkpoint.load(tmp_path)
    with pytest.raises(CheckpointError, match="does not exist"):
        checkpoint.load(tmp_path / "nope.pt")


@pytest.mark.parametrize("value", [float("nan"), float("-inf")])
def test_weights_that_are_not_finite_are_refused_naming_the_tensor(tmp_path, value):
    """Regression: the checkpoint of a run that blew up loaded, and predicted '0 (nan%)' for every image."""
    model = _model()
    with torch.no_grad():
        model.core_block.fc1.weight[3, 5] = value
    path = _save(tmp_path / "diverged.pt", model)
    with pytest.raises(CheckpointError, match=r"the weights in diverged.pt are not finite \(NaN or inf in "
                                              r"core_block.fc1.weight\): the run that wrote it diverged") as info:
        checkpoint.load(path)
    assert "lower learning rate" in info.value.hint


def _repacked(source: Path, target: Path, **extra_tensors) -> Path:
    """`source` with `extra_tensors` in its state_dict, its zip entries deflated (torch.save stores them as is)."""
    payload = torch.load(source, weights_only=True)
    payload["state_dict"].update(extra_tensors)
    buffer = io.BytesIO()
    torch.save(payload, buffer)
    with zipfile.ZipFile(buffer) as stored, zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as deflated:
        for entry in stored.infolist():
            deflated.writestr(entry.filename, stored.read(entry.filename))
    return target


def test_a_small_file_declaring_huge_tensors_is_refused_before_they_are_read(saved, tmp_path, monkeypatch):
    """Regression: a 2.1 MB checkpoint whose entries inflate to 2 GiB was read into memory (2.9 GB peak RSS)
    before it was refused. The zip's declared sizes are now checked first; torch.load is never called."""
    bomb = _repacked(saved, tmp_path / "bomb.pt", padding=torch.zeros(2**22))  # 16 MiB of zeros
    assert bomb.stat().st_size < 2**17  # in under 128 KiB
    loads = []
    monkeypatch.setattr(checkpoint.torch, "load", lambda *args, **kwargs: loads.append(args))
    with pytest.raises(CheckpointError, match=rf"bomb.pt declares 16,\d{{3}},\d{{3}} bytes of contents in a file of "
                                              rf"{bomb.stat().st_size:,} bytes: .* it was not read"):
        checkpoint.load(bomb)
    assert loads == []


def test_a_checkpoint_repacked_with_compression_still_loads(saved, tmp_path):
    repacked = _repacked(saved, tmp_path / "deflated.pt")
    assert checkpoint.load(repacked).classes == CLASSES


def test_write_text_atomic(tmp_path):
    target = tmp_path / "sub" / "metrics.json"
    write_text_atomic(target, json.dumps({"a": 1}))
    assert json.loads(target.read_text()) == {"a": 1}
    assert [p.name for p in target.parent.iterdir()] == ["metrics.json"]


def test_any_garbage_file_is_a_checkpoint_error(tmp_path):
    candidates = [b"hello world\n"] + [random.Random(seed).randbytes(1000) for seed in range(40)]
    escaped = []
    for i, data in enumerate(candidates):
        path = tmp_path / f"garbage{i}.pt"
        path.write_bytes(data)
        try:
            checkpoint.load(path)
        except CheckpointError:
            pass
        except Exception as exc:  # noqa: BLE001 - the point of the test
            escaped.append((i, type(exc).__name__))
        else:
            escaped.append((i, "loaded"))  # garbage that loads is as wrong as garbage that crashes
    assert escaped == []


@pytest.mark.parametrize("changes", [{"format_version": "2"}, {"state_dict": [1, 2, 3]}])
def test_malformed_payload_fields_are_checkpoint_errors(saved, tmp_path, changes):
    with pytest.raises(CheckpointError):
        checkpoint.load(_edited(saved, tmp_path, **changes))


def test_unwritable_folder_is_an_io_error_naming_the_path(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    target = blocker / "run" / "checkpoint.pt"
    with pytest.raises(checkpoint.CheckpointWriteError) as info:
        _save(target)
    assert info.value.kind == "io" and str(target) in str(info.value) and info.value.hint
