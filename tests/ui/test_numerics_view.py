"""The Compare numerics dialog on constructed reports (no kernel, no torch): the table, the verdict above it, the
row where the drift starts marked, selected and in view, and a row's source line on activation."""

from __future__ import annotations

import pytest
from PySide6.QtWidgets import QApplication

from workbench.core.ground.numerics import (LAYER, LOSS, OP, Difference, Fp32Check, NumericsReport, NumericsRow,
                                            format_numerics, table_headers, tolerance_for)
from workbench.ui.dialogs.numerics import FIRST_MARK, NumericsDialog

BF16 = tolerance_for("bfloat16")
SAME = Difference(0.0, 0.0, 0, 4096)
DRIFT = Difference(3.1e-2, float("inf"), 218, 4096)


def numerics_row(kind: str, name: str, output: Difference, *, line: int = 0, code: str = "",
                 fp32: Fp32Check | None = None) -> NumericsRow:
    return NumericsRow(kind=kind, name=name, module="", dtype="bfloat16", tolerance=BF16, output=output,
                       graph=1 if kind == OP else 0, file="/models/drift.py" if line else "", line=line, code=code,
                       fp32_output=fp32)


def numerics_report(*rows: NumericsRow, amp: str = "off") -> NumericsReport:
    return NumericsReport(model="drift.py:DriftNet", backend="inductor", mode="default", amp=amp, device="cpu",
                          batch=32, rows=rows, graphs=1, seconds=4.2, torch_version="2.14.1")


@pytest.fixture
def dialog(qtbot):
    dialog = NumericsDialog()
    qtbot.addWidget(dialog)
    dialog.show()
    return dialog


def cells(dialog: NumericsDialog, r: int) -> list[str]:
    return [dialog.table.item(r, c).text() for c in range(dialog.table.columnCount())]


def test_the_first_exceeding_row_is_marked_selected_and_named_in_the_verdict(dialog):
    rows = [numerics_row(OP, "exp", SAME, line=27), numerics_row(LAYER, "core_block.fc1", SAME, line=26),
            *(numerics_row(OP, f"op{i}", SAME, line=27) for i in range(40)),  # the drift is far down the table
            numerics_row(OP, "sub", DRIFT, line=28, code="h = torch.where(h > 0, h, torch.exp(h) - 1)"),
            numerics_row(OP, "where", DRIFT, line=28), numerics_row(LOSS, "loss", DRIFT)]
    report = numerics_report(*rows)
    dialog.show_report(report)
    first = report.first_exceeding
    assert dialog.table.rowCount() == len(rows) and first == 42
    assert [dialog.table.horizontalHeaderItem(c).text() for c in range(dialog.table.columnCount())] == \
        list(table_headers(report))
    assert cells(dialog, first)[0] == FIRST_MARK + "op sub (graph 1)"
    assert cells(dialog, first)[1] == "drift.py:28" and cells(dialog, first)[-1] == "exceeds: output"
    assert not any(cells(dialog, r)[0].startswith(FIRST_MARK) for r in range(len(rows)) if r != first)
    assert dialog.table.item(first, 0).font().bold() and not dialog.table.item(first + 1, 0).font().bold()
    assert [index.row() for index in dialog.table.selectionModel().selectedRows()] == [first]
    assert dialog.table.visualItemRect(dialog.table.item(first, 0)).intersects(dialog.table.viewport().rect())
    assert dialog.verdict.text() == report.verdict() and dialog.verdict.text().startswith("EXCEEDS")
    assert "drift.py:28" in dialog.verdict.text()
    assert "first exceeding: /models/drift.py:28: h = torch.where" in dialog.rules.text()
    assert "/models/drift.py:28" in dialog.table.item(first, 2).toolTip()


def test_a_passing_report_selects_nothing_and_says_pass(dialog):
    report = numerics_report(numerics_row(LAYER, "fc1", SAME), numerics_row(LOSS, "loss", SAME))
    dialog.show_report(report)
    assert dialog.verdict.text().startswith("PASS") and not dialog.table.selectionModel().selectedRows()
    assert cells(dialog, 0)[2] == "0" and cells(dialog, 0)[-1] == "pass"


def test_amp_adds_the_columns_against_fp32(dialog):
    report = numerics_report(numerics_row(LAYER, "fc1", SAME, fp32=Fp32Check(6.9e-3, 6.9e-3)), amp="bf16")
    dialog.show_report(report)
    headers = [dialog.table.horizontalHeaderItem(c).text() for c in range(dialog.table.columnCount())]
    assert "output vs fp32" in headers
    assert cells(dialog, 0)[headers.index("output vs fp32")] == "compiled 6.9e-03, eager 6.9e-03"
    assert "3× as far from the fp32 model" in dialog.rules.text()


def test_activating_a_row_asks_for_its_source_line(dialog, qtbot):
    dialog.show_report(numerics_report(numerics_row(LAYER, "fc1", SAME), numerics_row(OP, "sub", DRIFT, line=28)))
    with qtbot.assertNotEmitted(dialog.sourceRequested):
        dialog.table.itemActivated.emit(dialog.table.item(0, 0))  # no source line: nothing to show
    with qtbot.waitSignal(dialog.sourceRequested) as asked:
        dialog.table.itemActivated.emit(dialog.table.item(1, 3))
    assert asked.args == ["/models/drift.py", 28]


def test_running_error_and_copy(dialog):
    dialog.show_running("inductor · bf16")
    assert dialog.verdict.text().startswith("Comparing eager and compiled numerics: inductor · bf16")
    dialog.show_error("could not compile Net with inductor: Unsupported")
    assert dialog.verdict.text() == "Not compared: could not compile Net with inductor: Unsupported"
    assert dialog.table.rowCount() == 0
    report = numerics_report(numerics_row(OP, "sub", DRIFT, line=28))
    dialog.show_report(report)
    dialog.copy()
    assert QApplication.clipboard().text() == format_numerics(report)
