"""Crisp at 2× (a HiDPI screen, or QT_SCALE_FACTOR=2): every icon has a source with the pixels a 2× screen needs
(an SVG, or a pixmap at least twice the size it is shown at), and image thumbnails are drawn at the screen's pixel
ratio instead of a 1× picture stretched (and blurred) by the painter."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
from PySide6.QtCore import QSize
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QToolBar

RATIO = 2


def sharp_at(icon: QIcon, size: QSize, ratio: float) -> bool:
    """Whether the icon can give size × ratio device pixels without enlarging a smaller pixmap: it is scalable (an
    SVG: Qt lists no sizes for it) or holds a pixmap at least that large."""
    if icon.isNull() or icon.pixmap(size, ratio).size() != size * ratio:
        return False
    needed = size * ratio
    sizes = icon.availableSizes()
    return not sizes or any(s.width() >= needed.width() and s.height() >= needed.height() for s in sizes)


def test_every_toolbar_icon_has_the_pixels_of_a_2x_screen(waiting_window):
    toolbar = waiting_window.findChild(QToolBar, "runToolbar")
    icons = {action.text(): action.icon() for action in toolbar.actions() if not action.icon().isNull()}
    assert icons  # Train, Stop, Open checkpoint, Export checkpoint
    assert [text for text, icon in icons.items() if not sharp_at(icon, toolbar.iconSize(), RATIO)] == []


@pytest.mark.parametrize("size", [16, 32, 48, 64, 128, 256])
def test_the_window_icon_is_sharp_at_2x_at_every_size_a_desktop_asks(qapp, size):
    from workbench.ui.dialogs.about import app_icon

    assert sharp_at(app_icon(), QSize(size, size), RATIO)


def test_a_thin_icon_is_not_sharp_at_2x(qapp):
    """The check above can fail: a 24-px pixmap alone is stretched on a 2× screen."""
    from PySide6.QtGui import QPixmap

    pixmap = QPixmap(24, 24)
    assert not sharp_at(QIcon(pixmap), QSize(24, 24), RATIO)


@pytest.mark.slow  # a new interpreter: the pixel ratio is fixed when the application starts
def test_thumbnails_are_drawn_at_the_screens_pixel_ratio(tmp_path):
    """A 28×28 digit as a 48-px gallery icon on a 2× screen: 96 device pixels of its own pixels (each sharp, no
    blended grey between black and white), not 48 stretched by the painter."""
    script = textwrap.dedent("""
        import numpy as np
        from PySide6.QtWidgets import QApplication
        from workbench.ui.panels.predict import pixmap_from_pixels

        app = QApplication([])
        checker = (np.indices((28, 28)).sum(axis=0) % 2 * 255).astype(np.uint8)
        pixmap = pixmap_from_pixels(checker, 48)
        image = pixmap.toImage()
        values = {image.pixelColor(x, y).value() for x in range(image.width()) for y in range(image.height())}
        print(app.devicePixelRatio(), pixmap.devicePixelRatio(), image.width(), sorted(values))
    """)
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", QT_SCALE_FACTOR=str(RATIO))
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[0] == "2.0 2.0 96 [0, 255]"
