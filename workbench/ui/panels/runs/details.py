"""The selected run's details beside the Runs table: its name, its tags and its Markdown note, with the note
rendered in a preview.

Nothing typed here is lost: the name and tags are kept when Enter is pressed or the focus leaves their field, the
note when the focus leaves it, on Ctrl+S, when another run is selected, and when the window closes (`flush`). The
pane does not write to the history itself: it says what was typed (`nameEdited`, `tagsEdited`, `notesEdited`) and the
dock writes it, off the GUI thread.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import (QHBoxLayout, QLabel, QLineEdit, QPlainTextEdit, QTabWidget, QTextBrowser, QVBoxLayout,
                               QWidget)

from ....core.history.naming import run_name
from ....core.history.runs import RunRecord
from .rows import tags_text

NOTE_TAB, PREVIEW_TAB = 0, 1
NOTE_LINES = 4  # the least the note shows: a few lines to write in, not a slit


class NoteEditor(QPlainTextEdit):
    """The note's Markdown: Ctrl+S keeps it (taken before the window's Ctrl+S, which exports a checkpoint), and so
    does the focus leaving it."""

    saveRequested = Signal()

    def event(self, event) -> bool:
        if event.type() == QEvent.ShortcutOverride and event.matches(QKeySequence.Save):
            event.accept()
            return True
        return super().event(event)

    def keyPressEvent(self, event) -> None:
        if event.matches(QKeySequence.Save):
            self.saveRequested.emit()
            return
        super().keyPressEvent(event)

    def focusOutEvent(self, event) -> None:
        super().focusOutEvent(event)
        self.saveRequested.emit()


class DetailsPane(QWidget):
    nameEdited = Signal(int, str)  # run id, the name typed
    tagsEdited = Signal(int, str)  # run id, the tags typed (comma-separated)
    notesEdited = Signal(int, str)  # run id, the note's Markdown

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("runDetails")
        self.record: RunRecord | None = None
        self._saved_notes = ""  # the note as the history has it (or as it was last asked to keep it)
        self.heading = QLabel("Select one run to see its name, tags and note.")
        self.heading.setObjectName("runDetailsHeading")
        self.heading.setTextFormat(Qt.PlainText)
        self.heading.setWordWrap(True)
        self.name = QLineEdit()
        self.name.setObjectName("runNameField")
        self.name.setAccessibleName("Run name")
        self.name.editingFinished.connect(self._name_finished)
        self.tags = QLineEdit()
        self.tags.setObjectName("runTagsField")
        self.tags.setAccessibleName("Run tags")
        self.tags.setPlaceholderText("comma-separated, e.g. baseline, amp")
        self.tags.editingFinished.connect(self._tags_finished)
        self.note = NoteEditor()
        self.note.setObjectName("runNoteEditor")
        self.note.setAccessibleName("Run note (Markdown)")
        self.note.setPlaceholderText("Notes in Markdown: what you tried, what you saw. Kept as you leave the field "
                                     "(or Ctrl+S).")
        self.note.setTabChangesFocus(True)  # Tab moves on: the focus is never trapped in the note
        self.note.saveRequested.connect(self._save_note)
        self.preview = QTextBrowser()
        self.preview.setObjectName("runNotePreview")
        self.preview.setAccessibleName("Run note, rendered")
        self.preview.setOpenExternalLinks(True)
        self.tabs = QTabWidget()
        self.tabs.setObjectName("runNoteTabs")
        self.tabs.addTab(self.note, "Note")
        self.tabs.addTab(self.preview, "Preview")
        self.tabs.currentChanged.connect(self._tab_changed)
        # The name and the tags share a row: in the Runs dock's height on a small screen, one row each left the note
        # two lines; it keeps NOTE_LINES however the dock is sized.
        fields = QHBoxLayout()
        fields.setContentsMargins(0, 0, 0, 0)
        for text, field in (("&Name", self.name), ("&Tags", self.tags)):
            label = QLabel(text)
            label.setBuddy(field)
            fields.addWidget(label)
            fields.addWidget(field, 1)
        self.note.setMinimumHeight(NOTE_LINES * self.note.fontMetrics().lineSpacing()
                                   + 2 * (self.note.frameWidth() + round(self.note.document().documentMargin())))
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 0, 0, 0)
        layout.addWidget(self.heading)
        layout.addLayout(fields)
        layout.addWidget(self.tabs, 1)
        self.show_record(None)

    def show_record(self, record: RunRecord | None, selected: int = 0) -> None:
        """Show `record` (None: `selected` runs, or none, are selected). The same run shown again (a new listing)
        keeps what is being typed in its fields; another run first keeps what was typed for this one (flush)."""
        same = record is not None and self.record is not None and record.id == self.record.id
        if not same:
            self.flush()
        self.record = record
        for field in (self.name, self.tags, self.note):
            field.setEnabled(record is not None)
        if record is None:
            self.heading.setText(f"{selected} runs selected: select one to see its name, tags and note." if selected
                                 else "Select one run to see its name, tags and note.")
            for field in (self.name, self.tags):
                field.clear()
            self.note.clear()
            self.preview.clear()
            self._saved_notes = ""
            return
        self.heading.setText(f"Run {run_name(record.id)} · {record.status}")
        self.name.setPlaceholderText(run_name(record.id))
        if not (same and self.name.isModified()):
            self.name.setText(record.name)
        if not (same and self.tags.isModified()):
            self.tags.setText(tags_text(record.tags))
        if not same or (not self._note_changed() and self.note.toPlainText() != record.notes):
            self.note.setPlainText(record.notes)  # (not while it is typed into, nor again: the cursor stays)
            self._saved_notes = record.notes
        self._render()

    def revert_tags(self) -> None:
        """The tags typed were refused: show the run's own again."""
        if self.record is not None:
            self.tags.setText(tags_text(self.record.tags))

    def flush(self) -> None:
        """Say what was typed and not yet kept (the window is closing, or another run is shown)."""
        self._name_finished()
        self._tags_finished()
        self._save_note()

    # -- what was typed ---------------------------------------------------------------------------------------
    def _name_finished(self) -> None:
        if self.record is not None and self.name.isModified():
            self.name.setModified(False)
            if self.name.text().strip() != self.record.name:
                self.nameEdited.emit(self.record.id, self.name.text())

    def _tags_finished(self) -> None:
        if self.record is not None and self.tags.isModified():
            self.tags.setModified(False)
            if self.tags.text() != tags_text(self.record.tags):
                self.tagsEdited.emit(self.record.id, self.tags.text())

    def _note_changed(self) -> bool:
        return self.note.toPlainText().rstrip() != self._saved_notes.rstrip()

    def _save_note(self) -> None:
        if self.record is not None and self._note_changed():
            self._saved_notes = self.note.toPlainText()
            self.notesEdited.emit(self.record.id, self._saved_notes)
        self._render()

    def _tab_changed(self, index: int) -> None:
        if index == PREVIEW_TAB:
            self._save_note()

    def _render(self) -> None:
        self.preview.setMarkdown(self.note.toPlainText())
