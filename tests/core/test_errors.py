"""How an error reads in one line: its message, and what to do when it says."""

from __future__ import annotations

from workbench.core.ground.errors import WorkbenchError, first_line, with_hint


def test_with_hint_adds_the_hint_only_when_there_is_one():
    assert with_hint(WorkbenchError("no data in /x", "choose a folder")) == "no data in /x — choose a folder"
    assert with_hint(WorkbenchError("no data in /x")) == "no data in /x"
    assert with_hint(RuntimeError("boom")) == "boom"


def test_first_line_keeps_a_status_line_short():
    assert first_line(RuntimeError("first\nsecond")) == "first"
    assert first_line(RuntimeError("")) == "RuntimeError"
