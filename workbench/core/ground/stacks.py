"""Every rank's Python stack and last collectives, side by side, and the first rank that differs (torch-free).

A run of several processes that stops stepping is most often one rank that never reached a collective the others
wait in (a rank stuck loading data, in its own code, on a dead device). Each rank's stack is taken by faulthandler
(run/stacks.py) and, where the process group records them, its last collectives by PyTorch's Flight Recorder. Here
they are read and compared: ranks doing the same thing have the same main-thread stack, line for line; the
reference is what most ranks do (a tie: rank 0's), and the first rank whose stack leaves it is named, with the
frame where it does."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from .codec import Record
from .events import Frame  # the one frame record: faulthandler prints no source line, so its source is ""

_THREAD = re.compile(r"^(Current thread|Thread) (0x[0-9a-f]+)")
_FRAME = re.compile(r'^\s+File "(.*)", line (\d+) in (.*)$')


@dataclass(frozen=True)
class Collective(Record):
    """One entry of a rank's Flight Recorder: its sequence number in its process group, what it was, its state."""

    seq: int
    name: str  # "gloo:all_reduce", "nccl:all_reduce"
    state: str  # "scheduled", "started", "completed"
    sizes: str = ""  # its input tensors' sizes

    def __str__(self) -> str:
        return f"#{self.seq} {self.name} {self.sizes} {self.state}".replace("  ", " ")


@dataclass(frozen=True)
class RankStack(Record):
    """One rank's answer: its faulthandler dump (every thread) and its last collectives; `error` when it could not
    answer (its process gone, or it did not answer in time)."""

    rank: int
    host: str
    pid: int
    dump: str = ""
    collectives: tuple[Collective, ...] = ()
    error: str = ""

    @property
    def frames(self) -> tuple[Frame, ...]:
        """Its main thread's frames, the outermost first: the thread not started by `threading` (whose outermost
        frame is threading's _bootstrap), which is where a run trains."""
        threads = _threads(self.dump)
        main = [frames for frames in threads if not frames or frames[0].function != "_bootstrap"]
        return (main or threads or [()])[0]


@dataclass(frozen=True)
class StacksView:
    """The ranks' stacks compared: `first_differing` is None when every rank that answered does the same thing."""

    stacks: tuple[RankStack, ...]  # by rank
    reference: int  # the rank whose stack stands for the most ranks
    first_differing: int | None
    divergence: int  # the index (outermost first) of the first frame where it leaves the reference

    @classmethod
    def of(cls, stacks: list[RankStack]) -> StacksView:
        stacks = sorted(stacks, key=lambda stack: stack.rank)
        answered = [stack for stack in stacks if not stack.error]
        if not answered:
            return cls(tuple(stacks), stacks[0].rank if stacks else 0, None, 0)
        counts = Counter(stack.frames for stack in answered)
        most = max(counts.values())
        reference = next(stack for stack in answered if counts[stack.frames] == most)  # a tie: the lowest rank
        differing = next((stack for stack in answered if stack.frames != reference.frames), None)
        if differing is None:
            return cls(tuple(stacks), reference.rank, None, 0)
        return cls(tuple(stacks), reference.rank, differing.rank, _common(reference.frames, differing.frames))

    def summary(self) -> str:
        """One sentence: who differs, where, and what the others do."""
        silent = [f"rank {stack.rank} on {stack.host}: {stack.error}" for stack in self.stacks if stack.error]
        said = f" (no stack from {'; '.join(silent)})" if silent else ""
        if self.first_differing is None:
            if len(silent) == len(self.stacks):
                return f"no rank answered{said}"
            return f"every rank that answered is at the same place: {_innermost(self._rank(self.reference))}{said}"
        odd, reference = self._rank(self.first_differing), self._rank(self.reference)
        return (f"rank {odd.rank} on {odd.host} is the first that differs: it is in {_innermost(odd)}; "
                f"{_same_as(self, reference)} in {_innermost(reference)}{self._parting(odd, reference)}"
                f"{_behind(odd, reference)}{said}")

    def _parting(self, odd: RankStack, reference: RankStack) -> str:
        """Where the two stacks part: the last function they share, at the lines each is at in it."""
        if self.divergence == 0:
            return ""
        mine, theirs = odd.frames[self.divergence - 1], reference.frames[self.divergence - 1]
        lines = f"line {mine.line}" + (f" against {theirs.line}" if theirs.line != mine.line else "")
        return f"; they part in {mine.function} ({mine.file.rsplit('/', 1)[-1]}, {lines})"

    def columns(self) -> list[tuple[str, list[str]]]:
        """(rank@host, its frames outermost first) a rank, each column as long as the longest (blank below)."""
        rows = max((len(stack.frames) for stack in self.stacks), default=0)
        return [(f"rank {stack.rank}@{stack.host}",
                 ([stack.error] if stack.error else [frame_text(frame) for frame in stack.frames]) + [""] * rows)
                for stack in self.stacks]

    def collective_columns(self) -> list[tuple[str, list[str]]]:
        """(rank@host, its last collectives, oldest first) a rank: where the Flight Recorder recorded them."""
        return [(f"rank {stack.rank}@{stack.host}", [str(entry) for entry in stack.collectives])
                for stack in self.stacks]

    def _rank(self, rank: int) -> RankStack:
        return next(stack for stack in self.stacks if stack.rank == rank)


def side_by_side(view: StacksView, width: int = 48) -> list[str]:
    """The stacks as text columns (the CLI's), rows from the outermost frame down, the first differing row marked;
    then the last collectives, where recorded."""
    columns = view.columns()
    rows = max((sum(1 for cell in cells if cell) for _name, cells in columns), default=0)
    lines = ["   " + " │ ".join(name[:width].ljust(width) for name, _cells in columns)]
    for row in range(rows):
        mark = "→  " if view.first_differing is not None and row == view.divergence else "   "
        lines.append(mark + " │ ".join(cells[row][:width].ljust(width) for _name, cells in columns))
    collectives = view.collective_columns()
    if any(cells for _name, cells in collectives):
        lines.append("   last collectives (Flight Recorder), oldest first:")
        deepest = max(len(cells) for _name, cells in collectives)
        for row in range(deepest):
            lines.append("   " + " │ ".join((cells[row] if row < len(cells) else "")[:width].ljust(width)
                                            for _name, cells in collectives))
    return [line.rstrip() for line in lines]


def _threads(dump: str) -> list[tuple[Frame, ...]]:
    """faulthandler's text as each thread's frames, the outermost first (it prints the most recent first)."""
    threads: list[list[Frame]] = []
    for line in dump.splitlines():
        if _THREAD.match(line):
            threads.append([])
        elif (frame := _FRAME.match(line)) and threads:
            threads[-1].append(Frame(file=frame[1], line=int(frame[2]), function=frame[3], source=""))
    return [tuple(reversed(frames)) for frames in threads]


def _common(a: tuple[Frame, ...], b: tuple[Frame, ...]) -> int:
    """How many outermost frames two stacks share by function (at whatever line: a rank in its forward and one in
    its backward are in the same step function, at two lines of it, and part just below)."""
    shared = 0
    for mine, theirs in zip(a, b):
        if (mine.file, mine.function) != (theirs.file, theirs.function):
            break
        shared += 1
    return shared


def _behind(odd: RankStack, reference: RankStack) -> str:
    """The Flight Recorder's word: the rank whose last collective is an earlier one has not reached the others'."""
    if not odd.collectives or not reference.collectives:
        return ""
    mine, theirs = odd.collectives[-1], reference.collectives[-1]
    if mine.seq == theirs.seq:
        return ""
    late, early = (odd, mine), (reference, theirs)
    if theirs.seq < mine.seq:
        late, early = early, late
    return (f"; rank {late[0].rank}'s last collective is #{late[1].seq} ({late[1].name}), rank {early[0].rank} is "
            f"at #{early[1].seq}: rank {late[0].rank} has not reached it")


def frame_text(frame: Frame) -> str:
    """"forward (model.py:10)": a frame as a column of stacks shows it."""
    return f"{frame.function} ({frame.file.rsplit('/', 1)[-1]}:{frame.line})"


def _innermost(stack: RankStack) -> str:
    return frame_text(stack.frames[-1]) if stack.frames else "no Python frame"


def _same_as(view: StacksView, reference: RankStack) -> str:
    """"rank 0 is" or "ranks 0, 2 and 3 are": the ranks at the reference's place."""
    same = [str(stack.rank) for stack in view.stacks if not stack.error and stack.frames == reference.frames]
    if len(same) == 1:
        return f"rank {same[0]} is"
    return f"ranks {', '.join(same[:-1])} and {same[-1]} are"
