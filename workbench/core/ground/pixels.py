"""28×28 uint8 images as text and back: how pixels cross between the window and a kernel (a prediction's images,
an evaluation's split, a dataset preview's samples). One codec, used on both sides."""

from __future__ import annotations

import base64
import binascii

import numpy as np

SIDE = 28
PIXELS = SIDE * SIDE


class PixelError(ValueError):
    """Text that is not base64 of whole 28×28 images."""


def encode(images: np.ndarray) -> str:
    """One image (28×28) or a stack of them (N×28×28), as base64 of their uint8 pixels, row by row."""
    return base64.b64encode(np.ascontiguousarray(images, dtype=np.uint8).tobytes()).decode("ascii")


def decode(text: str, count: int | None = None) -> np.ndarray:
    """The N×28×28 uint8 stack `text` holds (N = `count` when given, checked; else what the text holds)."""
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, TypeError, ValueError):
        raise PixelError("images are not base64 of their 28×28 pixels") from None
    n, rest = divmod(len(raw), PIXELS)
    if count == 1 and len(raw) != PIXELS:
        raise PixelError(f"an image has {len(raw)} pixels, not {PIXELS} (28×28)")
    if rest or (count is not None and n != count):
        expected = f"{count} images of {PIXELS}" if count is not None else f"whole images of {PIXELS}"
        raise PixelError(f"{len(raw)} pixels are not {expected} (28×28)")
    return np.frombuffer(raw, dtype=np.uint8).reshape(n, SIDE, SIDE)


def decode_one(text: str) -> np.ndarray:
    """One 28×28 image (writable: torch warns about a read-only buffer)."""
    return decode(text, 1)[0].copy()
