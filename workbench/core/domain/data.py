"""Datasets and the device-resident batch loader.

MNIST-sized sets fit in memory many times over, so a run keeps the whole set on the device as one uint8 tensor and
draws batches as index slices of a per-epoch permutation: no per-sample `__getitem__`, no worker processes, no
host→device copy per step. Every dataset arrives here as a `Split` of (N, 28, 28) uint8 images and int64 labels.
"""

from __future__ import annotations

import gzip
import math
import os
import re
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

import numpy as np
import torch
import torch.utils.data

from ..ground import paths
from ..ground.datasets import (CATALOGUE, DATA_FOLDER, DIGITS, DataError, DatasetInfo,  # noqa: F401
                               checked_root, dataset_info)
from ..ground.errors import first_line
from ..ground.resources import resource_path

VAL_FRACTION = 0.1  # hold-out from a train split when a dataset has no validation split of its own
SPLIT_SEED = 1234  # fixed, independent of the run's seed: every run validates on the same images
SPLITS = ("train", "val", "test")


@dataclass(frozen=True)
class Split:
    images: torch.Tensor  # (N, 28, 28) uint8
    labels: torch.Tensor  # (N,) int64

    def __len__(self) -> int:
        return int(self.labels.shape[0])

    def subset(self, index: torch.Tensor) -> "Split":
        return Split(self.images[index], self.labels[index])


# Said to both the CLI and the window: each of them names the data folder its own way (--data-root, Data folder).
OFFLINE_CHOICES = (f"the bundled sample (mnist-sample); or {DATA_FOLDER} holding a torchvision layout "
                   "(e.g. FOLDER/MNIST/raw/train-images-idx3-ubyte.gz); or the IDX folder dataset (idx) with "
                   "IDX files in such a folder")


def load_split(name: str, split: str, data_root: str | None = None) -> Split:
    """One split ("train", "val" or "test") of a dataset, on the CPU."""
    info = dataset_info(name)
    if split not in SPLITS:
        raise DataError(f"unknown split '{split}' (choose one of: {', '.join(SPLITS)})")
    root = checked_root(info, data_root)
    if name == "mnist-sample":
        return _mnist_sample(split)
    read = _reader(name, root)
    if split == "test":
        test = read("test")
        if test is None:
            raise DataError(f"{name} has no test split here (use --split val)")
        return _checked_labels(test, name, data_root, "test")
    train, val = _hold_out(_checked_labels(read("train"), name, data_root, "train"), name)
    return train if split == "train" else val


def load_splits(name: str, data_root: str | None = None) -> tuple[Split, Split]:
    """The train and val splits together: a run needs both, and both come from one read (and, for an image
    folder, one decode) of the training part."""
    root = checked_root(dataset_info(name), data_root)
    if name == "mnist-sample":
        return _mnist_sample("train"), _mnist_sample("val")
    return _hold_out(_checked_labels(_reader(name, root)("train"), name, data_root, "train"), name)


def _checked_labels(split: Split | None, name: str, data_root: str | None, which: str) -> Split | None:
    """Refuse labels the dataset has no class for, as the data is loaded: on a GPU such a label trips a
    device-side assert in the loss that kills the process's CUDA context (every later CUDA call fails), and on the
    CPU it fails mid-run with an index error. One min/max per split; the bad values are only listed on failure."""
    if split is None or not len(split):
        return split
    count = len(classes_of(name, data_root))
    low, high = int(split.labels.min()), int(split.labels.max())
    if low >= 0 and high < count:
        return split
    labels = split.labels
    bad = torch.unique(labels[(labels < 0) | (labels >= count)]).tolist()
    shown = ", ".join(str(v) for v in bad[:8]) + (", …" if len(bad) > 8 else "")
    where = f"{data_root} ({name})" if data_root else name
    raise DataError(
        f"the {which} labels in {where} include {shown}, outside 0…{count - 1}: {name} has {count} classes",
        "fix the label file so that every label is a class number from 0 to "
        f"{count - 1}, or remove the samples with other labels" if name == "idx"
        else f"use a copy of {name} whose labels are 0…{count - 1}")


def check_classes(model_classes: tuple[str, ...], dataset_classes: tuple[str, ...], dataset: str) -> None:
    """Refuse to score a model on a dataset whose classes are not the ones it was trained on: label i would be
    compared with the model's class i, and the accuracy and confusion matrix would be silently wrong. IDX files
    carry numbered labels only (any MNIST-format set): there only the number of classes can be compared."""
    same = (len(model_classes) == len(dataset_classes) if dataset == "idx"
            else tuple(model_classes) == tuple(dataset_classes))
    if not same:
        raise DataError(
            f"the model was trained on {len(model_classes)} classes ({_names(model_classes)}) but {dataset} has "
            f"{len(dataset_classes)} ({_names(dataset_classes)})",
            "evaluate on the dataset the model was trained on, or one with the same class folders")


def _names(classes: tuple[str, ...], shown: int = 8) -> str:
    return ", ".join(classes[:shown]) + (", …" if len(classes) > shown else "")


def classes_of(name: str, data_root: str | None = None) -> tuple[str, ...]:
    info = dataset_info(name)
    if name == "imagefolder":
        return tuple(sorted(p.name for p in checked_root(info, data_root).iterdir() if p.is_dir()))
    return info.classes


# -- the bundled sample -----------------------------------------------------------------------------------------
def _mnist_sample(split: str) -> Split:
    """torchvision reads the bundled IDX files: `train-*` is the 4,000-image training part, `t10k-*` the 1,000
    held-out validation images (a fixed-seed 80/20 split made by scripts/make_mnist_sample.py)."""
    if split == "test":
        raise DataError("mnist-sample has no separate test split: its 1,000 held-out images are the 'val' split "
                        "(use --split val, or evaluate on an IDX folder with --dataset idx --data-root DIR)")
    from torchvision.datasets import MNIST

    ds = MNIST(str(resource_path("mnist_sample")), train=(split == "train"), download=False)
    return Split(ds.data.contiguous(), ds.targets.long())


# -- torchvision datasets ---------------------------------------------------------------------------------------
def _torchvision(name: str, root: Path | None, which: str) -> Split:
    from torchvision import datasets

    cls = {"mnist": datasets.MNIST, "fashion-mnist": datasets.FashionMNIST, "kmnist": datasets.KMNIST}[name]
    target = root or paths.cache_dir() / "datasets"
    try:
        # download=True also unpacks *.gz files already present under root (checked by md5): no network needed.
        ds = cls(str(target), train=(which == "train"), download=True)
    except Exception as exc:  # torchvision raises RuntimeError/URLError/OSError for offline or damaged folders
        where = target / cls.__name__ / "raw"
        raise DataError(
            f"could not read or download {name} into {where}: {first_line(exc)}. "
            f"No network? Offline choices: {OFFLINE_CHOICES}") from None
    return Split(ds.data.contiguous(), ds.targets.long())


# -- IDX folders ------------------------------------------------------------------------------------------------
_IDX_TYPES = {0x08: np.uint8, 0x09: np.int8, 0x0B: np.dtype(">i2"), 0x0C: np.dtype(">i4"),
              0x0D: np.dtype(">f4"), 0x0E: np.dtype(">f8")}


MAX_IDX_BYTES = 4 * 1024**3  # a header claiming more is refused before anything is read or decompressed


def read_idx(path: Path) -> np.ndarray:
    """An IDX file (optionally gzip-compressed) as a numpy array.

    The header is read and checked first: a file whose dimensions claim more than MAX_IDX_BYTES (or overflow) is
    refused before its body is read, and a gzip body is decompressed only up to what the header says (plus one
    byte, to tell a padded file), so a small file can never make Workbench hold gigabytes."""
    try:
        with path.open("rb") as plain:
            compressed = plain.read(2) == b"\x1f\x8b"
        with (gzip.open(path, "rb") if compressed else path.open("rb")) as stream:
            head = stream.read(4)
            if len(head) < 4 or head[0:2] != b"\x00\x00" or head[2] not in _IDX_TYPES or not 1 <= head[3] <= 4:
                raise DataError(f"{path} is not an IDX file (bad magic number)")
            ndim = head[3]
            dims = stream.read(4 * ndim)
            if len(dims) < 4 * ndim:
                raise DataError(f"{path} is truncated: its header stops short")
            shape = tuple(int.from_bytes(dims[4 * i: 4 + 4 * i], "big") for i in range(ndim))
            dtype = np.dtype(_IDX_TYPES[head[2]])
            count = math.prod(shape)
            if count * dtype.itemsize > MAX_IDX_BYTES:
                raise DataError(f"{path} claims {' × '.join(map(str, shape))} values "
                                f"({count * dtype.itemsize / 1024**3:,.1f} GiB); IDX files up to "
                                f"{MAX_IDX_BYTES // 1024**3} GiB are read — the file is damaged or too large")
            body = stream.read(count * dtype.itemsize + 1)
    except (OSError, EOFError, zlib.error) as exc:
        if compressed:
            raise DataError(f"{path} is a damaged gzip file ({exc})") from None
        raise DataError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None
    if len(body) != count * dtype.itemsize:
        raise DataError(f"{path} is truncated or padded: header says {shape}, file holds "
                        f"{len(body) // dtype.itemsize}{'+' if len(body) > count * dtype.itemsize else ''} values")
    return np.frombuffer(body, dtype=dtype, count=count).reshape(shape)


_IDX_NAME = re.compile(r"^(?P<prefix>.*?)[-_.]?(?P<kind>images|labels)[-_.]idx(?P<n>[13])[-_.]ubyte(\.gz)?$")


def _idx_folder(root: Path, which: str) -> Split | None:
    """Pairs `<prefix>-images-idx3-ubyte[.gz]` with `<prefix>-labels-idx1-ubyte[.gz]`; `train*` is the training
    split, `t10k*`/`test*` the test split."""
    pairs: dict[str, dict[str, Path]] = {}
    for path in sorted(root.iterdir()):
        match = _IDX_NAME.match(path.name)
        if match and path.is_file():
            pairs.setdefault(match["prefix"], {})[match["kind"]] = path
    complete = {p: f for p, f in pairs.items() if len(f) == 2}
    if not complete:
        raise DataError(f"no IDX image/label pair in {root} (expected e.g. t10k-images-idx3-ubyte.gz and "
                        f"t10k-labels-idx1-ubyte.gz)")
    wanted = ("train",) if which == "train" else ("t10k", "test")
    prefix = next((p for p in complete if p.lower().startswith(wanted)), None)
    if prefix is None:
        return None
    images = read_idx(complete[prefix]["images"])
    labels = read_idx(complete[prefix]["labels"])
    if images.ndim != 3 or images.shape[1:] != (28, 28) or images.dtype != np.uint8:
        raise DataError(f"{complete[prefix]['images']} holds {images.shape} {images.dtype}; expected N×28×28 uint8")
    if labels.dtype.kind not in "iu":
        raise DataError(f"{complete[prefix]['labels']} holds {labels.dtype.name} labels; expected whole numbers "
                        f"(IDX type uint8, int8, int16 or int32)")
    if labels.shape != (images.shape[0],):
        raise DataError(f"{complete[prefix]['labels']} has {labels.shape[0]} labels for {images.shape[0]} images")
    return Split(torch.from_numpy(images.copy()), torch.from_numpy(labels.astype(np.int64)))


# -- image folders ----------------------------------------------------------------------------------------------
def image_folder_files(root: Path) -> tuple[tuple[str, ...], list[tuple[Path, int]]]:
    """The classes (sorted subfolder names) and every (file, label) under them: what the loader decodes, and what
    the Dataset preview counts per class to tell an empty class folder from one whose files could not be read."""
    classes = classes_of("imagefolder", str(root))
    return classes, [(path, label) for label, cls in enumerate(classes)
                     for path in sorted((root / cls).iterdir()) if path.is_file()]


def _image_folder(root: Path) -> tuple[Split, list[tuple[Path, str]]]:
    """Class subfolders of images, each decoded with the Predict preprocessing (so both see the same pixels), and
    the files that could not be used with the reason why: training skips them, the Dataset preview lists them.
    Decoding runs in a DataLoader with worker processes; the result is held in memory like every other set."""
    from torch.utils.data import DataLoader

    _, files = image_folder_files(root)
    if not files:
        raise DataError(f"no images under {root} (expected one subfolder per class holding image files)")
    workers = min(4, os.cpu_count() or 1) if len(files) > 2000 else 0
    batches = list(DataLoader(_DecodedImages(files), batch_size=512, num_workers=workers))
    images = torch.cat([b[0] for b in batches])
    labels = torch.cat([b[1] for b in batches]).long()
    reasons = [reason for b in batches for reason in b[2]]
    skipped = [(path, reason) for (path, _), reason in zip(files, reasons) if reason]
    keep = labels >= 0
    if not keep.any():
        raise DataError(f"none of the {len(files)} files under {root} could be read as an image "
                        f"(first: {skipped[0][1]})")
    return Split(images[keep].contiguous(), labels[keep]), skipped


class _DecodedImages(torch.utils.data.Dataset):
    """Image files → (MNIST-style 28×28 uint8, label, ""); an unreadable file gets label -1 and the reason why, and
    is dropped afterwards. Module level so that DataLoader workers can pickle it under the 'spawn' start method."""

    def __init__(self, files: list[tuple[Path, int]]):
        self.files = files

    def __len__(self) -> int:
        return len(self.files)

    def __getitem__(self, i: int):
        from ..ground.images import ImageError, load_digit

        path, label = self.files[i]
        try:
            return torch.from_numpy(load_digit(path)), label, ""
        except ImageError as exc:
            return torch.zeros(28, 28, dtype=torch.uint8), -1, str(exc)


# -- splitting --------------------------------------------------------------------------------------------------
def _reader(name: str, root: Path | None) -> Callable[[str], Split | None]:
    """`read("train")` / `read("test")`: a dataset's own parts (None for a part it does not have)."""
    if name == "imagefolder":
        return lambda which: _image_folder(root)[0] if which == "train" else None
    if name == "idx":
        return lambda which: _idx_folder(root, which)
    return lambda which: _torchvision(name, root, which)


def _hold_out(full: Split | None, name: str) -> tuple[Split, Split]:
    """(train, val) from a dataset's training part: a fixed-seed hold-out, the same images in every run."""
    if full is None:
        raise DataError(f"{name} has no training split here (found only a test split)")
    order = torch.randperm(len(full), generator=torch.Generator().manual_seed(SPLIT_SEED))
    n_val = max(1, int(len(full) * VAL_FRACTION))
    return full.subset(order[n_val:]), full.subset(order[:n_val])


# -- the device-resident loader ---------------------------------------------------------------------------------
class DeviceBatches:
    """The whole split as one tensor on the device; batches are slices of a per-epoch permutation.

    The permutation is drawn on the CPU from a generator seeded by (seed, epoch), so a run sees the same batches
    on every device. Training drops the last partial batch: one batch shape means one compiled graph.
    """

    def __init__(self, split: Split, batch_size: int, device: torch.device, *, seed: int = 0, shuffle: bool = True,
                 drop_last: bool = True, rank: int = 0, world_size: int = 1):
        self.images = split.images.to(device, non_blocking=True)
        self.labels = split.labels.to(device, non_blocking=True)
        self.batch_size = batch_size
        self.device = device
        self.seed = seed
        self.shuffle = shuffle
        self.drop_last = drop_last
        self.rank = rank
        self.world_size = world_size

    @property
    def shard_size(self) -> int:
        """Samples this rank sees per epoch: an equal share, so every rank takes the same number of steps."""
        return len(self.labels) // self.world_size

    def __len__(self) -> int:
        b = self.batch_size
        if self.drop_last:
            return self.shard_size // b
        return -(-len(range(self.rank, len(self.labels), self.world_size)) // b)

    def epoch(self, epoch: int) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        n = len(self.labels)
        if self.shuffle:
            order = torch.randperm(n, generator=torch.Generator().manual_seed((self.seed * 100_003 + epoch) % 2**63))
        else:
            order = torch.arange(n)
        # Each rank takes every world_size-th sample of the same permutation: disjoint shards, and batch i of all
        # ranks together is batch i of a single process with the global batch. Training keeps the shards equal
        # (every rank takes the same number of steps); evaluation keeps every sample.
        end = self.shard_size * self.world_size if self.drop_last else n
        order = order[self.rank: end: self.world_size].to(self.device)
        for i in range(len(self)):
            index = order[i * self.batch_size: (i + 1) * self.batch_size]
            yield self.images[index], self.labels[index]
