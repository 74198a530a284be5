"""Compile inspection: graph breaks are reported with the user's file, line and source text."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from workbench.core.ground.config import TrainConfig
from workbench.core.ground.events import CompileReport, from_json, to_json
from workbench.core.domain.compile_explain import explain, explain_model
from workbench.core.domain.model import SandwichNet


@pytest.fixture(autouse=True)
def clean_dynamo():
    import torch._dynamo

    yield
    torch._dynamo.reset()


def test_planted_break_is_found_with_its_source_line(planted_break_spec, planted_break_line, capsys):
    report = explain(TrainConfig(model=planted_break_spec, backend="aot_eager"))
    assert isinstance(report, CompileReport)
    assert report.source == "explain"
    assert report.graph_break_count >= 1
    assert report.graph_count >= 2  # a graph before the print and one after it
    hits = [(b, f) for b in report.breaks for f in b.frames
            if Path(f.file).name == "planted_break.py" and f.line == planted_break_line]
    assert hits, f"no break at planted_break.py:{planted_break_line} in {report.breaks}"
    brk, frame = hits[0]
    assert frame.source.startswith("print(")
    assert frame.function == "forward"
    assert brk.where.endswith(f"planted_break.py:{planted_break_line}")
    assert "item()" in brk.reason
    assert "Developer debug context" not in brk.reason  # boilerplate trimmed
    # Only the user's frames: nothing from inside torch.
    torch_dir = str(Path(torch.__file__).parent)
    assert not any(f.file.startswith(torch_dir) for b in report.breaks for f in b.frames)
    assert from_json(to_json(report)) == report  # the report travels as an event
    assert "mean input" in capsys.readouterr().out  # the model really ran: the print executed


def test_plain_sandwich_has_one_graph_and_no_breaks():
    report = explain(TrainConfig(backend="aot_eager", hidden_dim=16))
    assert report.graph_count == 1
    assert report.graph_break_count == 0
    assert report.breaks == ()
    assert report.compiled
    assert report.op_count > 0
    assert report.backend == "aot_eager" and report.mode == "default"
    assert report.compile_seconds > 0


def test_an_eager_config_is_explained_as_inductor_would_compile_it():
    report = explain(TrainConfig(hidden_dim=8))
    assert report.backend == "inductor" and report.mode == "default"


def test_explain_model_on_a_given_batch():
    torch.manual_seed(0)
    model = SandwichNet(hidden_dim=8)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    report = explain_model(model, torch.zeros(4, 784), TrainConfig(backend="inductor"))
    assert report.graph_count == 1 and report.graph_break_count == 0
    assert report.compiled and report.op_count > 0
    for k, v in model.state_dict().items():
        assert torch.equal(v, before[k])  # explaining does not train or change the weights


def test_explain_reports_a_break_in_a_user_file(tmp_path):
    path = tmp_path / "two_breaks.py"
    path.write_text(
        "import torch\n"
        "from workbench.core.domain.model import SandwichNet\n"
        "\n"
        "\n"
        "class TwoBreaks(SandwichNet):\n"
        "    def forward(self, x):\n"
        "        h = self.input_adapter(x)\n"
        "        if h.sum() > 0:  # data-dependent control flow\n"
        "            h = h * 2\n"
        "        torch._dynamo.graph_break()\n"
        "        return self.core_block(h)\n")
    report = explain(TrainConfig(model=f"{path}:TwoBreaks", backend="aot_eager", hidden_dim=8))
    assert report.graph_break_count >= 2
    lines = {f.line for b in report.breaks for f in b.frames if f.file == str(path)}
    assert {8, 10} <= lines
