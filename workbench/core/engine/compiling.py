"""A run's compile: explain before anything is compiled, compile in place, fall back to eager loudly when the
compiler fails (or fail the run, as the config says), and the final compile report with what the run met."""

from __future__ import annotations

from typing import Callable, TypeVar

import torch
import torch._dynamo
from torch import nn

from ..domain import devices
from ..domain.compile_explain import explain_model
from ..domain.model import model_for
from ..ground.errors import first_line
from ..ground.events import CompileEvent, CompileReport, GraphBreak, Notice
from ..ground.config import TrainConfig
from .instruments.recompile_stance import refused_recompile
from .state import CompileFailure, RunState
from .steps import Session

T = TypeVar("T")
# Builds the run's session for a model: (model, compiled, carried session or None) -> Session.
MakeSession = Callable[[nn.Module, bool, "Session | None"], Session]


def compile_model(run: RunState, model: nn.Module, example: torch.Tensor,
                  make_session: MakeSession) -> tuple[CompileReport | None, Session]:
    """Explain (before anything is compiled: explain resets Dynamo), then compile in place. The report is None
    when the run is not compiled."""
    config, emit = run.config, run.emit
    if not config.compiled:
        return None, make_session(model, False, None)
    problem = devices.backend_problem(config.backend, run.device)
    if problem:
        compile_failed(run, problem)
        return empty_report(config, problem), make_session(model, False, None)
    try:
        with torch.random.fork_rng(devices=[run.device] if run.device.type == "cuda" else []):
            report = explain_model(model, example, config)  # must not shift the run's random stream
    except Exception as exc:  # an untraceable model is itself a finding: report it, let compile decide
        report = empty_report(config, f"explain failed: {first_line(exc)}")
    torch._dynamo.reset()  # start the real compile from a clean slate, not from explain's traces
    emit(report)  # the Compile panel can show the breaks before the first step compiles
    if report.graph_break_count and not config.fullgraph:
        first = report.breaks[0] if report.breaks else None
        where = f" at {first.where}" if first else ""
        emit(Notice("warning", f"{report.graph_break_count} graph break(s){where}: those parts run eagerly",
                    "the Compile panel lists each break with its source line"))
    # The model is compiled in place, so state_dict() keys carry no '_orig_mod.' prefix.
    model.compile(backend=config.backend, fullgraph=config.fullgraph, dynamic=config.dynamic,
                  **({"mode": config.mode} if config.backend == "inductor" else {}))
    return report, make_session(model, True, None)


def with_fallback(run: RunState, action: Callable[[Session], T], make_session: MakeSession,
                  drain: Callable[[], None]) -> T:
    """Run `action` on the session; if the compiled model fails to compile, fail the run or (if allowed) go eager,
    loudly: the run's session becomes an eager copy and `action` runs again on it. `drain` emits what the compiler
    did before it failed."""
    try:
        return action(run.session)
    except Exception as exc:
        refused = refused_recompile(run, exc) if run.session.compiled else None
        if refused is not None:  # the run asked to fail on a recompile: never a fallback
            raise refused from None
        if not run.session.compiled or not _is_compile_error(exc):
            raise
        reason = _compile_error_text(exc)
        report = run.report
        if run.config.fullgraph and report is not None and report.breaks:
            where = report.breaks[0]
            source = f" `{where.frames[-1].source}`" if where.frames else ""
            raise CompileFailure(
                f"fullgraph is on but the model has {report.graph_break_count} graph break(s); the first is at "
                f"{where.where}{source}: {where.reason.splitlines()[0]}",
                "remove the break from forward(), or turn fullgraph off to run that part eagerly") from None
        compile_failed(run, reason)
        run.session = _eager_copy(run, make_session)
        run.warnings.append(f"fell back to eager: {reason}")
        drain()
        run.emit(CompileEvent(step=run.step, kind="fallback", title="compile failed: the run went on in eager mode",
                              detail=reason, phase=run.phase))
        return action(run.session)


def compile_failed(run: RunState, reason: str) -> None:
    config = run.config
    if not config.allow_eager_fallback:
        raise CompileFailure(f"{config.backend} compile failed: {reason}",
                             "choose another backend (aot_eager or eager), or allow falling back to eager")
    run.emit(Notice("warning", f"{config.backend} compile failed, continuing in eager mode: {reason}",
                    "the run is slower than a compiled one; the Compile panel has the details"))


def _eager_copy(run: RunState, make_session: MakeSession) -> Session:
    """A fresh, uncompiled model with the same weights and optimizer state: nothing learned is lost."""
    session = run.session
    device = next(session.model.parameters()).device
    model = model_for(run.config, run.output_dim).to(device)
    model.load_state_dict(session.model.state_dict())
    return make_session(model, False, session)


def final_report(run: RunState) -> CompileReport:
    """Explain's report completed with what the run met: its graphs, the breaks only the run hit (with the user
    frames the timeline recorded), its recompiles, CUDA-graph skips, a fallback, and every compile phase's time
    (and each graph's, stage by stage)."""
    from ..domain.compile_trace import compile_times

    report, log, session = run.report, run.log, run.session
    warnings = list(report.warnings) + run.warnings
    skips = log.cudagraph_skips()
    if skips:
        warnings.append(f"CUDA graphs were skipped {skips} time(s): those graphs ran without CUDA graphs")
    known = {b.reason.splitlines()[0] for b in report.breaks if b.reason}
    # Breaks only the run met (Dynamo's counters keep no stack): the timeline's record of them has the frames.
    extra = tuple(GraphBreak(reason=reason, frames=run.break_frames.get(reason.splitlines()[0], ()))
                  for reason in log.break_reasons() if reason.splitlines()[0] not in known)
    breaks = report.breaks + extra
    return CompileReport(
        compiled=session.compiled and report.compiled, backend=report.backend, mode=report.mode,
        graph_count=max(report.graph_count, log.graph_count() if session.compiled else 0),
        graph_break_count=max(report.graph_break_count, len(breaks)), breaks=breaks,
        op_count=report.op_count, compile_seconds=run.totals.compile_seconds, recompiles=log.recompiles(),
        warnings=tuple(warnings), source="run", **_warm_fields(run), graph_times=compile_times())


def _warm_fields(run: RunState) -> dict:
    """The report's warm start: the run whose compile cache was loaded, and the cold launch it descends from."""
    warm = run.warm
    if warm is None:
        return {}
    return {"warm_from": warm.run_id, "cold_run": warm.cold_run, "cold_compile_seconds": warm.cold_compile_seconds}


def configure_dynamo(recompile_limit: int) -> None:
    """Dynamo's config is thread-local (torch ≥ 2.12): set it on the thread that compiles, i.e. here.
    `recompile_limit` (TrainConfig's; 16 by default: train + eval shapes and modes, with room to spare) is
    `recompile_limit` since torch 2.6, `cache_size_limit` before."""
    import torch._dynamo.config as dynamo_config

    dynamo_config.suppress_errors = False  # a failed compile must surface, never silently run eager
    setattr(dynamo_config, "recompile_limit" if hasattr(dynamo_config, "recompile_limit") else "cache_size_limit",
            recompile_limit)


def _is_compile_error(exc: BaseException) -> bool:
    module = type(exc).__module__ or ""
    return module.startswith(("torch._dynamo", "torch._inductor", "torch.fx", "torch._subclasses")) or \
        "BackendCompilerFailed" in type(exc).__name__


def _compile_error_text(exc: BaseException) -> str:
    text = first_line(exc)
    if "cpp" in text.lower() or "c++" in text.lower() or "compiler" in text.lower():
        text += " (Inductor on the CPU needs a working C++ compiler, e.g. g++)"
    return text


def empty_report(config: TrainConfig, warning: str) -> CompileReport:
    return CompileReport(compiled=False, backend=config.backend, mode=config.mode, warnings=(warning,))
