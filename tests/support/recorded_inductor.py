"""A recorded compile trace, for the tests of the code view (ground.inductor_code and the window's viewer) that need
no compile of their own: tests/data/inductor_trace/ holds the structured trace of a short CPU run of the built-in
model (torch 2.14.1; TrainConfig(epochs=1, max_steps=12, hidden_dim=16, backend="inductor", device="cpu",
profile_steps=2), compile trace on), cut to the records the code view reads, its ProfileReport (the op table only),
and the model file as it was (model.py.txt: neither linted nor collected). The model's path in the trace is the
placeholder @MODEL@."""

from __future__ import annotations

import json
from pathlib import Path

from workbench.core.ground.events import ProfileReport, from_dict
from workbench.core.ground.inductor_code import TRACE_FILE

RECORDED = Path(__file__).resolve().parents[1] / "data" / "inductor_trace"  # tests/data/
PLACEHOLDER = "@MODEL@"


def recorded_trace(folder: Path, model: Path | None = None) -> tuple[Path, Path]:
    """The recorded trace copied into `folder` (a run's trace folder): (that folder, the model file its lines point
    at). `model`: where the trace says the model is (default: a copy of the recorded file, beside the trace)."""
    folder.mkdir(parents=True, exist_ok=True)
    if model is None:
        model = folder / "model.py"
        model.write_text((RECORDED / "model.py.txt").read_text(encoding="utf-8"), encoding="utf-8")
    text = (RECORDED / TRACE_FILE).read_text(encoding="utf-8")
    (folder / TRACE_FILE).write_text(text.replace(PLACEHOLDER, str(model)), encoding="utf-8")
    return folder, model


def strip_provenance(folder: Path) -> None:
    """The trace as a torch without provenance writes it: no provenance artifacts, no handles in the code."""
    log = folder / TRACE_FILE
    kept, skip = [], False
    for line in log.read_text(encoding="utf-8").splitlines(keepends=True):
        if not line.startswith("\t"):
            skip = "inductor_provenance_tracking" in line
        if not skip and "[Provenance debug handles]" not in line:
            kept.append(line)
    log.write_text("".join(kept), encoding="utf-8")


def recorded_profile() -> ProfileReport:
    return from_dict(json.loads((RECORDED / "profile.json").read_text(encoding="utf-8")))
