"""Deleting runs from the Runs dock: the question asked first (how many runs, what it frees, which are refused and
why, which folders stay), the deletion (rows out of the history, folders into the trash: core/history/removal.py),
and the bar that offers Undo afterwards, for as long as the window is open.

What a deletion would do is worked out on a pool thread (it measures the folders), the deletion and its Undo are
writes (runs_writer.py, after the edits asked before them): the GUI thread only asks the question.
"""

from __future__ import annotations

from typing import Callable, Sequence

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QMessageBox, QPushButton, QWidget

from ....core.ground.errors import with_hint
from ....core.history.naming import run_name
from ....core.history.removal import Planned, Removal, delete_runs, plan_removal, undo_delete
from ...support.dismiss import dismiss_button
from ....core.history.runs import RunStore
from ....core.history.trash import size_text
from ...support.tasks import Tasks
from .query import ERROR_STYLE
from .writer import RunsWriter

PLAN_SLOT = "runs-plan"  # what a deletion would do, for its question

LISTED = 6  # runs a question names one by one before "and N more"


def _runs(n: int) -> str:
    return f"{n} run" if n == 1 else f"{n} runs"


def _listed(lines: list[str]) -> str:
    shown = lines[:LISTED] + ([f"and {len(lines) - LISTED} more"] if len(lines) > LISTED else [])
    return "\n".join(f"  • {line}" for line in shown)


def deletion_question(plans: Sequence[Planned]) -> str:
    """What deleting does, as the question before it: '' when it would delete nothing (every run is refused;
    `refusals` says why)."""
    going = [plan for plan in plans if not plan.refused]
    if not going:
        return ""
    freed = sum(plan.bytes for plan in going)
    moved = sum(1 for plan in going if plan.folder or plan.along is not None)
    text = f"Delete {_runs(len(going))} from the history?"
    if moved:
        text += (f"\n\nTheir folders ({size_text(freed)}) go to the trash. Undo, in the Runs dock, brings them back "
                 "while this window is open; the file manager's trash keeps them after.")
    kept = [f"{run_name(plan.run_id)}: {plan.kept}" for plan in going if plan.kept]
    if kept:
        text += "\n\nThese folders stay where they are:\n" + _listed(kept)
    if refusals(plans):
        text += "\n\nNot deleted:\n" + _listed(refusals(plans))
    return text


def refusals(plans: Sequence[Planned]) -> list[str]:
    """'#5: it is still running: stop it first', for each run that would not be deleted."""
    return [f"{run_name(plan.run_id)}: {plan.refused}" for plan in plans if plan.refused]


def removal_text(removal: Removal) -> str:
    """'3 runs deleted (1.2 GB freed)'."""
    freed = f" ({size_text(removal.bytes_freed)} freed)" if removal.bytes_freed else ""
    return f"{_runs(len(removal.removed))} deleted{freed}"


class UndoBar(QWidget):
    """'3 runs deleted (1.2 GB freed) — Undo': shown after a deletion until it is undone, dismissed or replaced by
    the next one."""

    undoRequested = Signal(object)  # the Removal to undo

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("runsUndoBar")
        self.removal: Removal | None = None
        self.label = QLabel()
        self.label.setObjectName("runsUndoText")
        self.label.setTextFormat(Qt.PlainText)
        self.undo = QPushButton("Undo")
        self.undo.setObjectName("runsUndoButton")
        self.undo.setAccessibleName("Undo the deletion")
        self.undo.setToolTip("Bring the deleted runs back: their rows and their folders, from the trash")
        self.undo.clicked.connect(lambda: self.removal is not None and self.undoRequested.emit(self.removal))
        close = dismiss_button("runsUndoDismiss", "Dismiss the deletion message",
                               "Dismiss (the folders stay in the trash)", self.dismiss)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.label, 1)
        layout.addWidget(self.undo)
        layout.addWidget(close)
        self.hide()

    def show_removal(self, removal: Removal) -> None:
        self.removal = removal
        self.label.setText(f"{removal_text(removal)} —")
        self.label.setStyleSheet("")
        self.undo.setEnabled(True)
        self.show()

    def failed(self, text: str) -> None:
        """Undo could not put everything back: say so, and offer it no more."""
        self.label.setText(text)
        self.label.setStyleSheet(ERROR_STYLE)
        self.undo.setEnabled(False)

    def dismiss(self) -> None:
        self.removal = None
        self.hide()


class RunDeletion:
    """Delete runs after a question, and Undo; `say`: a message in the dock, `deleted(run ids)`: they are gone (the
    dock forgets what it kept of them), `relist`: read the history again."""

    def __init__(self, parent: QWidget, tasks: Tasks, writer: RunsWriter, db, bar: UndoBar, *,
                 say: Callable[[str], None], deleted: Callable[[Sequence[int]], None], relist: Callable[[], None]):
        self.parent, self.tasks, self.writer, self.db, self.bar = parent, tasks, writer, db, bar
        self.say, self.deleted, self.relist = say, deleted, relist
        bar.undoRequested.connect(self.undo)

    def delete(self, ids: Sequence[int]) -> None:
        """Work out what deleting `ids` does (on a pool thread), ask, then delete."""
        def plan() -> tuple[Planned, ...]:
            with RunStore(self.db, recover=False) as store:
                return plan_removal(store, ids)

        self.tasks.submit(PLAN_SLOT, plan, self._confirm,
                          lambda error: self.say(f"Could not delete the runs: {with_hint(error)}"))

    def _confirm(self, plans: tuple[Planned, ...]) -> None:
        question = deletion_question(plans)
        if not question:
            self.say("Nothing deleted: " + "; ".join(refusals(plans)))
            return
        if QMessageBox.question(self.parent, "Delete runs", question, QMessageBox.Yes | QMessageBox.No,
                                QMessageBox.No) != QMessageBox.Yes:
            return
        ids = [plan.run_id for plan in plans if not plan.refused]
        self.say("Deleting…")
        self.writer.submit("runs-delete", lambda store: delete_runs(store, ids), self._done, self._failed)

    def _done(self, removal: Removal) -> None:
        self.deleted(removal.removed)
        if removal.removed:
            self.bar.show_removal(removal)
        problems = [f"{run_name(run_id)} not deleted: {why}" for run_id, why in removal.skipped]
        self.say("; ".join(problems) or removal_text(removal) + ".")
        self.relist()

    def _failed(self, error: BaseException) -> None:
        self.say(f"Could not delete the runs: {with_hint(error)}")
        self.relist()

    def undo(self, removal: Removal) -> None:
        """Put the deleted runs back: their rows, then their folders from the trash."""
        def done(_result) -> None:
            self.bar.dismiss()
            self.say(f"Brought back {', '.join(map(run_name, removal.removed))}.")
            self.relist()

        def failed(error) -> None:
            self.bar.failed(f"Undo could not bring everything back: {with_hint(error)}")
            self.relist()

        self.writer.submit("runs-undo", lambda store: undo_delete(store, removal), done, failed)
