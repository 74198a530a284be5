"""Fix-it cards for graph breaks: what Dynamo said, grouped by break type, with a concrete recipe to remove it.

A graph break's reason is Dynamo's formatted text: its type (the first line), "Explanation:", "Hint:" lines, a
"Developer debug context:" and a link to the break type's page. Read raw, it is a wall of text repeated for every
break; what a user needs is one card per kind of break — how often, where in their code, and what to write
instead. Dynamo's hints are generic ("consider using an equivalent alternative"), so each card adds a recipe of
our own, with a before/after snippet for the common types, checked against the installed PyTorch by the tests.

Breaks that happened inside PyTorch itself cannot be fixed by the user: for those, `bug_report` writes a
self-contained Markdown report to file upstream. Torch-free (the window reads recorded runs with it); the
reasons are parsed leniently, because they come from other torch versions and from older recorded runs too.
"""

from __future__ import annotations

import re
import sysconfig
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from .events import Frame, GraphBreak

_REPORT_HINT = "Please report an issue to PyTorch"
_LINK_PREFIX = "For more details about this graph break, please visit:"
_GB_PAGE = "https://meta-pytorch.github.io/compile-graph-break-site/gb/{}.html"
# Where a reason's break-type text ends: the user stack of a fullgraph error, and its closing advice.
_TEXT_ENDS = ("from user code:", "Set TORCHDYNAMO_VERBOSE")
# Dynamo words a data-dependent jump in the frame it compiles as "generic_jump TensorVariable()" (the graph's
# compile reason, which `torch._dynamo.explain` reports) and as "Data-dependent branching" (GB0170) elsewhere.
_GENERIC_JUMP = "generic_jump"
_BRANCH_TYPE = "Data-dependent branching"
_WORKBENCH_DIR = Path(__file__).resolve().parents[2]  # the workbench package (its example models are user code)
_STDLIB_DIR = Path(sysconfig.get_paths()["stdlib"])
_SETTINGS = ("model", "device", "backend", "mode", "dynamic", "fullgraph", "amp", "batch_size")  # in a bug report


@dataclass(frozen=True)
class BreakInfo:
    """One graph-break reason, taken apart."""

    type: str  # Dynamo's break type (its first line), e.g. "Failed to trace builtin operator"
    explanation: str = ""
    hints: tuple[str, ...] = ()  # without Dynamo's bare "Please report an issue to PyTorch." (see report_to_pytorch)
    link: str = ""  # the break type's page, or ""
    gb_id: str = ""  # e.g. "GB0124", or ""
    report_to_pytorch: bool = False  # a hint asked to report an issue to PyTorch


@dataclass(frozen=True)
class FixItCard:
    """Every break of one type: what Dynamo said about it, where it happened and how to remove it."""

    type: str
    count: int  # breaks of this type
    explanation: str
    hints: tuple[str, ...]
    recipe: str  # our own instructions, a before/after snippet where one helps
    frames: tuple[Frame, ...]  # one per break location, in the user's code where possible (see _location)
    link: str
    inside_pytorch: bool  # nothing for the user to change: offer a bug report (see _inside_pytorch)
    category: str  # a key of RECIPES


def parse_break(reason: str) -> BreakInfo:
    """A reason text taken apart. Accepts Dynamo's full text, the trimmed text of `GraphBreak.reason` (recorded
    with or without the report hint and the link), a fullgraph error's message, or anything else: a text without
    "Explanation:" or "Hint:" sections gives its first non-empty line as the type and nothing more."""
    lines = [line.strip() for line in str(reason or "").splitlines() if line.strip()]
    lines = lines[:next((i for i, line in enumerate(lines) if line.startswith(_TEXT_ENDS)), len(lines))]
    if not lines:
        return BreakInfo(type="")
    if lines[0].startswith(_GENERIC_JUMP):
        return BreakInfo(type=_BRANCH_TYPE, explanation=f"Dynamo reported it as `{lines[0]}`: a Python `if`, "
                         "`while`, `and` or `or` that needs a tensor's value.", link=_GB_PAGE.format("gb0170"),
                         gb_id="GB0170")
    sections = _sections(lines[1:])
    hints = tuple(text for label, text in sections if label == "Hint:")
    link = next((text for label, text in sections if label == _LINK_PREFIX), "")
    gb = re.search(r"/gb/(gb\d+)\.html", link)
    return BreakInfo(
        type=lines[0],
        explanation=next((text for label, text in sections if label == "Explanation:"), ""),
        hints=tuple(h for h in hints if h.rstrip(".") != _REPORT_HINT),
        link=link,
        gb_id=gb.group(1).upper() if gb else "",
        report_to_pytorch=any(_REPORT_HINT.lower() in h.lower() for h in hints))


def _sections(lines: list[str]) -> list[tuple[str, str]]:
    """(label, text) for each labelled section; unlabelled lines continue the section before them (an
    explanation can quote the code that computed a branch's condition over several lines)."""
    labels = ("Explanation:", "Hint:", "Developer debug context:", _LINK_PREFIX)
    sections: list[tuple[str, list[str]]] = []
    for line in lines:
        label = next((lab for lab in labels if line.startswith(lab)), None)
        if label:
            sections.append((label, [line[len(label):].strip()]))
        elif sections:
            sections[-1][1].append(line)
    return [(label, "\n".join(part for part in parts if part)) for label, parts in sections]


# -- categories and recipes ------------------------------------------------------------------------------------

RECIPES = {
    "item": """\
The value leaves the device: `.item()`, `.tolist()`, `float(t)`, `int(t)` or `bool(t)` make a Python number, which
the graph cannot hold. A number read to print or log it: keep it a tensor in forward, and read it outside (after
the step, every N steps), where each read also waits for the device:
    before:  print("mean:", h.mean().item())
    after:   self.mean = h.mean().detach()
             ...
             print("mean:", model.mean.item())
A number the computation uses: keep it a tensor where it is used:
    before:  scale = h.abs().max().item()
             h = h / scale
    after:   h = h / h.abs().max()
Or let Dynamo trace it as a symbolic number: torch._dynamo.config.capture_scalar_outputs = True, set on the
thread that compiles, before the first compiled call (a Python `if` on that number still breaks the graph).
torch.compile(fullgraph=True) already traces `.item()` that way.""",
    "data_dependent_branch": """\
A Python `if`/`while` (or `and`/`or`) on a tensor's value needs the value on the host before the graph can go on.
Write it without the branch, so both outcomes stay on the device:
    before:  if (h.abs() > 3).any():
                 h = h.clamp(-3, 3)
    after:   h = h.clamp(-3, 3)            # changes nothing where no value is out of range
    before:  h = h * 2 if h.sum() > 0 else h - 1
    after:   h = torch.where(h.sum() > 0, h * 2, h - 1)
When the two sides are larger computations, torch.cond(pred, true_fn, false_fn, (h,)) keeps both in the graph
(both functions take the operands and return tensors of the same shapes and dtypes).""",
    "dynamic_shape": """\
The operator's output shape depends on the data (nonzero, unique, masked_select, boolean-mask indexing), so the
graph cannot know it in advance. Keep the shape fixed and mask instead:
    before:  total = h[h > 0].sum()
    after:   total = torch.where(h > 0, h, 0).sum()
    before:  F.one_hot(labels)
    after:   F.one_hot(labels, num_classes=10)
Or let Dynamo trace such operators with unknown sizes: torch._dynamo.config.capture_dynamic_output_shape_ops =
True, set on the thread that compiles, before the first compiled call.""",
    "print": """\
print and logging inside forward are side effects the graph cannot hold (and printing a value reads it back from
the device). Log outside the compiled model:
    before:  def forward(self, x):
                 h = self.input_adapter(x)
                 print("mean input:", h.mean().item())
                 return self.core_block(h)
    after:   def forward(self, x):
                 return self.core_block(self.input_adapter(x))
             # in the training loop, after the step: print("mean output:", out.mean().item())
To keep the call, torch._dynamo.config.reorderable_logging_functions.add(print) (or logger.info) runs it after
the compiled region (its arguments must be tensors, constants or format strings: pass the tensor, not `.item()`);
torch._dynamo.config.ignore_logging_functions.add(logger.warning) drops a logger call when compiled. Set either on
the thread that compiles, before the first compiled call.""",
    "unsupported_builtin": """\
Dynamo cannot trace this Python builtin with these arguments. Do the Python-level work once, outside forward,
and keep forward to tensor operations:
    before:  def forward(self, x):
                 h = x * len(open(self.labels_file).read().split())
    after:   def __init__(self, ...):
                 self.label_count = len(open(labels_file).read().split())
             def forward(self, x):
                 h = x * self.label_count
Often a torch function does the same on tensors (sorted → torch.sort, max over a tensor → torch.max). If the call
has to stay, put it in a small function decorated with @torch.compiler.disable: it runs eagerly, explicitly.""",
    "library_call": """\
Dynamo cannot trace into this function: it is C code, a library function Dynamo skips, or library code that
breaks inside (the break's location is not in your file). The fix is at your call, not in the library:
- Call it outside the compiled model (augment or preprocess the batch before the model), or make the call a
  method that Dynamo does not trace:
      @torch.compiler.disable
      def augment(self, h):              # a method of your model; forward calls self.augment(h)
          return self.augmentation(h)
  It runs eagerly: the graph still breaks there, once and explicitly, and the rest stays compiled.
- If it is plain tensor code without Python side effects or data-dependent branches,
  torch.compiler.allow_in_graph(fn) puts the call in the graph as it is.
- For a C/C++ extension, make it a custom operator, one opaque node in the graph, with a fake implementation
  that gives the output's shape and dtype (and register_autograd if gradients must flow through it):
      @torch.library.custom_op("mylib::denoise", mutates_args=())
      def denoise(x: torch.Tensor) -> torch.Tensor:
          return torch.from_numpy(my_extension.denoise(x.cpu().numpy())).to(x.device)
      @denoise.register_fake
      def _(x):
          return torch.empty_like(x)""",
    "other": """\
No recipe of our own for this break type: read Dynamo's explanation and hints, and its page for this type.
Ways out that always apply:
- move the code out of forward, or decorate the function that contains it with @torch.compiler.disable;
- compile with fullgraph=True: it stops at the first break with its full stack (a fix-it card's
  "Check with fullgraph" does this without training);
- TORCH_LOGS="graph_breaks" prints every break with its user stack as it happens.""",
}

# Break types by category, matched on the start of the type text (Dynamo's gb_type; variants share a prefix).
_CATEGORY_TYPES = {
    "item": ("Unsupported Tensor.item() call", "Tensor.tolist()", "Data dependent operator"),
    "data_dependent_branch": ("Data-dependent branching", "Data-dependent assertion", _GENERIC_JUMP),
    "dynamic_shape": ("Dynamic shape operator", "Attempted to use `torch.nn.functional.one_hot` with data-dependent"),
    "print": ("logging.Logger method not supported",),
    "library_call": ("Attempted to call function marked as skipped", "Attempted to inline function marked as skipped",
                     "Unsupported method call"),
}


def category(info: BreakInfo, frames: Sequence[Frame] = ()) -> str:
    """The recipe's key for a break. A break whose innermost frame is library code is a "library_call" whatever
    its type: the fix is at the user's call, since the library's code is not theirs to change."""
    if frames and _is_library(frames[-1].file):
        return "library_call"
    if info.type.startswith("Failed to trace builtin operator"):
        return "print" if "`print`" in info.explanation else "unsupported_builtin"
    return next((key for key, starts in _CATEGORY_TYPES.items() if info.type.startswith(starts)), "other")


def _is_library(file: str) -> bool:
    """Installed packages (torch, torchvision, …) and the standard library: code the user does not edit. The
    workbench's own folder is not, even installed: its example models are the user's code to read and change."""
    path = Path(file)
    if path.is_relative_to(_WORKBENCH_DIR):
        return False
    return bool({"site-packages", "dist-packages"} & set(path.parts)) or path.is_relative_to(_STDLIB_DIR)



# -- cards -----------------------------------------------------------------------------------------------------

def fixit_cards(breaks: Sequence[GraphBreak]) -> tuple[FixItCard, ...]:
    """One card per break type, the most frequent first (ties: in the order first seen)."""
    groups: dict[str, list[tuple[BreakInfo, GraphBreak]]] = {}
    for brk in breaks:
        info = parse_break(brk.reason)
        groups.setdefault(info.type, []).append((info, brk))
    cards = [_card(group) for group in groups.values()]
    return tuple(sorted(cards, key=lambda card: -card.count))


def _card(group: list[tuple[BreakInfo, GraphBreak]]) -> FixItCard:
    # The most detailed of the group's texts: a terse "generic_jump" and a full text can share a type.
    info = max((info for info, _ in group), key=lambda i: (len(i.hints), len(i.explanation)))
    frames = tuple(dict.fromkeys(loc for _, brk in group if (loc := _location(brk.frames)) is not None))
    kind = Counter(category(i, brk.frames) for i, brk in group).most_common(1)[0][0]
    return FixItCard(type=info.type, count=len(group), explanation=info.explanation, hints=info.hints,
                     recipe=RECIPES[kind], frames=frames, link=info.link, category=kind,
                     inside_pytorch=_inside_pytorch(group, kind))


def _location(frames: Sequence[Frame]) -> Frame | None:
    """Where a break is, for the user: the innermost frame of their own code (for a break inside a library, the
    line that calls it), else the innermost frame there is (a library frame that Dynamo compiled on its own)."""
    own = [f for f in frames if not _is_library(f.file)]
    return own[-1] if own else (frames[-1] if frames else None)


def _inside_pytorch(group: list[tuple[BreakInfo, GraphBreak]], kind: str) -> bool:
    """Nothing in the user's hands, so a bug report is offered: no break of the type has a frame (a recorded
    break keeps only the frames outside torch, so an empty stack means PyTorch's own code), or Dynamo asks for an
    issue about a type we have no recipe for. Dynamo's "Please report an issue" alone is not enough: it also
    comes with breaks the user can fix (a `print` in forward). Breaks a run only counted, without a stack, have
    no frames either, and are classed as inside PyTorch too."""
    no_user_frame = all(not brk.frames for _, brk in group)
    return no_user_frame or (kind == "other" and any(info.report_to_pytorch for info, _ in group))


# -- bug report ------------------------------------------------------------------------------------------------

def bug_report(card: FixItCard, versions: dict, config: dict) -> str:
    """A self-contained Markdown report of a break inside PyTorch, to file at github.com/pytorch/pytorch: what
    Dynamo said, the versions, where it happened and a repro skeleton to cut down to a minimal example."""
    return "\n".join([
        f"# torch.compile graph break: {card.type}",
        "",
        f"`torch.compile` breaks the graph {card.count} time{'s' if card.count != 1 else ''} in this model with "
        "this break type, in code the model's author cannot change.",
        "",
        "## Versions",
        "",
        *[f"- {name}: {value}" for name, value in versions.items()],
        "",
        "## Settings",
        "",
        *[f"- {key}: {config[key]}" for key in _SETTINGS if key in config],
        "",
        "## The graph break",
        "",
        f"**Type:** `{card.type}`",
        "",
        *(["**Explanation:**", "", "```text", card.explanation, "```", ""] if card.explanation else []),
        *(["**Hints:**", "", *[f"- {hint}" for hint in card.hints], ""] if card.hints else []),
        *([f"**Dynamo's page for this break type:** {card.link}", ""] if card.link else []),
        "## Where",
        "",
        *_where(card.frames),
        "## Reproduce",
        "",
        "```python",
        _repro(card, config),
        "```",
        "",
    ])


def _where(frames: Sequence[Frame]) -> list[str]:
    if not frames:
        return ["No frame of the model's code: the break happened inside PyTorch.", ""]
    out = []
    for f in frames:
        out += [f"`{f.file}:{f.line}` in `{f.function}`:", "", "```python", f.source, "```", ""]
    return out


def _repro(card: FixItCard, config: dict) -> str:
    backend = config.get("backend") if config.get("backend") not in (None, "eager") else "inductor"
    batch = int(config.get("batch_size") or 32)
    breaking = [f"        # {f.source}  ({Path(f.file).name}:{f.line})" for f in card.frames]
    return "\n".join([
        "import torch",
        "from torch import nn",
        "",
        "",
        "class Model(nn.Module):",
        f"    # Cut down from the model {config.get('model', '(not recorded)')!r} to the smallest module that still",
        "    # breaks the graph.",
        "    def __init__(self):",
        "        super().__init__()",
        "        self.fc = nn.Linear(28 * 28, 10)",
        "",
        "    def forward(self, x):",
        "        h = x.float().flatten(1) / 255",
        *(["        # The code that breaks, to reproduce here:", *breaking] if breaking else []),
        "        return self.fc(h)",
        "",
        "",
        "model = Model()",
        f"x = torch.randint(0, 256, ({batch}, 1, 28, 28), dtype=torch.uint8)",
        "explanation = torch._dynamo.explain(model)(x)",
        "print(explanation.graph_break_count, [r.reason for r in explanation.break_reasons])",
        "torch._dynamo.reset()",
        f"torch.compile(model, backend={backend!r}, fullgraph=True)(x)  # once it breaks: raises there, with the stack",
    ])
