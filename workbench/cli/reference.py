"""The user guide's reference pages, written from the code they describe so that they cannot drift from it: the
command line from the argparse parser (every command's and action's `--help`), the settings from TrainConfig's field
metadata (the same source as the Setup form and the flags), and the errors a user can meet from the source's own
`raise SomeError(message, what to do)` lines. `scripts/docs_reference.py` writes them into docs/reference/;
tests/core/test_docs.py fails when a page there and the code disagree."""

from __future__ import annotations

import argparse
import ast
import os
from collections.abc import Iterator
from pathlib import Path

from ..core.ground.config import GROUPS, settings
from .parser import build_parser

WIDTH = 100  # the help's line width on the pages (argparse reads COLUMNS), whatever the terminal
GENERATED = "<!-- Written by scripts/docs_reference.py from the code: edit the code, then run it again. -->\n"


def cli_page() -> str:
    """Every command of `workbench` with its whole --help, in the order the parser declares them."""
    lines = [GENERATED, "# Command line reference", "",
             "Every command and its options, as `workbench COMMAND --help` prints them. The guide's pages say what "
             "each is for; this page is the parser's own words.", ""]
    for name, parser in _commands(build_parser(), "workbench"):
        lines += [f"## {name}", "", "```text", _help(parser).rstrip(), "```", ""]
    return "\n".join(lines)


def settings_page() -> str:
    """Every setting of a run: its flag, its name in the Setup form and in a settings file, what it takes, its
    default, and what it does; by the form's groups."""
    lines = [GENERATED, "# Settings reference", "",
             "Every setting of a run, by the Setup form's groups. Each is declared once (TrainConfig's field "
             "metadata): the form, the command line's flags, a settings file (`--config FILE.json`, by its JSON "
             "name) and a sweep's search space all read it from there.", ""]
    declared = list(settings())
    for group in GROUPS:
        lines += [f"## {group}", "", "| Setting | Flag | JSON name | Values | Default | What it does |",
                  "|---|---|---|---|---|---|"]
        for setting in (s for s in declared if s.group == group):
            values = setting.allowed or "text"
            if setting.optional and "null" not in values:
                values += " (or none)"
            default = "none" if setting.default is None else f"`{setting.default}`"
            where = setting.label + ("" if setting.form else " (not on the form)")
            lines.append(f"| {where} | `{setting.flag}` | `{setting.name}` | {_cell(values)} | {default} | "
                         f"{_cell(setting.help)} |")
        lines.append("")
    return "\n".join(lines)


def _commands(parser: argparse.ArgumentParser, name: str) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    yield name, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub_name, sub in action.choices.items():
                yield from _commands(sub, f"{name} {sub_name}")


def _help(parser: argparse.ArgumentParser) -> str:
    before = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(WIDTH)
    try:
        return parser.format_help()
    finally:
        if before is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = before


def _cell(text: str) -> str:
    return " ".join(text.replace("|", "\\|").split())


SOURCE = Path(__file__).resolve().parents[1]  # the workbench package's folder


def errors_page() -> str:
    """Every error a user can meet (a WorkbenchError raised with its words in the source), by the part of the app
    that raises it: its message (`…` where it names a value: a path, a number) and what to do."""
    lines = [GENERATED, "# Error messages", "",
             "Every message Workbench can stop with because of something you can fix (a setting, a file, a host), "
             "with what to do, by the part of the app that says it. `…` stands for what the message names (a "
             "path, a value). A setting's message names it as the form does; the values it allows follow it.", ""]
    for module, found in sorted(_raised_errors().items()):
        lines += [f"## {module}", "", "| Message | What to do |", "|---|---|"]
        lines += [f"| {_cell(message)} | {_cell(hint) or '—'} |" for message, hint in sorted(set(found))]
        lines.append("")
    return "\n".join(lines)


def _raised_errors() -> dict[str, list[tuple[str, str]]]:
    trees = {path: ast.parse(path.read_text()) for path in sorted(SOURCE.rglob("*.py"))}
    errors = _workbench_errors(trees.values())
    found: dict[str, list[tuple[str, str]]] = {}
    for path, tree in trees.items():
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call)):
                continue
            name = node.exc.func.id if isinstance(node.exc.func, ast.Name) else getattr(node.exc.func, "attr", "")
            if name not in errors:
                continue
            args = list(node.exc.args)
            if name == "ConfigError":  # (the setting, its message, the values it allows)
                setting = _text(args[0]) if args else "…"
                message = f"{setting}: {_text(args[1])}" if len(args) > 1 else setting
                hint = f"allowed: {_text(args[2])}" if len(args) > 2 else ""
            else:
                message = _text(args[0]) if args else name
                hint = _text(args[1]) if len(args) > 1 else next(
                    (_text(k.value) for k in node.exc.keywords if k.arg == "hint"), "")
            if message.strip("… "):
                found.setdefault(str(path.relative_to(SOURCE).with_suffix("")).replace("/", "."), []).append(
                    (message, hint))
    return found


def _workbench_errors(trees) -> set[str]:
    """The names of WorkbenchError and every class that derives from it, here or through another."""
    bases: dict[str, set[str]] = {}
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                bases.setdefault(node.name, set()).update(
                    b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases)
    known, grown = {"WorkbenchError"}, True
    while grown:
        more = {name for name, parents in bases.items() if parents & known} - known
        known, grown = known | more, bool(more)
    return known


def _text(node: ast.expr) -> str:
    """A message as the source writes it: its words, `…` for each value it names."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(part.value if isinstance(part, ast.Constant) else "…" for part in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _text(node.left) + _text(node.right)
    return "…"
