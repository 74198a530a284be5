"""Cycles of garbage are collected on the GUI thread, by a timer, never by whichever thread allocates."""

from __future__ import annotations

import gc
import weakref


def test_a_window_moves_garbage_collection_to_the_gui_thread(window, qtbot):
    assert not gc.isenabled()  # no automatic collection on a kernel or pool thread

    class Node:
        pass

    freed = []
    for _ in range(5):  # enough cycles for a generation-0 collection
        a, b = Node(), Node()
        a.other, b.other = b, a  # a cycle: only the collector frees it
        weakref.finalize(a, freed.append, True)
        del a, b
    kept = [[] for _ in range(2 * gc.get_threshold()[0])]  # live allocations: past generation 0's threshold
    qtbot.waitUntil(lambda: len(freed) == 5, timeout=10_000)
    del kept
