"""Device choice, names, memory readings and which compile backends this machine can run (and why not)."""

from __future__ import annotations

import functools
import os
import platform
import shutil
import sys

import torch

from ..ground import appinfo
from ..ground.config import BACKENDS, CUDA_ONLY_BACKENDS, ConfigError
from ..ground.events import MemorySample

MIB = 1024 * 1024


def cuda_available() -> bool:
    return torch.cuda.is_available()


def uses_cuda(name: str) -> bool:
    """Whether a device setting ("auto", "cpu", "cuda", "cuda:N") trains on a GPU on this machine."""
    return name != "cpu" and cuda_available()


def resolve_device(name: str) -> torch.device:
    """`auto` → the current CUDA device if there is one, else the CPU. CUDA devices always carry an index
    (torch.cuda.set_device and the memory readings need one)."""
    if not uses_cuda(name):
        return torch.device("cpu")
    device = torch.device(name if name != "auto" else "cuda")
    if device.index is None:
        return torch.device("cuda", torch.cuda.current_device())
    count = torch.cuda.device_count()
    if device.index >= count:  # else torch.cuda.set_device fails later with "invalid device ordinal"
        raise ConfigError("device", f"'{name}' was asked for but this machine has {count} CUDA device(s)",
                          ", ".join(["auto", "cpu", *(f"cuda:{i}" for i in range(count))]))
    return device


def device_name(device: torch.device) -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return f"CPU ({platform.processor() or platform.machine()}, {os.cpu_count()} cores)"


def cuda_device_count() -> int:
    """How many CUDA devices a run can use here (0 without a usable CUDA)."""
    return torch.cuda.device_count() if cuda_available() else 0


def memory_mib(device: torch.device) -> MemorySample:
    """CUDA allocator figures on a GPU; the process resident set on the CPU."""
    if device.type == "cuda":
        return MemorySample(allocated=torch.cuda.memory_allocated(device) / MIB,
                            reserved=torch.cuda.memory_reserved(device) / MIB,
                            peak=torch.cuda.max_memory_allocated(device) / MIB)
    return MemorySample(rss=process_rss_bytes() / MIB)


def memory_limit_mib(device: torch.device) -> tuple[float | None, str]:
    """How much memory the figures of `memory_mib` can grow to, and whose it is: the GPU's on CUDA, the machine's
    physical memory on the CPU (None when unknown)."""
    if device.type == "cuda":
        return torch.cuda.get_device_properties(device).total_memory / MIB, device_name(device)
    try:
        return os.sysconf("SC_PHYS_PAGES") * _page_size() / MIB, "this machine"
    except (ValueError, OSError, AttributeError):
        return None, "this machine"


@functools.lru_cache(maxsize=1)
def _page_size() -> int:
    return os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def process_rss_bytes() -> int:
    try:
        with open("/proc/self/statm", "rb") as fh:
            return int(fh.read().split()[1]) * _page_size()
    except OSError:  # not Linux: peak RSS is the best cheap figure
        import resource

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak if sys.platform == "darwin" else peak * 1024


def cpp_compiler() -> str | None:
    """The C++ compiler Inductor would use on the CPU, if it can be found."""
    from torch._inductor import config as inductor_config

    configured = inductor_config.cpp.cxx
    candidates = configured if isinstance(configured, (tuple, list)) else (configured,)
    for candidate in candidates:
        if candidate and shutil.which(candidate):
            return shutil.which(candidate)
    return None


def backend_problem(backend: str, device: torch.device) -> str | None:
    """Why `backend` cannot run on `device` here, or None when it can."""
    if backend == "eager":
        return None
    if backend in CUDA_ONLY_BACKENDS and device.type != "cuda":
        return f"{backend} captures CUDA graphs and needs a CUDA device"
    if backend not in torch.compiler.list_backends(exclude_tags=()):
        return f"this PyTorch build has no '{backend}' backend"
    if backend == "inductor" and device.type == "cpu" and cpp_compiler() is None:
        return ("Inductor on the CPU needs a C++ compiler and none was found "
                "(install g++, e.g. `apt install g++`, or set CXX) — or choose aot_eager or eager")
    return None


def backend_availability(device: torch.device) -> dict[str, str | None]:
    return {b: backend_problem(b, device) for b in BACKENDS}


def versions() -> dict[str, str]:
    info = {
        "workbench": appinfo.version(),
        "torch": str(torch.__version__),  # TorchVersion is not plain data
        "python": platform.python_version(),
        "cuda": (torch.version.cuda or "none") + ("" if cuda_available() else " (build; no CUDA device)"),
    }
    if cuda_available():
        info["gpu"] = torch.cuda.get_device_name(0)
    return info
