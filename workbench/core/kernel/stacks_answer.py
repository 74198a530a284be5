"""A rank's side of run/stacks.py: in each rank of a run of several processes, a thread that answers "where are
you?" with every thread's stack (faulthandler) and the process group's last collectives (PyTorch's Flight
Recorder), however stuck the training thread is."""

from __future__ import annotations

import faulthandler
import json
import os
import socket
import sys
import tempfile
import threading
from pathlib import Path

from ..ground.atomic import write_text_atomic
from ..ground.stacks import Collective, RankStack
from ..run.stacks import STACKS_DIR_ENV

FLIGHT_RECORDER_ENTRIES = 64  # kept by each process group; the newest LAST_COLLECTIVES are shown
LAST_COLLECTIVES = 8


def arm() -> None:
    """In a rank of a run of several processes (STACKS_DIR_ENV set): record its collectives and answer questions
    for its stack from now on."""
    folder = os.environ.get(STACKS_DIR_ENV)
    if not folder or not hasattr(os, "mkfifo"):
        return
    os.environ.setdefault("TORCH_FR_BUFFER_SIZE", str(FLIGHT_RECORDER_ENTRIES))
    rank = int(os.environ.get("RANK", "0"))
    path = Path(folder)
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    ask = path / f"rank{rank}.ask"
    ask.unlink(missing_ok=True)
    os.mkfifo(ask, 0o600)
    threading.Thread(target=_answer_each, args=(rank, ask, path / f"rank{rank}.json"), daemon=True,
                     name="workbench-stacks").start()


def _answer_each(rank: int, ask: Path, answer: Path) -> None:
    while True:
        with open(ask, "rb") as question:  # blocks until a collector opens it; its close is the question
            question.read()
        write_text_atomic(answer, json.dumps(_stack(rank).to_dict()))


def _stack(rank: int) -> RankStack:
    with tempfile.TemporaryFile("w+") as dump:  # faulthandler writes to a file descriptor
        faulthandler.dump_traceback(dump, all_threads=True)
        dump.seek(0)
        text = dump.read()
    return RankStack(rank=rank, host=socket.gethostname(), pid=os.getpid(), dump=text, collectives=_collectives())


def _collectives() -> tuple[Collective, ...]:
    """This process's last collectives from the Flight Recorder; none before its process group starts."""
    distributed = sys.modules.get("torch.distributed")
    if distributed is None or not distributed.is_available() or not distributed.is_initialized():
        return ()
    from torch._C import _distributed_c10d as c10d

    dump = c10d._dump_nccl_trace_json if distributed.get_backend() == "nccl" else c10d._dump_fr_trace_json
    try:
        entries = json.loads(dump(True, False)).get("entries", [])
    except (RuntimeError, ValueError):  # a build without the recorder: the stacks alone
        return ()
    return tuple(Collective(seq=int(entry.get("collective_seq_id", 0)), name=str(entry.get("profiling_name", "")),
                            state=str(entry.get("state", "")), sizes=_sizes(entry.get("input_sizes", [])))
                 for entry in entries[-LAST_COLLECTIVES:])


def _sizes(shapes: list) -> str:
    """[[4], [2, 3]] as "4 2×3": the tensors a collective moved."""
    return " ".join("×".join(map(str, shape)) or "scalar" for shape in shapes)
