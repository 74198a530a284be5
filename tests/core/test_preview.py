"""The Dataset preview job: counts, samples, format and problems for every kind of dataset, computed in-process."""

from __future__ import annotations

import base64
import json

import numpy as np
import pytest

from workbench.core.domain import data
from workbench.core.domain.preview import dataset_preview
from workbench.core.ground.answers import DataFormat, DatasetPreview

from ..support.idx import idx_bytes


def _image_folder(root, samples_dir, per_class: dict[str, int]):
    """One subfolder per class holding that many copies of a bundled digit (a different digit per class)."""
    for digit, (cls, n) in enumerate(per_class.items()):
        (root / cls).mkdir(parents=True)
        for i in range(n):
            (root / cls / f"{i}.png").write_bytes((samples_dir / f"digit_{digit}.png").read_bytes())
    return str(root)


def _messages(answer: DatasetPreview, level: str) -> str:
    return "\n".join(p.message for p in answer.problems if p.level == level)


def _crosses_as_json(answer: DatasetPreview) -> None:
    """It crosses a socket as JSON, and reads back as the same answer on the other side."""
    assert DatasetPreview.from_dict(json.loads(json.dumps(answer.to_dict()))) == answer


def test_bundled_sample():
    answer = dataset_preview("mnist-sample")
    _crosses_as_json(answer)
    train, val = data.load_splits("mnist-sample")
    assert answer.classes == tuple("0123456789")
    assert set(answer.counts) == {"train", "val"}  # no test split of its own
    assert sum(answer.counts["train"]) == len(train) == 4000 and sum(answer.counts["val"]) == len(val)
    assert answer.counts["train"] == tuple(np.bincount(train.labels.numpy(), minlength=10).tolist())
    assert answer.split_sizes() == (4000, len(val))
    assert [len(s) for s in answer.samples] == [8] * 10
    for label, shown in enumerate(answer.samples):
        first = train.images[int(np.flatnonzero(train.labels.numpy() == label)[0])].numpy()
        assert np.frombuffer(base64.b64decode(shown[0]), np.uint8).reshape(28, 28).tolist() == first.tolist()
    assert isinstance(answer.format, DataFormat)
    assert answer.format.stored == "28×28 grayscale uint8" and "IDX" in answer.format.source
    assert answer.problems == ()


def test_image_folder_counts_samples_and_format(tmp_path, samples_dir):
    root = _image_folder(tmp_path, samples_dir, {"cats": 12, "dogs": 8})
    answer = dataset_preview("imagefolder", root)
    assert answer.classes == ("cats", "dogs")
    assert [a + b for a, b in zip(answer.counts["train"], answer.counts["val"])] == [12, 8]
    assert sum(answer.counts["val"]) == 2  # the run's own 10% hold-out
    assert [len(s) for s in answer.samples] == [8, 8]
    assert "20 image files (PNG 20; sizes 28×28 grey 20), each fitted into 28×28" in answer.format.source
    assert answer.problems == ()


def test_image_folder_with_one_class(tmp_path, samples_dir):
    answer = dataset_preview("imagefolder", _image_folder(tmp_path, samples_dir, {"cats": 5}))
    assert "only one class ('cats'): a classifier needs two or more" in _messages(answer, "error")
    assert answer.counts["train"] and len(answer.samples[0]) == 5  # still previewed


def test_image_folder_with_an_empty_class(tmp_path, samples_dir):
    answer = dataset_preview("imagefolder", _image_folder(tmp_path, samples_dir, {"cats": 5, "dogs": 0, "owls": 5}))
    warnings = _messages(answer, "warning")
    assert "class 'dogs' has no images:" in warnings and "cats" not in warnings and "owls" not in warnings
    assert answer.samples[1] == () and "dogs" in answer.problems[0].hint


def test_image_folder_with_unreadable_files(tmp_path, samples_dir):
    root = _image_folder(tmp_path, samples_dir, {"cats": 5, "dogs": 5, "owls": 0})
    (tmp_path / "cats" / "broken.png").write_bytes(b"\x89PNG not really")
    (tmp_path / "dogs" / "empty.png").write_bytes(b"")
    (tmp_path / "owls" / "notes.txt").write_text("not an image")
    answer = dataset_preview("imagefolder", root)
    warnings = _messages(answer, "warning")
    assert "3 of 13 files could not be read and are left out:" in warnings
    assert "cats/broken.png is not an image" in warnings and "dogs/empty.png is empty (0 bytes)" in warnings
    assert "class 'owls' has no images (its 1 file could not be read)" in warnings
    assert [a + b for a, b in zip(answer.counts["train"], answer.counts["val"])] == [5, 5, 0]


def test_image_folder_with_unbalanced_classes(tmp_path, samples_dir):
    answer = dataset_preview("imagefolder", _image_folder(tmp_path, samples_dir, {"cats": 30, "dogs": 3}))
    assert "very unbalanced classes: 'cats' has 30 images, 'dogs' only 3 (10×)" in _messages(answer, "warning")


def test_idx_folder(tmp_path):
    rng = np.random.default_rng(0)
    labels = np.repeat(np.arange(10, dtype=np.uint8), 5)
    (tmp_path / "train-images-idx3-ubyte").write_bytes(idx_bytes(rng.integers(0, 256, (50, 28, 28), np.uint8)))
    (tmp_path / "train-labels-idx1-ubyte").write_bytes(idx_bytes(labels))
    (tmp_path / "t10k-images-idx3-ubyte").write_bytes(idx_bytes(np.zeros((7, 28, 28), np.uint8)))
    (tmp_path / "t10k-labels-idx1-ubyte").write_bytes(idx_bytes(labels[:7]))
    answer = dataset_preview("idx", str(tmp_path))
    assert [a + b for a, b in zip(answer.counts["train"], answer.counts["val"])] == [5] * 10
    assert answer.counts["test"] == (5, 2) + (0,) * 8
    assert [len(s) for s in answer.samples] == [8, 7] + [5] * 8  # train and val first, then test, up to 8
    assert "IDX files in" in answer.format.source and answer.problems == ()


@pytest.mark.parametrize("dataset", ["idx", "imagefolder"])
def test_unreadable_dataset_is_an_error_problem(tmp_path, dataset):
    for root, words in ((None, "--data-root"), (str(tmp_path / "missing"), "does not exist")):
        answer = dataset_preview(dataset, root)
        assert [p.level for p in answer.problems] == ["error"] and words in _messages(answer, "error")
        assert answer.classes == () and answer.samples == () and answer.title
        _crosses_as_json(answer)


def test_folder_without_any_readable_image_is_an_error_problem(tmp_path):
    (tmp_path / "cats").mkdir()
    (tmp_path / "cats" / "a.txt").write_text("text")
    message = _messages(dataset_preview("imagefolder", str(tmp_path)), "error")
    assert "could be read as an image (first: a.txt is not an image" in message
