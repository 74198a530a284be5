"""Write the user guide's reference pages from the code (workbench/cli/reference.py): docs/reference/cli.md from the
command line's parser, docs/reference/settings.md from TrainConfig's settings, docs/reference/errors.md from the
source's raised errors. Run it after changing a flag or a
setting; tests/core/test_docs.py fails while a page and the code disagree.

    .venv/bin/python scripts/docs_reference.py
"""

from __future__ import annotations

from pathlib import Path

from workbench.cli.reference import cli_page, errors_page, settings_page
from workbench.core.ground.atomic import write_text_atomic

PAGES = Path(__file__).resolve().parents[1] / "docs" / "reference"

if __name__ == "__main__":
    PAGES.mkdir(parents=True, exist_ok=True)
    for name, text in (("cli.md", cli_page()), ("settings.md", settings_page()), ("errors.md", errors_page())):
        write_text_atomic(PAGES / name, text)
        print(f"wrote {PAGES / name} ({len(text.splitlines())} lines)")
