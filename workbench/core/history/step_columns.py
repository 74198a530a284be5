"""A run's steps as typed columns: one compressed block per batch the recorder commits, instead of a JSON row each.

A Step is most of a run's events (20,000 of 20,400 in a long run) and was 340 bytes of JSON a row; read back it was
430,000 JSON documents to decode for an overlay of 20 long runs. Here a batch of steps is one block: each field a
numpy column (step and epoch int32; loss, throughput, seconds, accuracy, loss scale, wall time and the four memory
readings float64, exactly as JSON held them, NaN and infinities included), a presence mask for the optional fields
(None is not NaN: a diverged loss is NaN and says so), the flags, and each step's place in the event stream (its
seq), so the stream reads back event for event. Float columns are byte-shuffled before zlib (the high bytes of a
column's values are alike and compress; interleaved with the low ones they did not): about 40 bytes a step.

The block is written in the same transaction as the batch's other events: a run killed mid-write loses at most the
batch it was writing, as before.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np

from ..ground.events import MemorySample, Step

FORMAT = 1  # the block layout; a block says which it is, so a later layout can read this one
FLOATS = ("loss", "samples_per_s", "step_seconds", "accuracy", "loss_scale", "wall", "allocated", "reserved", "peak",
          "rss")
OPTIONAL = ("accuracy", "loss_scale", "wall", "allocated", "reserved", "peak", "rss")  # may be None in a Step
FLAGS = ("compiling", "warmup", "profiled")
MEMORY = ("allocated", "reserved", "peak", "rss")
COMPRESSION = 6  # zlib's level: 1 saves little time on these sizes, 9 a few bytes more


@dataclass(frozen=True)
class StepBlock:
    """Steps as columns: `seq` places each in its run's event stream; `present[name]` says which optional values
    were given (the others were None)."""

    seq: np.ndarray  # int64
    step: np.ndarray  # int64
    epoch: np.ndarray  # int64
    values: dict[str, np.ndarray]  # FLOATS, float64
    present: dict[str, np.ndarray]  # OPTIONAL, bool
    flags: dict[str, np.ndarray]  # FLAGS, bool

    def __len__(self) -> int:
        return len(self.step)

    def take(self, indices: np.ndarray) -> "StepBlock":
        """The steps at these positions, as a block."""
        return StepBlock(seq=self.seq[indices], step=self.step[indices], epoch=self.epoch[indices],
                         values={name: column[indices] for name, column in self.values.items()},
                         present={name: column[indices] for name, column in self.present.items()},
                         flags={name: column[indices] for name, column in self.flags.items()})

    def steps(self) -> list[Step]:
        """The block's steps as events again, each as it was recorded."""
        values = {name: column.tolist() for name, column in self.values.items()}
        present = {name: column.tolist() for name, column in self.present.items()}
        flags = {name: column.tolist() for name, column in self.flags.items()}

        def given(name: str, i: int) -> float | None:
            return values[name][i] if present[name][i] else None

        return [Step(step=step, epoch=epoch, loss=values["loss"][i], samples_per_s=values["samples_per_s"][i],
                     step_seconds=values["step_seconds"][i],
                     memory=MemorySample(**{name: given(name, i) for name in MEMORY}),
                     compiling=flags["compiling"][i], warmup=flags["warmup"][i], profiled=flags["profiled"][i],
                     accuracy=given("accuracy", i), loss_scale=given("loss_scale", i), wall=given("wall", i))
                for i, (step, epoch) in enumerate(zip(self.step.tolist(), self.epoch.tolist()))]


def steady_mask(block: StepBlock) -> np.ndarray:
    """Which steps are of the steady state (Step.steady: not compiling, warming up or profiled), as a mask."""
    return ~(block.flags["compiling"] | block.flags["warmup"] | block.flags["profiled"])


def block_of(seqs: list[int], steps: list[Step]) -> StepBlock:
    """The steps (at these seqs of their run's stream) as columns."""
    def optional(name: str) -> tuple[np.ndarray, np.ndarray]:
        raw = [getattr(s.memory, name) if name in MEMORY else getattr(s, name) for s in steps]
        return (np.array([np.nan if v is None else v for v in raw], dtype=np.float64),
                np.array([v is not None for v in raw], dtype=bool))

    values = {name: np.array([getattr(s, name) for s in steps], dtype=np.float64)
              for name in FLOATS if name not in OPTIONAL}
    present = {}
    for name in OPTIONAL:
        values[name], present[name] = optional(name)
    return StepBlock(seq=np.array(seqs, dtype=np.int64), step=np.array([s.step for s in steps], dtype=np.int64),
                     epoch=np.array([s.epoch for s in steps], dtype=np.int64), values=values, present=present,
                     flags={name: np.array([getattr(s, name) for s in steps], dtype=bool) for name in FLAGS})


def pack(block: StepBlock) -> bytes:
    """The block as bytes: a format byte, then zlib of the columns (integers as int32 deltas, floats shuffled)."""
    n = len(block)
    parts = [np.array([n], dtype=np.int32).tobytes()]
    for column in (block.seq, block.step, block.epoch):
        parts.append(np.diff(column, prepend=0).astype(np.int32).tobytes())  # mostly 1 (or 0): compresses
    for name in FLOATS:
        parts.append(_shuffled(block.values[name]))
    bits = np.stack([block.present[name] for name in OPTIONAL] + [block.flags[name] for name in FLAGS])
    parts.append(np.packbits(bits, axis=1).tobytes())
    return bytes([FORMAT]) + zlib.compress(b"".join(parts), COMPRESSION)


def unpack(data: bytes) -> StepBlock:
    """The block `pack` wrote. A block of an unknown layout, or damaged, raises ValueError."""
    if not data or data[0] != FORMAT:
        raise ValueError(f"a block of steps in layout {data[0] if data else None}, not {FORMAT}")
    try:
        raw = zlib.decompress(data[1:])
    except zlib.error as exc:
        raise ValueError(f"a damaged block of steps ({exc})") from None
    n = int(np.frombuffer(raw, dtype=np.int32, count=1)[0]) if len(raw) >= 4 else -1
    flags = len(OPTIONAL) + len(FLAGS)
    if n < 0 or len(raw) != 4 + 3 * 4 * n + len(FLOATS) * 8 * n + flags * ((n + 7) // 8):
        raise ValueError("a block of steps of the wrong size")
    at = 4
    integers = []
    for _ in range(3):
        integers.append(np.cumsum(np.frombuffer(raw, dtype=np.int32, count=n, offset=at), dtype=np.int64))
        at += 4 * n
    values = {}
    for name in FLOATS:
        values[name] = _unshuffled(raw[at:at + 8 * n], n)
        at += 8 * n
    bits = np.unpackbits(np.frombuffer(raw, dtype=np.uint8, offset=at).reshape(flags, -1), axis=1,
                         count=n).astype(bool)
    return StepBlock(seq=integers[0], step=integers[1], epoch=integers[2], values=values,
                     present={name: bits[i] for i, name in enumerate(OPTIONAL)},
                     flags={name: bits[len(OPTIONAL) + i] for i, name in enumerate(FLAGS)})


def joined(blocks: list[StepBlock]) -> StepBlock:
    """Blocks one after another, as one."""
    if len(blocks) == 1:
        return blocks[0]
    if not blocks:
        return block_of([], [])
    return StepBlock(seq=np.concatenate([b.seq for b in blocks]), step=np.concatenate([b.step for b in blocks]),
                     epoch=np.concatenate([b.epoch for b in blocks]),
                     values={name: np.concatenate([b.values[name] for b in blocks]) for name in FLOATS},
                     present={name: np.concatenate([b.present[name] for b in blocks]) for name in OPTIONAL},
                     flags={name: np.concatenate([b.flags[name] for b in blocks]) for name in FLAGS})


def _shuffled(column: np.ndarray) -> bytes:
    """float64 values byte-plane by byte-plane (all first bytes, then all second bytes, …)."""
    return np.ascontiguousarray(column.astype("<f8").view(np.uint8).reshape(-1, 8).T).tobytes()


def _unshuffled(data: bytes, n: int) -> np.ndarray:
    planes = np.frombuffer(data, dtype=np.uint8).reshape(8, n)
    return np.ascontiguousarray(planes.T).view("<f8").reshape(n).astype(np.float64)
