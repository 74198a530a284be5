"""Python's cyclic garbage collector runs on the GUI thread only.

Automatic collection runs on whichever thread happens to allocate. When it frees a Qt object there (the kernel
client's supervisor thread, a pool thread), Qt locks the object's connection data and, inside that lock, PySide asks
for the GIL; the GUI thread, holding the GIL's other side, waits on the same lock: a deadlock (seen in the test
suite: the main thread in QObjectPrivate::cleanOrphanedConnections, a kernel thread in gc → QObject::disconnect →
GilState::acquire). pyqtgraph's GarbageCollector disables automatic collection and collects on a GUI timer instead,
with the same generation thresholds.
"""

from __future__ import annotations

from pyqtgraph.util.garbage_collector import GarbageCollector

INTERVAL_S = 1.0
_collector: GarbageCollector | None = None


def collect_on_gui_thread() -> None:
    """Once per process, on the GUI thread (the QApplication exists)."""
    global _collector
    if _collector is None:
        _collector = GarbageCollector(interval=INTERVAL_S)
