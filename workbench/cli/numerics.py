"""`workbench numerics`: one batch forward and backward, eager against compiled, layer by layer and op by op."""

from __future__ import annotations

import argparse

from .common import EXIT_RUN_FAILED, _write_json, quiet_torch_logs
from .options import config_from_args


def cmd_numerics(args: argparse.Namespace) -> int:
    """The table (its first exceeding row marked ▶) and the verdict; exit 3 when a row exceeds its tolerance, so a
    script can gate on it."""
    from ..core.ground.numerics import format_numerics
    from ..core.kernel.job_handlers import numerics
    from ..core.ground.job_requests import CompareNumerics

    quiet_torch_logs()
    config = config_from_args(args, backend="inductor")  # comparing is about compiling (so --mode works alone)
    report = numerics(CompareNumerics(config))
    print(format_numerics(report))
    _write_json(args.json, report.to_dict())
    return 0 if report.passed else EXIT_RUN_FAILED
