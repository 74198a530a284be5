"""`workbench evaluate`, `predict`, `export` and `explain`: what a trained model does."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path
from typing import Sequence

from .common import EXIT_RUN_FAILED, EXIT_USAGE, fail, quiet_torch_logs
from .options import config_from_args


# -- evaluate / predict / explain -------------------------------------------------------------------------------
def cmd_evaluate(args: argparse.Namespace) -> int:
    from ..core.ground.job_requests import Evaluate
    from ..core.kernel.job_handlers import evaluate

    quiet_torch_logs()
    score = evaluate(Evaluate(args.checkpoint, args.dataset, args.data_root, args.split, args.device,
                              args.trust_model_code))
    print(f"{score.dataset} {score.split}: {score.images} images · accuracy {score.accuracy:.2%} · "
          f"loss {score.loss:.4f}")
    print(format_confusion(score.confusion, score.classes))
    return 0


def format_confusion(matrix: Sequence[Sequence[int]], classes: Sequence[str]) -> str:
    labels = [c[:6] for c in classes]
    width = max(6, max(len(str(v)) for row in matrix for v in row) + 1)
    lines = ["confusion matrix (rows: true class, columns: predicted)",
             "true\\pred".rjust(10) + "".join(label.rjust(width) for label in labels)]
    for label, row in zip(labels, matrix):
        lines.append(label.rjust(10) + "".join(str(v).rjust(width) for v in row))
    return "\n".join(lines)


def cmd_predict(args: argparse.Namespace) -> int:
    """Each image decoded here as the window decodes a dropped one, then scored by the kernel's own job."""
    from ..core.ground import pixels
    from ..core.ground.images import ImageError, load_digit
    from ..core.ground.job_requests import Predict
    from ..core.kernel.job_handlers import predict

    quiet_torch_logs()
    request = Predict(str(args.checkpoint), (), args.trust_model_code)
    predict(request)  # the checkpoint first: a broken one is the one error, whatever the images (then kept loaded)
    decoded, failures = {}, 0
    for image in args.images:
        try:
            decoded[image] = load_digit(image)
        except ImageError as exc:
            failures += 1
            print(f"workbench: error: {exc}", file=sys.stderr)
    answer = predict(dataclasses.replace(request, images=tuple(pixels.encode(p) for p in decoded.values())))
    for image, probabilities in zip(decoded, answer.probabilities):
        label = max(range(len(probabilities)), key=probabilities.__getitem__)
        name = answer.classes[label] if label < len(answer.classes) else str(label)
        if args.json:
            print(json.dumps({"image": image, "class": name, "confidence": probabilities[label],
                              "probabilities": list(probabilities)}))
        else:
            print(f"{image}: {name} ({probabilities[label]:.1%})")
    return EXIT_USAGE if failures else 0


def cmd_export(args: argparse.Namespace) -> int:
    from ..core.ground.job_requests import ExportModel
    from ..core.kernel.job_handlers import export_model

    quiet_torch_logs()
    out = Path(args.out) if args.out else Path(args.checkpoint).parent / f"export-{args.format}"
    table = export_model(ExportModel(str(args.checkpoint), str(out), args.format, args.compile_backend,
                                     args.trust_model_code), progress=lambda doing: print(doing.text, file=sys.stderr))
    print(format_parity(table))
    print(f"wrote {out}: {Path(table.file).name} ({table.bytes:,} bytes, exported in "
          f"{table.export_seconds:.1f} s), contract.json, parity.json")
    if not table.passed:
        return fail("the exported model disagrees with the eager one beyond the tolerance (see the table)",
                    code=EXIT_RUN_FAILED)
    return 0


def format_parity(table) -> str:
    """The parity table as the CLI prints it."""
    from ..core.ground.answers import row_verdict

    lines = [f"{'':30} {'max |Δ|':>10} {'max rel':>10} {'top-1':>8} {'ms/batch':>9}  verdict"]
    for row in table.rows:
        lines.append(f"{row.name:30} {row.max_abs:10.2e} {row.max_rel:10.2e} {row.top1_agreement:8.2%} "
                     f"{row.ms_per_batch:9.2f}  {row_verdict(row, table.tolerance)}")
        if row.drift:
            lines.append(f"  ↳ {row.drift}")
    tol = table.tolerance
    lines.append(f"method: {table.images} validation images in batches of {table.batch}, each against eager; "
                 f"passes within atol {tol.atol:g} and rtol {tol.rtol:g} with every top-1 the same; latency "
                 f"is the median batch after a warm-up one")
    return "\n".join(lines)


def cmd_explain(args: argparse.Namespace) -> int:
    from ..core.ground.job_requests import Explain
    from ..core.kernel.job_handlers import explain

    quiet_torch_logs()
    config = config_from_args(args, backend="inductor")  # explain is about compiling (so --mode works alone)
    print(format_report(explain(Explain(config))))
    return 0


def format_report(report) -> str:
    lines = [f"graphs: {report.graph_count} · graph breaks: {report.graph_break_count} · ops: {report.op_count} · "
             f"traced in {report.compile_seconds:.2f} s"]
    for i, brk in enumerate(report.breaks, 1):
        lines.append(f"\nbreak {i} at {brk.where}")
        for frame in brk.frames:
            lines.append(f"  {frame.file}:{frame.line} in {frame.function}: {frame.source}")
        lines.extend("  " + line for line in brk.reason.splitlines())
    lines.extend(f"recompile: {r}" for r in report.recompiles)
    lines.extend(f"warning: {w}" for w in report.warnings)
    if not report.breaks:
        lines.append("no graph breaks: the whole forward pass compiles as one graph")
    return "\n".join(lines)
