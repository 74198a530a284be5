"""The datasets Workbench knows, as a plain table: names, titles, classes. Torch-free.

The setting `dataset` offers these names (the setup form lists their titles, the CLI its names); reading the
images is `domain.data`'s job.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .errors import WorkbenchError


class DataError(WorkbenchError):
    """A dataset that cannot be read; the message says what is missing and what to do instead."""

    kind = "data"


@dataclass(frozen=True)
class DatasetInfo:
    name: str
    title: str
    classes: tuple[str, ...]
    needs_root: bool = False  # idx / imagefolder: meaningless without --data-root
    has_test: bool = True  # a test split of its own (else evaluate on the validation split)


DIGITS = tuple(str(d) for d in range(10))
CATALOGUE: dict[str, DatasetInfo] = {info.name: info for info in (
    DatasetInfo("mnist-sample", "MNIST sample (bundled, 5,000 digits)", DIGITS, has_test=False),
    DatasetInfo("mnist", "MNIST (torchvision)", DIGITS),
    DatasetInfo("fashion-mnist", "Fashion-MNIST (torchvision)", (
        "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot")),
    DatasetInfo("kmnist", "KMNIST (torchvision)", ("o", "ki", "su", "tsu", "na", "ha", "ma", "ya", "re", "wo")),
    DatasetInfo("idx", "IDX folder (--data-root)", DIGITS, needs_root=True),
    DatasetInfo("imagefolder", "Image folder, one subfolder per class (--data-root)", (), needs_root=True,
                has_test=False),
)}


def dataset_info(name: str) -> DatasetInfo:
    info = CATALOGUE.get(name)
    if info is None:
        raise DataError(f"unknown dataset '{name}' (choose one of: {', '.join(CATALOGUE)})")
    return info


DATA_FOLDER = "a data folder (Data folder in the app, --data-root on the command line)"


def checked_root(info: DatasetInfo, data_root: str | None) -> Path | None:
    """The data folder a dataset reads, checked before anything loads (torch-free: the command line and the form
    say a missing folder at once, not after PyTorch has started); None where the dataset needs none."""
    if data_root is None:
        if info.needs_root:
            raise DataError(f"dataset '{info.name}' reads a folder: choose {DATA_FOLDER}")
        return None
    root = Path(data_root).expanduser()
    if not root.is_dir():
        raise DataError(f"data root '{root}' does not exist or is not a folder")
    return root
