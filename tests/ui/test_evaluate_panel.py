"""The Evaluate panel, fed kernel answers directly: no kernel, no run (the job itself is tested in tests/core)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from PySide6.QtCore import Qt

from workbench.core.ground.answers import EvaluationView
from workbench.ui.panels.evaluate import EMPTY_TEXT, INDEX_ROLE, EvaluatePanel

from ..support.evaluation import synthetic_answer


@pytest.fixture(scope="module")
def sample_answer(trained_run) -> EvaluationView:
    """The real job's answer on the bundled sample (computed in this test process: a few hundredths of a second)."""
    from workbench.core.ground.job_requests import EvaluateView
    from workbench.core.kernel.job_handlers import evaluate_view

    return evaluate_view(EvaluateView(str(trained_run.checkpoint)))


@pytest.fixture
def panel(qtbot):
    panel = EvaluatePanel()
    qtbot.addWidget(panel)
    panel.resize(1100, 700)
    panel.show()
    qtbot.waitExposed(panel)
    return panel


def click_cell(qtbot, panel, row: int, column: int) -> None:
    table = panel.confusion
    index = table.model().index(row, column)
    table.scrollTo(index)
    qtbot.mouseClick(table.viewport(), Qt.LeftButton, pos=table.visualRect(index).center())


def gallery_captions(panel) -> list[str]:
    model = panel.gallery.model()
    return [model.index(r, 0).data() for r in range(model.rowCount())]


def test_clicking_a_confusion_cell_shows_exactly_its_images(qtbot, panel, sample_answer):
    panel.set_result(sample_answer, "run 7")
    confusion = np.array(sample_answer.confusion)
    labels, predicted = np.array(sample_answer.labels), np.array(sample_answer.predicted)
    off = np.argwhere(confusion - np.diag(np.diag(confusion)) > 0)
    true, pred = (int(v) for v in off[np.argmax(confusion[off[:, 0], off[:, 1]])])  # the largest confusion
    for row, column in ((true, pred), (true, true)):  # a mistake cell, then a big diagonal one
        click_cell(qtbot, panel, row, column)
        expected = np.flatnonzero((labels == row) & (predicted == column)).tolist()
        assert panel.gallery.model().rowCount() == confusion[row, column] == len(expected)
        assert panel.gallery_indices() == expected
        images = "image" if confusion[row, column] == 1 else "images"
        assert panel.gallery_title.text() == (f"true {row} → predicted {column}: {confusion[row, column]} {images}")
        first = expected[0]
        assert gallery_captions(panel)[0] == f"{column} · {sample_answer.confidence[first]:.0%}"
    assert panel.headline.text() == (f"accuracy {sample_answer.accuracy:.1%} on 1,000 images "
                                     f"(mnist-sample val)")


def test_confusion_cells_are_a_row_normalised_heatmap(panel):
    answer = synthetic_answer([0, 0, 0, 0, 1, 2], [0, 0, 0, 1, 1, 0], [0.9] * 6, [0.9, 0.9, 0.9, 0.2, 0.9, 0.1])
    panel.set_result(answer, "synthetic")
    table = panel.confusion
    assert [table.horizontalHeaderItem(c).text() for c in range(3)] == ["cat", "dog", "owl"]
    assert [table.verticalHeaderItem(r).text() for r in range(3)] == ["cat", "dog", "owl"]
    assert table.item(0, 0).text() == "3" and table.item(0, 1).text() == "1"
    assert table.item(0, 1).toolTip() == "true cat → predicted dog: 1 image"
    lightness = {cell: table.item(*cell).background().color().lightness() for cell in ((0, 0), (1, 1), (0, 2))}
    assert lightness[(1, 1)] < lightness[(0, 0)] < lightness[(0, 2)]  # 1/1 darker than 3/4, darker than 0/4
    assert table.item(0, 2).background().color().name() == "#ffffff"


def test_per_class_table_sorts_numerically(panel):
    # support: cat 12, dog 3, owl 100 — as text "100" < "12" < "3"
    labels = [0] * 12 + [1] * 3 + [2] * 100
    predicted = [0] * 11 + [2] + [1] * 3 + [2] * 90 + [0] * 10
    answer = synthetic_answer(labels, predicted, [0.8] * 115, [0.8] * 115)
    panel.set_result(answer, "synthetic")
    view, model = panel.scores, panel.scores.model()

    def column(c):
        return [model.item(r, c).text() for r in range(model.rowCount())]

    view.sortByColumn(4, Qt.AscendingOrder)
    assert column(0) == ["dog", "cat", "owl"] and column(4) == ["3", "12", "100"]
    view.sortByColumn(1, Qt.DescendingOrder)  # precision: dog 100%, owl 90/91, cat 11/21
    assert column(0) == ["dog", "owl", "cat"]
    assert column(1) == ["100.0%", f"{90 / 91:.1%}", f"{11 / 21:.1%}"]
    view.sortByColumn(2, Qt.AscendingOrder)  # recall: owl 90%, cat 11/12, dog 100%
    assert column(0) == ["owl", "cat", "dog"]


def test_mistakes_and_label_errors_open_the_gallery(qtbot, panel):
    labels = [0, 1, 2, 0, 1, 2]
    predicted = [0, 2, 0, 1, 1, 1]
    confidence = [0.9, 0.6, 0.99, 0.5, 0.8, 0.7]
    self_confidence = [0.9, 0.01, 0.005, 0.4, 0.8, 0.3]
    panel.set_result(synthetic_answer(labels, predicted, confidence, self_confidence), "synthetic")
    qtbot.mouseClick(panel.label_errors_button, Qt.LeftButton)
    assert panel.gallery_indices() == [2, 1, 5, 3]
    assert gallery_captions(panel)[:2] == ["label owl · 0%", "label dog · 1%"]
    assert panel.gallery_title.text().startswith("Likely label errors: 4 images")
    qtbot.mouseClick(panel.mistakes_button, Qt.LeftButton)
    assert panel.gallery_indices() == [2, 5, 1, 3]
    assert gallery_captions(panel) == ["owl→cat · 99%", "owl→dog · 70%", "dog→owl · 60%", "cat→dog · 50%"]
    model = panel.gallery.model()
    assert model.index(0, 0).data(INDEX_ROLE) == 2
    thumb = model.index(1, 0).data(Qt.DecorationRole).toImage()
    assert thumb.width() == 48 and thumb.pixelColor(24, 24).value() == 5  # sample 5's pixels, scaled
    assert "labelled owl, predicted dog (70.0%)" in model.index(1, 0).data(Qt.ToolTipRole)
    click_cell(qtbot, panel, 0, 1)  # back to a cell after a list
    assert panel.gallery_indices() == [3]


def test_empty_busy_and_error_states_are_plain_text(qtbot, panel):
    assert not panel.content.isVisible() and panel.message.text() == EMPTY_TEXT
    with qtbot.waitSignal(panel.evaluateRequested):
        qtbot.mouseClick(panel.button, Qt.LeftButton)
    panel.set_busy("Evaluating run 3…")
    assert not panel.button.isEnabled() and panel.message.text() == "Evaluating run 3…"
    panel.set_error("<b>data root</b> /tmp/x does not exist")
    assert panel.message.textFormat() == Qt.PlainText and panel.button.isEnabled()
    broken = synthetic_answer([0, 1], [0, 1], [0.9, 0.9], [0.9, 0.9])
    broken = dataclasses.replace(broken, images=broken.images[:-8])
    panel.set_result(broken, "synthetic")
    assert panel.message.text().startswith("The evaluation could not be shown:")
    assert panel.evaluation is None and not panel.content.isVisible()
    panel.set_result(synthetic_answer([0, 1], [0, 1], [0.9, 0.9], [0.9, 0.9]), "a <i>checkpoint</i>.pt")
    assert panel.content.isVisible() and panel.message.text() == ""
    assert panel.source.textFormat() == Qt.PlainText and panel.source.text().startswith("a <i>checkpoint</i>.pt")
    assert panel.headline.text() == "accuracy 100.0% on 2 images (imagefolder val)"
    panel.clear()
    assert panel.gallery.model().rowCount() == 0 and not panel.content.isVisible()


def test_a_narrow_dock_puts_the_gallery_under_the_matrix(qtbot):
    from workbench.ui.panels.evaluate import EvaluatePanel

    panel = EvaluatePanel()
    qtbot.addWidget(panel)
    panel.show()
    panel.resize(900, 600)
    qtbot.waitUntil(lambda: panel.splitter.orientation() == Qt.Horizontal)
    panel.resize(380, 600)
    qtbot.waitUntil(lambda: panel.splitter.orientation() == Qt.Vertical)
    assert panel.minimumSizeHint().width() < 380
