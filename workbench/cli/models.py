"""`workbench evaluate`, `predict`, `export` and `explain`: what a trained model does."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Sequence

from .common import EXIT_RUN_FAILED, EXIT_USAGE, fail, quiet_torch_logs
from .options import config_from_args


# -- evaluate / predict / explain -------------------------------------------------------------------------------
def cmd_evaluate(args: argparse.Namespace) -> int:
    from ..core.ground.requests import Evaluate
    from ..core.kernel.jobs import evaluate

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
    from ..core.domain import checkpoint
    from ..core.ground.images import ImageError
    from ..core.domain.predict import predict_file

    quiet_torch_logs()
    ckpt = checkpoint.load(args.checkpoint, trust_model_code=args.trust_model_code)
    model = ckpt.build_model("cpu")
    failures = 0
    for image in args.images:
        try:
            p = predict_file(model, image, ckpt.classes)
        except ImageError as exc:
            failures += 1
            print(f"workbench: error: {exc}", file=sys.stderr)
            continue
        if args.json:
            print(json.dumps({"image": image, "class": p.class_name, "confidence": p.confidence,
                              "probabilities": list(p.probabilities)}))
        else:
            print(f"{image}: {p.class_name} ({p.confidence:.1%})")
    return EXIT_USAGE if failures else 0


def cmd_export(args: argparse.Namespace) -> int:
    from ..core.domain import checkpoint
    from ..core.domain.export import export_model, format_table

    quiet_torch_logs()
    ckpt = checkpoint.load(args.checkpoint, trust_model_code=args.trust_model_code)
    out = Path(args.out) if args.out else Path(args.checkpoint).parent / f"export-{args.format}"
    table = export_model(ckpt, out, fmt=args.format, compile_backend=args.compile_backend,
                         progress=lambda text: print(text, file=sys.stderr))
    print(format_table(table))
    print(f"wrote {out}: {Path(table.file).name} ({table.bytes:,} bytes, exported in "
          f"{table.export_seconds:.1f} s), contract.json, parity.json")
    if not table.passed:
        return fail("the exported model disagrees with the eager one beyond the tolerance (see the table)",
                    code=EXIT_RUN_FAILED)
    return 0


def cmd_explain(args: argparse.Namespace) -> int:
    from ..core.domain import devices
    from ..core.domain.inspect import explain

    quiet_torch_logs()
    config = config_from_args(args, backend="inductor")  # explain is about compiling (so --mode works alone)
    config.check_runnable(devices.cuda_available())
    print(format_report(explain(config)))
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
