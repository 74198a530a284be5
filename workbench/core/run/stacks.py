"""Asking the ranks of a run on this machine for their stacks; each answers from a thread of its own
(kernel/stacks_answer.py), so a rank whose training thread is stuck (in a collective, loading data, in the user's
code) still answers.

Each rank of a run of several processes (its folder in STACKS_DIR_ENV: torchrun's temp folder here, the run's
folder on a host) makes a FIFO, `rank<R>.ask`, and a thread that waits on it. Opening the FIFO for writing is the
question; the rank answers with `rank<R>.json` (written whole: temp file and rename), holding every thread's stack
as faulthandler prints it and its process group's last collectives as PyTorch's Flight Recorder keeps them (armed
there: TORCH_FR_BUFFER_SIZE, before the process group starts; Gloo and NCCL both record). A FIFO with no reader is
a rank that has ended. The folder is the run's own, mode 0700: only its user can ask. Not on Windows (no FIFOs).

No torch: the asking side (a host's supervisor, the window's run slot) does not load it."""

from __future__ import annotations

import json
import os
import socket
import time
from dataclasses import dataclass, replace
from pathlib import Path

from ..ground.codec import Record
from ..ground.stacks import RankStack

STACKS_DIR_ENV = "WORKBENCH_STACKS_DIR"
ANSWER_S = 5.0  # a rank's answer thread needs the interpreter for a moment: one held longer than this is said


@dataclass(frozen=True)
class RankStacks(Record):
    """A machine's answer to "stacks": its ranks' (the host's answer over SSH, typed on both sides)."""

    stacks: tuple[RankStack, ...]


def collect(folder: str | Path, host: str | None = None) -> list[RankStack]:
    """Every rank's answer in `folder`, asked all at once; a rank that has ended or does not answer within
    ANSWER_S is a RankStack with its `error`. `host`: how the answers name this machine (default: its name)."""
    folder, host = Path(folder), host or socket.gethostname()
    stacks, waiting = [], {}
    for ask in sorted(folder.glob("rank*.ask")):
        rank = int(ask.stem.removeprefix("rank"))
        answer = folder / f"rank{rank}.json"
        answer.unlink(missing_ok=True)
        try:
            os.close(os.open(ask, os.O_WRONLY | os.O_NONBLOCK))  # no reader: ENXIO
        except OSError:
            stacks.append(RankStack(rank=rank, host=host, pid=0, error="its process has ended"))
            continue
        waiting[rank] = answer
    deadline = time.monotonic() + ANSWER_S
    while waiting and time.monotonic() < deadline:
        for rank, answer in list(waiting.items()):
            if answer.exists():  # renamed into place: whole
                stack = RankStack.from_dict(json.loads(answer.read_text(encoding="utf-8")))
                stacks.append(replace(stack, host=host))
                del waiting[rank]
        time.sleep(0.02)  # another process writes the answers: looked for, not signalled
    stacks += [RankStack(rank=rank, host=host, pid=0, error=f"did not answer within {ANSWER_S:.0f} s")
               for rank in waiting]
    return sorted(stacks, key=lambda stack: stack.rank)
