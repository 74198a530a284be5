"""A run report: one self-contained HTML file (plus a JSON twin) rebuilt from the run history.

Everything comes from the recorded event stream and the run's checkpoint, so a report can be made long after the
run, on a machine without network: no external CSS, JS, fonts or images. Charts are inline SVG drawn here (no
plotting dependency) and downsampled so a million-step run stays small; images are inline PNG `data:` URIs.
Every string that a user or a framework wrote (paths, graph-break reasons, failure messages) is HTML-escaped.

This module puts the report together and writes it; it never loads a checkpoint and imports no torch. The
re-evaluation arrives as plain data (data's `Evaluation`, made by `domain.evaluate.evaluate_run`);
`kernel.reports.write_report` puts the two together. The pieces, one idea each (this folder):
  data             the evaluation's plain data, and why a run has none
  facts            what the report needs from each run (`RunFacts`), the runs compared
  sections         the sections: runs, configuration, curves, metrics, comparison, failures
  compile_section  the compile report section and the compile timeline's marks on the loss chart
  insight          where the time and the memory go: the profiled window, mixed precision
  layers_section   inside the network (the layer table, per-layer curves) and the alerts
  cells            numbers, durations and a run's swatch, as every section writes them
  page             the sections' headings, the stylesheet, the page frame
  as_json          the JSON twin
  write            writing both files atomically (ReportError, json_twin)
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

from .compile_section import section_compile
from ...ground.evaluation import Evaluation
from .data import missing_reason
from .facts import compare_runs, prepare_runs
from .as_json import report_json
from .insight import section_insight
from .layers_section import section_alerts, section_layers
from .page import page
from .sections import (section_comparison, section_config, section_curves, section_failures, section_metrics,
                              section_runs)
from .write import json_twin, write_pair
from ..runs import RunRecord


def write_report_files(records: list[RunRecord], evaluations: dict[int, Evaluation | None], out: Path, *,
                       reasons: dict[int, str] | None = None) -> tuple[Path, Path]:
    """Render the report and write the HTML at `out` and its JSON twin next to it; return both paths.

    Both files are written atomically; if the second cannot be written the first is removed again, so no
    half-report is left."""
    out = Path(out)
    json_path = json_twin(out)
    text, data = build_report(records, evaluations, reasons=reasons, base=out.resolve().parent)
    write_pair(out, text, json_path, json.dumps(data, indent=2, allow_nan=False))
    return out, json_path


def build_report(records: list[RunRecord], evaluations: dict[int, Evaluation | None], *,
                 reasons: dict[int, str] | None = None, generated: datetime | None = None,
                 base: Path | None = None) -> tuple[str, dict]:
    """The report as HTML text and as a JSON-able dict. Pure: reads nothing, writes nothing.

    `reasons` says why a run has no evaluation (write_report passes the evaluator's own words); without it the
    reason is worked out from the record. `base` is the folder the HTML will be written to: links to a run's files
    below it are relative (they survive moving the folder), others are absolute file links."""
    generated = generated or datetime.now(timezone.utc)
    runs = prepare_runs(records)
    reasons = {r.record.id: (reasons or {}).get(r.record.id) or missing_reason(r.record) for r in runs}
    comparison = compare_runs(runs) if len(runs) > 1 else None
    sections = [
        section_runs(runs, generated),
        section_curves(runs),
        section_metrics(runs, evaluations, reasons),
        section_config(runs),  # the settings' long table after what a reader comes for: the curves, the figures
        section_compile(runs, base),
        section_insight(runs, base),
        section_layers(runs),
        section_alerts(runs),
        section_comparison(comparison) if comparison else "",
        section_failures(runs),
    ]
    title = "Workbench report — " + ", ".join(f"run #{r.record.id}" + (f" ({r.record.name})" if r.record.name else "")
                                              for r in runs)
    return page(title, sections), report_json(runs, evaluations, reasons, comparison, generated)
