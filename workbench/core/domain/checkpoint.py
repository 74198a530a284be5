"""Checkpoints: the state_dict plus the config that built it, written atomically, read with weights_only=True.
A run's checkpoint also carries its training state (optimizer, LR schedule, GradScaler, random streams and where
in its epochs it was), so that a stopped or finished run can be continued exactly (engine: config.resume).

A compiled module is never pickled (unpickling runs code, and `torch.load(weights_only=True)` rightly refuses
it); the config carries the model's arguments so the network can be rebuilt before the weights go in.
"""

from __future__ import annotations

import errno
import pickle
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from ..ground.atomic import atomic_path
from ..ground.config import RESUME_MAY_CHANGE, ConfigError, TrainConfig, resume_conflicts
from ..ground.errors import WorkbenchError, first_line
from ..ground.results import RunResults
from .model import ModelSpecError, model_for

FORMAT = "workbench-checkpoint"
FORMAT_VERSION = 1
# torch.save stores a checkpoint's tensors uncompressed, so what its entries declare adds up to less than the file.
# A copy re-packed with compression is let through up to this factor (weights hardly compress); a file declaring
# more is a zip bomb, refused before torch.load allocates what it declares.
MAX_INFLATION = 4


class CheckpointError(WorkbenchError):
    """A file that is not a usable Workbench checkpoint; the message says why."""


class CheckpointWriteError(WorkbenchError):
    """A checkpoint that could not be written (disk full, folder removed or read-only): the path and the reason."""

    kind = "io"


@dataclass(frozen=True)
class Checkpoint:
    config: TrainConfig
    state_dict: dict
    results: RunResults  # the run's figures as it ended (without the checkpoint's own path: it was being written)
    versions: dict
    classes: tuple[str, ...]
    training_state: dict | None = None  # None: written before checkpoints carried it (or exported without it)

    def build_model(self, device: torch.device | str = "cpu") -> nn.Module:
        """The trained network in eval mode (eager: safe to call from any thread)."""
        model = model_for(self.config, len(self.classes))
        try:
            model.load_state_dict(self.state_dict)
        except (RuntimeError, TypeError, KeyError) as exc:
            raise CheckpointError(f"the weights do not fit the network described by the checkpoint's config: "
                                  f"{_mismatch_detail(exc)}") from None
        return model.to(device).eval()


def _refused_global(exc: BaseException) -> str | None:
    """The Python object torch's safe unpickler refused to import (e.g. 'GLOBAL posix.system'), if any.

    torch words this several ways ("Unsupported global: GLOBAL x.y was not an allowed global", "unsupported
    GLOBAL posix.system whose module posix is blocked"); garbage bytes give other messages and return None."""
    found = re.search(r"GLOBAL\s+([\w.]+)", str(exc), flags=re.IGNORECASE)
    return f"GLOBAL {found.group(1)}" if found else None


def _mismatch_detail(exc: BaseException) -> str:
    """load_state_dict's first line is just a heading; the first 'size mismatch'/'Missing key' line says what."""
    for line in str(exc).splitlines():
        line = line.strip()
        if line.startswith(("size mismatch", "Missing key", "Unexpected key")):
            return line
    return first_line(exc)


def save(path: str | Path, model: nn.Module, config: TrainConfig, *, results: RunResults, versions: dict,
         classes: tuple[str, ...], training_state: dict | None = None) -> Path:
    """Write `path` (.pt) and, beside it, the bare weights as `.safetensors` (safe for any other tool).
    `training_state`: what continuing the run needs besides the weights (plain data and tensors only)."""
    from safetensors.torch import save_file

    state = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
    payload = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "config": config.to_dict(),
        "state_dict": state,
        "metrics": results.to_dict(),
        "versions": dict(versions),
        "classes": list(classes),
    }
    if training_state is not None:
        payload["training_state"] = training_state
    path = Path(path)
    try:
        with atomic_path(path) as tmp:
            torch.save(payload, tmp)
        with atomic_path(path.with_suffix(".safetensors")) as tmp:
            save_file(state, str(tmp), metadata={"format": FORMAT, "config": config.to_json()})
    except (OSError, RuntimeError) as exc:  # torch's zip writer reports a failed write (a full disk) as RuntimeError
        raise CheckpointWriteError(f"could not write the checkpoint {path}: {_write_failure(exc)}",
                                   "free some disk space or choose another output folder") from None
    return path


_ERRNO_WORDS = {errno.ENOSPC: "No space left on device", errno.EROFS: "Read-only file system",
                errno.EACCES: "Permission denied", errno.EPERM: "Operation not permitted"}
if hasattr(errno, "EDQUOT"):
    _ERRNO_WORDS[errno.EDQUOT] = "Disk quota exceeded"
# torch's zip writer says only that its write came up short ("[enforce fail at inline_container.cc:672] .
# unexpected pos 704 vs 598", "PytorchStreamWriter failed writing file data/0: file write failed"): the file it
# writes was created a moment before, so a short write is, in practice, a full disk.
_SHORT_WRITE = ("enforce fail", "file write failed", "unexpected pos", "no space left")


def _write_failure(exc: BaseException) -> str:
    """Why a checkpoint write failed, in words: never torch's internal assertion text."""
    if isinstance(exc, OSError):
        return exc.strerror or _ERRNO_WORDS.get(exc.errno) or first_line(exc)
    text = str(exc).lower()
    if any(marker in text for marker in _SHORT_WRITE):
        return "No space left on device (the write stopped short)"
    return first_line(exc)


def export(ckpt: Checkpoint, path: str | Path) -> Path:
    """Write a loaded checkpoint somewhere else, through the same atomic save (and its .safetensors twin), with
    its training state: the copy can be continued too."""
    return save(path, ckpt.build_model(), ckpt.config, results=ckpt.results, versions=ckpt.versions,
                classes=ckpt.classes, training_state=ckpt.training_state)


class UntrustedModelCode(CheckpointError):
    """The checkpoint's network is defined in a Python file; importing it would run that file's code."""

    def __init__(self, name: str, model_spec: str):
        self.model_spec = model_spec
        super().__init__(f"{name} needs the network defined in {model_spec.rpartition(':')[0]}; importing it runs "
                         f"that file's code, so it is not done unless you say you trust it",
                         "if you trust that file, pass --trust-model-code")


def load(path: str | Path, *, trust_model_code: bool = False) -> Checkpoint:
    """Read a checkpoint without executing anything in it; every failure becomes one CheckpointError.

    A checkpoint of a user-defined network names the Python file that defines it; that file is imported only
    when the caller says it trusts it (`trust_model_code`), never just because a checkpoint points at it."""
    path = Path(path)
    if path.is_dir():
        raise CheckpointError(f"{path} is a folder; pass the checkpoint file (e.g. {path / 'checkpoint.pt'})")
    if not path.is_file():
        raise CheckpointError(f"{path} does not exist")
    if path.stat().st_size == 0:
        raise CheckpointError(f"{path.name} is empty (0 bytes)")
    _check_declared_size(path)
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as exc:
        refused = _refused_global(exc)
        if refused is None:  # not a refused object: the bytes themselves make no sense
            raise CheckpointError(f"{path.name} is not a readable PyTorch file (damaged or truncated?): "
                                  f"{first_line(exc)}") from None
        raise CheckpointError(f"{path.name} was refused: it contains Python objects other than tensors and plain "
                              f"data ({refused}), which could run code when loaded") from None
    except Exception as exc:  # the safe unpickler raises many types on garbage (KeyError, IndexError, zip errors…)
        raise CheckpointError(f"{path.name} is not a readable PyTorch file (damaged or truncated?): "
                              f"{type(exc).__name__}: {first_line(exc)}") from None
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise CheckpointError(f"{path.name} is a PyTorch file but not a Workbench checkpoint "
                              f"(no '{FORMAT}' marker); export one from Workbench or `workbench train --out DIR`")
    version = payload.get("format_version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise CheckpointError(f"{path.name} has no valid format version ({version!r})")
    if version > FORMAT_VERSION:
        raise CheckpointError(f"{path.name} was written by a newer Workbench (format {version}); "
                              f"upgrade Workbench to read it")
    state = payload.get("state_dict")
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise CheckpointError(f"{path.name} has no usable weights (state_dict is not a mapping of tensors)")
    _check_finite(path, state)
    # A missing "classes" is reported below with the other missing fields; one that is there must be names.
    metrics, versions, classes = payload.get("metrics", {}), payload.get("versions", {}), payload.get("classes", [""])
    for name, value in (("metrics", metrics), ("versions", versions)):
        if not isinstance(value, dict):
            raise CheckpointError(f"{path.name} is damaged: its {name} are {type(value).__name__}, not a mapping")
    if not isinstance(classes, (list, tuple)) or not classes or not all(isinstance(c, str) for c in classes):
        raise CheckpointError(f"{path.name} is damaged: its classes are not a non-empty list of names")
    try:
        results = RunResults.from_dict(metrics)
    except ValueError as exc:
        raise CheckpointError(f"{path.name} is damaged: its metrics cannot be read: {exc}") from None
    training_state = payload.get("training_state")
    if training_state is not None and not isinstance(training_state, dict):
        raise CheckpointError(f"{path.name} is damaged: its training state is {type(training_state).__name__}, "
                              f"not a mapping")
    try:
        config = TrainConfig.from_dict(payload["config"])
        checkpoint = Checkpoint(config=config, state_dict=state, results=results, versions=versions,
                                classes=tuple(payload["classes"]), training_state=training_state)
    except (KeyError, TypeError, ConfigError) as exc:
        raise CheckpointError(f"{path.name} is incomplete or from an incompatible version: {exc}") from None
    if config.model != "sandwich" and not trust_model_code:
        raise UntrustedModelCode(path.name, config.model)
    try:
        checkpoint.build_model()  # fail now, with a clear message, rather than at the first prediction
    except ModelSpecError as exc:
        raise CheckpointError(f"{path.name} needs the model '{config.model}': {exc}") from None
    return checkpoint


def _check_declared_size(path: Path) -> None:
    """Refuse a checkpoint whose zip entries declare more bytes than MAX_INFLATION times the file, before torch.load
    allocates them (a 2 MB file inflating to 2 GiB was read whole before anything else was checked). A file that is
    not a readable zip (a legacy pickle, damage) is left to torch.load: its tensors are read from the file itself,
    so they can be no larger than it."""
    try:
        with zipfile.ZipFile(path) as archive:
            declared = sum(entry.file_size for entry in archive.infolist())
    except (zipfile.BadZipFile, OSError, ValueError, EOFError):
        return
    size = path.stat().st_size
    if declared > size * MAX_INFLATION:
        raise CheckpointError(f"{path.name} declares {declared:,} bytes of contents in a file of {size:,} bytes: a "
                              f"checkpoint's tensors are stored uncompressed, so it is damaged or crafted; it was "
                              f"not read",
                              "use the checkpoint.pt a run wrote, or export a fresh one from Workbench")


def _check_finite(path: Path, state: dict) -> None:
    """Weights with NaN or inf give every input the same meaningless answer ('0 (nan%)'): refuse them, naming the
    first such tensor. A run fails when its loss is no longer finite, but one stopped (or written by other code)
    before that was noticed keeps such weights."""
    for name, tensor in state.items():
        if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
            raise CheckpointError(f"the weights in {path.name} are not finite (NaN or inf in {name}): the run that "
                                  f"wrote it diverged",
                                  "retrain with a lower learning rate (try 10× smaller), or with AMP off")


def for_resume(config: TrainConfig) -> Checkpoint:
    """The checkpoint `config.resume` names, checked for continuing a run with `config`: it carries a training
    state, and nothing but how long it goes on and how it is compiled or measured differs (RESUME_MAY_CHANGE).
    Its model file is imported (the run builds the same model anyway)."""
    try:
        ckpt = load(config.resume, trust_model_code=True)
    except CheckpointError as exc:
        raise ConfigError("resume", f"cannot continue from {config.resume}: {exc}") from None
    if ckpt.training_state is None:
        raise ConfigError("resume", f"{config.resume} has no training state (written by an older Workbench or "
                                    f"exported): start a new run from scratch")
    conflicts = resume_conflicts(ckpt.config.to_dict(), config)
    if conflicts:
        raise ConfigError("resume", f"a continued run must keep the settings of the run it continues; changed: "
                                    f"{'; '.join(conflicts)}", ", ".join(RESUME_MAY_CHANGE[1:]) + " may change")
    return ckpt
