"""The Dataset preview: what a run will train on, before it starts.

Sample images per class, the class counts of each split, the image format, and what is wrong with the data (one
class, empty classes, unreadable files, very unbalanced classes), each as a sentence with what to do. The parts are
read through `data`'s own readers and hold-out, so the counts and pixels are exactly those a run gets. Runs in a
kernel; the answer is a DatasetPreview (ground/answers.py: it crosses a socket), and a dataset that cannot be read
at all comes back as an error problem, not an exception, so the window can show it where the preview would be.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
from PIL import Image

from ..ground import pixels
from ..ground.answers import DataFormat, DataProblem, DatasetPreview
from ..ground.datasets import CATALOGUE, DataError, dataset_info
from . import data
from .data import Split

SAMPLES_PER_CLASS = 8
UNBALANCED_RATIO = 5  # largest class / smallest non-empty class at or above this is worth a warning
HEADERS_CHECKED = 1000  # image-folder files whose headers are read for the format summary (spread over the folder)
STORED = "28×28 grayscale uint8"
SHOWN_FILES = 5
MODES = {"L": "grey", "LA": "grey+alpha", "1": "black/white", "P": "palette", "RGB": "colour", "RGBA": "colour+alpha",
         "I;16": "16-bit grey", "I": "32-bit grey"}  # Pillow's mode names, in words


def dataset_preview(dataset: str, data_root: str | None = None) -> DatasetPreview:
    """The preview's answer; a DataError (missing root, missing or damaged files) becomes its one error problem."""
    try:
        return _preview(dataset, data_root)
    except DataError as exc:
        info = CATALOGUE.get(dataset)
        return _answer(dataset, info.title if info else dataset, [], {}, None, [],
                       [_problem("error", str(exc), exc.hint or "choose another dataset or data folder in Setup")])


def _preview(dataset: str, data_root: str | None) -> DatasetPreview:
    info = dataset_info(dataset)
    parts, skipped = _parts(dataset, data_root)
    classes = data.classes_of(dataset, data_root)
    counts = {split: np.bincount(part.labels.numpy(), minlength=len(classes)).tolist()
              for split, part in parts.items()}
    totals = [sum(per_split) for per_split in zip(*counts.values())]
    files = data.image_folder_files(data.checked_root(info, data_root))[1] if dataset == "imagefolder" else []
    problems = (_class_problems(classes, totals, files, data_root) + _skipped_problems(skipped, len(files))
                + _balance_problems(classes, totals))
    return _answer(dataset, info.title, list(classes), counts, _format(dataset, data_root, files),
                   _samples(parts.values(), len(classes)), problems)


def _answer(dataset: str, title: str, classes: list[str], counts: dict, fmt: DataFormat | None, samples: list,
            problems: list[DataProblem]) -> DatasetPreview:
    return DatasetPreview(dataset=dataset, title=title, classes=tuple(classes),
                          counts={split: tuple(per_class) for split, per_class in counts.items()}, format=fmt,
                          samples=tuple(tuple(images) for images in samples), problems=tuple(problems))


def _problem(level: str, message: str, hint: str) -> DataProblem:
    return DataProblem(level, message, hint)


# -- reading ----------------------------------------------------------------------------------------------------
def _parts(dataset: str, data_root: str | None) -> tuple[dict[str, Split], list[tuple[Path, str]]]:
    """{"train", "val"[, "test"]} as a run gets them, and the image-folder files the reader skipped (with why)."""
    if dataset == "mnist-sample":
        train, val = data.load_splits(dataset)
        return {"train": train, "val": val}, []
    root = data.checked_root(dataset_info(dataset), data_root)
    if dataset == "imagefolder":
        (full, skipped), test = data._image_folder(root), None
    else:
        read = data._reader(dataset, root)
        full, test, skipped = read("train"), read("test"), []
    train, val = data._hold_out(data._checked_labels(full, dataset, data_root, "train"), dataset)
    test = data._checked_labels(test, dataset, data_root, "test")
    return {"train": train, "val": val} | ({"test": test} if test is not None else {}), skipped


def _samples(parts, n_classes: int) -> list[list[str]]:
    """Up to SAMPLES_PER_CLASS images per class, train first (then val, test for a class train lacks), each as
    base64 of its 784 bytes."""
    shown: list[list[str]] = [[] for _ in range(n_classes)]
    for part in parts:
        labels = part.labels.numpy()
        for label, images in enumerate(shown):
            for i in np.flatnonzero(labels == label)[:SAMPLES_PER_CLASS - len(images)]:
                images.append(pixels.encode(part.images[int(i)].numpy()))
    return shown


# -- what to tell the user --------------------------------------------------------------------------------------
def _class_problems(classes: tuple[str, ...], totals: list[int], files: list[tuple[Path, int]],
                    data_root: str | None) -> list[DataProblem]:
    """One class is an error (nothing to tell apart); an empty class gets an output the model never learns."""
    problems = []
    if len(classes) == 1:
        problems.append(_problem("error", f"only one class ('{classes[0]}'): a classifier needs two or more",
                                 f"add one subfolder per class under {data_root}, each holding that class's images"))
    in_folder = Counter(label for _, label in files)
    for label, name in enumerate(classes):
        if totals[label]:
            continue
        unread = in_folder[label]
        why = f" (its {unread} {'file' if unread == 1 else 'files'} could not be read)" if unread else ""
        hint = (f"put images of '{name}' into {Path(data_root) / name}, or remove that folder" if files
                else "use a copy of the dataset that has samples of every class")
        problems.append(_problem("warning", f"class '{name}' has no images{why}: the model gets an output for it "
                                            f"that it never learns", hint))
    return problems


def _skipped_problems(skipped: list[tuple[Path, str]], n_files: int) -> list[DataProblem]:
    if not skipped:
        return []
    listed = "; ".join(_skipped_file(path, reason) for path, reason in skipped[:SHOWN_FILES])
    more = f"; and {len(skipped) - SHOWN_FILES} more" if len(skipped) > SHOWN_FILES else ""
    verb = "is" if len(skipped) == 1 else "are"
    return [_problem("warning", f"{len(skipped)} of {n_files} files could not be read and {verb} left out: "
                                f"{listed}{more}",
                     "fix or remove these files (training skips them); PNG, JPEG, BMP, GIF and WebP are read")]


def _skipped_file(path: Path, reason: str) -> str:
    """'cats/a.png is empty (0 bytes)': the class folder, then the reader's own sentence (which names the file)."""
    where = f"{path.parent.name}/{path.name}"
    return f"{path.parent.name}/{reason}" if reason.startswith(path.name + " ") else f"{where}: {reason}"


def _balance_problems(classes: tuple[str, ...], totals: list[int]) -> list[DataProblem]:
    present = [(count, name) for name, count in zip(classes, totals) if count]
    if len(present) < 2:
        return []
    (low, small), (high, large) = min(present), max(present)
    if high < UNBALANCED_RATIO * low:
        return []
    return [_problem("warning", f"very unbalanced classes: '{large}' has {high:,} images, '{small}' only {low:,} "
                                f"({high / low:.0f}×): the model will lean towards the large classes",
                     "add images to the small classes or leave some out of the large ones; check the per-class "
                     "accuracy after training, not only the overall one")]


# -- the image format -------------------------------------------------------------------------------------------
def _format(dataset: str, data_root: str | None, files: list[tuple[Path, int]]) -> DataFormat:
    """What the network sees (always STORED) and what the source files were."""
    if dataset == "mnist-sample":
        source = "IDX files bundled with Workbench"
    elif dataset == "idx":
        source = f"IDX files in {data_root}"
    elif dataset == "imagefolder":
        source = _folder_source(files)
    else:
        where = f"under {data_root}" if data_root else "in Workbench's download cache"
        source = f"IDX files in torchvision's layout {where}"
    return DataFormat(STORED, source)


def _folder_source(files: list[tuple[Path, int]]) -> str:
    """'20 image files (PNG 18, JPEG 2; sizes 28×28 grey 10, 64×64 colour 10), each fitted into 28×28 …', from the
    headers only (no decoding) of at most HEADERS_CHECKED files spread evenly over the folder."""
    checked = files[::max(1, -(-len(files) // HEADERS_CHECKED))]
    kinds, sizes = Counter(), Counter()
    for path, _ in checked:
        try:
            with Image.open(path) as img:
                kinds[img.format or "?"] += 1
                sizes[f"{img.width}×{img.height} {MODES.get(img.mode, img.mode)}"] += 1
        except Exception:  # unreadable files are reported by the decoder, with the reason
            continue
    of = f", of {len(checked):,} checked" if len(checked) < len(files) else ""
    return (f"{len(files):,} image files ({_tally(kinds)}; sizes {_tally(sizes)}{of}), each fitted into 28×28 as "
            f"Predict does")


def _tally(counter: Counter, shown: int = 4) -> str:
    common = counter.most_common(shown)
    rest = len(counter) - len(common)
    return ", ".join(f"{key} {n:,}" for key, n in common) + (f", {rest} more" if rest > 0 else "") or "none readable"
