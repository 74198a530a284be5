"""What a recompile does, and a warning before the recompile limit refuses one: the run's compile stance.

`torch.compiler.set_stance` (torch ≥ 2.6) decides what Dynamo does with a call that finds no compiled code fitting
it: "default" compiles, "eager_on_recompile" runs that call eagerly (compiled code that fits is still used),
"fail_on_recompile" raises with the guards that failed; "eager_then_compile" runs a function's first call eagerly and
compiles from its second, having seen in two calls which dimensions vary. A run's own compiles are its first
training step (its second with `eager_first_call`) and its first validation (the eval graph, and its last batch's
shape): the stance `on_recompile` asks for holds everywhere else, so only a recompile the run did not plan meets it.
The stance is process-global in torch: a run sets it while it trains and puts "default" back when it ends.

The recompile limit (`torch._dynamo.config.recompile_limit`, set in compiling.configure_dynamo): a function compiled
that many times runs eagerly at its next recompile, which Dynamo says only in its log. The timeline warns (a
"recompile_limit" CompileEvent and a warning Notice) as soon as a function reaches it: its next recompile is the
one refused.

A torch without an API says so in a Notice, and the run goes on without it.
"""

from __future__ import annotations

import linecache
import re
import typing

import torch

from ...domain.compile_trace import plain_guard
from ...ground.events import CompileEvent, Frame, Notice
from .base import Instrument
from ..state import CompileFailure, RunState

STANCES = {"compile": "default", "eager": "eager_on_recompile", "fail": "fail_on_recompile"}  # by on_recompile
EAGER_FIRST = "eager_then_compile"
REFUSED = "Detected recompile when torch.compile stance is 'fail_on_recompile'"  # torch's RuntimeError says it so
STANCE_VERSION = "2.6"  # set_stance and the stances used here first shipped in it


def stance_available(stance: str) -> bool:
    """Whether this torch has `torch.compiler.set_stance` and knows `stance`."""
    if not hasattr(torch.compiler, "set_stance"):
        return False
    from torch._dynamo import eval_frame

    known = typing.get_args(getattr(eval_frame, "StanceStr", None))  # () where torch does not list them
    return not known or stance in known


class RecompileStance(Instrument):
    def __init__(self) -> None:
        self.first = "default"  # while the run's own compiles happen
        self.then = "default"  # everywhere else
        self.set = False  # a stance other than "default" was set: put it back at the end
        self.validated = False  # the first validation is over (it compiled the eval graph)
        self.limit = 0
        self.warned: set[str] = set()  # frames (Dynamo's frame ids) the limit warning was given for

    def started(self, run: RunState) -> None:
        config = run.config
        if not config.compiled:
            return
        self.limit = config.recompile_limit
        wanted = {"on_recompile": STANCES[config.on_recompile]}
        if config.eager_first_call:
            wanted["eager_first_call"] = EAGER_FIRST
        missing = {name: stance for name, stance in wanted.items() if stance != "default"
                   and not stance_available(stance)}
        for name, stance in missing.items():
            run.emit(Notice("warning", f"torch {torch.__version__} has no torch.compiler.set_stance('{stance}'): "
                                       f"the {name} setting has no effect in this run",
                            f"upgrade torch (≥ {STANCE_VERSION}), or leave {name} at its default"))
        if "eager_first_call" in wanted and "eager_first_call" not in missing:
            self.first = EAGER_FIRST
        if "on_recompile" not in missing:
            self.then = wanted["on_recompile"]

    def prepared(self, run: RunState) -> None:
        """Explain has traced (a stance would change what it sees): the first calls compile, or run eagerly first."""
        if run.session.compiled:
            self._stance(self.first)

    def phase_ended(self, run: RunState, kind: str) -> None:
        if kind == "compiling":  # training's graphs are compiled: the next training compile is a recompile
            self._stance(self.then)

    def phase_changed(self, run: RunState) -> None:
        if run.phase == "eval":
            self._stance(self.then if self.validated else self.first)
        else:
            self.validated = True
            self._stance(self.then)

    def drain(self, run: RunState) -> None:
        """Warn once per function that reached the recompile limit: its next recompile runs it eagerly."""
        if not self.limit or not run.session.compiled:
            return
        from torch._dynamo.utils import get_compilation_metrics

        compiles: dict[str, set[str]] = {}
        first = {}
        for metric in get_compilation_metrics():
            if metric.co_name is None or metric.fail_type or not metric.compile_id:
                continue  # a backward or failed compile: no compiled code of the frame's own
            frame = metric.compile_id.split("/")[0]
            compiles.setdefault(frame, set()).add(metric.compile_id)
            first.setdefault(frame, metric)
        for frame, ids in compiles.items():
            if len(ids) >= self.limit and frame not in self.warned:
                self.warned.add(frame)
                self._warn(run, first[frame], len(ids))

    def _warn(self, run: RunState, metric, count: int) -> None:
        name = metric.co_name
        where = Frame(file=metric.co_filename or "", line=metric.co_firstlineno or 0, function=name,
                      source=linecache.getline(metric.co_filename or "", metric.co_firstlineno or 0).strip())
        title = f"the recompile limit is about to be reached: the next recompile of {name} runs it eagerly"
        detail = (f"{name} has compiled {count} time(s) and the recompile limit is {self.limit} "
                  f"(torch._dynamo.config.recompile_limit): Dynamo refuses the next recompile and runs {name} "
                  f"eagerly from then on. The recompile events before this one name the guards that failed; remove "
                  f"their cause, or raise the recompile limit.")
        run.emit(CompileEvent(step=run.step, kind="recompile_limit", title=title, detail=detail, phase=run.phase,
                              frames=(where,), compile_id=f"{metric.compile_id.split('/')[0]}/{count - 1}"))
        run.emit(Notice("warning", f"step {run.step}: {title}",
                        "the Compile panel's recompiles name the guards that failed; remove their cause, or raise "
                        "the recompile limit"))

    def close(self, run: RunState) -> None:
        if self.set:
            self._stance("default")

    def _stance(self, stance: str) -> None:
        if stance == "default" and not self.set:
            return
        torch.compiler.set_stance(stance)
        self.set = stance != "default"


def refused_recompile(run: RunState, exc: BaseException) -> CompileFailure | None:
    """The run's failure when `exc` is the recompile `on_recompile: fail` refused (torch's RuntimeError, raised by
    the call that would have recompiled): where, and the guard that failed, in one line. None for anything else."""
    text = str(exc)
    if not isinstance(exc, RuntimeError) or not text.startswith(REFUSED):
        return None
    guards = re.findall(r"^\s*- (\d+/\d+: .*)$", text, flags=re.MULTILINE)
    guard = plain_guard(guards[0]) if guards else "(torch named no guard)"
    user = re.search(r'File "([^"]+)", line (\d+), in (\S+)', text)
    called = re.search(r"filename: '([^']*)', function name: '([^']*)', line number: (\d+)", text)
    where = (f" at {user[1]}:{user[2]}" if user else
             f" in {called[2]} ({called[1]}:{called[3]})" if called else "")
    return CompileFailure(
        f"a recompile at step {run.step} ({run.phase}) was refused (on a recompile: fail the run){where}: {guard}",
        "keep what the guard checks the same at every call (input shapes, Python values forward() branches on), "
        "or set 'On a recompile' to compile again or to run that call eagerly")
