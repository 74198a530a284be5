"""The one base class for problems a user can fix (bad config, missing data, unreadable file).

Front ends catch `WorkbenchError` and show its message — never a traceback. Anything else is a bug.
"""

from __future__ import annotations


class WorkbenchError(ValueError):
    kind = "input"  # RunFailed.kind when this ends a run

    def __init__(self, message: str, hint: str = ""):
        super().__init__(message)
        self.hint = hint


def first_line(exc: BaseException) -> str:
    """The first line of an exception's text: enough for a status line, never a wall of framework internals."""
    lines = str(exc).strip().splitlines()
    return lines[0].strip() if lines else type(exc).__name__


def with_hint(exc: BaseException) -> str:
    """'message — what to do': an error as a front end shows it in one line (the hint only when there is one)."""
    hint = getattr(exc, "hint", "") if isinstance(exc, WorkbenchError) else ""
    return f"{exc} — {hint}" if hint else str(exc)
