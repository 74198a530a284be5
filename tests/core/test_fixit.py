"""Fix-it cards: Dynamo's graph-break texts (recorded verbatim from torch 2.14) taken apart, grouped by type, each
with a recipe that names only what the installed torch has, and a bug report for breaks inside PyTorch."""

from __future__ import annotations

import importlib
import re

import pytest
from hypothesis import given, settings, strategies as st

from workbench.core.domain.compile_explain import _short_reason
from workbench.core.ground.events import Frame, GraphBreak
from workbench.core.ground.fixit import RECIPES, BreakInfo, bug_report, category, fixit_cards, parse_break

# -- reason texts, verbatim from `torch._dynamo.explain(fn)(x).break_reasons[0].reason` (torch 2.14.1) ----------
ITEM = (
    'Unsupported Tensor.item() call with capture_scalar_outputs=False\n'
    '  Explanation: Dynamo does not support tracing `Tensor.item()` with '
    'config.capture_scalar_outputs=False.\n'
    '  Hint: Set `torch._dynamo.config.capture_scalar_outputs = True` or `export '
    'TORCHDYNAMO_CAPTURE_SCALAR_OUTPUTS=1` to include these operations in the captured graph.\n'
    '\n'
    '  Developer debug context: call_method TensorVariable() item () {}\n'
    '\n'
    ' For more details about this graph break, please visit: '
    'https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0124.html'
)

PRINT = (
    'Failed to trace builtin operator\n'
    '  Explanation: Dynamo does not know how to trace builtin operator `print` with argument types '
    "['str', 'Tensor'] (has_kwargs False)\n"
    "  Hint: Avoid calling builtin `print` with argument types ['str', 'Tensor']. Consider using an "
    'equivalent alternative function/method to `print`.\n'
    '  Hint: If you are attempting to call a logging function (e.g. `print`), you can try adding it '
    'to `torch._dynamo.config.reorderable_logging_functions`.\n'
    '  Hint: Please report an issue to PyTorch.\n'
    '\n'
    '  Developer debug context: builtin print [<class '
    "'torch._dynamo.variables.constant.ConstantVariable'>, <class "
    "'torch._dynamo.variables.tensor.TensorVariable'>] False\n"
    '\n'
    ' For more details about this graph break, please visit: '
    'https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0059.html'
)

LOGGER = (
    'logging.Logger method not supported for non-export cases\n'
    '  Explanation: For non-export cases, logging.Logger methods are only supported if the logger '
    'has a source and the method is registered as reorderable.\n'
    '  Hint: If you do not need this logging side effect, add the exact method being called to '
    '`torch._dynamo.config.ignore_logging_functions`. Dynamo will skip the call and return `None`.\n'
    '  Hint: For example, for `logger.warning(...)`, use '
    '`torch._dynamo.config.ignore_logging_functions.add(logger.warning)`. If `warning` is defined on '
    'the logger class, add the class method `logging.Logger.warning` to ignore this method for all '
    'instances of that class.\n'
    '  Hint: Dynamo does not trace into logging.Logger method bodies, so only the method you call '
    'directly (`warning`) is checked against the ignore set. Ignoring a method that `warning` calls '
    'internally has no effect.\n'
    '  Hint: If you need the log side effect to run, then you can try one of (1) create the logger '
    'outside the compiled region and add the method to '
    '`torch._dynamo.config.reorderable_logging_functions` (e.g. '
    '`torch._dynamo.config.reorderable_logging_functions.add(logger.warning)`) so that it runs after '
    'the compiled region, as long as it is called without kwargs and its arguments are tensors, '
    'constants, or string formatters, (2) `torch._higher_order_ops.print(...)`, (3) wrap the logging '
    'call in a custom op (marked as mutable), or (4) preserve the logging contents and move the '
    'logging call outside the compiled region.\n'
    '\n'
    '  Developer debug context: method: <Logger x (WARNING)>.warning, args: [ConstantVariable(str: '
    "'hi %s'), ConstantVariable(int: 1)], kwargs: {}\n"
    '\n'
    ' For more details about this graph break, please visit: '
    'https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0291.html'
)

NONZERO = (
    'Dynamic shape operator\n'
    "  Explanation: Operator `aten.nonzero.default`'s output shape depends on input Tensor data.\n"
    '  Hint: Enable tracing of dynamic shape operators with '
    '`torch._dynamo.config.capture_dynamic_output_shape_ops = True`\n'
    '\n'
    '  Developer debug context: aten.nonzero.default\n'
    '\n'
    ' For more details about this graph break, please visit: '
    'https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0036.html'
)

SKIPPED = (
    'Attempted to call function marked as skipped\n'
    '  Explanation: Dynamo does not know how to trace the builtin `time.perf_counter.` This function '
    'is either a Python builtin (e.g. _warnings.warn) or a third-party C/C++ Python extension '
    '(perhaps created with pybind).\n'
    '  Hint: If it is a Python builtin, please file an issue on GitHub so the PyTorch team can add '
    'support for it and see the next case for a workaround.\n'
    '  Hint: If it is a third-party C/C++ Python extension, please either wrap it into a '
    'PyTorch-understood custom operator (see '
    'https://pytorch.org/tutorials/advanced/custom_ops_landing_page.html for more details) or, if it '
    'is traceable, use `torch.compiler.allow_in_graph`.\n'
    '\n'
    '  Developer debug context: module: time, qualname: perf_counter, skip reason: cannot determine '
    'source file for time (likely a C extension or builtin)\n'
    '\n'
    ' For more details about this graph break, please visit: '
    'https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0007.html'
)

TOLIST = (
    'Data dependent operator\n'
    '  Explanation: Operator `aten._local_scalar_dense.default` has a non-Tensor output whose value '
    'is dependent on the data of Tensor inputs.\n'
    '  Hint: Enable tracing of data-dependent output operators with '
    '`torch._dynamo.config.capture_scalar_outputs = True`\n'
    '\n'
    '  Developer debug context: aten._local_scalar_dense.default\n'
    '\n'
    ' For more details about this graph break, please visit: '
    'https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0033.html'
)

BRANCH_INLINED = (
    'Data-dependent branching\n'
    '  Explanation: Detected data-dependent branching (e.g. `if my_tensor.sum() > 0:`). Dynamo does '
    'not support tracing dynamic control flow.\n'
    '\n'
    '      The branch condition involves a tensor computed as follows:\n'
    '        # File '
    '"/work/main/.venv/lib/python3.11/site-packages/torchvision/transforms/v2/_transform.py", line '
    '187, in forward, code: if torch.rand(1) >= self.p:\n'
    '        rand = rand(1)\n'
    '    \n'
    '        # File '
    '"/work/main/.venv/lib/python3.11/site-packages/torchvision/transforms/v2/_transform.py", line '
    '187, in forward, code: if torch.rand(1) >= self.p:\n'
    '        ge = ge(rand, 0.5)\n'
    '    \n'
    '  Hint: This graph break is fundamental - it is unlikely that Dynamo will ever be able to trace '
    'through your code. Consider finding a workaround.\n'
    '  Hint: Use `torch.cond` to express dynamic control flow.\n'
    '\n'
    '  Developer debug context: attempted to jump with TensorVariable()\n'
    '\n'
    ' For more details about this graph break, please visit: '
    'https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0170.html'
)

BRANCH_FULLGRAPH = (
    'Data-dependent branching\n'
    '  Explanation: Detected data-dependent branching (e.g. `if my_tensor.sum() > 0:`). Dynamo does '
    'not support tracing dynamic control flow.\n'
    '  Hint: For the common pattern `if tensor_cond: x = transform(x)` (e.g. clamping inf/nan '
    'values), consider making the code branchless by always applying the transform. Operations like '
    'torch.clamp, torch.nan_to_num, and torch.where are typically no-ops on well-behaved inputs and '
    'compile without graph breaks.\n'
    '  Hint: Note: Python `or`/`and` between tensor expressions (e.g. `tensor.any() or '
    'other_tensor.any()`) triggers implicit bool conversion. Use '
    '`torch.logical_or`/`torch.logical_and` or the `|`/`&` operators instead.\n'
    '  Hint: This graph break is fundamental - it is unlikely that Dynamo will ever be able to trace '
    'through your code. Consider finding a workaround.\n'
    '  Hint: Use `torch.cond` to express dynamic control flow.\n'
    '\n'
    '  Developer debug context: attempted to jump with TensorVariable()\n'
    '\n'
    ' For more details about this graph break, please visit: '
    'https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0170.html\n'
    '\n'
    'from user code:\n'
    '   File "/work/main/resources/examples/planted_branch.py", line 23, in forward\n'
    "    if (h.abs() > CLIP).any():  # the planted graph break: a Python branch on a tensor's value\n"
    '\n'
    "Set TORCHDYNAMO_VERBOSE=1 for the internal stack trace (please do this especially if you're "
    'reporting a bug to PyTorch). For even more developer context, set TORCH_LOGS="+dynamo"\n'
)

GENERIC_JUMP = "generic_jump TensorVariable()"  # explain's reason for a branch in the frame it compiles
# What GraphBreak.reason held for PRINT before the report hint and the link were kept (older recorded runs).
PRINT_RECORDED_BEFORE = (
    "Failed to trace builtin operator\n"
    "Explanation: Dynamo does not know how to trace builtin operator `print` with argument types ['str', 'Tensor'] "
    "(has_kwargs False)\n"
    "Hint: Avoid calling builtin `print` with argument types ['str', 'Tensor']. Consider using an equivalent "
    "alternative function/method to `print`.\n"
    "Hint: If you are attempting to call a logging function (e.g. `print`), you can try adding it to "
    "`torch._dynamo.config.reorderable_logging_functions`.")

ALL_TEXTS = [ITEM, PRINT, LOGGER, NONZERO, SKIPPED, TOLIST, BRANCH_INLINED, BRANCH_FULLGRAPH]

MODEL = "/home/me/project/model.py"
LIBRARY = "/home/me/.venv/lib/python3.11/site-packages/torchvision/transforms/v2/_transform.py"


def frame(line: int, file: str = MODEL, source: str = "h = f(h)") -> Frame:
    return Frame(file=file, line=line, function="forward", source=source)


def brk(text: str, *frames: Frame) -> GraphBreak:
    """A break as a CompileReport carries it: the reason trimmed by inspect, the user frames innermost last."""
    return GraphBreak(reason=_short_reason(text), frames=frames)


# -- parse_break -----------------------------------------------------------------------------------------------

def test_item_break_is_taken_apart():
    info = parse_break(ITEM)
    assert info == BreakInfo(
        type="Unsupported Tensor.item() call with capture_scalar_outputs=False",
        explanation="Dynamo does not support tracing `Tensor.item()` with config.capture_scalar_outputs=False.",
        hints=("Set `torch._dynamo.config.capture_scalar_outputs = True` or `export "
               "TORCHDYNAMO_CAPTURE_SCALAR_OUTPUTS=1` to include these operations in the captured graph.",),
        link="https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0124.html",
        gb_id="GB0124", report_to_pytorch=False)


def test_dynamos_report_hint_becomes_a_flag_and_leaves_the_hints():
    info = parse_break(PRINT)
    assert info.type == "Failed to trace builtin operator"
    assert info.report_to_pytorch
    assert len(info.hints) == 2 and not any("report an issue" in h for h in info.hints)
    assert info.hints[1].endswith("`torch._dynamo.config.reorderable_logging_functions`.")
    assert info.gb_id == "GB0059"


@pytest.mark.parametrize("text, type_, gb_id", [
    (LOGGER, "logging.Logger method not supported for non-export cases", "GB0291"),
    (NONZERO, "Dynamic shape operator", "GB0036"),
    (SKIPPED, "Attempted to call function marked as skipped", "GB0007"),
    (TOLIST, "Data dependent operator", "GB0033"),
    (BRANCH_INLINED, "Data-dependent branching", "GB0170"),
    (BRANCH_FULLGRAPH, "Data-dependent branching", "GB0170"),
])
def test_each_recorded_type_parses(text, type_, gb_id):
    info = parse_break(text)
    assert (info.type, info.gb_id) == (type_, gb_id)
    assert info.explanation and info.hints
    assert not any("Developer debug context" in part for part in (info.explanation, *info.hints))


@pytest.mark.parametrize("text", ALL_TEXTS)
def test_the_trimmed_reason_of_a_graph_break_parses_like_dynamos_text(text):
    assert parse_break(_short_reason(text)) == parse_break(text)


def test_a_multi_line_explanation_keeps_its_quoted_code():
    explanation = parse_break(BRANCH_INLINED).explanation
    assert explanation.startswith("Detected data-dependent branching")
    assert "ge = ge(rand, 0.5)" in explanation.splitlines()


def test_a_fullgraph_error_stops_before_its_user_stack():
    info = parse_break(BRANCH_FULLGRAPH)
    assert info.hints[-1] == "Use `torch.cond` to express dynamic control flow."
    assert "from user code" not in info.link and "planted_branch.py" not in info.hints[-1]
    assert info.link.endswith("gb0170.html")


def test_a_reason_recorded_without_the_report_hint_and_link():
    info = parse_break(PRINT_RECORDED_BEFORE)
    assert info.hints == parse_break(PRINT).hints
    assert (info.link, info.gb_id, info.report_to_pytorch) == ("", "", False)


def test_explains_terse_branch_reason_is_a_data_dependent_branch():
    info = parse_break(GENERIC_JUMP)
    assert info.type == parse_break(BRANCH_INLINED).type == "Data-dependent branching"
    assert "generic_jump TensorVariable()" in info.explanation
    assert info.gb_id == "GB0170"


@pytest.mark.parametrize("text, type_", [
    ("", ""),
    ("\n   \n", ""),
    ("call_function BuiltinVariable(print) [ConstantVariable()] {}", "call_function BuiltinVariable(print) "
                                                                     "[ConstantVariable()] {}"),
    ("\n  Something odd\nHint without a colon\nExplanation", "Something odd"),
])
def test_an_unknown_format_gives_its_first_line_and_nothing_else(text, type_):
    assert parse_break(text) == BreakInfo(type=type_)


TOKENS = ["a", " ", ":", "\n", "\t", "Hint:", "Explanation:", "from user code:", "Developer debug context:",
          "For more details about this graph break, please visit:", "/gb/gb0001.html", "generic_jump"]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(TOKENS), max_size=30).map("".join))
def test_parse_break_takes_any_text(text):
    info = parse_break(text)  # never raises
    lines = {line.strip() for line in text.splitlines()}
    assert info.type in lines | {"", "Data-dependent branching"}
    assert all(isinstance(value, str) for value in (info.explanation, info.link, info.gb_id, *info.hints))


# -- cards -----------------------------------------------------------------------------------------------------

def test_cards_group_by_type_most_frequent_first_with_one_frame_per_location():
    cards = fixit_cards([
        brk(PRINT, frame(10)),
        brk(ITEM, frame(20)),
        brk(ITEM, frame(30)),
        brk(ITEM, frame(20)),  # the same location again (another graph): one frame
    ])
    assert [(c.type, c.count) for c in cards] == [
        ("Unsupported Tensor.item() call with capture_scalar_outputs=False", 3),
        ("Failed to trace builtin operator", 1)]
    assert [f.line for f in cards[0].frames] == [20, 30]
    assert cards[0].link.endswith("gb0124.html") and cards[0].explanation.startswith("Dynamo does not support")


def test_equal_counts_keep_the_order_first_seen():
    cards = fixit_cards([brk(NONZERO, frame(1)), brk(SKIPPED, frame(2))])
    assert [c.category for c in cards] == ["dynamic_shape", "library_call"]


def test_terse_and_full_branch_reasons_make_one_card_with_dynamos_full_text():
    cards = fixit_cards([brk(GENERIC_JUMP, frame(23)), brk(BRANCH_INLINED, frame(30))])
    assert len(cards) == 1
    card = cards[0]
    assert (card.type, card.count, card.category) == ("Data-dependent branching", 2, "data_dependent_branch")
    assert card.hints == parse_break(BRANCH_INLINED).hints
    assert card.explanation.startswith("Detected data-dependent branching")


@pytest.mark.parametrize("text, expected", [
    (ITEM, "item"), (TOLIST, "item"),
    (GENERIC_JUMP, "data_dependent_branch"), (BRANCH_FULLGRAPH, "data_dependent_branch"),
    (NONZERO, "dynamic_shape"),
    (PRINT, "print"), (LOGGER, "print"),
    (PRINT.replace("`print`", "`open`"), "unsupported_builtin"),
    (SKIPPED, "library_call"),
    ("Call to `torch._dynamo.graph_break()`\nExplanation: User-inserted graph break.", "other"),
])
def test_each_type_gets_its_recipe(text, expected):
    card = fixit_cards([brk(text, frame(5))])[0]
    assert card.category == expected
    assert card.recipe == RECIPES[expected]


def test_recipes_say_what_to_write():
    assert "capture_scalar_outputs" in RECIPES["item"]
    assert "torch.where" in RECIPES["data_dependent_branch"] and "torch.cond(" in RECIPES["data_dependent_branch"]
    assert "reorderable_logging_functions" in RECIPES["print"]
    assert "capture_dynamic_output_shape_ops" in RECIPES["dynamic_shape"]
    for name in ("@torch.compiler.disable", "allow_in_graph", "torch.library.custom_op", "register_fake"):
        assert name in RECIPES["library_call"]
    assert all("before:" in RECIPES[key] and "after:" in RECIPES[key]
               for key in ("item", "data_dependent_branch", "dynamic_shape", "print", "unsupported_builtin"))


def test_every_torch_name_in_the_recipes_exists_in_the_installed_torch():
    names = {m.group(0).rstrip(".") for recipe in RECIPES.values()
             for m in re.finditer(r"\btorch(?:\.[A-Za-z_]\w*)+", recipe)}
    assert {"torch.cond", "torch.compiler.disable", "torch.library.custom_op",
            "torch._dynamo.config.capture_scalar_outputs"} <= names
    for name in names:
        assert _resolve(name) is not None, name


def _resolve(dotted: str):
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):  # the longest importable module, then attributes
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            obj = getattr(obj, attr, None)
        return obj
    return None


def test_a_break_inside_a_library_is_fixed_at_the_users_call():
    call = frame(30, source="h = self.augment(h)")
    inside = frame(187, file=LIBRARY, source="if torch.rand(1) >= self.p:")
    cards = fixit_cards([brk(BRANCH_INLINED, call, inside), brk(GENERIC_JUMP, inside)])
    card = cards[0]
    assert card.category == "library_call" and card.recipe == RECIPES["library_call"]
    assert card.frames == (call, inside)  # the user's line to change, and the library's own frame
    assert not card.inside_pytorch
    assert category(parse_break(BRANCH_INLINED), (call,)) == "data_dependent_branch"  # in the user's file


def test_files_of_this_workbench_package_are_user_code_wherever_it_is_installed(monkeypatch):
    from pathlib import Path

    from workbench.core.ground import fixit

    site = Path("/opt/venv/lib/python3.11/site-packages")
    monkeypatch.setattr(fixit, "_WORKBENCH_DIR", site / "workbench")  # an installed (non-editable) workbench
    ours = frame(1, file=str(site / "workbench/resources/examples/planted_branch.py"))
    other = frame(1, file=str(site / "othertool/models/net.py"))
    assert category(parse_break(GENERIC_JUMP), (ours,)) == "data_dependent_branch"
    assert category(parse_break(GENERIC_JUMP), (other,)) == "library_call"


def test_the_standard_library_is_library_code():
    import copy

    inside = frame(153, file=copy.__file__, source="y = copier(memo)")
    assert category(parse_break(GENERIC_JUMP), (frame(54), inside)) == "library_call"


def test_inside_pytorch_when_no_break_of_the_type_has_a_user_frame():
    assert fixit_cards([brk(NONZERO), brk(NONZERO)])[0].inside_pytorch
    assert not fixit_cards([brk(NONZERO), brk(NONZERO, frame(3))])[0].inside_pytorch


def test_dynamos_report_hint_alone_does_not_make_a_fixable_break_a_pytorch_bug():
    assert not fixit_cards([brk(PRINT, frame(17))])[0].inside_pytorch  # a print in forward: ours to fix
    unknown = "Some new break type\nExplanation: x\nHint: Please report an issue to PyTorch."
    card = fixit_cards([brk(unknown, frame(17))])[0]
    assert card.category == "other" and card.inside_pytorch


# -- bug report ------------------------------------------------------------------------------------------------

def test_bug_report_is_self_contained():
    where = frame(187, file=LIBRARY, source="if torch.rand(1) >= self.p:")
    card = fixit_cards([brk(BRANCH_INLINED, where), brk(BRANCH_INLINED, where)])[0]
    versions = {"torch": "2.14.1", "python": "3.11.2", "platform": "Linux-6.1-x86_64"}
    config = {"model": "/home/me/net.py:Net", "backend": "aot_eager", "mode": "default", "batch_size": 64,
              "lr": 0.004}
    text = bug_report(card, versions, config)
    assert text.startswith("# torch.compile graph break: Data-dependent branching\n")
    for name, value in versions.items():
        assert f"- {name}: {value}" in text
    assert "- backend: aot_eager" in text and "lr" not in text  # compile settings only
    assert "2 times" in text
    assert card.explanation.splitlines()[0] in text and "ge = ge(rand, 0.5)" in text
    assert all(f"- {hint}" in text for hint in card.hints)
    assert card.link in text
    assert f"`{LIBRARY}:187` in `forward`" in text and "if torch.rand(1) >= self.p:" in text
    repro = re.search(r"## Reproduce\n\n```python\n(.*?)```", text, re.S).group(1)
    compile(repro, "repro.py", "exec")  # runnable Python, not prose
    assert repro.startswith("import torch\n")
    assert "'/home/me/net.py:Net'" in repro
    assert "torch.randint(0, 256, (64, 1, 28, 28), dtype=torch.uint8)" in repro
    assert "torch._dynamo.explain(model)(x)" in repro
    assert "torch.compile(model, backend='aot_eager', fullgraph=True)(x)" in repro
    assert "# if torch.rand(1) >= self.p:  (_transform.py:187)" in repro


def test_bug_report_without_a_user_frame_or_a_model():
    card = fixit_cards([brk(NONZERO)])[0]
    text = bug_report(card, {"torch": "2.14.1"}, {"backend": "eager"})
    assert "the break happened inside PyTorch" in text
    assert "1 time " in text
    assert "'(not recorded)'" in text
    assert "backend='inductor'" in text  # an eager config: the compiler it would have used
