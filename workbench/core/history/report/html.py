"""The few HTML pieces every report section shares: escaping, tables and links to a run's files."""

from __future__ import annotations

import html
import urllib.parse
from pathlib import Path
from typing import Any


def esc(value: Any) -> str:
    """Every piece of text from a user, a config or a framework goes through here."""
    return html.escape("—" if value is None else str(value), quote=True)


def table(head: list[str], rows: list[list[str]]) -> str:
    """Cells are HTML already (callers escape); headings are our own words."""
    return ("<table><tr>" + "".join(f"<th>{h}</th>" for h in head) + "</tr>"
            + "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows) + "</table>")


def file_href(path: str, base: Path | None) -> str:
    """A link to a run's file: relative when it lies in the report's folder `base` or below (the report sits next
    to the run folders: moving them together keeps the link), else an absolute file: URI."""
    target = Path(path)
    if not target.is_absolute():
        return urllib.parse.quote(target.as_posix())
    if base is not None:
        try:
            return urllib.parse.quote(target.relative_to(base).as_posix())
        except ValueError:
            pass
    return target.as_uri()
