"""The app's icon and its About box: the versions a bug report needs (Workbench, torch, CUDA, Qt, Python, device)."""

from __future__ import annotations

import platform

from PySide6.QtCore import Qt
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QMessageBox, QWidget

from ...core.ground import appinfo
from ...core.ground.capabilities import Capabilities


def app_icon() -> QIcon:
    icon = QIcon(str(appinfo.icon_path()))
    for size in (16, 32, 48, 64, 128, 256):
        icon.addFile(str(appinfo.icon_path(size)))
    return icon


def about_text(caps: Capabilities) -> str:
    from PySide6 import __version__ as pyside_version
    from PySide6.QtCore import qVersion

    torch_version = caps.torch_version if caps.known else "(PyTorch is still starting)"
    cuda = caps.cuda_version or "none"
    return (f"<h3>{appinfo.DISPLAY_NAME} {appinfo.version()}</h3><p>{appinfo.summary()}</p>"
            f"<table><tr><td>torch</td><td>{torch_version}</td></tr>"
            f"<tr><td>CUDA</td><td>{cuda}{'' if caps.cuda_available else ' (no CUDA device here)'}"
            f"</td></tr><tr><td>Qt</td><td>{qVersion()} (PySide6 {pyside_version})</td></tr>"
            f"<tr><td>Python</td><td>{platform.python_version()}</td></tr>"
            f"<tr><td>Device</td><td>{caps.device_label()}</td></tr></table>")


def show_about(parent: QWidget, caps: Capabilities) -> QMessageBox:
    box = QMessageBox(QMessageBox.NoIcon, f"About {appinfo.DISPLAY_NAME}", about_text(caps), QMessageBox.Ok, parent)
    box.setObjectName("aboutDialog")
    box.setAttribute(Qt.WA_DeleteOnClose)
    box.setIconPixmap(parent.windowIcon().pixmap(64, 64))
    box.open()
    return box
