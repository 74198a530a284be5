"""What a user's model prints while it trains in a kernel: shown in the window's Log, not only on a terminal.

A run kernel's stdout is the terminal the window was started from (often none: a desktop launcher). During a run,
`sys.stdout` becomes a writer that still writes through to it and hands each complete line to the run's event
stream as a Notice, so a `print` in a model's forward appears in the Log and in the run's history. A model that
prints every step would flood both: after MAX_LINES lines one warning says the rest went to the terminal only.
"""

from __future__ import annotations

import contextlib
import io
import sys
from typing import Callable, Iterator, TextIO

from ..ground.events import Notice

MAX_LINES = 50
PREFIX = "model output: "


class PrintedLines(io.TextIOBase):
    """A text stream that writes through to `terminal` and delivers each complete line as a Notice."""

    def __init__(self, deliver: Callable[[Notice], None], terminal: TextIO, limit: int = MAX_LINES):
        super().__init__()
        self.deliver, self.terminal, self.limit = deliver, terminal, limit
        self.partial = ""
        self.lines = 0

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self.terminal.write(text)
        *complete, self.partial = (self.partial + text).split("\n")
        for line in complete:
            self._line(line)
        return len(text)

    def flush(self) -> None:
        self.terminal.flush()

    def _line(self, line: str) -> None:
        self.lines += 1
        if self.lines <= self.limit:
            self.deliver(Notice("info", PREFIX + line.rstrip("\r")))
        elif self.lines == self.limit + 1:
            self.deliver(Notice("warning", f"the model printed more than {self.limit} lines: the rest go to the "
                                           "terminal only", "print less often (e.g. once per epoch)"))


@contextlib.contextmanager
def prints_as_notices(deliver: Callable[[Notice], None]) -> Iterator[PrintedLines]:
    """sys.stdout as PrintedLines for the duration (one run in this process)."""
    terminal = sys.stdout
    stream = PrintedLines(deliver, terminal)
    sys.stdout = stream
    try:
        yield stream
    finally:
        sys.stdout = terminal
