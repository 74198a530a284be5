"""The user guide (mkdocs.yml, docs/): its reference pages are the code's own words (a flag, a setting or an error
message missing from a page fails here, with the command that writes them again), and it builds with no fonts or
scripts from the network, every page of the nav present."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from workbench.cli.reference import cli_page, errors_page, settings_page

ROOT = Path(__file__).resolve().parents[2]
PAGES = ROOT / "docs" / "reference"
WRITE_AGAIN = "the page and the code disagree: .venv/bin/python scripts/docs_reference.py writes it again"


@pytest.mark.parametrize("page, written", [("cli.md", cli_page), ("settings.md", settings_page),
                                           ("errors.md", errors_page)])
def test_the_reference_pages_are_what_the_code_says(page, written):
    on_disk, now = (PAGES / page).read_text(), written()
    missing = [line for line in now.splitlines() if line not in on_disk.splitlines()]
    assert not missing, f"{page}: {WRITE_AGAIN}; first line it lacks: {missing[0]!r}"
    assert on_disk == now, f"{page}: {WRITE_AGAIN}"


def test_every_flag_of_every_command_is_on_the_cli_page():
    """What the reference promises, checked the other way too: each option string the parser knows is on the page."""
    from workbench.cli.parser import build_parser
    from workbench.cli.reference import _commands

    page = (PAGES / "cli.md").read_text()
    for name, parser in _commands(build_parser(), "workbench"):
        assert f"## {name}\n" in page, f"{name}: {WRITE_AGAIN}"
        for action in parser._actions:
            for flag in action.option_strings:
                assert re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", page), f"{name} {flag}: {WRITE_AGAIN}"


@pytest.mark.slow  # the whole guide built (about 3 s)
def test_the_guide_builds_strictly_and_reads_offline(tmp_path):
    site = tmp_path / "site"
    built = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)], cwd=ROOT,
                           capture_output=True, text=True, env={"NO_MKDOCS_2_WARNING": "1", "PATH": "/usr/bin:/bin"})
    assert built.returncode == 0, built.stderr[-3000:]
    pages = list(site.rglob("*.html"))
    assert (site / "index.html").is_file() and (site / "reference" / "cli.html").is_file() and len(pages) > 20
    fetched = {match for page in pages for match in re.findall(
        r"<(?:script|link|img|iframe)\b[^>]*\b(?:src|href)=\"(https?://[^\"]+)", page.read_text())}
    assert fetched == set(), f"the guide fetches these from the network: {sorted(fetched)}"
