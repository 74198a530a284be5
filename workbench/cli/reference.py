"""The user guide's reference pages, written from the code they describe so that they cannot drift from it: the
command line from the argparse parser (every command's and action's `--help`), the settings from TrainConfig's field
metadata (the same source as the Setup form and the flags). `scripts/docs_reference.py` writes them into docs/
reference/; tests/core/test_docs.py fails when a page there and the code disagree."""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator

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
    return text.replace("|", "\\|").replace("\n", " ")
