"""Image file → the MNIST-style 28×28 input: any common format, any size, and a clear error for bad files."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from PIL import Image

from workbench.core.ground.errors import WorkbenchError
from workbench.core.domain.model import SandwichNet
from workbench.core.ground.images import ImageError, Prediction, load_digit
from workbench.core.domain.predict import predict_file, predict_pixels


def _corr(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.corrcoef(a.ravel().astype(float), b.ravel().astype(float))[0, 1])


@pytest.fixture
def digit(samples_dir) -> np.ndarray:
    """A real MNIST digit (white on black, 28×28)."""
    return np.asarray(Image.open(samples_dir / "digit_3.png").convert("L"))


@pytest.fixture
def big_digit(digit) -> Image.Image:
    """The digit scaled up to 280×280, as a drawing program would save it."""
    return Image.fromarray(digit).resize((280, 280), Image.Resampling.BICUBIC)


@pytest.mark.parametrize("n", range(10))
def test_bundled_samples_are_reproduced(samples_dir, n):
    path = samples_dir / f"digit_{n}.png"
    original = np.asarray(Image.open(path).convert("L"))
    pixels = load_digit(path)
    assert pixels.shape == (28, 28) and pixels.dtype == np.uint8
    # An MNIST image is already cropped, fitted and centred: preprocessing leaves it (almost) as it is.
    assert _corr(pixels, original) > 0.99
    assert np.abs(pixels.astype(int) - original.astype(int)).mean() < 2


def _rgb(img):
    return img.convert("RGB")


def _rgba_transparent(img):
    """Ink drawn in opaque black on a fully transparent canvas (colour channels say nothing)."""
    out = Image.new("RGBA", img.size, (0, 0, 0, 0))
    out.putalpha(img)
    return out


def _rgba_opaque_dark_on_white(img):
    inverted = Image.fromarray(255 - np.asarray(img))
    return Image.merge("RGBA", [inverted, inverted, inverted, Image.new("L", img.size, 255)])


def _gray16(img):
    return Image.fromarray(np.asarray(img).astype(np.uint16) * 257)


def _la_transparent(img):
    out = Image.new("LA", img.size, (0, 0))
    out.putalpha(img)
    return out


def _coloured_palette(img):
    """Blue ink on a yellow background, quantised to a palette."""
    a = np.asarray(img).astype(float)[..., None] / 255.0
    rgb = (a * np.array([20, 20, 200]) + (1 - a) * np.array([250, 240, 60])).astype(np.uint8)
    return Image.fromarray(rgb).quantize(colors=16)


def _save(img, path, **kw):
    img.save(path, **kw)
    return path


@pytest.mark.parametrize("name, make, save_kw, mode", [
    ("rgb.png", _rgb, {}, "RGB"),
    ("rgba.png", _rgba_transparent, {}, "RGBA"),
    ("rgba_opaque.png", _rgba_opaque_dark_on_white, {}, "RGBA"),
    ("la.png", _la_transparent, {}, "LA"),
    ("gray16.png", _gray16, {}, "I;16"),
    ("palette.png", _coloured_palette, {}, "P"),
    ("lossless.webp", _rgb, {"lossless": True}, "RGB"),
    ("lossy.webp", _rgb, {"quality": 80}, "RGB"),
    ("photo.jpg", _rgb, {"quality": 85}, "RGB"),
    ("gray.jpg", lambda i: i, {"quality": 85}, "L"),
    ("scan.bmp", _rgb, {}, "RGB"),
    ("scan.tif", lambda i: i, {}, "L"),
    ("scan_lzw.tif", _rgb, {"compression": "tiff_lzw"}, "RGB"),
    ("gray16.tif", _gray16, {}, "I;16"),
    ("print.tif", lambda i: _rgb(i).convert("CMYK"), {}, "CMYK"),
    ("float.tif", lambda i: Image.fromarray(np.asarray(i).astype(np.float32) / 255), {}, "F"),
])
def test_formats_are_preprocessed_like_the_original(tmp_path, big_digit, digit, name, make, save_kw, mode):
    path = _save(make(big_digit), tmp_path / name, **save_kw)
    with Image.open(path) as img:
        assert img.mode == mode  # the file really is in the format this case is about
    pixels = load_digit(path)
    assert pixels.shape == (28, 28) and pixels.dtype == np.uint8
    assert _corr(pixels, digit) > 0.8


def test_palette_gif_uses_the_first_frame(tmp_path, samples_dir, big_digit, digit):
    other = np.asarray(Image.open(samples_dir / "digit_7.png").convert("L"))
    frames = [_coloured_palette(big_digit),
              _coloured_palette(Image.fromarray(other).resize((280, 280), Image.Resampling.BICUBIC))]
    path = tmp_path / "animated.gif"
    frames[0].save(path, save_all=True, append_images=frames[1:], duration=100, loop=0)
    with Image.open(path) as img:
        assert img.mode == "P" and img.n_frames == 2
    pixels = load_digit(path)
    assert _corr(pixels, digit) > 0.8
    assert _corr(pixels, digit) > _corr(pixels, other)


def test_transparent_gif(tmp_path, big_digit, digit):
    p = big_digit.point(lambda v: 1 if v > 100 else 0).convert("P")
    p.putpalette([255, 255, 255, 0, 0, 0] + [0] * (3 * 254))
    path = tmp_path / "transparent.gif"
    p.save(path, transparency=0)  # white index 0 is transparent: the ink is index 1
    assert _corr(load_digit(path), digit) > 0.8


def test_dark_digit_on_light_large_image(tmp_path, big_digit, digit):
    canvas = Image.new("L", (600, 400), 235)  # off-white paper
    canvas.paste(Image.fromarray(235 - (np.asarray(big_digit) * 0.85).astype(np.uint8)), (250, 70))
    for name in ("paper.png", "paper.jpg"):
        path = _save(canvas.convert("RGB"), tmp_path / name)
        pixels = load_digit(path)
        assert _corr(pixels, digit) > 0.8
        assert pixels[0].max() < 50 and pixels[:, 0].max() < 50  # background became black
        ys, xs = np.nonzero(pixels > 64)
        assert abs(ys.mean() - 13.5) < 3 and abs(xs.mean() - 13.5) < 3  # centred, not left where it was drawn


def test_off_centre_small_digit_is_centred_and_scaled(tmp_path, digit):
    canvas = np.zeros((200, 200), np.uint8)
    canvas[5:33, 160:188] = digit  # small, in a corner
    path = _save(Image.fromarray(canvas), tmp_path / "corner.png")
    pixels = load_digit(path)
    assert _corr(pixels, digit) > 0.8


@pytest.fixture
def valid_png(tmp_path, big_digit):
    return _save(big_digit.convert("RGB"), tmp_path / "valid.png")


def test_empty_file(tmp_path):
    path = tmp_path / "empty.png"
    path.write_bytes(b"")
    with pytest.raises(ImageError, match=r"empty.png is empty \(0 bytes\)"):
        load_digit(path)


def test_a_tiff_whose_pixels_cannot_be_made_grey_says_so(tmp_path, big_digit):
    """A LAB TIFF decodes, but Pillow turns it into nothing grey: that is said, not "damaged or truncated"."""
    path = _save(_rgb(big_digit).convert("LAB"), tmp_path / "colour.tif")
    with pytest.raises(ImageError, match="colour.tif holds LAB pixels, which Workbench cannot turn into grey"):
        load_digit(path)


def test_text_file(tmp_path):
    path = tmp_path / "notes.png"
    path.write_text("this is not a picture\n")
    with pytest.raises(ImageError) as info:
        load_digit(path)
    assert "not an image" in str(info.value) and "PNG" in str(info.value) and "TIFF" in str(info.value)


def test_truncated_png(tmp_path, valid_png):
    data = valid_png.read_bytes()
    cut = tmp_path / "cut.png"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(ImageError, match="damaged or truncated"):
        load_digit(cut)


def test_folder(tmp_path):
    with pytest.raises(ImageError, match="is a folder"):
        load_digit(tmp_path)


def test_missing_file(tmp_path):
    with pytest.raises(ImageError, match="cannot read"):
        load_digit(tmp_path / "nope.png")


def test_decompression_bomb_is_refused_before_decoding(tmp_path):
    path = tmp_path / "huge.png"
    Image.new("1", (20_000, 20_000)).save(path)
    assert path.stat().st_size < 1_000_000  # tiny file, 400 megapixels
    with pytest.raises(ImageError) as info:
        load_digit(path)
    assert "too large" in str(info.value)


def test_very_large_image_names_the_limit(tmp_path):
    path = tmp_path / "scan.png"
    Image.new("1", (8_500, 8_500)).save(path)  # 72 MP: under Pillow's bomb limit, over Workbench's
    with pytest.raises(ImageError) as info:
        load_digit(path)
    assert "8500×8500" in str(info.value) and "megapixels" in str(info.value)


@pytest.mark.parametrize("colour", [0, 255, 128])
def test_blank_image_has_no_digit(tmp_path, colour):
    path = _save(Image.new("L", (64, 48), colour), tmp_path / "blank.png")
    with pytest.raises(ImageError, match="no digit"):
        load_digit(path)


def test_fully_transparent_image_has_no_digit(tmp_path):
    path = _save(Image.new("RGBA", (40, 40), (0, 0, 0, 0)), tmp_path / "clear.png")
    with pytest.raises(ImageError, match="no digit"):
        load_digit(path)


def test_image_error_is_a_workbench_error():
    assert issubclass(ImageError, WorkbenchError)


def test_predict_pixels_and_file(samples_dir):
    torch.manual_seed(0)
    model = SandwichNet(hidden_dim=16)
    pixels = load_digit(samples_dir / "digit_5.png")
    probs = predict_pixels(model, pixels)
    assert len(probs) == 10 and abs(sum(probs) - 1) < 1e-5
    result = predict_file(model, samples_dir / "digit_5.png", tuple("0123456789"))
    assert isinstance(result, Prediction)
    assert result.probabilities == pytest.approx(probs)
    assert result.label == int(np.argmax(probs))
    assert result.class_name == str(result.label)
    assert result.confidence == max(probs)
    np.testing.assert_array_equal(result.pixels, pixels)


def test_predict_pixels_user_model_without_predict():
    class Plain(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(784, 3)

        def forward(self, x):
            return self.fc(x.flatten(1).float())

    probs = predict_pixels(Plain(), np.zeros((28, 28), np.uint8))
    assert len(probs) == 3 and abs(sum(probs) - 1) < 1e-5


def test_an_exif_orientation_tag_is_applied_before_the_digit_is_read(tmp_path):
    """Metadata that changes how an image should be read: a photo stored upside down with orientation 3 (rotate
    180°) must give the same 28×28 input as the upright picture."""
    import numpy as np
    from PIL import Image

    upright = np.zeros((40, 40), dtype=np.uint8)
    upright[5:9, 5:30] = 255  # an "L"-like mark: a bar along the top …
    upright[5:35, 5:9] = 255  # … and down the left side (not symmetric under a half turn)
    Image.fromarray(upright).save(tmp_path / "upright.png")
    exif = Image.Exif()
    exif[0x0112] = 3  # Orientation: rotate 180° to display
    Image.fromarray(np.rot90(upright, 2).copy()).save(tmp_path / "tagged.png", exif=exif)
    assert np.array_equal(load_digit(tmp_path / "tagged.png"), load_digit(tmp_path / "upright.png"))
    plain_rotated = tmp_path / "rotated.png"
    Image.fromarray(np.rot90(upright, 2).copy()).save(plain_rotated)
    assert not np.array_equal(load_digit(plain_rotated), load_digit(tmp_path / "upright.png"))  # the tag mattered


# -- which images are inverted, and how 16-bit ones are read ------------------------------------------------------
def _stroke(samples_dir) -> np.ndarray:
    """A bundled digit's strokes (bool), with a 6-pixel margin so that the border is all background."""
    return np.pad(np.asarray(Image.open(samples_dir / "digit_3.png").convert("L")) > 127, 6)


def _grey_png(path, stroke: np.ndarray, ink: int, background: int):
    return _save(Image.fromarray(np.where(stroke, ink, background).astype(np.uint8), "L"), path)


def test_dark_ink_on_a_border_just_lighter_than_mid_grey_is_inverted(tmp_path, samples_dir):
    """The rule: invert when the border's median is above 127. Black ink on grey 128 is dark on light: inverted, the
    background (127 after inversion) maps to 0 and the ink to 255 — exactly the white-on-black digit."""
    stroke = _stroke(samples_dir)
    reference = load_digit(_grey_png(tmp_path / "white_on_black.png", stroke, 255, 0))
    pixels = load_digit(_grey_png(tmp_path / "black_on_128.png", stroke, 0, 128))
    np.testing.assert_array_equal(pixels, reference)
    assert pixels.max() == 255 and pixels[0].max() == 0 and pixels[:, 0].max() == 0


def test_bright_ink_on_a_border_of_mid_grey_is_not_inverted(tmp_path, samples_dir):
    """Grey 127 is not lighter than mid-grey: white ink on it stays as it is (inverted, the digit would be darker than
    its background and no digit would be found)."""
    stroke = _stroke(samples_dir)
    reference = load_digit(_grey_png(tmp_path / "white_on_black.png", stroke, 255, 0))
    pixels = load_digit(_grey_png(tmp_path / "white_on_127.png", stroke, 255, 127))
    np.testing.assert_array_equal(pixels, reference)
    with pytest.raises(ImageError, match="no digit"):  # the other side: dark ink on 127 is not inverted either
        load_digit(_grey_png(tmp_path / "black_on_127.png", stroke, 0, 127))


def test_a_16_bit_grey_image_is_scaled_not_clipped(tmp_path, samples_dir):
    """A 16-bit PNG of the bundled 7 (value × 257, the full 0–65,535 range) reads as the 8-bit original within ±1:
    scaled down, not clipped at 255 (which would binarise the strokes' anti-aliased edges)."""
    from workbench.core.ground.images import _read_grey

    original = np.asarray(Image.open(samples_dir / "digit_7.png").convert("L"))
    path = _save(Image.fromarray(original.astype(np.uint16) * 257), tmp_path / "seven16.png")
    with Image.open(path) as img:
        assert img.mode == "I;16"
    grey = _read_grey(path)
    assert grey.dtype == np.uint8 and grey.shape == (28, 28)
    assert np.abs(grey.astype(int) - original.astype(int)).max() <= 1
    pixels, expected = load_digit(path), load_digit(samples_dir / "digit_7.png")
    assert np.abs(pixels.astype(int) - expected.astype(int)).max() <= 1


def test_a_16_bit_image_with_a_narrow_range_is_stretched_to_it(tmp_path, samples_dir):
    """16-bit values from 1,000 to 3,000 (a 12-bit sensor's dim capture) span 0–255 after reading, not 4–12."""
    from workbench.core.ground.images import _read_grey

    original = np.asarray(Image.open(samples_dir / "digit_7.png").convert("L"))
    dim = (1000 + original.astype(np.float64) * (2000 / 255)).round().astype(np.uint16)
    path = _save(Image.fromarray(dim), tmp_path / "dim16.png")
    grey = _read_grey(path)
    assert grey.min() == 0 and grey.max() == 255
    assert np.abs(grey.astype(int) - original.astype(int)).max() <= 1
    assert np.abs(load_digit(path).astype(int) - load_digit(samples_dir / "digit_7.png").astype(int)).max() <= 1


def test_the_background_is_judged_by_the_borders_median_not_its_mean(tmp_path):
    """A tightly cropped dark 7 on paper: its bar runs along the top edge and its stem down the right one, so almost
    half the border is ink. The median still sees paper (invert); the mean would see a dark border and find nothing."""
    white_on_black = np.zeros((40, 40), np.uint8)
    white_on_black[:6, :] = 255  # the bar, along the whole top edge
    white_on_black[:30, -6:] = 255  # the stem, down the right edge
    dark_on_paper = np.where(white_on_black > 0, 0, 200).astype(np.uint8)
    border = np.concatenate([dark_on_paper[0], dark_on_paper[-1], dark_on_paper[:, 0], dark_on_paper[:, -1]])
    assert np.median(border) > 127 >= border.mean()  # the case this test is about
    pixels = load_digit(_save(Image.fromarray(dark_on_paper), tmp_path / "tight7.png"))
    expected = load_digit(_save(Image.fromarray(white_on_black), tmp_path / "tight7_white.png"))
    assert np.abs(pixels.astype(int) - expected.astype(int)).max() <= 1 and pixels.max() >= 254


def test_predict_pixels_puts_a_user_model_in_eval_mode():
    """A user's network left in training mode: dropout must be off when it predicts (deterministic, the eval output)."""
    class Plain(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.drop = torch.nn.Dropout(0.5)
            self.fc = torch.nn.Linear(784, 10)

        def forward(self, x):
            return self.fc(self.drop(x.flatten(1).float() / 255))

    torch.manual_seed(0)
    model = Plain().train()
    pixels = (np.arange(784) % 256).astype(np.uint8).reshape(28, 28)
    probs = predict_pixels(model, pixels)
    assert not model.training
    with torch.no_grad():
        expected = model.eval()(torch.from_numpy(pixels).unsqueeze(0)).softmax(dim=-1)[0].tolist()
    assert probs == pytest.approx(expected, abs=1e-6)
    assert predict_pixels(model.train(), pixels) == probs
