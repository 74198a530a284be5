"""Image file → the 28×28 input the network sees. Torch-free: the window decodes dropped images itself and sends
only the 784 pixels to the kernel.

MNIST digits are white on black, fitted into a 20×20 box and centred by mass in a 28×28 field. A photo or a
drawing from a paint program is usually none of that, so every image goes through the same steps before the model
sees it: first frame, to 8-bit grey (alpha used as ink when the background is transparent), invert when the digit is
dark on light, crop to the ink, fit into 20×20, centre by mass.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image, ImageOps, UnidentifiedImageError

from .errors import WorkbenchError

MAX_PIXELS = 64_000_000  # refuse larger images before decoding them (decompression bombs, 20000×20000 scans)
MAX_FILE_BYTES = 256 * 1024 * 1024
INK_THRESHOLD = 0.2  # fraction of the brightest ink that still counts as part of the digit


class ImageError(WorkbenchError):
    """An image that cannot be used; the message says why and what would work."""


@dataclass(frozen=True)
class Prediction:
    path: str
    pixels: np.ndarray  # (28, 28) uint8, what the network saw
    probabilities: tuple[float, ...]
    label: int
    classes: tuple[str, ...]

    @property
    def confidence(self) -> float:
        return self.probabilities[self.label]

    @property
    def class_name(self) -> str:
        return self.classes[self.label] if self.label < len(self.classes) else str(self.label)


READABLE = "PNG, JPEG, BMP, GIF, WebP or TIFF"  # what Predict's hint and its refusals list
# Pillow's pixel modes _to_grey turns into grey (LAB and HSV TIFFs cannot be: Pillow does not convert them to RGB).
GREY_FROM = frozenset({"1", "L", "P", "RGB", "RGBA", "RGBX", "CMYK", "YCbCr", "LA", "PA", "La", "RGBa", "I", "F",
                       "I;16", "I;16B", "I;16L", "I;16N"})


def load_digit(path: str | Path) -> np.ndarray:
    """Read any PNG/JPEG/BMP/GIF/WebP/TIFF (8/16-bit or float, L/RGB/RGBA/P/CMYK, any size) and return the
    MNIST-style 28×28 uint8."""
    return mnist_style(_read_grey(Path(path)))


def _read_grey(path: Path) -> np.ndarray:
    if path.is_dir():
        raise ImageError(f"{path.name} is a folder, not an image file")
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise ImageError(f"cannot read {path.name}: {exc.strerror or exc}") from None
    if size == 0:
        raise ImageError(f"{path.name} is empty (0 bytes)")
    if size > MAX_FILE_BYTES:
        raise ImageError(f"{path.name} is {size // (1024 * 1024)} MiB; images up to "
                         f"{MAX_FILE_BYTES // (1024 * 1024)} MiB are accepted")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(path) as img:
                width, height = img.size
                if width * height > MAX_PIXELS:
                    raise ImageError(f"{path.name} is {width}×{height} pixels; images up to "
                                     f"{MAX_PIXELS // 1_000_000} megapixels are accepted — scale it down first")
                if img.mode not in GREY_FROM:  # a TIFF in LAB or HSV: say so, not "damaged"
                    raise ImageError(f"{path.name} holds {img.mode} pixels, which Workbench cannot turn into grey — "
                                     "save it as grey or RGB")
                img.seek(0)  # first frame of a GIF/WebP animation or a multi-page TIFF
                img.draft("L", (max(28, width // 8), max(28, height // 8)))  # JPEG: decode at reduced size
                # A phone photo stores its pixels as the sensor saw them and says in EXIF how to turn them: the
                # network must see the digit the way the user does.
                return _to_grey(ImageOps.exif_transpose(img))
    except ImageError:
        raise
    except UnidentifiedImageError:
        raise ImageError(f"{path.name} is not an image Workbench can read ({READABLE})") from None
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        found = re.search(r"\((\d+) pixels\)", str(exc))
        size = f"{int(found.group(1)) / 1e6:.0f} megapixels" if found else "too many pixels"
        raise ImageError(f"{path.name} is too large to decode safely ({size}; images up to "
                         f"{MAX_PIXELS // 1_000_000} megapixels are accepted) — scale it down first") from None
    except (OSError, SyntaxError, ValueError, EOFError) as exc:
        raise ImageError(f"{path.name} is damaged or truncated ({exc})") from None


def _to_grey(img: Image.Image) -> np.ndarray:
    """8-bit grey with ink bright on dark. Transparent backgrounds use alpha as ink."""
    if img.mode in ("I;16", "I;16B", "I;16L", "I", "F"):
        values = np.asarray(img, dtype=np.float64)
        span = values.max() - values.min()
        grey = np.zeros_like(values) if span == 0 else (values - values.min()) / span * 255.0
        return _ink_bright(grey.astype(np.uint8))
    if img.mode == "P" or "transparency" in img.info:
        img = img.convert("RGBA")
    if img.mode in ("RGBA", "LA", "PA"):
        alpha = np.asarray(img.getchannel("A"))
        if (alpha < 128).mean() > 0.25:  # a drawing on a transparent canvas: what is opaque is the ink
            return alpha.copy()
        img = img.convert("RGB")
    return _ink_bright(np.asarray(ImageOps.grayscale(img) if img.mode != "L" else img).copy())


def _ink_bright(grey: np.ndarray) -> np.ndarray:
    """Invert when the background (judged by the border) is lighter than mid-grey: dark digit on light paper."""
    return 255 - grey if np.median(_border(grey)) > 127 else grey


def _border(image: np.ndarray) -> np.ndarray:
    """The outermost pixels: the background, on any image a digit was drawn or photographed on."""
    return np.concatenate([image[0], image[-1], image[:, 0], image[:, -1]])


def mnist_style(grey: np.ndarray) -> np.ndarray:
    """Crop to the ink, fit into 20×20 keeping the aspect ratio, centre by mass in 28×28."""
    values = grey.astype(np.float32)
    values -= np.median(_border(values))  # background → 0
    np.clip(values, 0, None, out=values)
    peak = values.max()
    if peak < 16:
        raise ImageError("no digit found: the image is blank or has almost no contrast")
    rows = np.flatnonzero((values >= peak * INK_THRESHOLD).any(axis=1))
    cols = np.flatnonzero((values >= peak * INK_THRESHOLD).any(axis=0))
    crop = values[rows[0]: rows[-1] + 1, cols[0]: cols[-1] + 1] * (255.0 / peak)
    h, w = crop.shape
    scale = 20.0 / max(h, w)
    new_w, new_h = max(1, round(w * scale)), max(1, round(h * scale))
    fitted = np.asarray(Image.fromarray(crop.astype(np.uint8)).resize((new_w, new_h), Image.Resampling.LANCZOS),
                        dtype=np.float32)
    canvas = np.zeros((28, 28), dtype=np.float32)
    top, left = (28 - new_h) // 2, (28 - new_w) // 2
    canvas[top: top + new_h, left: left + new_w] = fitted
    return _centre_by_mass(canvas).round().clip(0, 255).astype(np.uint8)


def _centre_by_mass(canvas: np.ndarray) -> np.ndarray:
    total = canvas.sum()
    ys, xs = np.indices(canvas.shape)
    dy = int(round(14.0 - (ys * canvas).sum() / total))
    dx = int(round(14.0 - (xs * canvas).sum() / total))
    shifted = np.zeros_like(canvas)
    src_y, dst_y = _shift_slices(dy, 28)
    src_x, dst_x = _shift_slices(dx, 28)
    shifted[dst_y, dst_x] = canvas[src_y, src_x]
    return shifted


def _shift_slices(offset: int, size: int) -> tuple[slice, slice]:
    offset = max(-size, min(size, offset))
    if offset >= 0:
        return slice(0, size - offset), slice(offset, size)
    return slice(-offset, size), slice(0, size + offset)
