"""The planted examples trip the alerts their docstrings promise (resources/examples), in a real run; a healthy run
of the defaults raises none."""

from __future__ import annotations

import pytest

from tests.helpers import REPO_ROOT, SMALL, STATS, run
from workbench.core.ground.alerts import Alert
from workbench.core.ground.config import TrainConfig
from workbench.core.ground.events import RunFailed, RunFinished

EXAMPLES = REPO_ROOT / "resources" / "examples"


def alerts(events) -> list[Alert]:
    return [e for e in events if isinstance(e, Alert)]


def test_an_exploding_learning_rate_alerts_before_the_run_fails():
    config = TrainConfig.from_json((EXAMPLES / "planted_exploding_lr.json").read_text())
    events, result = run(config)
    assert isinstance(result, RunFailed) and result.kind == "diverged"
    raised = alerts(events)
    exploding = [a for a in raised if a.rule == "grad_exploding"]
    assert exploding and exploding[0].panel == "setting:lr"
    failed_at = next(a.step for a in raised if a.rule in ("loss_exploded", "loss_not_finite"))
    assert exploding[0].step < failed_at  # the warning came first


def test_a_dead_relu_initialisation_alerts_at_the_first_sample():
    events, result = run(SMALL.replace(model=f"{EXAMPLES / 'planted_dead_relu.py'}:PlantedDeadReluNet",
                                       max_steps=2, **STATS))
    assert isinstance(result, RunFinished)
    dead = [a for a in alerts(events) if a.rule == "dead_units"]
    assert [(a.step, a.layer, a.panel) for a in dead] == [(1, "core_block.fc2", "model")]
    assert "100% of the inputs of core_block.fc2" in dead[0].title


def test_a_vanishing_gradient_alerts_and_names_the_first_layers():
    events, result = run(SMALL.replace(model=f"{EXAMPLES / 'planted_vanishing.py'}:PlantedVanishingNet",
                                       max_steps=2, hidden_dim=32, **STATS))
    assert isinstance(result, RunFinished)
    [vanishing] = [a for a in alerts(events) if a.rule == "grad_vanishing"]
    assert vanishing.step == 2
    assert vanishing.title.startswith("the gradient vanishes before it reaches stack.0, stack.2")
    assert vanishing.layer.startswith("stack.") and vanishing.panel == "model"  # the layer with the smallest gradient


def test_the_alert_settings_reach_the_runs_rules():
    """The vanishing rule, quiet on the small network, fires on it once the gradient factor is tiny (fc2's gradient
    is then "vanishingly" below fc1's): it reads the factor from the run's config."""
    quiet, _ = run(SMALL.replace(max_steps=2, **STATS))
    assert not alerts(quiet)
    loud, _ = run(SMALL.replace(max_steps=2, alert_grad_factor=1.0001, **STATS))
    assert [a.rule for a in alerts(loud)] == ["grad_vanishing"]


def test_a_healthy_default_run_raises_no_alert(trained_run):
    assert trained_run.config == TrainConfig(epochs=2)
    assert not alerts(trained_run.events)
    assert any(type(e).__name__ == "LayerStats" for e in trained_run.events)


@pytest.mark.parametrize("name", ["planted_dead_relu.py", "planted_vanishing.py"])
def test_each_planted_example_documents_its_command(name):
    text = (EXAMPLES / name).read_text()
    assert f"workbench train --model resources/examples/{name}:" in text


def test_a_model_that_recompiles_every_step_raises_a_storm_and_the_limit_warning(tmp_path):
    """The compiler's own events reach the rules in a real run: a forward that reads a global counter Dynamo guards
    on compiles again at every step, until the recompile limit."""
    model = tmp_path / "counting.py"
    model.write_text("from workbench.core.domain.model import SandwichNet\n"
                     "CALLS = 0\n\n\n"
                     "class CountingNet(SandwichNet):\n"
                     "    def forward(self, x):\n"
                     "        return super().forward(x) * (1.0 + CALLS * 0.0)\n\n"
                     "    def __call__(self, x):\n"
                     "        global CALLS\n"
                     "        CALLS += 1\n"
                     "        return super().__call__(x)\n")
    events, result = run(SMALL.replace(model=f"{model}:CountingNet", backend="aot_eager", max_steps=8,
                                       recompile_limit=6, on_recompile="compile"))
    assert isinstance(result, RunFinished)
    raised = {a.rule: a for a in alerts(events)}
    assert raised["recompile_storm"].step == 6 and raised["recompile_storm"].panel == "compile"
    assert "recompile_limit" in raised
