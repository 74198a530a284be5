"""Guards against a Qt-binding defect that would crash the app after a few minutes of training.

PySide6 6.12.0's Signal.emit() drops one reference to the bool it returns; the app emits ~30 signals a second,
so Python aborts ("bool_dealloc: deallocating True or False") within minutes. constraints.txt pins a good
release; this test fails loudly if a bad one is ever installed.
"""

from __future__ import annotations

import sys

from PySide6.QtCore import QObject, Signal


class _Emitter(QObject):
    fired = Signal(list)


def test_emitting_a_signal_does_not_corrupt_reference_counts(qapp):
    emitter = _Emitter()
    received = []
    emitter.fired.connect(received.append)
    before = {flag: sys.getrefcount(flag) for flag in (True, False, None)}
    for _ in range(200):
        emitter.fired.emit([1])
    after = {flag: sys.getrefcount(flag) for flag in (True, False, None)}
    assert len(received) == 200
    for flag in before:  # allow small unrelated churn; the defect loses exactly one reference per emit
        assert after[flag] - before[flag] > -50, f"{flag!r} lost {before[flag] - after[flag]} references"
