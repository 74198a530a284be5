"""The machines of a run, as the user names them: `--hosts a,b,c` or a hostfile of `host slots=N` lines (DeepSpeed's
format, with `python=COMMAND` where a host's Python with Workbench is not the one given to all), each host an SSH
address (`[user@]host[:port]` or a ~/.ssh/config alias)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ...ground.codec import Record
from ...ground.errors import WorkbenchError
from ..remote.ssh import Remote, RemoteError


class HostSetError(WorkbenchError):
    kind = "config"


@dataclass(frozen=True)
class HostSpec(Record):
    """One machine of the set: its SSH address, and how many processes it runs (None: the run's --nproc-per-node)."""

    address: str
    slots: int | None = None
    python: str | None = None  # its Python that has Workbench (None: --remote-python)


def parse_hosts(text: str, source: str = "--hosts") -> tuple[HostSpec, ...]:
    """`a,b,c` (spaces allowed): each a host once, in order; the first is where the rendezvous is. `source`: what
    the user typed it into, as errors name it (the flag, a field of the window)."""
    specs = tuple(HostSpec(_address(word.strip(), f"'{word.strip()}' in {source}")) for word in text.split(",")
                  if word.strip())
    return _checked(specs, source)


def read_hostfile(path: str | Path) -> tuple[HostSpec, ...]:
    """A hostfile: a host a line, `slots=N` after it where it runs other than --nproc-per-node processes and
    `python=COMMAND` where its Python is not --remote-python; `#` starts a comment. A line it cannot read is refused
    with its number."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise HostSetError(f"cannot read the hostfile {path}: {getattr(exc, 'strerror', None) or exc}") from None
    specs = []
    for number, line in enumerate(lines, 1):
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        where = f"line {number} of {path}"
        slots = python = None
        for word in words[1:]:
            key, _, value = word.partition("=")
            if key == "python" and value:
                python = value
            elif key == "slots" and value.isdigit() and int(value) >= 1:
                slots = int(value)
            else:
                raise HostSetError(f"{where}: '{word}' is not slots=N (N ≥ 1) or python=COMMAND",
                                   "write a host a line: 'host slots=2 python=/opt/venv/bin/python'")
        specs.append(HostSpec(_address(words[0], where), slots, python))
    return _checked(tuple(specs), str(path))


def _address(text: str, where: str) -> str:
    try:
        Remote.parse(text)
    except RemoteError as exc:
        raise HostSetError(f"{where}: {exc}", exc.hint) from None
    return text


def _checked(specs: tuple[HostSpec, ...], source: str) -> tuple[HostSpec, ...]:
    if not specs:
        raise HostSetError(f"{source} names no host", "give one or more: --hosts gpu-a,gpu-b")
    seen: set[str] = set()
    for spec in specs:
        if spec.address in seen:
            raise HostSetError(f"{spec.address} is named twice in {source}",
                               "name each host once: its processes are a number of their own")
        seen.add(spec.address)
    return specs
