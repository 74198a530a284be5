"""The app's window paints at once, saying what it is waiting for, and builds its panels and starts its kernels
behind that first paint (issue 28: mapped at 3.0 s, painted at 6.9 s under load)."""

from __future__ import annotations

import subprocess
import sys

from PySide6.QtCore import QEvent, QObject
from PySide6.QtWidgets import QApplication


class _PaintsBeforeBuild(QObject):
    """Counts the window's Paint events that come while it has no panels yet."""

    def __init__(self, window):
        super().__init__()
        self.window, self.count = window, 0

    def eventFilter(self, obj, event):
        if obj is self.window and event.type() == QEvent.Paint and not self.window.docks:
            self.count += 1
        return False


def _staged(tmp_path, kernel):
    from workbench.ui.main_window import MainWindow

    return MainWindow(runs_dir=tmp_path / "runs", db=tmp_path / "runs.sqlite", prestart=False, kernel=kernel,
                      staged=True)


def test_a_staged_window_paints_what_it_waits_for_then_builds_and_asks_the_kernel(qtbot, tmp_path, kernel):
    window = _staged(tmp_path, kernel)
    qtbot.addWidget(window)
    assert window.docks == {} and not hasattr(window, "kernel")
    assert "Starting Workbench" in window.centralWidget().text()
    spy = _PaintsBeforeBuild(window)
    window.installEventFilter(spy)
    window.show()
    qtbot.waitUntil(lambda: bool(window.docks), timeout=60_000)
    assert spy.count >= 1, "the window was built before it painted"
    assert window.centralWidget().objectName() != "startingText"
    qtbot.waitUntil(lambda: window.kernel.capabilities.known, timeout=120_000)
    assert window.device_label.text()  # the status bar says what it runs on
    window.close()


def test_a_staged_window_closed_before_it_is_built_starts_nothing(qtbot, tmp_path, kernel):
    from PySide6.QtCore import QTimer

    window = _staged(tmp_path, kernel)
    qtbot.addWidget(window)

    class CloseAtFirstPaint(QObject):
        """Queues the close ahead of the build that the window queues as it paints (zero timers run in order)."""

        def eventFilter(self, obj, event):
            if obj is window and event.type() == QEvent.Paint:
                window.removeEventFilter(self)
                QTimer.singleShot(0, window.close)
            return False

    closer = CloseAtFirstPaint()
    window.installEventFilter(closer)
    window.show()
    qtbot.waitUntil(lambda: not window.isVisible(), timeout=60_000)
    for _ in range(5):
        QApplication.processEvents()
    assert window._build_later is None, "the window never painted"
    assert window.docks == {} and not hasattr(window, "kernel")


def test_the_window_module_imports_without_the_panels_or_pyqtgraph():
    """What the first paint waits for: the window's module alone, not the panels (pyqtgraph, numpy)."""
    code = ("import sys, workbench.ui.main_window; "
            "print(sorted(m for m in ('pyqtgraph', 'numpy', 'workbench.ui.panels.plots.plots') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "[]"
