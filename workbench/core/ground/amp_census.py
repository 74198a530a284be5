"""What autocast really ran in low precision, as plain data (domain.amp takes the census; the window, the report
and the run's results read it). Torch-free."""

from __future__ import annotations

from dataclasses import dataclass, field

from .codec import Record

GROUPS = ("low", "fp32", "other")  # the census's groups, in its sort order: bf16/fp16, fp32, neither


@dataclass(frozen=True)
class CensusRow(Record):
    """One op in one dtype: how many of the forward's calls of it ran in that dtype, and its group."""

    op: str
    calls: int
    dtype: str
    group: str  # one of GROUPS


@dataclass(frozen=True)
class CallsByGroup(Record):
    """The census's op calls by group."""

    low: int = 0
    fp32: int = 0
    other: int = 0


@dataclass(frozen=True)
class AmpCensus(Record):
    """One forward and loss of a run's model under autocast: a row per (op, dtype), low first, then fp32, then
    other, each by calls; and the calls by group."""

    ops: tuple[CensusRow, ...] = ()
    groups: CallsByGroup = field(default_factory=CallsByGroup)
