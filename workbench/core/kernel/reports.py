"""A report on recorded runs: each run's checkpoint re-evaluated (domain) and the whole rendered and written
(history). The one place that needs both, so it lives in the run layer."""

from __future__ import annotations

from pathlib import Path

from ..domain.evaluate import evaluate_run
from ..history.report.build import write_report_files
from ..ground.evaluation import Evaluation
from ..history.report.write import ReportError, json_twin
from ..history.runs import RunStore
from ..history.warm_starts import with_measured_launch


def write_report(store: RunStore, run_ids: list[int], out: Path, trust_model_code: bool = False) -> tuple[Path, Path]:
    """Write the HTML report at `out` and its JSON twin next to it; return both paths.

    A run whose network is defined in a Python file is evaluated only with `trust_model_code` (the caller's
    consent to import the run's own model file); without it its evaluation is skipped and the report says why.

    An unknown run id raises the store's RunStoreError before anything is evaluated or written. Both files are
    written atomically; if the second cannot be written the first is removed again, so no half-report is left."""
    out = Path(out)
    json_twin(out)  # a bad path fails before any checkpoint is evaluated
    if not run_ids:
        raise ReportError("no runs to report on", "pass one or more run ids")
    records = [with_measured_launch(store, store.get_with_columns(run_id)) for run_id in dict.fromkeys(run_ids)]
    evaluations: dict[int, Evaluation | None] = {}
    reasons: dict[int, str] = {}
    for record in records:
        evaluations[record.id], reasons[record.id] = evaluate_run(record, trust_model_code)
    return write_report_files(records, evaluations, out, reasons=reasons)
