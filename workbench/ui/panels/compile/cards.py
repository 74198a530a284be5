"""Fix-it cards: one per kind of graph break, with Dynamo's explanation and hints, our recipe, and the user's lines.

A list of break reasons says *that* the graph broke; a card says what to change. Each card offers *Check with
fullgraph* (compile the model with fullgraph=True: does it now compile as one graph?) and, for a break inside
PyTorch (nothing of the user's to change), *Copy bug report*: a self-contained report with versions.
"""

from __future__ import annotations

import math
import textwrap
from pathlib import Path

from PySide6.QtCore import QCoreApplication, QEvent, QPoint, QSize, Qt, Signal
from PySide6.QtGui import QFontDatabase, QGuiApplication, QPalette, QTextOption
from PySide6.QtWidgets import (QDialog, QDialogButtonBox, QFrame, QHBoxLayout, QLabel, QPlainTextEdit, QPushButton,
                               QScrollArea, QSizePolicy, QTextEdit, QVBoxLayout, QWidget)

from ....core.ground.events import GraphBreak, RunStarted
from ....core.ground.fixit import FixItCard, bug_report, fixit_cards, parse_break
from ....core.ground.answers import FullgraphCheck

REVEAL_MARGIN = 8  # pixels of the card shown below a Check with fullgraph answer


class WrappedText(QTextEdit):
    """Read-only plain text that reads like a word-wrapped QLabel, except that a word longer than the line (a code
    identifier such as torch._dynamo.config.capture_scalar_outputs) breaks where the line ends: a QLabel wraps
    only between words and cuts the rest at its edge. Selectable; what is copied is the text as it is (no soft
    hyphens or zero-width spaces inserted to make it break). As tall as its text at the width it is given.
    Screen readers read the text as a label's, or under `title` (a text that starts empty)."""

    def __init__(self, text: str = "", parent: QWidget | None = None, *, title: str = ""):
        super().__init__(parent)
        self._heights: dict[int, int] = {}  # width → height of the text there, until the text or font changes
        self.title = title
        self.setReadOnly(True)
        self.setFrameShape(QFrame.NoFrame)
        self.setFocusPolicy(Qt.NoFocus)  # text, not a control: Tab passes it by, as it passes a label
        self.setVerticalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
        self.setWordWrapMode(QTextOption.WrapAtWordBoundaryOrAnywhere)
        self.document().setDocumentMargin(0)
        palette = self.palette()
        palette.setColor(QPalette.Base, Qt.transparent)  # on the card's background, as a label is
        self.setPalette(palette)
        policy = QSizePolicy(QSizePolicy.Ignored, QSizePolicy.Preferred)  # the width never comes from the text
        policy.setHeightForWidth(True)
        self.setSizePolicy(policy)
        self.setText(text)

    def text(self) -> str:
        return self.toPlainText()

    def setText(self, text: str) -> None:
        """Plain text: break texts quote user code, never rich text."""
        self.setPlainText(text)
        if self.title:
            self.setAccessibleName(self.title)
            self.setAccessibleDescription(text)
        else:
            self.setAccessibleName(text)
        self._heights.clear()
        self.updateGeometry()

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        self._heights.clear()  # a font from a style sheet changes the height of the same text

    def hasHeightForWidth(self) -> bool:
        return True

    def heightForWidth(self, width: int) -> int:
        if width not in self._heights:
            document = self.document().clone()
            document.setDefaultFont(self.font())
            document.setTextWidth(max(1, width - 2 * self.frameWidth()))
            self._heights[width] = math.ceil(document.size().height()) + 2 * self.frameWidth()
        return self._heights[width]

    def sizeHint(self) -> QSize:
        width = self.width() if self.width() > 1 else super().sizeHint().width()
        return QSize(width, self.heightForWidth(width))

    def minimumSizeHint(self) -> QSize:
        return QSize(0, self.fontMetrics().lineSpacing())  # the height comes from heightForWidth

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        if event.size().width() != event.oldSize().width():
            self.updateGeometry()  # the size hint follows the width: layouts must not keep an older one


def text_label(text: str, name: str = "", mono: bool = False, title: str = "") -> WrappedText:
    """A card's text (`name`: its object name; `mono`: a source line, in the fixed-width font)."""
    label = WrappedText(text, title=title)
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


class RecipeView(QWidget):
    """A recipe as it reads best in a narrow dock: its prose wrapped, its code (the indented lines: before/after
    examples) in boxes of their own that keep the indentation and scroll sideways if they must. One box for it all
    cut the prose on the right, a line of 115 characters in a 360-pixel dock."""

    def __init__(self, recipe: str, parent: QWidget | None = None):
        super().__init__(parent)
        self.recipe = recipe
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        for is_code, lines in recipe_blocks(recipe):
            layout.addWidget(_code(textwrap.dedent("\n".join(lines)), "recipeCode") if is_code
                             else text_label(" ".join(lines), "recipeText"))

    def toPlainText(self) -> str:
        return self.recipe


def recipe_blocks(recipe: str) -> list[tuple[bool, list[str]]]:
    """The recipe's runs of lines, each (code, its lines): code is indented, prose is not (a prose sentence goes on
    over several lines, and is joined again to wrap as the dock's width allows)."""
    blocks: list[tuple[bool, list[str]]] = []
    for line in recipe.splitlines():
        is_code = line.startswith(" ")
        if blocks and blocks[-1][0] == is_code:
            blocks[-1][1].append(line)
        else:
            blocks.append((is_code, [line]))
    return blocks


class CardWidget(QFrame):
    """One card. A frame with a wrapped heading rather than a group box: a box's title never wraps, and a long
    break type would widen the dock."""

    fullgraphRequested = Signal()
    stackRequested = Signal()

    def __init__(self, card: FixItCard, started: RunStarted | None, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("fixitCard")
        self.setFrameShape(QFrame.StyledPanel)
        self.card, self.started = card, started
        layout = QVBoxLayout(self)
        self.heading = text_label(f"{card.type}  ×{card.count}" if card.count > 1 else card.type, "cardType")
        self.heading.setStyleSheet("font-weight: bold;")
        layout.addWidget(self.heading)
        if card.explanation:
            layout.addWidget(text_label(card.explanation, "cardExplanation"))
        for hint in card.hints:
            layout.addWidget(text_label(f"Hint: {hint}", "cardHint"))
        for frame in card.frames:
            where = f"{Path(frame.file).name}:{frame.line}"
            line = text_label(f"{where}   {frame.source}" if frame.source else where, "cardSource", mono=True)
            line.setToolTip(f"{frame.file}:{frame.line} in {frame.function}")
            layout.addWidget(line)
        if card.recipe:
            layout.addWidget(QLabel("How to fix it:"))
            recipe = RecipeView(card.recipe)
            recipe.setObjectName("cardRecipe")
            layout.addWidget(recipe)
        if card.link:
            link = QLabel(f'<a href="{card.link}">Dynamo\'s page for this break type</a>')
            link.setObjectName("cardLink")
            link.setOpenExternalLinks(True)
            layout.addWidget(link)
        # Two rows at most, so that the buttons never make the card wider than a narrow dock (the bug report on its
        # own row); a Check with fullgraph answer is put under them (CardList.show_fullgraph).
        buttons = QHBoxLayout()
        buttons.addWidget(_button("Check with fullgraph", "cardFullgraph", self.fullgraphRequested.emit,
                                  "Compile the model with fullgraph=True in the kernel: after a fix, does it compile "
                                  "as one graph? (Explain's trace is reset; no training.)"))
        buttons.addWidget(_button("Full stack…", "cardStack", self.stackRequested.emit,
                                  "The whole user stack of the first break of this type, and Dynamo's full text"))
        buttons.addStretch(1)
        layout.addLayout(buttons)
        if card.inside_pytorch:
            report = QHBoxLayout()
            report.addWidget(_button("Copy bug report", "cardBugReport", self.copy_bug_report,
                                     "This break is inside PyTorch: copy a self-contained report (versions, the "
                                     "break, a repro skeleton) for github.com/pytorch/pytorch/issues"))
            report.addStretch(1)
            layout.addLayout(report)

    def copy_bug_report(self) -> None:
        started = self.started
        QGuiApplication.clipboard().setText(bug_report(self.card, started.versions.to_dict() if started else {},
                                                       started.config.to_dict() if started else {}))


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
        self.started: RunStarted | None = None  # the run's versions and settings, for a bug report
        self.cards: list[CardWidget] = []
        self.asking: CardWidget | None = None  # the card whose Check with fullgraph was pressed last
        self.fullgraph_result = text_label("", "fullgraphResult", title="Check with fullgraph")
        self.fullgraph_result.hide()
        self.empty = text_label("No graph breaks: the model compiles as one graph.", "fixitEmpty")
        self._body = QWidget()
        self._layout = QVBoxLayout(self._body)
        self._layout.addWidget(self.fullgraph_result)
        self._layout.addWidget(self.empty)
        self._layout.addStretch(1)
        self.setWidget(self._body)
        self.show_breaks(())

    def show_breaks(self, breaks: tuple[GraphBreak, ...], known: bool = False) -> None:
        """`known`: a report was read (no breaks means none), rather than nothing having been traced yet."""
        self._place_result(None)  # out of the card it may be in, before that card goes
        for card in self.cards:
            self._layout.removeWidget(card)
            card.deleteLater()
        self.cards, self.asking = [], None
        types = [parse_break(b.reason).type for b in breaks]
        for card in fixit_cards(breaks):
            widget = CardWidget(card, self.started)
            widget.fullgraphRequested.connect(lambda asking=widget: self._check_asked(asking))
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

    def _check_asked(self, card: CardWidget) -> None:
        self.asking = card
        self.fullgraphRequested.emit()

    def _fullgraph_line(self, text: str, *, ok: bool) -> None:
        """The answer under the buttons of the card that asked (the first card's when the check came from
        elsewhere): where the user looks, and nothing above the button moves. The view scrolls to keep it in
        sight."""
        result = self.fullgraph_result
        self._place_result(self.asking if self.asking in self.cards else next(iter(self.cards), None))
        result.setText(text)
        result.setStyleSheet("color: #2ca02c;" if ok else "color: #b00020;")
        result.show()
        self._reveal(result)

    def _place_result(self, card: CardWidget | None) -> None:
        """The fullgraph answer at the end of `card`, or above the cards (None)."""
        result = self.fullgraph_result
        result.parentWidget().layout().removeWidget(result)
        if card is None:
            self._layout.insertWidget(0, result)
        else:
            card.layout().addWidget(result)

    def _reveal(self, widget: QWidget) -> None:
        """Scroll so that `widget`'s last line is in view, its card and the list laid out first (else the view
        scrolls to where the list ended before the widget was shown). Not ensureWidgetVisible: for a text widget
        that reveals only its cursor, on the first line."""
        QCoreApplication.sendPostedEvents(None, QEvent.LayoutRequest)
        bottom = widget.mapTo(self.widget(), QPoint(0, widget.height()))
        self.ensureVisible(bottom.x(), bottom.y(), 0, REVEAL_MARGIN)

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
