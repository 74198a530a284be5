"""Fix-it cards: one per kind of graph break, with Dynamo's explanation and hints, our recipe, and the user's lines.

A list of break reasons says *that* the graph broke; a card says what to change. Each card offers *Check with
fullgraph* (compile the model with fullgraph=True: does it now compile as one graph?) and, for a break inside
PyTorch (nothing of the user's to change), *Copy bug report*: a self-contained report with versions.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFontDatabase, QGuiApplication
from PySide6.QtWidgets import (QDialog, QDialogButtonBox, QFrame, QHBoxLayout, QLabel, QPlainTextEdit, QPushButton,
                               QScrollArea, QSizePolicy, QVBoxLayout, QWidget)

from ...core.ground.events import GraphBreak
from ...core.ground.fixit import FixItCard, bug_report, fixit_cards, parse_break
from ...core.ground.answers import FullgraphCheck


def _label(text: str, name: str = "", mono: bool = False) -> QLabel:
    label = QLabel(text)
    label.setTextFormat(Qt.PlainText)  # break texts quote user code: never rich text
    label.setWordWrap(True)
    # A long identifier (torch._dynamo.config.capture_scalar_outputs) must not set the card's width: it wraps
    # where it can and the rest is cut, rather than the whole card being cut at the dock's edge.
    label.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Preferred)
    label.setTextInteractionFlags(Qt.TextSelectableByMouse)
    if name:
        label.setObjectName(name)
    if mono:
        label.setFont(QFontDatabase.systemFont(QFontDatabase.FixedFont))
    return label


def _button(text: str, name: str, action, tip: str) -> QPushButton:
    button = QPushButton(text)
    button.setObjectName(name)
    button.setToolTip(tip)
    button.clicked.connect(lambda _checked=False: action())
    return button


def _code(text: str, name: str) -> QPlainTextEdit:
    """A recipe's code as written (no wrapping: indentation matters), as tall as its lines, scrolled sideways."""
    code = QPlainTextEdit(text)
    code.setObjectName(name)
    code.setReadOnly(True)
    code.setLineWrapMode(QPlainTextEdit.NoWrap)
    code.setFont(QFontDatabase.systemFont(QFontDatabase.FixedFont))
    code.setVerticalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
    lines = text.count("\n") + 1
    code.setFixedHeight(code.fontMetrics().lineSpacing() * lines + 2 * code.frameWidth() + 12
                        + code.horizontalScrollBar().sizeHint().height())
    code.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Fixed)
    return code


class CardWidget(QFrame):
    """One card. A frame with a wrapped heading rather than a group box: a box's title never wraps, and a long
    break type would widen the dock."""

    fullgraphRequested = Signal()
    stackRequested = Signal()

    def __init__(self, card: FixItCard, context: dict, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("fixitCard")
        self.setFrameShape(QFrame.StyledPanel)
        self.card, self.context = card, context
        layout = QVBoxLayout(self)
        self.heading = _label(f"{card.type}  ×{card.count}" if card.count > 1 else card.type, "cardType")
        self.heading.setStyleSheet("font-weight: bold;")
        layout.addWidget(self.heading)
        if card.explanation:
            layout.addWidget(_label(card.explanation, "cardExplanation"))
        for hint in card.hints:
            layout.addWidget(_label(f"Hint: {hint}", "cardHint"))
        for frame in card.frames:
            where = f"{Path(frame.file).name}:{frame.line}"
            line = _label(f"{where}   {frame.source}" if frame.source else where, "cardSource", mono=True)
            line.setToolTip(f"{frame.file}:{frame.line} in {frame.function}")
            layout.addWidget(line)
        if card.recipe:
            layout.addWidget(_label("How to fix it:"))
            layout.addWidget(_code(card.recipe, "cardRecipe"))
        if card.link:
            link = QLabel(f'<a href="{card.link}">Dynamo\'s page for this break type</a>')
            link.setObjectName("cardLink")
            link.setOpenExternalLinks(True)
            layout.addWidget(link)
        buttons = QHBoxLayout()
        buttons.addWidget(_button("Check with fullgraph", "cardFullgraph", self.fullgraphRequested.emit,
                                  "Compile the model with fullgraph=True in the kernel: after a fix, does it compile "
                                  "as one graph? (Explain's trace is reset; no training.)"))
        buttons.addWidget(_button("Full stack…", "cardStack", self.stackRequested.emit,
                                  "The whole user stack of the first break of this type, and Dynamo's full text"))
        if card.inside_pytorch:
            buttons.addWidget(_button("Copy bug report", "cardBugReport", self.copy_bug_report,
                                      "This break is inside PyTorch: copy a self-contained report (versions, the "
                                      "break, a repro skeleton) for github.com/pytorch/pytorch/issues"))
        buttons.addStretch(1)
        layout.addLayout(buttons)

    def copy_bug_report(self) -> None:
        QGuiApplication.clipboard().setText(bug_report(self.card, self.context.get("versions", {}),
                                                       self.context.get("config", {})))


class CardList(QScrollArea):
    """The cards of the breaks shown, most frequent type first; `fullgraphRequested` from any card's button."""

    fullgraphRequested = Signal()
    stackRequested = Signal(int)  # the index (in the breaks shown) of the card's first break

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("fixitCards")
        self.setWidgetResizable(True)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)  # cards wrap to the dock's width
        self.setFrameShape(QFrame.NoFrame)
        self.context: dict = {}  # versions and config, for a bug report
        self.cards: list[CardWidget] = []
        self.fullgraph_result = _label("", "fullgraphResult")
        self.fullgraph_result.hide()
        self.empty = _label("No graph breaks: the model compiles as one graph.", "fixitEmpty")
        self._body = QWidget()
        self._layout = QVBoxLayout(self._body)
        self._layout.addWidget(self.fullgraph_result)
        self._layout.addWidget(self.empty)
        self._layout.addStretch(1)
        self.setWidget(self._body)
        self.show_breaks(())

    def show_breaks(self, breaks: tuple[GraphBreak, ...], known: bool = False) -> None:
        """`known`: a report was read (no breaks means none), rather than nothing having been traced yet."""
        for card in self.cards:
            self._layout.removeWidget(card)
            card.deleteLater()
        self.cards = []
        types = [parse_break(b.reason).type for b in breaks]
        for card in fixit_cards(breaks):
            widget = CardWidget(card, self.context)
            widget.fullgraphRequested.connect(self.fullgraphRequested)
            first = types.index(card.type) if card.type in types else 0
            widget.stackRequested.connect(lambda index=first: self.stackRequested.emit(index))
            self._layout.insertWidget(self._layout.count() - 1, widget)
            self.cards.append(widget)
        self.empty.setVisible(known and not self.cards)

    def show_fullgraph(self, check: FullgraphCheck) -> None:
        """The kernel's Check with fullgraph answer: compiles as one graph, or the first break with its line."""
        if check.ok:
            self._fullgraph_line(f"✓ fullgraph: the model compiles as one graph ({check.backend}, "
                                 f"{check.seconds:.1f} s)", ok=True)
            return
        last = check.frames[-1] if check.frames else None
        where = f" at {Path(last.file).name}:{last.line}: {last.source}" if last else ""
        self._fullgraph_line(f"✗ fullgraph fails: {check.type or check.message or '?'}{where}", ok=False)

    def show_fullgraph_error(self, error: BaseException) -> None:
        """The check itself could not be made (the kernel died, the model could not be built)."""
        self._fullgraph_line(f"Check with fullgraph failed: {error}", ok=False)

    def _fullgraph_line(self, text: str, *, ok: bool) -> None:
        self.fullgraph_result.setText(text)
        self.fullgraph_result.setStyleSheet("color: #2ca02c;" if ok else "color: #b00020;")
        self.fullgraph_result.show()

    def clear_fullgraph(self) -> None:
        self.fullgraph_result.hide()
        self.fullgraph_result.setText("")


class BreakDialog(QDialog):
    """The user stack of one graph break (innermost last) and Dynamo's full explanation and hints."""

    def __init__(self, brk: GraphBreak, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("breakDialog")
        self.setWindowTitle(f"Graph break at {brk.where}")
        text = QPlainTextEdit()
        text.setReadOnly(True)
        lines = ["User stack (innermost last):"]
        for frame in brk.frames:
            lines.append(f'  File "{frame.file}", line {frame.line}, in {frame.function}')
            if frame.source:
                lines.append(f"    {frame.source}")
        lines += ["", "Why:", brk.reason]
        text.setPlainText("\n".join(lines))
        self.text = text
        buttons = QDialogButtonBox(QDialogButtonBox.Close)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(text)
        layout.addWidget(buttons)
        self.resize(760, 420)
