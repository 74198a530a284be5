"""The warm-start instrument: a compiled run keeps its compile artefacts in its folder, and loads those of a recorded
run made for the same key before its first compile (history.warm_starts: the key, the files, which run).

PyTorch's API (torch ≥ 2.7, the "mega-cache"): `torch.compiler.save_cache_artifacts()` returns every compile artefact
this process made or used, serialised, with a CacheInfo naming them by kind (None when there are none);
`torch.compiler.load_cache_artifacts(bytes)` writes them into AOTAutograd's and Inductor's on-disk caches
(TORCHINDUCTOR_CACHE_DIR), where the compile then finds them, and returns its CacheInfo (None when it cannot read
them). What the compile found is counted in torch's counters (autograd_cache_hit, fxgraph_cache_hit), which the
run reports at its end: a warm start that found nothing says so.

What the artefacts hold: AOTAutograd's forward and backward graphs and Inductor's generated code per graph (on a GPU
with its Triton kernels bundled), and autotuning results. On the CPU Inductor's C++ kernels are not among them: a
warm start from the mega-cache alone compiled every kernel again (a 16–17 s cold compile down by only 7–12 %). So a
run also keeps the C++ kernels its compile built or used (KERNELS_FILE: each kernel's sources and binary, the files
Inductor's code cache names by the kernel's hash), and a warm start puts them back into Inductor's cache folder
before the compile, which then finds every kernel built. Dynamo still traces the model at every launch.
scripts/compile_warm.py measures it.

A run that is stopped, or fails after compiling, still saves what it compiled (`close`). What it saves is signed
(ground.signing) and only a cache this Workbench signed is ever loaded (history.warm_starts.trusted_bytes): loading
unpickles, so a crafted file in a run's folder would otherwise run its code.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import io
import json
import platform
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from ...domain import devices
from ...ground.atomic import atomic_path, write_text_atomic
from ...ground.events import Notice
from ...ground.signing import sign
from ...history.runs import RunStore, RunStoreError, default_db_path
from ...history.warm_starts import (CACHE_FILE, COMPILE_SETTINGS, KERNELS_FILE, KEY_FILE, CompileCache, WarmKey,
                                   WarmSource, WarmStartError, check_key, find_warm_source, signed_purpose,
                                   trusted_bytes, trusted_kernels, warm_source)
from .base import Instrument
from ..state import RunState

MEGA_CACHE_VERSION = "2.7"  # save_cache_artifacts / load_cache_artifacts first shipped in it


@dataclass(frozen=True)
class CacheHome:
    """Where a run keeps its compile cache (its folder) and the run history it looks for warm starts in."""

    folder: Path
    db: str | None = None  # None: the default run history


def mega_cache_available() -> bool:
    return hasattr(torch.compiler, "save_cache_artifacts") and hasattr(torch.compiler, "load_cache_artifacts")


def model_hash(cls: type) -> str:
    """sha256 over the source files of a model class and its base classes outside torch: an edit to any of them
    changes the graphs."""
    digest = hashlib.sha256()
    files = dict.fromkeys(inspect.getsourcefile(base) for base in cls.__mro__
                          if base.__module__.partition(".")[0] not in ("torch", "builtins"))
    for file in files:
        if file is not None:
            digest.update(Path(file).read_bytes())
    return digest.hexdigest()


def compile_key(run: RunState, model: nn.Module, example: torch.Tensor, world_size: int) -> WarmKey:
    settings = run.config.to_dict()
    return WarmKey(settings={name: settings[name] for name in COMPILE_SETTINGS}, input_shape=tuple(example.shape),
                   model_hash=model_hash(type(model)), torch=str(torch.__version__),
                   device=f"{run.device.type}: {devices.device_name(run.device)}", world_size=world_size,
                   platform=compiled_for(run.device))


def compiled_for(device: torch.device) -> str:
    """What compiled code needs to run where it was built: on a GPU its capability and Triton's version; on the CPU
    the architecture, the vector instructions Inductor picked and the C++ compiler ("x86_64 avx2 · g++ 12.2.0")."""
    if device.type == "cuda":
        major, minor = torch.cuda.get_device_capability(device)
        try:
            import triton

            triton_version = triton.__version__
        except ImportError:
            triton_version = "none"
        return f"sm_{major}{minor} · triton {triton_version}"
    from torch._inductor.cpu_vec_isa import pick_vec_isa

    try:  # (picking the ISA compiles a probe: without a working compiler, the compile itself says so, not this)
        return f"{platform.machine()} {str(pick_vec_isa()) or 'no vector ISA'} · {_cpp_compiler()}"
    except Exception as exc:  # noqa: BLE001 - Inductor raises its own kinds (InvalidCxxCompiler, CppCompileError)
        return f"{platform.machine()} · no working C++ compiler ({type(exc).__name__})"


@functools.cache
def _cpp_compiler() -> str:
    from torch._inductor.cpp_builder import get_cpp_compiler

    compiler = get_cpp_compiler()
    try:
        version = subprocess.run([compiler, "-dumpfullversion"], capture_output=True, text=True,
                                 timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        version = ""
    return f"{Path(compiler).name} {version or '(version unknown)'}"


def used_kernels() -> list[Path]:
    """The C++ kernels this process's compiles built or used: the files Inductor's code caches keep under the hash
    of each kernel they loaded (its sources, objects and binary)."""
    from torch._inductor import codecache
    from torch._inductor.runtime.cache_dir_utils import cache_dir

    caches = (getattr(codecache, name, None) for name in ("CppCodeCache", "CppPythonBindingsCodeCache",
                                                          "CppWrapperCodeCache"))  # (Inductor's own, by name)
    keys = {key for cache in caches if cache is not None for key in getattr(cache, "cache", {})}
    root = Path(cache_dir())
    return sorted(path for key in keys for path in (root / key[1:3]).glob(f"{key}.*") if path.is_file())


def pack_kernels(paths: list[Path]) -> bytes:
    """The kernels' files as a tar (each by its path under Inductor's cache folder)."""
    from torch._inductor.runtime.cache_dir_utils import cache_dir

    root, out = Path(cache_dir()), io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for path in paths:
            tar.add(path, arcname=str(path.relative_to(root)))
    return out.getvalue()


def unpack_kernels(data: bytes) -> int:
    """Put kernels back into Inductor's cache folder (a file already there is left as it is: another process may be
    loading it); how many files were put. Only plain files inside the folder (tarfile's data filter)."""
    from torch._inductor.runtime.cache_dir_utils import cache_dir

    root, put = Path(cache_dir()), 0
    with tarfile.open(fileobj=io.BytesIO(data), mode="r") as tar:
        for member in tar.getmembers():
            if not member.isfile() or (root / member.name).exists():
                continue
            tar.extract(tarfile.data_filter(member, str(root)), root, filter="fully_trusted")
            put += 1
    return put


class WarmStart(Instrument):
    def __init__(self, home: CacheHome | None = None):
        """`home`: the run's folder and history (a recorded run; its main process keeps and loads the cache); None:
        no cache is kept or loaded (a benchmark, the finders)."""
        self.home = home
        self.key: WarmKey | None = None
        self.saved = False

    def started(self, run: RunState) -> None:
        if not run.dist.is_main:  # one process keeps and loads the run's cache; the others compile as it did
            self.home = None

    def model_built(self, run: RunState, model: nn.Module, example: torch.Tensor, labels: torch.Tensor) -> None:
        """Before explain and the first compile: load the warm start's artefacts."""
        config = run.config
        if self.home is None or not config.compiled:
            return
        if not mega_cache_available():
            problem = (f"torch {torch.__version__} has no torch.compiler.save_cache_artifacts / "
                       f"load_cache_artifacts (torch ≥ {MEGA_CACHE_VERSION})")
            if config.warm_from:
                raise WarmStartError(f"cannot warm-start from run #{config.warm_from}: {problem}",
                                     "upgrade torch, or leave warm_from unset")
            run.emit(Notice("info", f"{problem}: this run keeps no compile cache and starts cold"))
            return
        self.key = compile_key(run, model, example, run.dist.world_size)
        source = self._source(run)
        if source is None:
            return
        try:
            data = trusted_bytes(source)  # read once: the bytes proven to be ours are the bytes loaded
        except WarmStartError as exc:
            if config.warm_from:
                raise
            run.emit(Notice("warning", f"no warm start: {exc.message}; this run compiles cold", exc.hint))
            return
        try:
            kernels = trusted_kernels(source)
        except WarmStartError as exc:
            if config.warm_from:
                raise
            run.emit(Notice("warning", f"no warm start: {exc.message}; this run compiles cold", exc.hint))
            return
        info = torch.compiler.load_cache_artifacts(data)
        problem = "" if info is not None else "torch could not read it (its log says why)"
        if info is None:
            if config.warm_from:
                raise WarmStartError(f"run #{source.run_id}'s compile cache {source.cache_file} cannot be loaded: "
                                     f"{problem}", "warm-start from another run, or leave warm_from unset")
            run.emit(Notice("warning", f"no warm start: run #{source.run_id}'s compile cache cannot be loaded "
                                       f"({problem}); this run compiles cold"))
            return
        run.warm = source
        put = unpack_kernels(kernels) if kernels else 0
        kinds = ", ".join(f"{len(keys)} {kind.replace('_', ' ')}" for kind, keys in sorted(info.artifacts.items()))
        if kernels:
            kinds += f", {source.cache.kernels} compiled C++ kernel files ({put} put back)"
        cold = source.cold_compile_seconds
        run.emit(Notice("info", f"warm start from #{source.run_id}: its compile cache ({kinds}) is loaded before the "
                                f"first compile" + (f"; a cold launch compiled for {cold:.1f} s (run "
                                                    f"#{source.cold_run})" if cold is not None else ""),
                        "set 'Warm start from run' to 0 for a cold start" if not config.warm_from else ""))

    def _source(self, run: RunState) -> WarmSource | None:
        """The run to warm-start from: the one `warm_from` names (checked), the newest matching one (automatic),
        or none (warm_from 0, no history, no match)."""
        asked, home = run.config.warm_from, self.home
        if asked == 0:
            return None
        if asked is None and not Path(home.db or default_db_path()).is_file():
            return None  # no history yet: nothing to look in (and none is created for looking)
        try:
            with RunStore(home.db, recover=False) as store:
                if asked is None:
                    return find_warm_source(store, self.key, exclude=home.folder, refused=lambda exc: run.emit(
                        Notice("info", f"no warm start from it: {exc.message}", exc.hint)))
                source = warm_source(store, asked)
        except RunStoreError as exc:
            if asked is not None:
                raise WarmStartError(f"cannot warm-start from run #{asked}: {exc}", exc.hint) from None
            run.emit(Notice("info", f"no warm start: the run history cannot be read ({exc})", exc.hint))
            return None
        check_key(source, self.key)
        return source

    def ending(self, run: RunState) -> None:
        if run.warm is not None and run.session.compiled:
            self._say_hits(run)
        self._save(run)

    def close(self, run: RunState) -> None:
        """A run that failed or was interrupted after compiling keeps what it compiled (ending was not reached)."""
        if not self.saved:
            self._save(run)

    @staticmethod
    def _say_hits(run: RunState) -> None:
        """What the compile found in the loaded cache, from torch's counters (cleared when the run's compile began)."""
        from torch._dynamo.utils import counters

        found = {name: (int(counters[group][f"{prefix}_hit"]), int(counters[group][f"{prefix}_miss"]))
                 for name, group, prefix in (("AOTAutograd", "aot_autograd", "autograd_cache"),
                                             ("Inductor", "inductor", "fxgraph_cache"))}
        hits, total = sum(h for h, _ in found.values()), sum(h + m for h, m in found.values())
        parts = ", ".join(f"{name} {h} of {h + m}" for name, (h, m) in found.items())
        source = run.warm.run_id
        if hits:
            run.emit(Notice("info", f"warm start from #{source}: the compile found {hits} of {total} cache lookups "
                                    f"in the loaded cache ({parts})"))
        else:
            run.emit(Notice("warning", f"warm start from #{source}: the compile found none of its graphs in the "
                                       f"loaded cache ({parts}): it compiled cold",
                            "the cache was made by other code or settings than its key shows (a file the model "
                            "imports changed?); this run's own cache serves the next launch"))

    def _save(self, run: RunState) -> None:
        """Write this process's compile artefacts into the run's folder: CACHE_FILE, then KEY_FILE, each atomically
        (a folder with KEY_FILE holds a whole cache)."""
        if self.key is None or self.saved:
            return
        self.saved = True
        saved = torch.compiler.save_cache_artifacts()
        if saved is None:  # nothing compiled that leaves artefacts (aot_eager, a fallback before the first compile)
            return
        data, info = saved
        warm = run.warm
        kernels = used_kernels()
        packed = pack_kernels(kernels) if kernels else b""
        try:
            cache = CompileCache(key=self.key, artifacts={kind: len(keys) for kind, keys in info.artifacts.items()},
                                 bytes=len(data), compile_seconds=run.totals.compile_seconds,
                                 warm_from=warm.run_id if warm else None, cold_run=warm.cold_run if warm else None,
                                 cold_compile_seconds=warm.cold_compile_seconds if warm else None,
                                 signature=sign(data, signed_purpose(self.key)), kernels=len(kernels),
                                 kernels_bytes=len(packed), kernels_signature=sign(packed, signed_purpose(
                                     self.key, "compiled kernels")) if packed else "")
            with atomic_path(self.home.folder / CACHE_FILE) as tmp:
                tmp.write_bytes(data)
            if packed:
                with atomic_path(self.home.folder / KERNELS_FILE) as tmp:
                    tmp.write_bytes(packed)
            write_text_atomic(self.home.folder / KEY_FILE, json.dumps(cache.to_dict(), indent=2))
        except OSError as exc:
            run.emit(Notice("warning", f"the compile cache could not be written into {self.home.folder}: "
                                       f"{exc.strerror or exc}", "the next launch of these settings starts cold"))
