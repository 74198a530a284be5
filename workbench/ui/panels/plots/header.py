"""The plots panel's header controls (the smoothing slider and its value, the x axis box, the "Show as table"
button) and the empty loss plot's hint: widgets made here, wired to the panel by the callables given."""

from __future__ import annotations

from typing import Callable, Sequence

import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox, QGridLayout, QLabel, QMenu, QSlider, QStyle, QToolButton

from ....core.history.x_axis import X_AXES
from .hints import EMPTY_HINT

SLIDER_STEPS = 1000  # the smoothing slider's resolution: weights 0, 0.001, … 0.999


def controls(slider: QSlider, value: QLabel, box: QComboBox) -> QGridLayout:
    """The smoothing, and the x axis under it: side by side they widened the header row (the plots' least width)
    past what a 1366-pixel screen leaves them; one above the other they take the figures' height."""
    grid = QGridLayout()
    grid.setContentsMargins(6, 0, 6, 0)
    grid.setVerticalSpacing(0)
    grid.addWidget(QLabel("Smoothing"), 0, 0)
    grid.addWidget(slider, 0, 1)
    grid.addWidget(value, 0, 2)
    label = QLabel("X axis")
    grid.addWidget(label, 1, 0)
    grid.addWidget(box, 1, 1, 1, 2, Qt.AlignLeft)
    label.setBuddy(box)
    grid.setColumnStretch(1, 1)
    return grid


def smoothing_slider(weight: float, changed: Callable[[float], None]) -> tuple[QSlider, QLabel]:
    """The smoothing slider at `weight`, calling `changed(weight)` on release, and the label of its value."""
    slider = QSlider(Qt.Horizontal)
    slider.setMinimumWidth(80)  # never squeezed away by a wide dock
    slider.setTracking(False)  # re-smooth once, on release: a drag would redo whole buffers
    slider.setObjectName("smoothingSlider")
    slider.setAccessibleName("Smoothing")
    slider.setRange(0, SLIDER_STEPS - 1)
    slider.setValue(round(weight * SLIDER_STEPS))
    slider.setToolTip("Exponential moving average, debiased as in TensorBoard: 0 draws the raw values; the first "
                      "point is always the raw one")
    slider.valueChanged.connect(lambda value: changed(value / SLIDER_STEPS))
    return slider, QLabel(f"{weight:.3f}")


def x_axis_box(changed: Callable[[str], None]) -> QComboBox:
    """The step plots' x axis: step, epoch, wall time or time since start, each choice's meaning its tooltip;
    `changed(kind)` when another is chosen."""
    box = QComboBox()
    box.setObjectName("xAxisBox")
    box.setAccessibleName("X axis")
    for i, axis in enumerate(X_AXES):
        box.addItem(axis.name, axis.kind)
        box.setItemData(i, axis.meaning[0].upper() + axis.meaning[1:], Qt.ToolTipRole)
    box.setToolTip("What the loss, accuracy, throughput and memory plots have along x (the System plot is always in "
                   "seconds):\n" + "\n".join(f"{axis.name}: {axis.meaning}" for axis in X_AXES))
    box.currentIndexChanged.connect(lambda index: changed(box.itemData(index)))
    return box


def table_button(plots: Sequence[pg.PlotWidget], titles: dict, show_table: Callable[[pg.PlotWidget], None]
                 ) -> QToolButton:
    """'Show as table': a plot's values as a table, the text alternative to reading its curves (a plot's own
    context menu has it too; this button is the keyboard's way there). An icon, not a word: the row it shares with
    the figures sets the plots' least width, and at 1366 pixels a word took what the docks' tabs needed."""
    button = QToolButton()
    button.setIcon(button.style().standardIcon(QStyle.SP_FileDialogDetailedView))
    button.setPopupMode(QToolButton.InstantPopup)
    button.setObjectName("plotTableButton")
    button.setAccessibleName("Show as table")
    button.setToolTip("Show a plot's values as a table: to read them (a screen reader too) or copy them")
    menu = QMenu(button)
    for plot in plots:
        menu.addAction(titles[plot], lambda plot=plot: show_table(plot))
        plot.getViewBox().menu.addAction("Show as table…", lambda plot=plot: show_table(plot))
    button.setMenu(menu)
    return button


def empty_state(plot: pg.PlotWidget) -> pg.TextItem:
    """A hint centred in `plot`'s data area, in its pixels rather than in data coordinates (the axes of an empty
    plot can be anywhere)."""
    view = plot.getPlotItem().getViewBox()
    text = pg.TextItem(EMPTY_HINT, anchor=(0.5, 0.5))
    text.setParentItem(view)

    def centre():
        text.setPos(view.rect().center())

    view.sigResized.connect(centre)
    centre()
    return text
