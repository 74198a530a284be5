"""The compile stance as settings (recompile_stance): what a recompile does (compile again, run eagerly, fail
naming the guard), an eager first call (eager_then_compile), and the warning one recompile before the recompile limit.

The model recompiles at every training step on purpose: its forward counts its calls in a Python int on the module,
which Dynamo specialises and guards on. Compiled with aot_eager (the same Dynamo guards as inductor, in a fraction of
the time)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..helpers import of, run, steps
from workbench.core.engine import standard_instruments
from workbench.core.engine.instruments.payback import PaybackCalibration
from workbench.core.engine.plan import warmup_plan
from workbench.core.ground.config import TrainConfig
from workbench.core.ground.events import CompileEvent, CompileStarted, Notice, RunFailed, RunFinished

# These runs count compiles; payback's calibration steps would add some of their own.
NO_PAYBACK = standard_instruments(leave_out=(PaybackCalibration,))
COUNTING_NET = '''import torch

from workbench.core.domain.model import SandwichNet


class CountingNet(SandwichNet):
    """Recompiles at every call: Dynamo guards on the Python int it counts its calls in."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.calls = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        return super().forward(x)
'''


@pytest.fixture(scope="module")
def counting_net(tmp_path_factory) -> tuple[str, Path]:
    path = tmp_path_factory.mktemp("counting") / "counting_net.py"
    path.write_text(COUNTING_NET, encoding="utf-8")
    return f"{path}:CountingNet", path


def _config(spec: str, **changes) -> TrainConfig:
    # without the per-layer statistics, whose events would sit between the steps these tests put in order
    return TrainConfig(model=spec, epochs=1, hidden_dim=8, backend="aot_eager",
                       **{"max_steps": 5, "stats_every": 0, **changes})


def _train_recompiles(events) -> list[int]:
    return [e.step for e in of(events, CompileEvent) if e.kind == "recompile" and e.phase == "train"]


def _stance() -> str:
    from torch._dynamo import eval_frame

    return eval_frame._stance.stance


def test_fail_on_recompile_fails_the_run_naming_the_guard_and_the_line(counting_net):
    spec, path = counting_net
    events, result = run(_config(spec, on_recompile="fail"), flush_seconds=0, instruments=NO_PAYBACK)
    line = next(i for i, text in enumerate(path.read_text().splitlines(), 1) if "self.calls += 1" in text)
    assert isinstance(result, RunFailed) and result.kind == "compile"
    assert result.message.startswith("a recompile at step 2 (train) was refused")
    assert f"{path}:{line}" in result.message and "changed (self.calls == " in result.message
    assert "\n" not in result.message and "run that call eagerly" in result.hint
    assert [s.step for s in steps(events)] == [1]
    assert _stance() == "default"  # the run put torch's process-global stance back


def test_eager_on_recompile_trains_on_without_recompiling(counting_net):
    spec, _ = counting_net
    compiled, _ = run(_config(spec), flush_seconds=0, instruments=NO_PAYBACK)
    events, result = run(_config(spec, on_recompile="eager"), flush_seconds=0, instruments=NO_PAYBACK)
    assert _train_recompiles(compiled) == [2, 3, 4, 5]  # the default: a recompile at every step
    assert isinstance(result, RunFinished) and result.steps == 5
    assert _train_recompiles(events) == []
    assert [e.phase for e in of(events, CompileEvent) if e.kind == "recompile"] == ["eval"]  # the run's own
    assert _stance() == "default"


def test_the_timeline_warns_when_the_next_recompile_is_the_one_the_limit_refuses(counting_net):
    spec, _ = counting_net
    events, result = run(_config(spec, recompile_limit=3), flush_seconds=0, instruments=NO_PAYBACK)
    [warning] = [e for e in of(events, CompileEvent) if e.kind == "recompile_limit"]
    assert warning.step == 3 and warning.title == ("the recompile limit is about to be reached: the next recompile "
                                                   "of forward runs it eagerly")
    assert "limit is 3" in warning.detail and warning.frames[0].function == "forward"
    assert any(n.level == "warning" and n.message.startswith("step 3: the recompile limit") for n in of(events, Notice))
    # The limit is the setting's: from step 4 on forward runs eagerly, nothing compiles any more.
    assert not [e for e in of(events, CompileEvent) if e.kind == "graph" and e.step > 3]
    assert isinstance(result, RunFinished) and result.steps == 5


def test_an_eager_first_call_compiles_at_the_second_step(counting_net):
    spec, _ = counting_net
    events, result = run(_config(spec, eager_first_call=True, on_recompile="eager", max_steps=3), flush_seconds=0,
                         instruments=NO_PAYBACK)
    assert isinstance(result, RunFinished)
    assert [(s.step, s.warmup, s.compiling) for s in steps(events)] == [(1, True, False), (2, False, True),
                                                                        (3, False, False)]
    assert events.index(of(events, CompileStarted)[0]) == events.index(steps(events)[1]) - 1
    assert min(e.step for e in of(events, CompileEvent) if e.kind == "graph") == 2
    assert _stance() == "default"


def test_the_plan_keeps_an_eager_first_step_off_the_steady_figures():
    config = TrainConfig(backend="inductor", eager_first_call=True)
    cpu = warmup_plan(config, "cpu")
    assert [cpu.kind(step, True) for step in (1, 2, 3)] == ["warmup", "compiling", "steady"]
    assert cpu.first_steady(True) == 3
    graphed = warmup_plan(config.replace(mode="reduce-overhead"), "cuda")
    assert [graphed.kind(step, True) for step in (1, 2, 3, 4)] == ["warmup", "compiling", "recording", "warmup"]
    assert warmup_plan(config.replace(eager_first_call=False), "cpu").kind(1, True) == "compiling"
