"""Files handed to the window as a user hands them: a checkpoint opened as File → Open does, files dropped from a file
manager. Shared by the window's tests of predicting, exporting and the kernel (tests/ui/test_predict_panel.py,
test_export_dialog.py, test_kernel.py)."""

from __future__ import annotations

from PySide6.QtCore import QMimeData, QPoint, Qt, QUrl
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import QApplication


def drop_files(widget, paths) -> None:
    """What a file manager delivers: a drag-enter, then a drop, with file:// URLs in the mime data."""
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(p)) for p in paths])
    pos = widget.rect().center()
    enter = QDragEnterEvent(pos, Qt.CopyAction, mime, Qt.LeftButton, Qt.NoModifier)  # the QPoint overload
    QApplication.sendEvent(widget, enter)
    assert enter.isAccepted()
    drop = QDropEvent(QPoint(pos).toPointF(), Qt.CopyAction, mime, Qt.LeftButton, Qt.NoModifier)
    QApplication.sendEvent(widget, drop)


def load(window, qtbot, path, description="test checkpoint"):
    """Open a checkpoint as File → Open does (the kernel reads it); what the kernel answered."""
    with qtbot.waitSignal(window.checkpoints.checkpointLoaded, timeout=60_000) as loaded:
        window.checkpoints.load(path, description)
    return loaded.args[0]
