"""The Dataset panel draws a `dataset_preview` answer computed in-process (no kernel, no run)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QWidget

from workbench.core.domain.preview import dataset_preview
from workbench.core.ground import pixels
from workbench.core.ground.answers import DataProblem
from workbench.ui.panels.dataset import EMPTY, DatasetPanel


@pytest.fixture(scope="module")
def folder_answer(tmp_path_factory):
    """An image folder with a full class, an empty one, a small one and an unreadable file."""
    from ..helpers import SAMPLES_DIR

    root = tmp_path_factory.mktemp("folder")
    for digit, (cls, n) in enumerate({"cats": 10, "dogs": 0, "owls": 4}.items()):
        (root / cls).mkdir()
        for i in range(n):
            (root / cls / f"{i}.png").write_bytes((SAMPLES_DIR / f"digit_{digit}.png").read_bytes())
    (root / "owls" / "broken.png").write_bytes(b"not a png")
    return dataset_preview("imagefolder", str(root))


@pytest.fixture
def panel(qtbot):
    widget = DatasetPanel()
    qtbot.addWidget(widget)
    widget.resize(400, 500)
    return widget


def test_bars_and_sample_rows_follow_the_answer(panel, folder_answer):
    panel.set_preview(dataclasses.replace(folder_answer, classes=("x",), counts={"train": (3,)}, samples=((),)))
    panel.set_preview(folder_answer)  # a second answer replaces the first: nothing of it stays on show
    shown = [w for name in ("datasetProblem", "datasetSamples") for w in panel.findChildren(QWidget, name)
             if not w.isHidden()]
    assert len(shown) == len(folder_answer.problems) + 1
    assert set(panel.bars) == {"train", "val"}
    for split, bars in panel.bars.items():
        assert bars.opts["height"].tolist() == list(folder_answer.counts[split])
    assert [name.text() for name, _ in panel.rows] == ["cats", "dogs", "owls"]
    assert [len(thumbs) for _, thumbs in panel.rows] == [8, 0, 4]
    assert all(t.pixmap().width() == 32 for _, thumbs in panel.rows for t in thumbs)
    counts = folder_answer.counts
    assert f"train {sum(counts['train'])} · val {sum(counts['val'])} · 3 classes" in panel.facts.text()
    assert "PNG 14;" in panel.facts.text() and not panel.chart.isHidden() and panel.status.isHidden()


def test_problems_are_shown_as_plain_text_by_level(panel, folder_answer):
    panel.set_preview(folder_answer)
    shown = {label.text().split("\n")[0]: label for label in panel.problems}
    expected = {p.message: p.level for p in folder_answer.problems}
    assert set(shown) == set(expected) and any("class 'dogs' has no images" in m for m in expected)
    assert any("owls/broken.png" in m for m in expected)
    for message, label in shown.items():
        assert label.textFormat() == Qt.PlainText
        assert ("#a15c00" if expected[message] == "warning" else "#b00020") in label.styleSheet()
    evil = "<b>bold</b><img src=x>"
    panel.set_preview(dataclasses.replace(folder_answer, problems=(DataProblem(level="error", message=evil, hint="h"),),
                                          classes=(evil, "b", "c")))
    assert panel.problems[0].text() == f"{evil}\n→ h" and panel.rows[0][0].text() == evil


def test_an_error_answer_shows_its_message_and_nothing_else(panel, tmp_path):
    answer = dataset_preview("imagefolder", str(tmp_path / "missing"))
    panel.set_preview(answer)
    assert len(panel.problems) == 1 and "does not exist" in panel.problems[0].text()
    assert panel.chart.isHidden() and panel.rows == [] and panel.bars == {}


def test_empty_busy_and_error_states(panel, qtbot):
    assert panel.status.text() == EMPTY and not panel.status.isHidden()
    panel.set_busy("Reading mnist…")
    assert panel.status.text() == "Reading mnist…" and not panel.refresh_button.isEnabled()
    panel.set_error("the kernel stopped")
    assert panel.status.text() == "the kernel stopped" and panel.refresh_button.isEnabled()
    with qtbot.waitSignal(panel.refreshRequested, timeout=1000):
        panel.refresh_button.click()
    panel.clear()
    assert panel.status.text() == EMPTY and panel.rows == [] and panel.problems == []


def test_thumbnails_show_the_sample_pixels(panel, folder_answer):
    panel.set_preview(folder_answer)
    first = panel.rows[0][1][0].pixmap().toImage().scaled(28, 28)
    expected = pixels.decode_one(folder_answer.samples[0][0])
    got = np.array([[first.pixelColor(x, y).red() for x in range(28)] for y in range(28)])
    assert np.abs(got.astype(int) - expected.astype(int)).mean() < 20 and expected.max() > 0
