"""What `workbench export` and File → Export model… can write, torch-free so the CLI's parser and the window list
the same formats the exporter writes (domain/export)."""

from __future__ import annotations

from typing import NamedTuple


class ExportFormat(NamedTuple):
    file: str  # the file written into the export folder
    label: str  # how the window names it


EXPORT_FORMATS = {
    "pt2": ExportFormat("model.pt2", "torch.export program (.pt2)"),
    "onnx": ExportFormat("model.onnx", "ONNX (.onnx, checked in ONNX Runtime)"),
    "aoti": ExportFormat("model-aoti.pt2", "AOTInductor package (.pt2, compiled for this CPU)"),
}
