"""The Runs dock's query box: the history's query language (core/history/query.py) typed above the table, filtering
as the user types, with completion of the word under the cursor, a count of what is shown, a message under the box
for a query it cannot read, and the "Show archived" toggle.

The query is read 150 ms after the last key (not on each: a fast typist's half-typed words are never filtered by).
A half-typed term ("acc>") cannot be read: the message says why, the runs stay filtered by the last query that could
be, and Enter selects the term at fault so that typing replaces it (never while typing: the next key would).
"""

from __future__ import annotations

from typing import Iterable

from PySide6.QtCore import QPoint, QRect, QStringListModel, Qt, QTimer, Signal
from PySide6.QtWidgets import QCheckBox, QCompleter, QHBoxLayout, QLabel, QLineEdit, QVBoxLayout, QWidget

from ....core.ground.errors import with_hint
from ....core.history.query import Query, QueryError, completions, parse_query
from ....core.history.runs import RunRecord

DEBOUNCE_MS = 150
PLACEHOLDER = "Filter runs, e.g. backend=inductor acc>0.95 tag:baseline"
MESSAGE_GAP = 2  # pixels between the box and its message
ERROR_STYLE = "color: #b00020;"  # as the form's and Predict's messages


class QueryBox(QLineEdit):
    """A line edit whose completer completes the word under the cursor, not the whole line."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.records: Iterable[RunRecord] = ()  # whose tags are offered after tag:
        self.message: QLabel | None = None  # the message under the box, which the completion list opens under
        self.words = QStringListModel(self)
        self.completer = QCompleter(self.words, self)
        self.completer.setWidget(self)
        self.completer.setCaseSensitivity(Qt.CaseInsensitive)
        self.completer.setCompletionMode(QCompleter.PopupCompletion)
        self.completer.activated.connect(self._complete)
        self.textEdited.connect(self._offer)

    def _word(self) -> tuple[int, str]:
        """(where the word under the cursor starts, the word up to the cursor)."""
        before = self.text()[:self.cursorPosition()]
        start = max(before.rfind(" "), before.rfind("\t")) + 1
        return start, before[start:]

    def _offer(self, _text: str) -> None:
        _start, word = self._word()
        found = completions(word, self.records) if word else []
        popup = self.completer.popup()
        if not found or found == [word]:
            popup.hide()
            return
        self.words.setStringList(found)
        self.completer.setCompletionPrefix(word)
        popup.setCurrentIndex(self.completer.completionModel().index(0, 0))
        self.completer.complete(self.popup_above())

    def popup_above(self) -> QRect:
        """What the completion list opens under: the box, and the message under it while one is shown ('backend='
        has completions and a message; the list covered the message)."""
        height = self.height()
        if self.message is not None and self.message.isVisible():
            under = self.mapFromGlobal(self.message.mapToGlobal(QPoint(0, self.message.height()))).y()
            height = max(height, under + MESSAGE_GAP)  # the list opens at the rect's last row: a gap past it
        return QRect(0, 0, self.width(), height)

    def keep_message_clear(self) -> None:
        """The message came or went: an open completion list moves under (or back up to) it, once the layout has
        placed the message."""
        QTimer.singleShot(0, self, lambda: self.completer.popup().isVisible()
                          and self.completer.complete(self.popup_above()))

    def _complete(self, completion: str) -> None:
        """The word under the cursor becomes `completion` (the filter follows, as after a key)."""
        start, _typed = self._word()
        cursor, text = self.cursorPosition(), self.text()
        self.setText(text[:start] + completion + text[cursor:])
        self.setCursorPosition(start + len(completion))

    def keyPressEvent(self, event) -> None:
        """While the popup is open, Enter, Tab and Esc are the completer's (it chooses or closes)."""
        if self.completer.popup().isVisible() and event.key() in (Qt.Key_Enter, Qt.Key_Return, Qt.Key_Escape,
                                                                   Qt.Key_Tab, Qt.Key_Backtab):
            event.ignore()
            return
        super().keyPressEvent(event)


class QueryBar(QWidget):
    queryChanged = Signal(object)  # the Query to filter by (one that could be read)
    archivedToggled = Signal(bool)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.query = Query()
        self.box = QueryBox()
        self.box.setObjectName("runsQuery")
        self.box.setAccessibleName("Filter runs")
        self.box.setPlaceholderText(PLACEHOLDER)
        self.box.setClearButtonEnabled(True)
        self.box.setToolTip("Terms that must all hold: FIELD=VALUE (also != > >= < <= and ~ for contains), "
                            "tag:NAME, words found in names and notes; a leading - leaves runs out")
        self.timer = QTimer(self)
        self.timer.setSingleShot(True)
        self.timer.setInterval(DEBOUNCE_MS)
        self.timer.timeout.connect(self.apply)
        self.box.textChanged.connect(lambda _text: self.timer.start())
        self.box.returnPressed.connect(self._entered)
        self.count = QLabel()
        self.count.setObjectName("runsCount")
        self.archived = QCheckBox("Show archived")
        self.archived.setObjectName("showArchived")
        self.archived.setToolTip("List archived runs too (greyed and in italics)")
        self.archived.toggled.connect(self.archivedToggled.emit)
        self.error = QLabel()
        self.error.setObjectName("runsQueryError")
        self.error.setStyleSheet(ERROR_STYLE)
        self.error.setTextFormat(Qt.PlainText)  # it quotes what was typed: never rich text
        self.error.setWordWrap(True)
        self.error.hide()
        row = QHBoxLayout()
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.box, 1)
        row.addWidget(self.count)
        row.addWidget(self.archived)
        self.box.message = self.error
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(MESSAGE_GAP)
        layout.addLayout(row)
        layout.addWidget(self.error)
        self.problem: QueryError | None = None

    @property
    def query_text(self) -> str:
        return self.box.text()

    def set_query_text(self, text: str) -> None:
        """Put a query in the box and filter by it now (a query kept from the last launch)."""
        self.box.setText(text)
        self.apply()

    def set_records(self, records: Iterable[RunRecord]) -> None:
        self.box.records = records

    def apply(self) -> None:
        """Read the box; filter by it when it can be read, else say why (the last readable query stays)."""
        self.timer.stop()
        try:
            query = parse_query(self.box.text())
        except QueryError as exc:
            self.problem = exc
            self.error.setText(with_hint(exc))
            self.error.show()
            self.box.keep_message_clear()
            return
        self.problem = None
        self.error.hide()
        self.box.keep_message_clear()
        if query.text != self.query.text:
            self.query = query
            self.queryChanged.emit(query)

    def _entered(self) -> None:
        """Enter reads the box at once, and selects the term it cannot read (typing then replaces it)."""
        self.apply()
        if self.problem is not None:
            self.box.setSelection(self.problem.position, len(self.problem.term))

    def set_count(self, shown: int, total: int, archived_hidden: int) -> None:
        """'12 of 340 runs' (or '340 runs' when all are shown), and how many archived ones are not."""
        runs = "run" if total == 1 else "runs"
        text = f"{total:,} {runs}" if shown == total else f"{shown:,} of {total:,} {runs}"
        if archived_hidden:
            text += f" ({archived_hidden:,} archived not shown)"
        self.count.setText(text)
        self.count.setAccessibleName(text)
