"""Datasets and the device-resident batch loader."""

from __future__ import annotations

import gzip
import socket
import urllib.error
import urllib.request

import numpy as np
import pytest
import torch
from PIL import Image

from workbench.core.domain import data
from workbench.core.domain.data import DataError, DeviceBatches, Split, classes_of, load_split, read_idx
from workbench.core.ground.images import load_digit

from ..support.idx import idx_bytes

CPU = torch.device("cpu")


# -- the bundled sample -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("split, size", [("train", 4000), ("val", 1000)])
def test_mnist_sample_splits(split, size):
    s = load_split("mnist-sample", split)
    assert len(s) == size
    assert s.images.shape == (size, 28, 28) and s.images.dtype == torch.uint8
    assert s.labels.shape == (size,) and s.labels.dtype == torch.int64
    assert set(s.labels.tolist()) == set(range(10))
    assert s.images.float().mean() > 10  # real digits, not an empty tensor


def test_mnist_sample_train_and_val_are_different_images():
    train = load_split("mnist-sample", "train").images.reshape(4000, -1)
    val = load_split("mnist-sample", "val").images.reshape(1000, -1)
    train_rows = {row.numpy().tobytes() for row in train}
    overlap = sum(row.numpy().tobytes() in train_rows for row in val)
    assert overlap == 0


def test_mnist_sample_has_no_test_split():
    with pytest.raises(DataError) as info:
        load_split("mnist-sample", "test")
    assert "val" in str(info.value)


def test_unknown_dataset_and_split():
    with pytest.raises(DataError, match="unknown dataset"):
        load_split("cifar", "train")
    with pytest.raises(DataError, match="unknown split"):
        load_split("mnist-sample", "holdout")


def test_classes_of_digits():
    assert classes_of("mnist-sample") == tuple("0123456789")


# -- DeviceBatches ----------------------------------------------------------------------------------------------
def _numbered(n: int) -> Split:
    """Labels are the sample numbers, so every batch says which samples it holds."""
    images = (torch.arange(n) % 256).to(torch.uint8).reshape(n, 1, 1).expand(n, 28, 28).contiguous()
    return Split(images, torch.arange(n))


def _epoch_ids(batches: DeviceBatches, epoch: int) -> list[int]:
    ids = []
    for x, y in batches.epoch(epoch):
        assert x.shape[1:] == (28, 28) and x.shape[0] == y.shape[0]
        assert torch.equal(x[:, 0, 0], (y % 256).to(torch.uint8))  # images and labels stay paired
        ids.extend(y.tolist())
    return ids


def test_epoch_is_a_permutation_without_repeats_and_drops_last():
    batches = DeviceBatches(_numbered(103), 10, CPU, seed=0)
    assert len(batches) == 10
    sizes = [len(y) for _, y in batches.epoch(1)]
    assert sizes == [10] * 10  # the partial batch of 3 is dropped: one shape, one compiled graph
    ids = _epoch_ids(batches, 1)
    assert len(ids) == len(set(ids)) == 100
    assert set(ids) <= set(range(103))
    assert ids != sorted(ids)  # shuffled


def test_keep_last_covers_every_sample_once():
    batches = DeviceBatches(_numbered(103), 10, CPU, seed=0, drop_last=False)
    assert len(batches) == 11
    sizes = [len(y) for _, y in batches.epoch(1)]
    assert sizes == [10] * 10 + [3]
    assert sorted(_epoch_ids(batches, 1)) == list(range(103))


def test_epochs_differ_and_seeds_reproduce():
    a = DeviceBatches(_numbered(200), 20, CPU, seed=5)
    b = DeviceBatches(_numbered(200), 20, CPU, seed=5)
    c = DeviceBatches(_numbered(200), 20, CPU, seed=6)
    assert _epoch_ids(a, 1) == _epoch_ids(b, 1)
    assert _epoch_ids(a, 2) == _epoch_ids(b, 2)
    assert _epoch_ids(a, 1) != _epoch_ids(a, 2)
    assert _epoch_ids(a, 1) != _epoch_ids(c, 1)
    assert _epoch_ids(a, 1) == _epoch_ids(a, 1)  # an epoch can be replayed


def test_no_shuffle_is_in_order():
    batches = DeviceBatches(_numbered(25), 10, CPU, shuffle=False, drop_last=False)
    assert _epoch_ids(batches, 3) == list(range(25))


def test_training_shards_are_disjoint_equal_and_cover_the_prefix():
    n = 103
    full = DeviceBatches(_numbered(n), n, CPU, seed=3, drop_last=False)
    order = _epoch_ids(full, 4)  # the whole permutation for epoch 4
    shards = [DeviceBatches(_numbered(n), 1, CPU, seed=3, rank=r, world_size=2) for r in (0, 1)]
    assert shards[0].shard_size == shards[1].shard_size == n // 2
    ids = [_epoch_ids(s, 4) for s in shards]
    assert len(ids[0]) == len(ids[1]) == n // 2
    assert not set(ids[0]) & set(ids[1])
    assert set(ids[0]) | set(ids[1]) == set(order[: 2 * (n // 2)])


def test_global_batch_of_two_ranks_is_the_single_process_batch():
    n, per_rank = 100, 5
    single = [sorted(b[1].tolist()) for b in DeviceBatches(_numbered(n), 2 * per_rank, CPU, seed=7).epoch(2)]
    ranks = [list(DeviceBatches(_numbered(n), per_rank, CPU, seed=7, rank=r, world_size=2).epoch(2)) for r in (0, 1)]
    together = [sorted(a[1].tolist() + b[1].tolist()) for a, b in zip(*ranks)]
    assert together == single


def test_evaluation_shards_keep_every_sample():
    n = 103
    shards = [DeviceBatches(_numbered(n), 1000, CPU, shuffle=False, drop_last=False, rank=r, world_size=2)
              for r in (0, 1)]
    ids = [_epoch_ids(s, 0) for s in shards]
    assert sorted(ids[0] + ids[1]) == sorted(_epoch_ids(DeviceBatches(_numbered(n), n, CPU, shuffle=False,
                                                                      drop_last=False), 0))
    assert abs(len(ids[0]) - len(ids[1])) <= 1


def test_sharding_ranks_take_the_same_number_of_steps():
    shards = [DeviceBatches(_numbered(101), 8, CPU, seed=0, rank=r, world_size=2) for r in (0, 1)]
    assert len(shards[0]) == len(shards[1]) == 50 // 8
    assert [len(list(s.epoch(1))) for s in shards] == [6, 6]


# -- IDX files --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("compress", [False, True], ids=["plain", "gzip"])
@pytest.mark.parametrize("array", [
    np.arange(2 * 28 * 28, dtype=np.uint8).reshape(2, 28, 28),
    np.array([3, 1, 4, 1, 5], dtype=np.uint8),
    np.arange(-6, 6, dtype=">i2").reshape(3, 4),
    np.linspace(0, 1, 6, dtype=">f4"),
], ids=["images", "labels", "int16", "float32"])
def test_read_idx_round_trip(tmp_path, array, compress):
    raw = idx_bytes(array)
    path = tmp_path / ("x.idx.gz" if compress else "x.idx")
    path.write_bytes(gzip.compress(raw) if compress else raw)
    got = read_idx(path)
    assert got.shape == array.shape
    np.testing.assert_array_equal(got, array)


@pytest.mark.parametrize("mutate, words", [
    (lambda raw: raw[:-10], ["truncated"]),
    (lambda raw: raw + b"\0" * 5, ["truncated or padded"]),
    (lambda raw: b"\x12\x34" + raw[2:], ["bad magic"]),
    (lambda raw: raw[:2] + b"\x07" + raw[3:], ["bad magic"]),  # unknown type code
    (lambda raw: raw[:3] + b"\x09" + raw[4:], ["bad magic"]),  # 9 dimensions
    (lambda raw: raw[:3], ["bad magic"]),
    (lambda raw: b"", ["bad magic"]),
    (lambda raw: gzip.compress(raw)[:40], ["damaged gzip"]),
])
def test_read_idx_rejects_damaged_files(tmp_path, mutate, words):
    path = tmp_path / "bad-images-idx3-ubyte"
    path.write_bytes(mutate(idx_bytes(np.zeros((4, 28, 28), np.uint8))))
    with pytest.raises(DataError) as info:
        read_idx(path)
    for word in words:
        assert word in str(info.value)


def test_idx_folder_from_tmp_files(tmp_path):
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, (50, 28, 28), dtype=np.uint8)
    labels = (np.arange(50) % 10).astype(np.uint8)
    (tmp_path / "train-images-idx3-ubyte.gz").write_bytes(gzip.compress(idx_bytes(images)))
    (tmp_path / "train-labels-idx1-ubyte").write_bytes(idx_bytes(labels))
    (tmp_path / "t10k-images-idx3-ubyte").write_bytes(idx_bytes(images[:7]))
    (tmp_path / "t10k-labels-idx1-ubyte").write_bytes(idx_bytes(labels[:7]))
    train = load_split("idx", "train", str(tmp_path))
    val = load_split("idx", "val", str(tmp_path))
    test = load_split("idx", "test", str(tmp_path))
    assert (len(train), len(val), len(test)) == (45, 5, 7)  # 10% hold-out from train
    np.testing.assert_array_equal(test.images.numpy(), images[:7])
    # train + val partition the training files, each image keeps its label
    both = torch.cat([train.images, val.images]).reshape(50, -1).numpy()
    both_labels = torch.cat([train.labels, val.labels]).numpy()
    order = [int(np.flatnonzero((images.reshape(50, -1) == row).all(axis=1))[0]) for row in both]
    assert sorted(order) == list(range(50))
    np.testing.assert_array_equal(both_labels, labels[order])


def test_idx_folder_mismatched_label_count(tmp_path):
    (tmp_path / "t10k-images-idx3-ubyte").write_bytes(idx_bytes(np.zeros((5, 28, 28), np.uint8)))
    (tmp_path / "t10k-labels-idx1-ubyte").write_bytes(idx_bytes(np.zeros(4, np.uint8)))
    with pytest.raises(DataError, match="4 labels for 5 images"):
        load_split("idx", "test", str(tmp_path))


def test_idx_folder_without_pairs(tmp_path):
    (tmp_path / "readme.txt").write_text("nothing here")
    with pytest.raises(DataError, match="no IDX image/label pair"):
        load_split("idx", "test", str(tmp_path))


def _idx_with_labels(root, prefix: str, labels: list[int]) -> None:
    """An IDX pair whose labels are int16 (so that -1 can be written)."""
    (root / f"{prefix}-images-idx3-ubyte").write_bytes(idx_bytes(np.zeros((len(labels), 28, 28), np.uint8)))
    (root / f"{prefix}-labels-idx1-ubyte").write_bytes(idx_bytes(np.array(labels, dtype=">i2")))


def test_idx_labels_outside_the_classes_are_refused_when_loaded(tmp_path):
    # On CUDA such a label trips a device-side assert in the loss that kills the process's CUDA context:
    # it must be refused with the data, before any training.
    _idx_with_labels(tmp_path, "train", [0, 1, 12, 3, -1, 5, 6, 12, 8, 9] * 3)
    _idx_with_labels(tmp_path, "t10k", [0, 10, 2])
    for load in (lambda: data.load_splits("idx", str(tmp_path)), lambda: load_split("idx", "train", str(tmp_path)),
                 lambda: load_split("idx", "val", str(tmp_path))):
        with pytest.raises(DataError) as info:
            load()
        message = str(info.value)
        assert "-1, 12" in message and "0…9" in message and "10 classes" in message and str(tmp_path) in message
        assert "fix the label file" in info.value.hint
    with pytest.raises(DataError, match=r"test labels .* include 10, outside 0…9"):
        load_split("idx", "test", str(tmp_path))


def test_idx_labels_inside_the_classes_load(tmp_path):
    _idx_with_labels(tmp_path, "train", [0, 9] * 10)
    train, val = data.load_splits("idx", str(tmp_path))
    assert len(train) + len(val) == 20 and set(torch.cat([train.labels, val.labels]).tolist()) == {0, 9}


def test_official_mnist_test_split(mnist_test_dir):
    test = load_split("idx", "test", str(mnist_test_dir))
    assert len(test) == 10_000
    assert test.images.shape == (10_000, 28, 28) and test.images.dtype == torch.uint8
    assert torch.bincount(test.labels, minlength=10).tolist() == [
        980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]


def test_official_mnist_test_folder_has_no_training_split(mnist_test_dir):
    with pytest.raises(DataError, match="no training split"):
        load_split("idx", "train", str(mnist_test_dir))


@pytest.mark.parametrize("dataset", ["idx", "imagefolder"])
def test_folder_datasets_need_an_existing_root(tmp_path, dataset):
    with pytest.raises(DataError, match="--data-root"):
        load_split(dataset, "train")
    with pytest.raises(DataError, match="does not exist"):
        load_split(dataset, "train", str(tmp_path / "missing"))
    a_file = tmp_path / "file.txt"
    a_file.write_text("x")
    with pytest.raises(DataError, match="not a folder"):
        load_split(dataset, "train", str(a_file))


# -- torchvision datasets, offline ------------------------------------------------------------------------------
@pytest.fixture
def no_network(monkeypatch):
    calls = []

    def refuse(*args, **kwargs):
        calls.append(args)
        raise urllib.error.URLError("network blocked by the test")

    def refuse_connect(self, *args, **kwargs):
        calls.append(args)
        raise OSError("network blocked by the test")

    monkeypatch.setattr(urllib.request, "urlopen", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse_connect)
    monkeypatch.setattr(socket, "create_connection", refuse)
    return calls


@pytest.mark.parametrize("with_root", [True, False], ids=["data-root", "cache-dir"])
def test_mnist_offline_names_the_offline_choices(tmp_path, no_network, with_root):
    root = tmp_path / "empty-root"
    root.mkdir()
    with pytest.raises(DataError) as info:
        load_split("mnist", "train", str(root) if with_root else None)
    message = str(info.value)
    assert "mnist-sample" in message and "(idx)" in message
    assert "Data folder in the app" in message and "--data-root on the command line" in message  # both audiences
    assert "\n" not in message
    assert no_network  # a download was attempted, and refused by the test, not by chance


# -- image folders ----------------------------------------------------------------------------------------------
def test_imagefolder_two_classes(tmp_path, samples_dir):
    templates = {"zero": samples_dir / "digit_0.png", "one": samples_dir / "digit_1.png"}
    for cls, template in templates.items():
        (tmp_path / cls).mkdir()
        digit = Image.open(template).convert("L")
        for i in range(10):
            size = 28 + 4 * i  # different files, the same digit once preprocessed
            digit.resize((size, size), Image.Resampling.BICUBIC).save(tmp_path / cls / f"{i}.png")
    (tmp_path / "one" / "notes.txt").write_text("not an image: skipped")
    assert classes_of("imagefolder", str(tmp_path)) == ("one", "zero")  # sorted folder names
    train = load_split("imagefolder", "train", str(tmp_path))
    val = load_split("imagefolder", "val", str(tmp_path))
    assert (len(train), len(val)) == (18, 2)
    images = torch.cat([train.images, val.images])
    labels = torch.cat([train.labels, val.labels])
    assert images.dtype == torch.uint8 and images.shape == (20, 28, 28)
    assert sorted(labels.tolist()) == [0] * 10 + [1] * 10
    reference = {0: load_digit(templates["one"]).astype(float), 1: load_digit(templates["zero"]).astype(float)}
    for image, label in zip(images.numpy().astype(float), labels.tolist()):
        same = np.corrcoef(image.ravel(), reference[label].ravel())[0, 1]
        other = np.corrcoef(image.ravel(), reference[1 - label].ravel())[0, 1]
        assert same > 0.8 and same > other


def test_imagefolder_without_images(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.txt").write_text("text")
    with pytest.raises(DataError, match="could be read as an image"):
        load_split("imagefolder", "train", str(tmp_path))
    empty = tmp_path / "empty"
    (empty / "a").mkdir(parents=True)
    with pytest.raises(DataError, match="no images"):
        load_split("imagefolder", "train", str(empty))


def test_resource_path_points_at_real_files():
    from workbench.core.ground.resources import resource_path

    assert data.resource_path is resource_path  # one function serves every caller
    assert (data.resource_path("samples", "digit_0.png")).is_file()
    assert (data.resource_path("mnist_sample", "MNIST", "raw", "train-images-idx3-ubyte")).is_file()


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:Got pickle error")
def test_large_imagefolder_loads_with_spawned_workers(tmp_path, samples_dir, monkeypatch):
    import torch.utils.data as tud

    real = tud.DataLoader

    def spawning(*args, **kwargs):
        if kwargs.get("num_workers"):
            kwargs["multiprocessing_context"] = "spawn"
        return real(*args, **kwargs)

    monkeypatch.setattr(tud, "DataLoader", spawning)
    png = (samples_dir / "digit_0.png").read_bytes()
    for cls in ("a", "b"):
        (tmp_path / cls).mkdir()
        for i in range(1001):  # 2002 files: above the threshold that turns on worker processes
            (tmp_path / cls / f"{i}.png").write_bytes(png)
    assert len(load_split("imagefolder", "train", str(tmp_path))) == 2002 - 200


# -- train and val together ---------------------------------------------------------------------------------------
def test_load_splits_reads_the_training_part_once(tmp_path, samples_dir, monkeypatch):
    for cls in ("a", "b"):
        (tmp_path / cls).mkdir()
        for i in range(5):
            (tmp_path / cls / f"{i}.png").write_bytes((samples_dir / "digit_0.png").read_bytes())
    decoded = []
    real = data._image_folder
    monkeypatch.setattr(data, "_image_folder", lambda root: decoded.append(root) or real(root))
    train, val = data.load_splits("imagefolder", str(tmp_path))
    assert len(decoded) == 1  # one decode for both splits
    for split, alone in ((train, load_split("imagefolder", "train", str(tmp_path))),
                         (val, load_split("imagefolder", "val", str(tmp_path)))):
        assert torch.equal(split.images, alone.images) and torch.equal(split.labels, alone.labels)


def test_load_splits_of_the_sample_and_its_checks(tmp_path):
    train, val = data.load_splits("mnist-sample")
    assert (len(train), len(val)) == (4000, 1000)
    with pytest.raises(DataError, match="--data-root"):
        data.load_splits("imagefolder")
    with pytest.raises(DataError, match="unknown dataset"):
        data.load_splits("cifar")


def test_check_classes_refuses_other_class_names():
    data.check_classes(tuple("0123456789"), classes_of("mnist"), "mnist")
    with pytest.raises(DataError, match=r"10 classes \(0, 1, 2, .*, …\) but imagefolder has 2 \(cat, dog\)"):
        data.check_classes(tuple("0123456789"), ("cat", "dog"), "imagefolder")
    with pytest.raises(DataError, match="fashion-mnist"):
        data.check_classes(classes_of("mnist"), classes_of("fashion-mnist"), "fashion-mnist")


def test_check_classes_of_idx_files_compares_only_how_many():
    # IDX files hold numbered labels: a Fashion-MNIST model on Fashion-MNIST IDX files is fine, a 2-class one is not
    data.check_classes(classes_of("fashion-mnist"), classes_of("idx"), "idx")
    with pytest.raises(DataError, match="but idx has 10"):
        data.check_classes(("cat", "dog"), classes_of("idx"), "idx")
