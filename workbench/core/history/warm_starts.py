"""Warm starts: which recorded run's compile cache a new run may load before its first compile, and why (or why not).

A compiled run leaves PyTorch's compile artefacts in its folder (CACHE_FILE: `torch.compiler.save_cache_artifacts()`,
the "mega-cache": the AOTAutograd and Inductor FX-graph cache entries it made or used, autotuning results) beside
what they were made for (KEY_FILE: a `CompileCache`). A later run whose `WarmKey` is equal loads them before it
compiles (instruments.warm_start), and its compile finds its graphs in the cache instead of lowering them again.

The key holds what decides whether the artefacts can serve a run: the settings that change the compiled graphs
(COMPILE_SETTINGS), the input batch's shape, the model's code (a hash of the files its class and base classes are
defined in), the torch version, the device, the number of processes, and what the compiled code needs to run (the
platform: CPU architecture and vector ISA, C++ compiler, GPU capability, Triton). On the CPU the cache also keeps the
C++ kernels Inductor built (KERNELS_FILE: their sources and binaries, which the mega-cache leaves out), so that a warm
start compiles none of them again. Loading another key's artefacts would
compile nothing wrong (Inductor's own cache keys guard each entry: a stale one is a miss), so the key is about
whether a warm start helps and about saying plainly why a run cannot warm-start from another.

Loading artefacts is another matter: `load_cache_artifacts` unpickles, so a crafted CACHE_FILE runs its code. A
cache is therefore signed when it is written (ground.signing: a keyed hash only this user's Workbench can make, over
the bytes and the key they were made for) and loaded only when the signature holds (`trusted_bytes`): a cache from
before signing, copied from another computer or user, or changed since, is refused with the reason.

Torch-free: the history, the CLI and the window read it (which runs can be warm-started from, and what a warm start
measured), the engine computes and checks the key.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path

from typing import Callable

from ..ground.config import ConfigError, settings
from ..ground.codec import Record
from ..ground.events import RunFinished
from ..ground.signing import verify
from .runs import RunRecord, RunStore, RunStoreError

CACHE_FILE = "compile-cache.bin"  # torch.compiler.save_cache_artifacts()'s bytes
KERNELS_FILE = "compile-kernels.tar"  # the C++ kernels Inductor built for the run (their sources and binaries)
KEY_FILE = "compile-cache.json"  # a CompileCache: what they were made for; written after the two above
# The settings that change what torch.compile produces for the model (declared on each: `changes_graphs`): its graphs
# (model, widths, dropout, data and batch shapes, precision) and how they are compiled. Learning rate, optimizer,
# seed, epochs do not: the optimizer step is not compiled.
COMPILE_SETTINGS = tuple(declared.name for declared in settings() if declared.changes_graphs)


class WarmStartError(ConfigError):
    """`warm_from` names a run whose compile cache cannot serve this one: why, and what to do instead."""

    def __init__(self, message: str, hint: str):
        super().__init__("warm_from", message)
        self.hint = hint


@dataclass(frozen=True)
class WarmKey(Record):
    """What a compile cache was made for; two runs with equal keys compile the same graphs the same way."""

    settings: dict  # COMPILE_SETTINGS → the run's value
    input_shape: tuple[int, ...]  # a training batch's (this process's share)
    model_hash: str  # sha256 over the model class's source files (its own and its non-torch base classes')
    torch: str  # torch.__version__
    device: str  # "cpu", or "cuda: <GPU name>" (generated kernels are specific to the GPU)
    world_size: int = 1  # DDP splits the graphs at its buckets
    platform: str = ""  # what compiled code needs to run: CPU architecture and vector ISA, C++ compiler, GPU
    #                     capability, Triton ("" : a cache from before it was stamped)


@dataclass(frozen=True)
class CompileCache(Record):
    """KEY_FILE: a run's saved compile cache, what it was made for and what the run's compile cost."""

    key: WarmKey
    artifacts: dict[str, int]  # how many artefacts of each kind ("inductor", "aot_autograd", "autotune", ...)
    bytes: int  # CACHE_FILE's size
    compile_seconds: float  # the run's, every phase (first step, first validation, CUDA-graph recording)
    warm_from: int | None = None  # the run whose cache this run loaded; None: it compiled cold
    cold_run: int | None = None  # a warm run: the cold run its cache descends from
    cold_compile_seconds: float | None = None  # that cold run's compile seconds, as it recorded them
    signature: str = ""  # ground.signing's, over CACHE_FILE's bytes for `key` (signed_purpose): "" from before signing
    kernels: int = 0  # the compiled C++ kernels in KERNELS_FILE (0: none, or a cache from before they were kept)
    kernels_bytes: int = 0
    kernels_signature: str = ""  # over KERNELS_FILE's bytes for `key` (signed_purpose(key, "compiled kernels"))


@dataclass(frozen=True)
class WarmSource:
    """A recorded run whose compile cache a new run loads: where, and the cold launch it descends from."""

    run_id: int
    cache_file: Path
    cache: CompileCache

    @property
    def cold_run(self) -> int | None:
        """The cold run at the origin of the cache: the run itself when it compiled cold (None: not known)."""
        return self.cache.cold_run if self.cache.warm_from is not None else self.run_id

    @property
    def cold_compile_seconds(self) -> float | None:
        """What a cold launch of these settings cost, as that cold run measured it."""
        return self.cache.cold_compile_seconds if self.cache.warm_from is not None else self.cache.compile_seconds


def signed_purpose(key: WarmKey, what: str = "compile cache") -> str:
    """What a signature binds its bytes to: a compile cache (or its compiled kernels), made for this key."""
    return f"{what} for " + json.dumps(key.to_dict(), sort_keys=True)


def trusted_bytes(source: WarmSource) -> bytes:
    """CACHE_FILE's bytes, read once and proven to be what this Workbench wrote for the key beside them: those very
    bytes are what may be loaded. A WarmStartError says why anything else is refused."""
    name = f"run #{source.run_id}'s compile cache {source.cache_file}"
    try:
        data = source.cache_file.read_bytes()
    except OSError as exc:
        raise WarmStartError(f"{name} cannot be read: {exc.strerror or exc}",
                             "warm-start from another run, or leave warm_from unset") from None
    why = "loading a compile cache runs the code it holds, so only one this Workbench signed is loaded"
    if not source.cache.signature:
        raise WarmStartError(f"{name} is not signed: not loaded ({why})",
                             "it was written before compile caches were signed, or not by Workbench; train once "
                             "with these settings (it makes a signed cache), or leave warm_from unset")
    if not verify(data, signed_purpose(source.cache.key), source.cache.signature):
        raise WarmStartError(f"{name} does not carry this Workbench's signature: not loaded ({why})",
                             "it was changed after it was written, or comes from another computer or user; train "
                             "once with these settings (it makes a signed cache), or leave warm_from unset")
    return data


def trusted_kernels(source: WarmSource) -> bytes | None:
    """KERNELS_FILE's bytes, proven to be what this Workbench wrote for the key beside them (binaries: loading one runs
    it); None for a cache that kept no kernels. A WarmStartError says why anything else is refused."""
    cache = source.cache
    if not cache.kernels:
        return None
    path = source.cache_file.with_name(KERNELS_FILE)
    name = f"run #{source.run_id}'s compiled kernels {path}"
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise WarmStartError(f"{name} cannot be read: {exc.strerror or exc}",
                             "warm-start from another run, or leave warm_from unset") from None
    if not verify(data, signed_purpose(cache.key, "compiled kernels"), cache.kernels_signature):
        raise WarmStartError(f"{name} do not carry this Workbench's signature: not loaded (they are binaries that "
                             "would run here)", "they were changed after they were written, or come from another "
                                                "computer or user; train once with these settings, or leave "
                                                "warm_from unset")
    return data


def key_differences(ours: WarmKey, theirs: WarmKey, source: str) -> list[str]:
    """What differs between this run's key and `source`'s ("run #3"), in words: "backend: inductor here,
    aot_eager in run #3"; [] when the keys are equal."""
    found = [f"{name}: {ours.settings.get(name)!r} here, {theirs.settings.get(name)!r} in {source}"
             for name in sorted(set(ours.settings) | set(theirs.settings))
             if ours.settings.get(name) != theirs.settings.get(name)]
    if ours.input_shape != theirs.input_shape:
        found.append(f"batch shape: {tuple(ours.input_shape)} here, {tuple(theirs.input_shape)} in {source}")
    if ours.model_hash != theirs.model_hash:
        found.append(f"the model's code changed since {source} (its source files hash differently)")
    if ours.torch != theirs.torch:
        found.append(f"torch: {ours.torch} here, {theirs.torch} in {source}")
    if ours.device != theirs.device:
        found.append(f"device: {ours.device} here, {theirs.device} in {source}")
    if ours.world_size != theirs.world_size:
        found.append(f"processes: {ours.world_size} here, {theirs.world_size} in {source}")
    if ours.platform != theirs.platform:
        theirs_for = theirs.platform or "a platform not stamped (a cache from before it was)"
        found.append(f"compiled code for: {ours.platform} here, {theirs_for} in {source}")
    return found


def read_cache(folder: Path) -> CompileCache | None:
    """The compile cache a run folder holds; None when it holds none (or one this version cannot read)."""
    if not (folder / CACHE_FILE).is_file():
        return None
    try:
        return CompileCache.from_dict(json.loads((folder / KEY_FILE).read_text(encoding="utf-8")))
    except (OSError, ValueError, RecursionError):
        return None


def cache_of(record: RunRecord) -> WarmSource | None:
    """A recorded run's compile cache, when its folder is on this computer and holds one (the window's "Warm start
    from #N" action is offered for such runs)."""
    folder = record.folder
    cache = read_cache(folder) if folder is not None else None
    return WarmSource(record.id, folder / CACHE_FILE, cache) if cache is not None else None


def warm_source(store: RunStore, run_id: int) -> WarmSource:
    """Run `run_id`'s compile cache, asked for by name (`warm_from`); a WarmStartError says why it has none (or none
    that may be loaded)."""
    try:
        record = store.get(run_id)
    except RunStoreError as exc:
        raise WarmStartError(str(exc), exc.hint or "give the id of a recorded run (`workbench runs` lists them)") \
            from None
    if record.elsewhere:
        raise WarmStartError(f"run #{run_id} trained on {record.elsewhere}: its compile cache is there",
                             "warm-start from a run trained on this computer")
    if record.folder is None:
        raise WarmStartError(f"run #{run_id}'s folder {record.out_dir or '(none recorded)'} is gone, and its compile "
                             f"cache with it", "warm-start from another run, or leave warm_from unset (automatic)")
    source = cache_of(record)
    if source is None:
        raise WarmStartError(
            f"run #{run_id} left no compile cache in {record.folder}",
            "only runs compiled with the inductor backend leave one (eager and aot_eager compile nothing to keep), "
            "and only runs recorded since warm starts exist; warm-start from such a run, or leave warm_from unset "
            "(automatic)")
    trusted_bytes(source)  # refused now, before anything starts, rather than when the run is about to compile
    trusted_kernels(source)
    return source


def check_key(source: WarmSource, key: WarmKey) -> None:
    """Refuse a warm start whose cache was made for something else, saying each difference and what to do."""
    differences = key_differences(key, source.cache.key, f"run #{source.run_id}")
    if not differences:
        return
    machine_only = all(d.startswith(("compiled code for:", "torch:", "device:")) for d in differences)
    hint = ("its code was compiled for another machine or PyTorch: warm-start from a run compiled here, or leave "
            "warm_from unset (this run then compiles cold and keeps a cache of its own)") if machine_only else (
        f"train with run #{source.run_id}'s settings (`workbench train --from {source.run_id}`, then change only what "
        f"does not compile: lr, epochs, seed, ...), or leave warm_from unset to find a matching run automatically")
    raise WarmStartError(f"run #{source.run_id}'s compile cache was made for other settings: " + "; ".join(differences),
                         hint)


def find_warm_source(store: RunStore, key: WarmKey, exclude: Path | None = None,
                     refused: Callable[[WarmStartError], None] | None = None) -> WarmSource | None:
    """The newest recorded run whose compile cache was made for `key` and carries this Workbench's signature (not
    the one in folder `exclude`: the run asking); None when no run matches. A matching cache that is not trusted is
    passed over, and `refused` hears why."""
    for record in reversed(store.list()):
        if exclude is not None and record.out_dir and Path(record.out_dir) == exclude:
            continue
        source = cache_of(record)
        if source is None or source.cache.key != key:
            continue
        try:
            trusted_bytes(source)
        except WarmStartError as exc:
            if refused is not None:
                refused(exc)
            continue
        return source
    return None


def warm_measurement(store: RunStore, cold_run: int) -> tuple[int, float] | None:
    """The newest warm launch measured from `cold_run`'s cache (its cache or a descendant's): (run id, its compile
    seconds); None when none was. A cold run's payback is completed with it (`Payback.with_warm_launch`)."""
    for record in reversed(store.list()):
        if record.id <= cold_run:
            break
        source = cache_of(record)
        if source is not None and source.cache.warm_from is not None and source.cold_run == cold_run:
            return record.id, source.cache.compile_seconds
    return None


def with_measured_launch(store: RunStore, record: RunRecord) -> RunRecord:
    """A cold run (loaded with its events) whose payback gains the warm launch a later run measured from its cache,
    so that the run shown after it (`runs show`, the report, the window) says "next launch (warm): pays off at step
    N" rather than "not measured yet". Any other run as it is."""
    finished = next((i for i in range(len(record.events) - 1, -1, -1) if isinstance(record.events[i], RunFinished)),
                    None)
    payback = record.events[finished].results.payback if finished is not None else None
    if payback is None or payback.warm_from is not None or payback.warm_compile_s is not None \
            or cache_of(record) is None:  # no cache here: no run can have started warm from it (and no list read)
        return record
    measured = warm_measurement(store, record.id)
    if measured is None:
        return record
    event = record.events[finished]
    events = list(record.events)
    events[finished] = replace(event, results=replace(event.results, payback=payback.with_warm_launch(*measured)))
    return replace(record, events=events)
