"""IDX files (MNIST's format) written from arrays, for the tests that read datasets in that format
(tests/core/test_data.py, test_preview.py, test_evaluation_view.py)."""

from __future__ import annotations

import numpy as np


def idx_bytes(array: np.ndarray) -> bytes:
    code = {np.dtype(np.uint8): 0x08, np.dtype(">i2"): 0x0B, np.dtype(">f4"): 0x0D}[array.dtype]
    header = bytes([0, 0, code, array.ndim]) + b"".join(d.to_bytes(4, "big") for d in array.shape)
    return header + array.tobytes()
