"""What leaves the window as files: the open checkpoint exported, its model exported behind the parity gate
(File → Export model…), and HTML reports of runs. Each is a slow job in the kernel: the status line says it is
under way, then the Log says what was written (with Open / Show in folder) or the banner why not."""

from __future__ import annotations

from concurrent.futures import Future
from pathlib import Path
from typing import Callable

from PySide6.QtCore import QObject, Qt, QUrl, Signal, SignalInstance, Slot
from PySide6.QtGui import QDesktopServices, QKeySequence
from PySide6.QtWidgets import QMessageBox, QStyle

from ...core.ground.answers import ParityTable, Written
from ...core.ground.errors import WorkbenchError, with_hint
from ..actions import ActionSpec
from ..dialogs.export import ExportDialog
from ..support import file_dialogs
from .checkpoints import Checkpoints
from .parts import WindowParts

EXPORTING = "exporting"  # the task slot of every export and report


class Exports(QObject):
    # For tests and scripts, each job's outcome once shown: its answer, or the error that stopped it
    exportFinished = Signal(object)  # the Written checkpoint
    modelExported = Signal(object)  # a ParityTable
    reportFinished = Signal(object)  # the Written HTML and JSON
    # An export's steps arrive on the kernel's reader thread; a signal to a bound slot shows them on the GUI thread
    _stepped = Signal(str)

    def __init__(self, parts: WindowParts, checkpoints: Checkpoints):
        super().__init__(parts.window)
        self.kernel, self.state, self.feedback, self.runs = parts.kernel, parts.state, parts.feedback, \
            parts.panels.runs
        self.checkpoints, self.window, self.busy, self.tasks = checkpoints, parts.window, parts.busy, parts.tasks
        self.export_dialog: ExportDialog | None = None  # File → Export model…'s, while it is open
        self._stepped.connect(self._show_step)

    def actions(self) -> tuple[ActionSpec, ...]:
        return (ActionSpec("export_checkpoint", "Export checkpoint…", self.choose_checkpoint_target, "File", 20,
                           QKeySequence.Save, QStyle.SP_DialogSaveButton, toolbar=210, enabled=self._has_model,
                           name="exportCheckpointAction"),
                ActionSpec("export_model", "Export model…", self.open_model_dialog, "File", 30, "Ctrl+Shift+M",
                           enabled=self._has_model, name="exportModelAction"),
                ActionSpec("export_report", "Export report…", self.choose_report_target, "File", 40, "Ctrl+Shift+E",
                           toolbar=220, enabled=self._has_runs, name="exportReportAction"))

    def _has_model(self) -> bool:
        return self.state.model is not None and not self.busy()

    def _has_runs(self) -> bool:
        return not self.busy() and (self.state.last_run_dir is not None or bool(self.runs.selected_ids()))

    # -- the checkpoint -----------------------------------------------------------------------------------------
    def choose_checkpoint_target(self) -> None:
        path = file_dialogs.save_file(self.window, "export", "Export checkpoint", "checkpoint.pt",
                                      "Checkpoints (*.pt)")
        if path:
            self.export_checkpoint(path)

    def export_checkpoint(self, path: str | Path) -> bool:
        """Write the open checkpoint to `path` (the kernel saves it, atomically). False: none is open."""
        model = self.state.model
        if model is None:
            return False
        future = self.kernel.service.export_checkpoint(model.info.path, path, trust_model_code=model.trusted)
        self._file_job("Exporting the checkpoint…", future,
                       lambda written: f"checkpoint exported to {written.paths[0]} (+ .safetensors)",
                       f"Could not export the checkpoint to {path}", self.exportFinished)
        return True

    # -- the model ----------------------------------------------------------------------------------------------
    def open_model_dialog(self) -> ExportDialog | None:
        """File → Export model…: the dialog for the open checkpoint (the last run's, or the one opened)."""
        if self.state.model is None:
            self.feedback.show("info", "Train a run or open a checkpoint (Ctrl+O) to export its model.")
            return None
        model = self.state.model
        dialog = ExportDialog(Path(model.info.path).parent / "export", self.window, model.label)
        dialog.setAttribute(Qt.WA_DeleteOnClose)
        dialog.exportRequested.connect(lambda fmt, out, backend: self.export_model(fmt, out, backend, dialog))
        dialog.show()
        self.export_dialog = dialog
        return dialog

    def export_model(self, fmt: str, out: str, compile_backend: str, dialog: ExportDialog | None = None) -> bool:
        """Export the open checkpoint in the kernel behind its parity gate; modelExported carries the table."""
        model = self.state.model
        if model is None:
            return False

        def exported(table: ParityTable) -> None:
            self.feedback.settled()
            if dialog is not None:
                dialog.show_result(table)
            verdict = "passed its parity check" if table.passed else "FAILED its parity check"
            self.feedback.note("info" if table.passed else "warning", f"model exported to {table.file}: {verdict}")
            self.modelExported.emit(table)

        def failed(error: BaseException) -> None:
            self.feedback.settled()
            if dialog is not None:
                dialog.show_error(with_hint(error))
            self.feedback.note("error", f"export failed: {with_hint(error)}")
            self.modelExported.emit(error)

        self.feedback.busy("Exporting the model…")
        future = self.kernel.service.export_model(model.info.path, out, fmt=fmt, compile_backend=compile_backend,
                                                  trust_model_code=model.trusted,
                                                  on_step=lambda doing: self._stepped.emit(doing.text))
        self.kernel.ask(EXPORTING, future, exported, failed)
        return True

    @Slot(str)
    def _show_step(self, text: str) -> None:
        """An export's step ("tracing the model…") in the status bar while the export is still running."""
        if self.tasks.busy(EXPORTING):
            self.feedback.busy(text)

    # -- reports ------------------------------------------------------------------------------------------------
    def report_run_ids(self) -> list[int]:
        """The runs selected in the Runs dock, else the run trained last in this window."""
        last = self.state.last_run_dir
        return self.state.report_run_ids(self.runs.selected_ids(),
                                         self.runs.id_for_out_dir(last) if last is not None else None)

    def choose_report_target(self) -> None:
        ids = self.report_run_ids()
        if not ids:
            self.feedback.show("info", "Select one or more runs in the Runs dock to report on.")
            return
        name = f"report-{'-'.join(map(str, ids))}.html"
        path = file_dialogs.save_file(self.window, "report", "Export report", name, "HTML report (*.html)")
        if path:
            self.export_report(path, ids)

    def export_report(self, path: str | Path, run_ids: list[int]) -> bool:
        """A self-contained HTML report of the runs (and its JSON twin), written atomically by the kernel (it
        re-evaluates each checkpoint); reportFinished says how it went. False: nothing to do. A run whose network
        is a Python file is evaluated only when the user has consented to that very file; otherwise the report
        says its evaluation needs consent."""
        if not run_ids:
            return False
        future = self.kernel.service.write_report(run_ids, path, db=self.runs.db,
                                                  trust_model_code=self._model_files_trusted(run_ids))
        self._file_job("Writing the report…", future,
                       lambda written: f"report written to {written.paths[0]} (+ {Path(written.paths[1]).name})",
                       "Could not write the report", self.reportFinished)
        return True

    def _model_files_trusted(self, run_ids: list[int]) -> bool:
        if self.runs.store is None:
            return False
        try:
            specs = [str(self.runs.store.get(run_id).config.get("model", "")) for run_id in run_ids]
        except WorkbenchError:
            return False
        return self.checkpoints.all_trusted(specs)

    # -- the mechanics ------------------------------------------------------------------------------------------
    def _file_job(self, doing: str, future: Future, done_text: Callable[[Written], str], failed_text: str,
                  finished: SignalInstance) -> None:
        def written(files: Written) -> None:
            self.feedback.settled()
            self.feedback.note("info", done_text(files))
            self.show_written(Path(files.paths[0]))
            finished.emit(files)

        def failed(error: BaseException) -> None:
            self.feedback.settled()
            self.feedback.show("error", f"{failed_text}: {with_hint(error)}")
            finished.emit(error)

        self.feedback.busy(doing)
        self.kernel.ask(EXPORTING, future, written, failed)

    def show_written(self, path: Path) -> QMessageBox:
        """Say where an export went, with Open and Show in folder (a message box that does not block)."""
        box = QMessageBox(QMessageBox.Information, "Exported", f"Written to\n{path}", QMessageBox.Close, self.window)
        box.setObjectName("writtenMessage")
        box.setTextFormat(Qt.PlainText)
        box.setAttribute(Qt.WA_DeleteOnClose)
        open_file = box.addButton("Open", QMessageBox.AcceptRole)
        show_folder = box.addButton("Show in folder", QMessageBox.ActionRole)
        open_file.clicked.connect(lambda: QDesktopServices.openUrl(QUrl.fromLocalFile(str(path))))
        show_folder.clicked.connect(lambda: QDesktopServices.openUrl(QUrl.fromLocalFile(str(path.parent))))
        box.open()
        return box
