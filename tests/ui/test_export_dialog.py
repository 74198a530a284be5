"""File → Export model…: the dialog asks, the kernel exports, the parity table says whether to trust the file."""

from __future__ import annotations

import json

from PySide6.QtCore import Qt

from ..support.window_files import load


def test_export_model_shows_the_parity_table_and_writes_the_files(window, qtbot, trained_checkpoint, tmp_path):
    # no model yet
    assert window.exports.open_model_dialog() is None and not window.named_actions["export_model"].isEnabled()
    assert not isinstance(load(window, qtbot, trained_checkpoint), Exception)
    assert window.named_actions["export_model"].isEnabled()
    dialog = window.exports.open_model_dialog()
    assert dialog.folder.text() == str(trained_checkpoint.parent / "export")
    accuracy = window.state.model.info.val_accuracy
    named = f"{window.state.model.description} · final val accuracy {accuracy:.2%}"  # which model, and how good
    assert dialog.model.text() == named and named in dialog.windowTitle()
    dialog.folder.setText(str(tmp_path / "model"))
    dialog.backend.setCurrentText("aot_eager")
    with qtbot.waitSignal(window.exports.modelExported, timeout=120_000) as exported:
        qtbot.mouseClick(dialog.export_button, Qt.LeftButton)
        assert not dialog.export_button.isEnabled()  # one export at a time
    table = exported.args[0]
    assert table.passed and (tmp_path / "model" / "model.pt2").is_file()
    assert json.loads((tmp_path / "model" / "parity.json").read_text())["passed"]
    shown = [[dialog.table.item(r, c).text() for c in range(dialog.table.columnCount())]
             for r in range(dialog.table.rowCount())]
    assert [row[0] for row in shown] == ["eager", "compiled (aot_eager)", "exported (.pt2, reloaded)"]
    assert all(row[-1] == "ok" and row[3] == "100.00%" for row in shown)
    assert "passed" in dialog.status.text() and dialog.open_folder.isEnabled()


def test_an_export_that_fails_says_why_in_the_dialog(window, qtbot, trained_checkpoint, tmp_path):
    assert not isinstance(load(window, qtbot, trained_checkpoint), Exception)
    dialog = window.exports.open_model_dialog()
    blocker = tmp_path / "file"
    blocker.write_text("x")
    dialog.folder.setText(str(blocker / "model"))  # a folder under a file cannot be made
    with qtbot.waitSignal(window.exports.modelExported, timeout=120_000) as exported:
        qtbot.mouseClick(dialog.export_button, Qt.LeftButton)
    assert isinstance(exported.args[0], Exception)
    assert dialog.status.text().startswith(f"Not exported: cannot write into {blocker / 'model'}")
    assert "choose another folder" in dialog.status.text() and dialog.export_button.isEnabled()


def test_a_failed_table_is_shown_failed_with_where_it_drifted(qtbot, tmp_path):
    from workbench.core.ground.answers import ParityRow, ParityTable, Tolerance
    from workbench.ui.dialogs.export import ExportDialog

    dialog = ExportDialog(tmp_path)
    qtbot.addWidget(dialog)
    assert [dialog.format.itemData(i) for i in range(dialog.format.count())] == ["pt2", "onnx", "aoti"]
    drift = "the first layer that drifts in the exported program is core_block.fc2 (Linear), by 5.00e-01"
    row = {"max_abs": 0.5, "max_rel": 0.1, "top1_agreement": 0.97, "ms_per_batch": 1.0}
    dialog.show_result(ParityTable(
        format="pt2", file=str(tmp_path / "model.pt2"), bytes=10, export_seconds=0.1, images=1000, batch=256,
        tolerance=Tolerance(atol=1e-4, rtol=1e-4, top1=1.0), passed=False, versions={},
        rows=(ParityRow(**row, name="eager", passed=True, drift=""),
              ParityRow(**row, name="exported (.pt2, reloaded)", passed=False, drift=drift))))
    assert dialog.table.item(1, 5).text() == "FAILED" and dialog.table.item(1, 0).toolTip() == drift
    assert dialog.table.item(0, 0).toolTip() == ""
    assert "FAILED" in dialog.status.text() and f"exported (.pt2, reloaded): {drift}." in dialog.status.text()
