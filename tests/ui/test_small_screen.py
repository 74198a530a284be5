"""The window on a small screen (1366×768, the commonest laptop) and a 1440×900 one, as a new user meets it: the
confusion matrix whole, five runs in the Runs dock, the dock tabs and the Profile header readable, and the Compile
dock's fix-it cards and What-if entries wrapped to a narrow dock with nothing cut."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import QCoreApplication, QEvent, QPoint, QRect, Qt
from PySide6.QtGui import QScreen
from PySide6.QtWidgets import QAbstractScrollArea, QLabel, QPlainTextEdit, QTabBar, QWidget

from workbench.core.ground.answers import FullgraphCheck
from workbench.core.ground.events import CompileReport, Frame, RunFinished
from workbench.core.ground.forecast import EVAL_MODE, Forecast, ForecastCheck
from workbench.core.ground.results import RunResults
from workbench.ui.panels.compile.compile import CompilePanel
from workbench.ui.dock_layout import FRAME_ALLOWANCE
from workbench.ui.panels.compile.cards import WrappedText

from ..support.compile_events import ITEM_BREAK, TORCH_BREAK, started
from ..support.evaluation import synthetic_answer

SCREENS = [(1366, 768), (1440, 900)]
NARROW_DOCK = 330  # the Compile dock's width on a 1366-px screen


@pytest.fixture(params=SCREENS, ids=lambda size: "{}x{}".format(*size))
def screen(request, monkeypatch) -> tuple[int, int]:
    """A screen of that size (its whole area available): a window opened after this fits itself to it."""
    monkeypatch.setattr(QScreen, "availableGeometry", lambda _screen: QRect(0, 0, *request.param))
    return request.param


@pytest.fixture
def unshown_window(screen, waiting_window):
    """The window as the app opens it on that screen, before it is shown (no kernel needed: nothing here trains)."""
    assert waiting_window.width() <= screen[0]
    return waiting_window


def show(window, qtbot):
    window.show()
    qtbot.waitExposed(window)
    return window


@pytest.fixture
def small_window(unshown_window, qtbot):
    return show(unshown_window, qtbot)


def fits(window, screen: tuple[int, int]) -> bool:
    """The window is no larger than the screen leaves it (its title bar, which Qt does not count, aside)."""
    return window.width() <= screen[0] and window.height() <= screen[1] - FRAME_ALLOWANCE


def in_view(view: QAbstractScrollArea, rect: QRect) -> bool:
    return view.viewport().rect().contains(rect)


def show_evaluation(window) -> None:
    """A 10-class evaluation in the Evaluate dock, raised."""
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 10, 500)
    predicted = np.where(rng.random(500) < 0.9, labels, rng.integers(0, 10, 500))
    confidence = rng.random(500).tolist()
    window.evaluation.set_result(synthetic_answer(labels.tolist(), predicted.tolist(), confidence, confidence,
                                                  classes=tuple("0123456789")), "run #1")
    window.docks["evaluate"].raise_()


def show_runs(window, count: int, *, raised: bool = True) -> None:
    """`count` runs in the history, the Runs dock raised (unless not `raised`)."""
    from workbench.core.ground.config import TrainConfig
    from workbench.core.history.runs import RunStore

    with RunStore(window.db) as store:
        for seed in range(count):
            run_id = store.start_run(TrainConfig(seed=seed).to_dict())
            store.append_events(run_id, 0, [], {"status": "finished"})
    window.runs.refresh()
    if raised:
        window.docks["runs"].raise_()


def cells_in_view(table) -> int:
    model = table.model()
    return sum(in_view(table, table.visualRect(model.index(row, column)))
               for row in range(model.rowCount()) for column in range(model.columnCount()))


def runs_in_view(table) -> int:
    return sum(in_view(table, table.visualRect(table.model().index(row, 0))) for row in range(table.model().rowCount()))


def test_every_row_and_column_of_the_confusion_matrix_is_in_view(small_window, screen, qtbot):
    show_evaluation(small_window)
    table = small_window.evaluation.confusion
    qtbot.waitUntil(lambda: cells_in_view(table) == 100, timeout=2000)
    assert fits(small_window, screen)  # not by making the window larger than the screen


def test_the_runs_dock_shows_five_runs(small_window, screen, qtbot):
    show_runs(small_window, 8)
    qtbot.waitUntil(lambda: runs_in_view(small_window.runs.table) >= 5, timeout=2000)
    assert fits(small_window, screen)


@pytest.mark.parametrize("raised", ["before", "after"])
def test_runs_brought_to_the_front_as_the_window_opens_show_five(unshown_window, screen, raised, qtbot):
    """As the window the user left with the Runs dock in front opens (raised before it is shown), or a click on
    the tab before the window was laid out: its sizing must not take the room back."""
    show_runs(unshown_window, 8, raised=raised == "before")
    unshown_window.show()
    if raised == "after":
        unshown_window.docks["runs"].raise_()
    qtbot.waitUntil(lambda: runs_in_view(unshown_window.runs.table) >= 5, timeout=2000)
    assert fits(unshown_window, screen)


def test_a_runs_note_has_room_to_write_in(small_window, screen, qtbot):
    """The selected run's note, beside five runs, shows at least NOTE_LINES lines (it was two)."""
    from workbench.ui.panels.runs.details import NOTE_LINES

    show_runs(small_window, 8)
    runs = small_window.runs
    qtbot.waitUntil(lambda: len(runs.model.rows) == 8)
    runs.select_ids([runs.model.rows[0].id])
    runs.details_button.setChecked(True)
    note = runs.details.note
    qtbot.waitUntil(lambda: note.isVisible() and runs_in_view(runs.table) >= 5, timeout=2000)
    assert note.viewport().height() >= NOTE_LINES * note.fontMetrics().lineSpacing()
    assert fits(small_window, screen)


def test_the_matrix_and_five_runs_at_once(small_window, screen, qtbot):
    """Both docks in front: the right docks run the window's full height, so the matrix does not take the Runs
    dock's height (nor the Runs dock the matrix's)."""
    show_evaluation(small_window)
    show_runs(small_window, 8)
    qtbot.waitUntil(lambda: cells_in_view(small_window.evaluation.confusion) == 100
                    and runs_in_view(small_window.runs.table) >= 5, timeout=2000)
    assert fits(small_window, screen)


def test_the_right_dock_tabs_read_whole_after_a_run(unshown_window, screen, qtbot):
    """The right docks' tab bar shows "Compile Profile Predict Evaluate Dataset", not "Comp… Pro… Pred…": their
    share of the width (a quarter, 341 px on a 1366-px screen) is widened to what the tabs need, which the plots
    leave once their figures show a run (wider than the dashes before one)."""
    from workbench.core.history.curves import Curves

    values = np.array([0.9, 0.95])
    unshown_window.plots.headline.show_run(Curves(
        step=np.array([1, 2]), loss=values, accuracy=values, val_step=np.array([2]), val_loss=values[:1],
        val_accuracy=np.array([0.9999]), throughput_step=np.array([2]), throughput=np.array([123_456.0]),
        memory={"rss": np.array([12_345.0, 12_345.0])}, compile_seconds=123.4, samples_per_s=123_456.0))
    assert unshown_window.plots.headline.figures()["samples_per_s"] != "—"
    small_window = show(unshown_window, qtbot)
    bar = small_window._dock_tabs(small_window.docks["compile"])

    def cut() -> list[str]:
        return [bar.tabText(i) for i in range(bar.count()) if bar.tabRect(i).width() < bar.tabSizeHint(i).width()]

    qtbot.waitUntil(lambda: not cut(), timeout=2000)


def test_dock_tabs_read_whole_in_a_narrow_group(small_window, qtbot):
    """A relaunch restores the docks' widths as they were left, narrower than the tabs need: every dock group's
    tabs keep their whole names (scroll arrows bring the rest), never "Com… Pro… Pred…"."""
    small_window.resizeDocks([small_window.docks["compile"]], [1], Qt.Horizontal)  # as narrow as it goes

    def narrower_than_its_tabs() -> bool:  # Qt makes the groups' tab bars anew as the docks move: found each time
        right = small_window._dock_tabs(small_window.docks["compile"])
        return right.width() < sum(right.tabSizeHint(i).width() for i in range(right.count()))

    def cut() -> list[str]:
        bars = small_window.findChildren(QTabBar, options=Qt.FindDirectChildrenOnly)
        return [bar.tabText(i) for bar in bars if bar.isVisible() for i in range(bar.count())
                if bar.tabRect(i).width() < bar.tabSizeHint(i).width()]

    qtbot.waitUntil(narrower_than_its_tabs)
    qtbot.waitUntil(lambda: not cut(), timeout=2000)


def test_the_profile_header_reads_whole(small_window, qtbot):
    small_window.docks["profile"].raise_()
    header = small_window.profile.header
    qtbot.waitUntil(header.isVisible)
    qtbot.waitUntil(lambda: not clipped(header), timeout=2000)
    assert header.text().startswith("No profile yet")


# -- the Compile dock's cards and What-if entries, at a narrow dock's width ---------------------------------------
def clipped(widget: QWidget) -> list[str]:
    """The texts under `widget` (itself included) that are cut where they are shown: a label whose text is wider
    than its box or taller than it, a wrapping text box shorter than its text, or a text cut off at the right
    edge of a scroll area that has no horizontal scroll bar."""
    found = []
    for text in [widget, *widget.findChildren(QWidget)]:
        if not text.isVisible() or not isinstance(text, (QLabel, WrappedText)):
            continue
        if isinstance(text, WrappedText):
            cut = text.heightForWidth(text.width()) > text.height()
        elif text.wordWrap():
            cut = text.minimumSizeHint().width() > text.width() or text.heightForWidth(text.width()) > text.height()
        else:
            cut = text.sizeHint().width() > text.width()
        if cut or _beyond_scroll_area(text):
            found.append(f"{text.objectName() or type(text).__name__}: {text.text()[:60]!r}")
    return found


def _beyond_scroll_area(widget: QWidget) -> bool:
    parent = widget.parentWidget()
    while parent is not None:
        if isinstance(parent, QAbstractScrollArea) and parent.horizontalScrollBarPolicy() == Qt.ScrollBarAlwaysOff:
            right = widget.mapTo(parent.viewport(), QPoint(widget.width(), 0)).x()
            if right > parent.viewport().width():
                return True
        parent = parent.parentWidget()
    return False


@pytest.fixture
def narrow_compile_panel(qtbot):
    panel = CompilePanel()
    qtbot.addWidget(panel)
    panel.resize(NARROW_DOCK, 560)
    panel.show()
    qtbot.waitExposed(panel)
    panel.add_events([started()])
    panel.show_report(CompileReport(compiled=True, backend="aot_eager", mode="default", graph_count=3,
                                    graph_break_count=3, breaks=(ITEM_BREAK, ITEM_BREAK, TORCH_BREAK)))
    return panel


def test_fix_it_cards_wrap_long_identifiers_in_a_narrow_dock(narrow_compile_panel, qtbot):
    cards = narrow_compile_panel.cards
    hint = cards.cards[0].findChild(WrappedText, "cardHint")
    assert "torch._dynamo.config.capture_scalar_outputs" in hint.text()  # one word, wider than the dock
    qtbot.waitUntil(lambda: cards.widget().width() <= cards.viewport().width())  # no card wider than the dock
    for card in cards.cards:
        cards.ensureWidgetVisible(card)
        qtbot.waitUntil(lambda card=card: not clipped(card), timeout=2000)


def test_a_recipes_prose_wraps_and_only_its_code_keeps_its_lines(narrow_compile_panel, qtbot):
    """The recipe's sentences wrap in the dock (one box for it all cut them on the right); its before/after code
    keeps its indentation in boxes of its own, the logging read first (the planted break is a print)."""
    from workbench.ui.panels.compile.cards import RecipeView

    recipe = narrow_compile_panel.cards.cards[0].findChild(RecipeView, "cardRecipe")
    prose = recipe.findChildren(WrappedText, "recipeText")
    code = recipe.findChildren(QPlainTextEdit, "recipeCode")
    assert prose and code
    code_lines = [line for box in code for line in box.toPlainText().splitlines()]
    assert all(line.lstrip() in recipe.toPlainText() for line in code_lines)  # the recipe's code, dedented
    assert not any(line.lstrip() in code_lines for block in prose for line in block.text().splitlines())
    assert code[0].toPlainText().startswith("before:  print(")
    qtbot.waitUntil(lambda: all(label.width() <= recipe.width() for label in prose))


def test_post_run_what_if_entries_wrap_in_a_narrow_dock(narrow_compile_panel, qtbot):
    forecast = Forecast(cause=EVAL_MODE, phase="eval", when="at the first validation (after step 125)",
                        text="the eval graph compiles once more: validation runs under no_grad", fix="none",
                        expected=True)
    checks = (ForecastCheck(forecast, verdict="confirmed", observed=(
                  "forward: 0/0: GLOBAL_STATE changed: grad_mode torch._dynamo.guards.GuardManager.check_verbose",)),
              ForecastCheck(None, observed=("forward: 0/1: ___stack0 == 3.4",), verdict="not predicted"))
    narrow_compile_panel.add_events([RunFinished(steps=250, epochs=2, seconds=9.0, stopped=False,
                                                 results=RunResults(recompile_forecast=checks))])
    view = narrow_compile_panel.forecast
    narrow_compile_panel.tabs.setCurrentWidget(view)
    assert view.entries[0].title() == "✓ happened as predicted — at the first validation (after step 125)"
    qtbot.waitUntil(lambda: view.widget().width() <= view.viewport().width())
    qtbot.waitUntil(lambda: not clipped(view.widget()), timeout=2000)


def test_check_with_fullgraph_answers_under_the_button_and_keeps_it_in_view(narrow_compile_panel, qtbot):
    """The answer used to appear above the first card while the view stayed where it was: a user who pressed the
    button further down saw neither. Here the button is the last thing in view when pressed."""
    cards = narrow_compile_panel.cards
    button = cards.cards[0].findChild(QWidget, "cardFullgraph")
    qtbot.waitUntil(lambda: cards.verticalScrollBar().maximum() > 0)  # the cards are laid out, taller than the dock
    bottom = button.mapTo(cards.widget(), QPoint(0, button.height()))
    cards.ensureVisible(bottom.x(), bottom.y(), 0, 0)
    assert cards.verticalScrollBar().value() > 0  # the first card's button is below the dock's first screen
    qtbot.mouseClick(button, Qt.LeftButton)
    cards.show_fullgraph(FullgraphCheck(ok=False, backend="aot_eager", seconds=1.2, type="Unsupported Tensor.item()",
                                        frames=(Frame("/home/u/model.py", 15, "forward", "s = h.max().item()"),)))
    result = cards.fullgraph_result
    assert result.text().startswith("✗ fullgraph fails: Unsupported Tensor.item() at model.py:15")

    def shown(widget: QWidget) -> bool:
        return widget.isVisible() and in_view(cards, QRect(widget.mapTo(cards.viewport(), QPoint(0, 0)),
                                                           widget.size()))

    QCoreApplication.sendPostedEvents(None, QEvent.LayoutRequest)  # where the card and the list end up
    QCoreApplication.processEvents()
    assert shown(result) and shown(button)
    assert result.mapTo(cards.widget(), QPoint(0, 0)).y() > button.mapTo(cards.widget(), QPoint(0, 0)).y()
