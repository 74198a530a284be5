"""The code `torch.compile` wrote for a run, per compiled graph: Dynamo's captured graph, AOTAutograd's forward and
backward (or inference) graphs and Inductor's output code, beside the user's model source, tied together by
provenance (ground.inductor_code). Click a line of the model: the graph blocks and kernels it became are
highlighted in every tab (a tab with some is marked ●). Click a kernel, in the output code's kernel table or in the
code itself: its lines, the FX nodes it computes (in the AOT graph of the same pass) and the model lines it came
from are highlighted. With a profile of the run, each kernel's measured time per step stands beside its name.

Everything shown comes from the run's recorded trace: a recorded run's view works on any machine (the model's
file is read from disk when it is still there; otherwise the lines the trace quotes stand in for it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterable

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor, QFontDatabase, QTextCursor, QTextFormat
from PySide6.QtWidgets import (QAbstractItemView, QComboBox, QDialog, QDialogButtonBox, QHeaderView, QLabel,
                               QListWidget, QPlainTextEdit, QPushButton, QSplitter, QStackedWidget, QTabWidget,
                               QTextEdit, QTreeWidget, QTreeWidgetItem, QVBoxLayout, QWidget)

from ....core.ground.errors import WorkbenchError, with_hint
from ....core.ground.events import Frame, ProfileReport
from ....core.ground.inductor_code import (CompiledGraph, InductorCode, Kernel, KernelTime, Listing, kernel_times,
                                          read_inductor_code)

MATCH = QColor("#fff2a8")  # what the clicked model line became
KERNEL = QColor("#cfe8ff")  # the selected kernel, its FX nodes and the model lines it came from
COMPILED_MARK = "●"  # beside a model line that became part of a graph, and on a tab holding a highlight
NO_GRAPHS = "The trace holds no compiled graph: nothing was compiled, or the run ended before its first compile."
NO_PROVENANCE = ("Inductor recorded no provenance for some of this code (PyTorch before 2.9, a graph a cache served "
                 "as compiled without it, or on a GPU possibly a backward compiled on autograd's worker thread): "
                 "those kernels are listed without the lines they came from.")
NO_PROFILE = "Profile the run (Profile steps) to see each kernel's time here."
MISSING_FILE = "(not on this computer: the lines the compile trace quotes)"


class CodeText(QPlainTextEdit):
    """Read-only code in a fixed-width font, unwrapped. `lineClicked(line)` (1-based) on a click, or Enter on the
    cursor's line; `mark` highlights whole lines."""

    lineClicked = Signal(int)

    def __init__(self, name: str, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName(name)
        self.setReadOnly(True)
        self.setTextInteractionFlags(Qt.TextSelectableByMouse | Qt.TextSelectableByKeyboard)
        self.setLineWrapMode(QPlainTextEdit.NoWrap)
        self.setFont(QFontDatabase.systemFont(QFontDatabase.FixedFont))
        self.marked: tuple[int, ...] = ()

    def mouseReleaseEvent(self, event) -> None:
        super().mouseReleaseEvent(event)
        if event.button() == Qt.LeftButton and not self.textCursor().hasSelection():
            self.lineClicked.emit(self.cursorForPosition(event.position().toPoint()).blockNumber() + 1)

    def keyPressEvent(self, event) -> None:
        if event.key() in (Qt.Key_Return, Qt.Key_Enter):
            self.lineClicked.emit(self.textCursor().blockNumber() + 1)
            return
        super().keyPressEvent(event)

    def mark(self, lines: Iterable[int], colour: QColor) -> None:
        """Highlight these lines (1-based; any others are cleared) and scroll the first into view."""
        self.marked = tuple(sorted(set(lines)))
        selections = []
        for line in self.marked:
            block = self.document().findBlockByNumber(line - 1)
            if not block.isValid():
                continue
            selection = QTextEdit.ExtraSelection()
            selection.format.setBackground(colour)
            selection.format.setProperty(QTextFormat.FullWidthSelection, True)
            selection.cursor = QTextCursor(block)
            selections.append(selection)
        self.setExtraSelections(selections)
        if self.marked:
            self.scroll_to(self.marked[0])

    def scroll_to(self, line: int) -> None:
        block = self.document().findBlockByNumber(max(0, line - 1))
        if block.isValid():
            self.setTextCursor(QTextCursor(block))
            self.centerCursor()


class SourcePane(QWidget):
    """The user's model source, one file at a time, each line numbered; the lines that became part of a graph are
    marked ●. `lineClicked(file, line)` when one is clicked."""

    lineClicked = Signal(str, int)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.files = QComboBox()
        self.files.setObjectName("sourceFiles")
        self.files.setAccessibleName("Model source file")
        self.files.currentIndexChanged.connect(self._show_current)
        self.text = CodeText("sourceText")
        self.text.setAccessibleName("Model source")
        self.text.lineClicked.connect(self._clicked)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.files)
        layout.addWidget(self.text)
        self.known: dict[str, dict[int, str]] = {}  # file → the lines the trace quotes (those that compiled)
        self.block_lines: list[int | None] = []  # the shown text's block → its line in the file (None: a note)

    def set_sources(self, frames: Iterable[Frame]) -> None:
        self.known = {}
        for frame in frames:
            self.known.setdefault(frame.file, {})[frame.line] = frame.source
        self.files.blockSignals(True)
        self.files.clear()
        for file in self.known:
            self.files.addItem(Path(file).name, file)
            self.files.setItemData(self.files.count() - 1, file, Qt.ToolTipRole)
        self.files.blockSignals(False)
        self._show_current()

    @property
    def file(self) -> str:
        return self.files.currentData() or ""

    def mark(self, file: str, lines: Iterable[int], colour: QColor) -> None:
        """Show `file` (when it is one of the sources) with these lines highlighted."""
        index = self.files.findData(file)
        if index >= 0 and index != self.files.currentIndex():
            self.files.setCurrentIndex(index)
        wanted = set(lines) if file == self.file else set()
        self.text.mark((i + 1 for i, line in enumerate(self.block_lines) if line in wanted), colour)

    def _show_current(self) -> None:
        file = self.file
        known = self.known.get(file, {})
        try:
            lines = Path(file).read_text(encoding="utf-8").splitlines() if file else []
            self.block_lines = list(range(1, len(lines) + 1))
            shown = [f"{n:>5} {COMPILED_MARK if n in known else ' '} {text}" for n, text in enumerate(lines, 1)]
        except (OSError, UnicodeDecodeError):
            self.block_lines = [None] + sorted(known)
            shown = [MISSING_FILE] + [f"{n:>5} {COMPILED_MARK} {known[n]}" for n in sorted(known)]
        self.text.setPlainText("\n".join(shown))
        self.text.mark((), MATCH)

    def _clicked(self, block: int) -> None:
        line = self.block_lines[block - 1] if 0 < block <= len(self.block_lines) else None
        if line is not None:
            self.lineClicked.emit(self.file, line)


class KernelTable(QTreeWidget):
    """An output code's kernels, in the order the code calls them: name, time per profiled step, and the model
    lines they came from. `kernelClicked(key)` when one is chosen."""

    kernelClicked = Signal(str)

    def __init__(self, listing: Listing, times: dict[str, KernelTime] | None, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("kernelTable")
        self.setAccessibleName(f"Kernels of the {listing.title.lower()}")
        self.setHeaderLabels(["Kernel", "Time / step", "From your code"])
        self.setRootIsDecorated(False)
        self.setUniformRowHeights(True)
        self.setSelectionMode(QAbstractItemView.ExtendedSelection)
        header = self.header()
        header.setSectionResizeMode(0, QHeaderView.ResizeToContents)
        header.setSectionResizeMode(1, QHeaderView.ResizeToContents)
        header.setSectionResizeMode(2, QHeaderView.Stretch)
        self.headerItem().setToolTip(1, "Measured by the run's profiler: per profiled step" if times is not None
                                     else NO_PROFILE)
        self.setColumnHidden(1, times is None)
        for kernel in listing.kernels:
            item = QTreeWidgetItem([kernel.name, _time_cell(kernel, (times or {}).get(kernel.key)),
                                    ", ".join(f"{Path(f.file).name}:{f.line}" for f in kernel.sources)])
            item.setData(0, Qt.UserRole, kernel.key)
            item.setToolTip(0, _kernel_words(kernel))
            self.addTopLevelItem(item)
        self.itemClicked.connect(lambda item, _column: self.kernelClicked.emit(item.data(0, Qt.UserRole)))
        self.itemActivated.connect(lambda item, _column: self.kernelClicked.emit(item.data(0, Qt.UserRole)))

    def select_keys(self, keys: Iterable[str]) -> None:
        """Select these kernels' rows (only them), without a kernelClicked."""
        wanted = set(keys)
        self.blockSignals(True)
        self.clearSelection()
        for row in range(self.topLevelItemCount()):
            item = self.topLevelItem(row)
            if item.data(0, Qt.UserRole) in wanted:
                item.setSelected(True)
                self.scrollToItem(item)
        self.blockSignals(False)

    def selected_keys(self) -> list[str]:
        return [item.data(0, Qt.UserRole) for item in self.selectedItems()]


def _time_cell(kernel: Kernel, time: KernelTime | None) -> str:
    """'59.3 µs'; a library op called more than once in the graph: its calls' time together, said so."""
    if time is None:
        return "—"
    text = f"{time.us:,.1f} µs" if time.us < 1000 else f"{time.us / 1000:,.2f} ms"
    return text + (f" (all {time.shared} {kernel.op} calls)" if time.shared > 1 else "")


def _kernel_words(kernel: Kernel) -> str:
    kind = "generated by Inductor" if kernel.generated else f"a library call ({kernel.op})"
    lines = [f"{kernel.name}: {kind}"]
    if kernel.nodes:
        lines.append("FX nodes: " + ", ".join(kernel.nodes))
    lines += [f"from {f.file}:{f.line}  {f.source}" for f in kernel.sources]
    return "\n".join(lines)


SPLIT_SIZES = [170, 640, 470]  # the graphs, the listings, the model's source: in proportion to the view's width


class CompiledCodeView(QWidget):
    """The graphs on the left; the selected graph's listings in tabs; the model's source on the right; one line
    below says what the last click found."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("compiledCode")
        self.graphs = QListWidget()
        self.graphs.setObjectName("codeGraphs")
        self.graphs.setAccessibleName("Compiled graphs")
        self.graphs.currentRowChanged.connect(self.select_graph)
        self.tabs = QTabWidget()
        self.tabs.setObjectName("codeTabs")
        self.tabs.setAccessibleName("Compiled code listings")
        self.source = SourcePane()
        self.source.lineClicked.connect(self.select_source_line)
        split = QSplitter(Qt.Horizontal)
        for widget in (self.graphs, self.tabs, self.source):
            split.addWidget(widget)
        split.setSizes(SPLIT_SIZES)  # stretch factors alone left the graph list as wide as the code
        self.status = QLabel()
        self.status.setObjectName("codeStatus")
        self.status.setTextFormat(Qt.PlainText)  # quotes the user's code and kernel names
        self.status.setWordWrap(True)
        self.status.setTextInteractionFlags(Qt.TextSelectableByMouse)
        # Nothing to show: one message where the panes would be (not three empty panes and a line at the bottom),
        # with the fix as a button where there is one.
        self.empty = QLabel()
        self.empty.setObjectName("codeEmpty")
        self.empty.setWordWrap(True)
        self.empty.setAlignment(Qt.AlignCenter)
        self.empty.setTextFormat(Qt.PlainText)
        self.fix = QPushButton()
        self.fix.setObjectName("codeFix")
        self.fix.clicked.connect(lambda: self._fix_action is not None and self._fix_action())
        self._fix_action: Callable[[], None] | None = None
        empty_page = QWidget()
        empty_layout = QVBoxLayout(empty_page)
        empty_layout.addStretch(1)
        empty_layout.addWidget(self.empty)
        empty_layout.addWidget(self.fix, 0, Qt.AlignCenter)
        empty_layout.addStretch(1)
        code_page = QWidget()
        code_layout = QVBoxLayout(code_page)
        code_layout.setContentsMargins(0, 0, 0, 0)
        code_layout.addWidget(split, 1)
        code_layout.addWidget(self.status)
        self.pages = QStackedWidget()
        self.pages.addWidget(code_page)
        self.pages.addWidget(empty_page)
        layout = QVBoxLayout(self)
        layout.addWidget(self.pages)
        self.code = InductorCode()
        self.profile: ProfileReport | None = None
        self.graph: CompiledGraph | None = None
        self.texts: dict[str, CodeText] = {}  # by listing kind, for the graph shown
        self.tables: dict[str, KernelTable] = {}  # by code listing kind

    def load(self, trace: str, profile: ProfileReport | None = None) -> None:
        """A run's recorded trace (its CompileTrace.path, or the log): its graphs, or why there are none."""
        try:
            code = read_inductor_code(trace)
        except WorkbenchError as exc:
            self.show_problem(with_hint(exc))
            return
        self.show_code(code, profile)

    def show_code(self, code: InductorCode, profile: ProfileReport | None = None) -> None:
        self.code, self.profile = code, profile
        self.pages.setCurrentIndex(0)
        self.graphs.blockSignals(True)
        self.graphs.clear()
        for graph in code.graphs:
            self.graphs.addItem(f"{graph.label} · {graph.passes}")
        self.graphs.blockSignals(False)
        self.source.set_sources(f for graph in code.graphs for f in graph.sources())
        if code.graphs:
            self.graphs.setCurrentRow(0)
        else:
            self.select_graph(-1)
            self.status.setText(NO_GRAPHS)

    def show_problem(self, text: str, fix: tuple[str, Callable[[], None]] | None = None) -> None:
        """Nothing to show (no trace, an unreadable one, one being read), why, and `fix`: a button (its text, what
        it does) that puts it right, where there is one."""
        self.show_code(InductorCode())
        self.status.setText(text)
        self.empty.setText(text)
        self._fix_action = fix[1] if fix is not None else None
        self.fix.setText(fix[0] if fix is not None else "")
        self.fix.setVisible(fix is not None)
        self.pages.setCurrentIndex(1)

    def select_graph(self, row: int) -> None:
        self.graph = self.code.graphs[row] if 0 <= row < len(self.code.graphs) else None
        self._fill_tabs(self.graph)
        if self.graph is None:
            return
        notes = [f"{self.graph.label}: {len(self.graph.listings)} listing(s). Click a line of your model (right) to "
                 "see what it became; click a kernel to see where it came from."]
        if not any(item.is_code for item in self.graph.listings):
            notes.append("No Inductor output code: the run's backend was not inductor.")
        elif not all(item.provenance for item in self.graph.listings if item.is_code):
            notes.append(NO_PROVENANCE)
        self.status.setText(" ".join(notes))

    def _fill_tabs(self, graph: CompiledGraph | None) -> None:
        for index in range(self.tabs.count()):
            self.tabs.widget(index).deleteLater()  # removing a tab keeps its page
        self.tabs.clear()
        self.texts, self.tables = {}, {}
        for listing in graph.listings if graph else ():
            text = CodeText(f"code_{listing.kind}")
            text.setAccessibleName(listing.title)
            text.setPlainText(listing.text)
            text.lineClicked.connect(lambda line, kind=listing.kind: self._code_clicked(kind, line))
            self.texts[listing.kind] = text
            page: QWidget = text
            if listing.is_code:
                times = kernel_times(graph, listing, self.profile) if self.profile is not None else None
                table = KernelTable(listing, times)
                table.kernelClicked.connect(lambda key, kind=listing.kind: self.select_kernel(kind, key))
                self.tables[listing.kind] = table
                page = QSplitter(Qt.Vertical)
                page.addWidget(table)
                page.addWidget(text)
                page.setStretchFactor(1, 3)
            self.tabs.addTab(page, listing.title)

    def select_source_line(self, file: str, line: int) -> None:
        """What a line of the model became, in every listing of the graph shown."""
        if self.graph is None:
            return
        found = []
        for index, listing in enumerate(self.graph.listings):
            lines = listing.lines_from(file, line)
            self.texts[listing.kind].mark(lines, MATCH)
            self._mark_tab(index, listing, bool(lines))
            kernels = listing.kernels_from(file, line)
            if listing.kind in self.tables:
                self.tables[listing.kind].select_keys(k.key for k in kernels)
            if kernels:
                found.append(f"{listing.title}: {len(kernels)} kernel(s) ({', '.join(k.name for k in kernels)})")
            elif lines:
                found.append(f"{listing.title}: {len(lines)} line(s)")
        self.source.mark(file, [line], MATCH)
        code = self.source.known.get(file, {}).get(line, "")
        where = f"{Path(file).name}:{line}" + (f" `{code}`" if code else "")
        self.status.setText(f"{where} became: " + " · ".join(found) if found else
                            f"Nothing in {self.graph.label} came from {where}.")

    def select_kernel(self, kind: str, key: str) -> None:
        """A kernel of an output code: its lines, its FX nodes in the AOT graph of the same pass, and the model
        lines it came from."""
        listing = self.graph.listing(kind) if self.graph else None
        kernel = next((k for k in listing.kernels if k.key == key), None) if listing else None
        if kernel is None:
            return
        self.tables[kind].select_keys([key])
        for index, other in enumerate(self.graph.listings):
            if other.kind == kind:
                lines = kernel.lines
            elif other.kind == f"aot_{listing.graph}":
                lines = other.node_lines(kernel.nodes)
            else:
                lines = ()
            self.texts[other.kind].mark(lines, KERNEL)
            self._mark_tab(index, other, bool(lines))
        if kernel.lines:
            self.texts[kind].scroll_to(kernel.lines[-1])  # the call, the last of its lines
        sources = kernel.sources
        if sources:
            file = sources[-1].file
            self.source.mark(file, [f.line for f in sources if f.file == file], KERNEL)
        where = ", ".join(f"{Path(f.file).name}:{f.line} `{f.source}`" for f in sources) or "no recorded line"
        nodes = f"; FX nodes {', '.join(kernel.nodes)}" if kernel.nodes else ""
        self.status.setText(f"{kernel.name} came from {where}{nodes}.")

    def _code_clicked(self, kind: str, line: int) -> None:
        """A click in a listing: in output code, the kernel that owns the line; in a graph, the model line its block
        came from."""
        listing = self.graph.listing(kind) if self.graph else None
        if listing is None:
            return
        if listing.is_code:
            kernel = next((k for k in listing.kernels if line in k.lines), None)
            if kernel is not None:
                self.select_kernel(kind, kernel.key)
            return
        span = next((s for s in listing.spans if s.first <= line <= s.last), None)
        if span is not None:
            self.select_source_line(span.source.file, span.source.line)

    def _mark_tab(self, index: int, listing: Listing, marked: bool) -> None:
        self.tabs.setTabText(index, listing.title + (f" {COMPILED_MARK}" if marked else ""))

    def clear(self) -> None:
        self.show_code(InductorCode())


class CompiledCodeDialog(QDialog):
    """The code view in a window of its own (it needs the room): opened for a run from the Compile panel."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("compiledCodeDialog")
        self.setWindowTitle("The code torch.compile wrote")
        self.view = CompiledCodeView()
        buttons = QDialogButtonBox(QDialogButtonBox.Close)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.view, 1)
        layout.addWidget(buttons)
        self.resize(1280, 760)
