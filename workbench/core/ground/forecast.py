"""Recompile forecast: which recompiles a compiled run will hit, predicted from its config alone, with the fix.

Why: people who turn `torch.compile` on are surprised by the recompiles it does on its own — "recompiling" at the
first validation, or again at the validation's last (partial) batch — and take them for a bug, or chase the one
that is by design while missing the one they can avoid. A forecast says before the run which recompiles are coming,
when, why and what would avoid them; `check_forecast` then holds it against the run's real recompiles
(`CompileReport.recompiles`), so a wrong forecast shows up as "did not happen" or "not predicted", never silently.

What Dynamo does in the engine's loop (torch 2.14, measured with the built-in network and backend aot_eager; the
reason strings are kept verbatim in tests/core/test_forecast.py):
- Training batches all have one shape (the training split drops its partial last batch), so the training graph
  compiles once and never recompiles: there is no "partial training batch". Several processes each train on
  batch_size // world_size.
- The first validation runs `model.eval()` under `torch.no_grad()`. The training graph's guards fail and an eval
  graph is compiled: one recompile, expected. Dynamo reports only the first failing guard of a cache entry,
  "GLOBAL_STATE changed: grad_mode"; the training flag and the batch size (1,024 against the training batch) change
  in the same recompile, never in one of their own.
- That eval graph has a dynamic batch size with dynamic=True, or with automatic dynamic shapes (dynamic=None) when
  the first validation batch differs from the training batch; otherwise (dynamic=False, or automatic with equal
  batches) it is static.
- The validation's last batch is partial unless the split (each process's shard of it) divides by EVAL_BATCH. A
  static eval graph recompiles for it ("size mismatch at index 0. expected 1024, actual 76"); a dynamic one takes it,
  except a batch of one: dynamic sizes exclude 0 and 1 ("0/1 specialization", the guard "2 <= x.size()[0]").
- Later epochs reuse the graphs: nothing more recompiles.

A forecast is for one process (rank 0 by default: the run's compile report is rank 0's). Torch-free.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Any, Sequence

from .config import EVAL_BATCH, TrainConfig
from .codec import Record

EVAL_MODE = "eval_mode"
PARTIAL_VAL_BATCH = "partial_val_batch"
BATCH_OF_ONE = "batch_of_one"
CAUSES = {
    EVAL_MODE: "validation runs the model in eval mode without gradients: a graph of its own (by design)",
    PARTIAL_VAL_BATCH: "the validation's last batch is smaller than the others and the eval graph is static",
    BATCH_OF_ONE: "a batch of one image: dynamic batch sizes exclude 0 and 1, so it gets a graph of its own",
}
_SHAPE_CAUSES = (PARTIAL_VAL_BATCH,)  # causes that show up as Dynamo's "size mismatch" wording

CONFIRMED, DID_NOT_HAPPEN, NOT_PREDICTED = "confirmed", "did not happen", "not predicted"


@dataclass(frozen=True)
class Forecast(Record):
    """One recompile (or `count` of them) a compiled run will hit, and the fix."""

    cause: str  # a key of CAUSES
    phase: str  # "train" | "eval": what the run is doing when it recompiles
    when: str  # plain words: "at the first validation (after step 1,875)"
    text: str  # one line: what recompiles and why
    fix: str  # the concrete change that avoids it ("expected: no fix needed" for one by design)
    expected: bool  # by design (the eval graph), not something to fix
    count: int = 1  # recompiles it accounts for
    batch: int | None = None  # the batch size that triggers it: matched against Dynamo's "actual N"


@dataclass(frozen=True)
class ForecastCheck(Record):
    """A forecast held against the run's real recompiles. As plain data (a run's results, the report) the
    forecast's fields sit beside the verdict and what was observed, in one object."""

    forecast: Forecast | None  # None: a recompile nobody predicted
    observed: tuple[str, ...]  # the real recompile reasons it matched
    verdict: str  # "confirmed" | "did not happen" | "not predicted"; "" for a forecast not yet held against a run

    def to_dict(self) -> dict[str, Any]:
        forecast = self.forecast.to_dict() if self.forecast is not None else {}
        return {**forecast, "verdict": self.verdict, "observed": list(self.observed)}

    @classmethod
    def read(cls, data: Any, where: str) -> ForecastCheck:
        if not isinstance(data, dict):
            raise ValueError(f"{where} is {type(data).__name__}, not an object")
        own = ("verdict", "observed")
        forecast = {key: value for key, value in data.items() if key not in own}
        check = super().read({**{key: data[key] for key in own if key in data}, "forecast": None}, where)
        return dataclasses.replace(check, forecast=Forecast.read(forecast, where) if forecast else None)


# -- the engine's batch arithmetic ------------------------------------------------------------------------------
def steps_per_epoch(batch_size: int, train_size: int, world_size: int = 1) -> int:
    """Optimizer steps per epoch, as DeviceBatches counts them: each process takes an equal shard of the training
    split and batches of batch_size // world_size from it, dropping the partial last one."""
    per_process = batch_size // world_size
    if per_process <= 0:
        return 0
    return (train_size // world_size) // per_process


def val_batch_sizes(val_size: int, world_size: int = 1, rank: int = 0) -> tuple[int, ...]:
    """The sizes of one process's validation batches, in order: every world_size-th image from `rank` on (nothing
    dropped), in batches of EVAL_BATCH; the last one is partial unless the shard divides by EVAL_BATCH."""
    shard = len(range(rank, val_size, world_size))
    full, rest = divmod(shard, EVAL_BATCH)
    return (EVAL_BATCH,) * full + ((rest,) if rest else ())


# -- the forecast -----------------------------------------------------------------------------------------------
def forecast_recompiles(config: TrainConfig, train_size: int, val_size: int, world_size: int = 1, *,
                        rank: int = 0) -> tuple[Forecast, ...]:
    """The recompiles a run of `config` on a split of `train_size` / `val_size` images will hit, on process `rank`
    of `world_size`, in the order they happen. Nothing for an eager config, nor for one the engine refuses (a batch
    larger than the training split) or a process with no validation images."""
    if not config.compiled or world_size < 1:
        return ()
    train_batch = config.batch_size // world_size
    steps = steps_per_epoch(config.batch_size, train_size, world_size)
    batches = val_batch_sizes(val_size, world_size, rank)
    if steps == 0 or not batches:
        return ()
    first_step = min(steps, config.max_steps) if config.max_steps else steps
    after = f"after step {first_step:,}"
    where = f" on rank {rank} (its {sum(batches):,} of the {val_size:,} validation images)" if world_size > 1 else ""
    first, last = batches[0], batches[-1]
    dynamic_eval = first != 1 and (config.dynamic is True or (config.dynamic is None and first != train_batch))
    forecasts = [_eval_mode(config, train_batch, first, dynamic_eval, f"at the first validation ({after}){where}")]
    if last == first:
        return tuple(forecasts)
    when = f"at the first validation's last batch ({_images(last)}, {after}){where}"
    if not dynamic_eval:
        forecasts.append(_partial(config, train_batch, first, last, when, val_size, world_size))
    elif last == 1:
        forecasts.append(_one(first, when, val_size, world_size))
    return tuple(forecasts)


def _eval_mode(config: TrainConfig, train_batch: int, first: int, dynamic_eval: bool, when: str) -> Forecast:
    size = (f"; its batch of {first:,} against the training batch of {train_batch:,} is part of the same "
            f"recompile (Dynamo names only the first failing guard)" if first != train_batch else "")
    if dynamic_eval:
        why = "dynamic=True" if config.dynamic else "automatic dynamic shapes: it differs from the training batch"
        shape = f"; the eval graph gets a dynamic batch size ({why})"
    elif first == 1:
        shape = "; a batch of one is specialised: the eval graph is static"
    else:
        why = "dynamic=False" if config.dynamic is False else "automatic dynamic shapes: it equals the training batch"
        shape = f"; the eval graph is static, for batches of {first:,} ({why})"
    return Forecast(
        cause=EVAL_MODE, phase="eval", when=when, expected=True,
        text=("forward recompiles for validation: model.eval() under torch.no_grad() fails the training graph's "
              f"grad_mode guard, so an eval graph is compiled{size}{shape}"),
        fix="expected: no fix needed (the eval graph compiles once; every later validation reuses it)")


def _partial(config: TrainConfig, train_batch: int, first: int, last: int, when: str, val_size: int,
             world_size: int) -> Forecast:
    if config.dynamic is False:
        why = "dynamic=False compiled it for batches of exactly"
        switch = "dynamic=None (automatic) or dynamic=True"
    else:
        why = f"automatic dynamic shapes compiled it static, as the training batch is also {train_batch:,}: exactly"
        switch = "dynamic=True"
    if last == 1:  # a dynamic graph would not take it either (0/1 specialisation): only an unbacked size does
        fix = "torch._dynamo.decorators.mark_unbacked(x, 0) on the validation batch (no 0/1 specialisation)"
    else:
        fix = (f"{switch} (the eval graph then takes any batch of 2 or more), or torch._dynamo.mark_dynamic(x, 0) "
               f"on the validation batch")
    return Forecast(
        cause=PARTIAL_VAL_BATCH, phase="eval", when=when, expected=False, batch=last,
        text=(f"forward recompiles for the last validation batch of {_images(last)}: the eval graph is static "
              f"({why} {first:,})"),
        fix=f"{fix}, or {_whole_batches(val_size, world_size)}")


def _one(first: int, when: str, val_size: int, world_size: int) -> Forecast:
    return Forecast(
        cause=BATCH_OF_ONE, phase="eval", when=when, expected=False, batch=1,
        text=(f"forward recompiles for the last validation batch of 1 image: the eval graph's dynamic batch size "
              f"(compiled at {first:,}) excludes 0 and 1 (0/1 specialisation), so a batch of one needs a graph of "
              f"its own"),
        fix=(f"torch._dynamo.decorators.mark_unbacked(x, 0) on the validation batch (no 0/1 specialisation), or "
             f"{_no_batch_of_one(val_size, world_size)}"))


def _images(n: int) -> str:
    return f"{n:,} image{'' if n == 1 else 's'}"


def _whole_batches(val_size: int, world_size: int) -> str:
    """Validation sizes near `val_size` whose shards all divide into whole EVAL_BATCH batches."""
    unit = EVAL_BATCH * world_size
    below, above = val_size // unit * unit, (val_size // unit + 1) * unit
    sizes = " or ".join(f"{n:,}" for n in (below, above) if n > 0)
    per = f": each of the {world_size} processes' shards then divides by {EVAL_BATCH:,}" if world_size > 1 else ""
    return f"a validation split whose size is a multiple of {unit:,} (e.g. {sizes}{per}) or at most {unit:,}"


def _no_batch_of_one(val_size: int, world_size: int) -> str:
    """The validation sizes nearest `val_size` (one smaller, one larger) that leave no process a batch of one."""
    def fine(n: int) -> bool:
        shards = (val_batch_sizes(n, world_size, r) for r in range(world_size))
        return not any(len(sizes) > 1 and sizes[-1] == 1 for sizes in shards)

    # Every shard is one of two neighbouring sizes, and 2 × world_size more images add 2 to each: a size without
    # a batch of one is always that close.
    below = next((n for n in range(val_size - 1, max(val_size - 2 * world_size - 2, 0), -1) if fine(n)), None)
    above = next((n for n in range(val_size + 1, val_size + 2 * world_size + 2) if fine(n)), None)
    sizes = " or ".join(f"{n:,}" for n in (below, above) if n is not None)
    return f"a validation split of {sizes} images (no batch of one)"


# -- the check --------------------------------------------------------------------------------------------------
# Dynamo's wording of each cause, as CompileReport.recompiles carries it ("forward: 0/1: <recompile_reason>").
_EVAL_WORDING = re.compile(r"GLOBAL_STATE changed:[^;]*\bgrad_mode\b|\.training == (?:True|False)"
                           r"|___check_obj_id\([^)]*\.training\b")
_SIZE_WORDING = re.compile(r"size mismatch at index (\d+)\. expected (\d+), actual (\d+)")
_ONE_WORDING = re.compile(r"0/1 specialization|\b2 <= [\w.\[\]'\"]*size\(\)\[\d+\]")


def recompile_cause(reason: str) -> tuple[str, int | None] | None:
    """(cause, the batch size it saw) of one real recompile reason; the cause is "size" for Dynamo's size-mismatch
    wording (which of the shape causes it is depends on the batch). None: wording this module does not know."""
    if _EVAL_WORDING.search(reason):
        return EVAL_MODE, None
    size = _SIZE_WORDING.search(reason)
    if size:
        return "size", int(size[3])
    if _ONE_WORDING.search(reason):
        return BATCH_OF_ONE, 1
    return None


def check_forecast(forecasts: Sequence[Forecast], recompiles: Sequence[str]) -> tuple[ForecastCheck, ...]:
    """Each forecast with the real recompile reasons that match it ("confirmed", or "did not happen"), then each
    recompile no forecast accounts for ("not predicted"). A reason matches a forecast by its cause — a size
    mismatch by the batch size it saw. `observed` may hold more reasons than the forecast's `count` when a model's
    forward is split by graph breaks: each of its frames recompiles on its own."""
    matched: dict[int, list[str]] = {i: [] for i in range(len(forecasts))}
    unpredicted: list[str] = []
    for reason in recompiles:
        index = _match(forecasts, recompile_cause(reason))
        if index is None:
            unpredicted.append(reason)
        else:
            matched[index].append(reason)
    checks = [ForecastCheck(forecast=f, observed=tuple(matched[i]), verdict=CONFIRMED if matched[i] else DID_NOT_HAPPEN)
              for i, f in enumerate(forecasts)]
    checks += [ForecastCheck(forecast=None, observed=(reason,), verdict=NOT_PREDICTED) for reason in unpredicted]
    return tuple(checks)


def _match(forecasts: Sequence[Forecast], found: tuple[str, int | None] | None) -> int | None:
    if found is None:
        return None
    cause, batch = found
    for i, forecast in enumerate(forecasts):
        if cause == "size" and forecast.cause in _SHAPE_CAUSES and forecast.batch == batch:
            return i
        if cause == forecast.cause:
            return i
    return None
