"""Writing a report to disk: the HTML and its JSON twin next to it, each atomically, both or neither. A failure is a
ReportError that names the path and the reason.
"""

from __future__ import annotations

from pathlib import Path

from ...ground.atomic import write_text_atomic
from ...ground.errors import WorkbenchError


class ReportError(WorkbenchError):
    """The report could not be written; the message names the path and the reason."""

    kind = "io"


def json_twin(out: Path) -> Path:
    """Where the JSON twin of the HTML report at `out` goes; a ReportError when that is `out` itself."""
    out = Path(out)
    json_path = out.with_suffix(".json")
    if json_path == out:
        raise ReportError(f"the report path {out} ends in .json, which is where the JSON twin goes",
                          "name the report something.html")
    return json_path


def write_pair(html_path: Path, html_text: str, json_path: Path, json_text: str) -> None:
    try:
        write_text_atomic(html_path, html_text)
    except OSError as exc:
        raise _write_error(html_path, exc) from None
    try:
        write_text_atomic(json_path, json_text)
    except OSError as exc:
        html_path.unlink(missing_ok=True)  # a report without its JSON twin is half a report
        raise _write_error(json_path, exc) from None


def _write_error(path: Path, exc: OSError) -> ReportError:
    why = exc.strerror or str(exc)
    if isinstance(exc, (NotADirectoryError, FileExistsError)):
        why = f"{why} (a part of the folder path is a file)"
    return ReportError(f"cannot write the report to {path}: {why}", "choose a file in a folder you can write to")
