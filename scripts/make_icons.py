"""Render the app icon (resources/icons/workbench.svg) to the PNG sizes desktops ask for.

Run once after changing the SVG: `QT_QPA_PLATFORM=offscreen python scripts/make_icons.py`. The PNGs are committed.
"""

from __future__ import annotations

import sys
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication, QImage, QPainter
from PySide6.QtSvg import QSvgRenderer

SIZES = (16, 24, 32, 48, 64, 128, 256, 512)
ICONS = Path(__file__).resolve().parents[1] / "resources" / "icons"  # installed as workbench.resources


def main() -> int:
    QGuiApplication(sys.argv[:1])
    renderer = QSvgRenderer(str(ICONS / "workbench.svg"))
    if not renderer.isValid():
        raise SystemExit("workbench.svg could not be read")
    for size in SIZES:
        image = QImage(size, size, QImage.Format_ARGB32)
        image.fill(Qt.transparent)
        painter = QPainter(image)
        painter.setRenderHint(QPainter.Antialiasing)
        renderer.render(painter)
        painter.end()
        image.save(str(ICONS / f"workbench-{size}.png"))
    print(f"wrote {len(SIZES)} PNGs to {ICONS}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
