"""The learning rate's field: a rate as people write one (1e-5, 5e-6, 0.000005, 3e-4, 1.04e-03), kept as typed.

A QDoubleSpinBox fits a rate badly. It holds a fixed number of decimals, so a rate below the last one became 0
(the LR finder sweeps from 1e-6), and it refuses the letters of 1e-5 key by key, so what was left ("15") was taken
for fifteen without a word. This box reads its whole text as Python reads a float, shows a value compactly
(`rate_text`) once editing ends, and never rewrites text it cannot read: the form hands that text on as it is,
TrainConfig's validation refuses it in its own words, and Train stays off until it is fixed. Its range is the core's
too: the form explains a rate out of range instead of clamping it. The arrows (and a focused wheel) double and halve
the rate, up to the declared top: a rate is tuned by factors; adding a fixed step means nothing across decades.
"""

from __future__ import annotations

from PySide6.QtCore import QSize, Signal
from PySide6.QtWidgets import QAbstractSpinBox, QWidget

FACTOR = 2  # per step of the arrows: doubling and halving are exact in binary, so 0.004 steps to 0.008, not 0.00800…1
WIDE = "1.25e-05"  # the box is sized to show a rate this long


def rate_text(value: float) -> str:
    """'0.004', '1e-05', '5e-06': %g, or the shortest text that reads back exactly where %g would round."""
    text = f"{value:g}"
    return text if float(text) == value else repr(value)


class RateBox(QAbstractSpinBox):
    """A spin box over free text: `value()` is the rate typed, or the text itself when it reads as no number."""

    valueChanged = Signal()  # on every edit: the value may now be another number, or none

    def __init__(self, high: float, parent: QWidget | None = None):
        super().__init__(parent)
        self.high = high
        self.lineEdit().setPlaceholderText("e.g. 0.001 or 1e-3")
        self.lineEdit().textChanged.connect(self.valueChanged)
        self.editingFinished.connect(self._tidy)

    def value(self) -> float | str:
        text = self.text().strip()
        try:
            return float(text)
        except ValueError:
            return text

    def setValue(self, value: float) -> None:
        self.lineEdit().setText(rate_text(value))

    def stepBy(self, steps: int) -> None:
        value = self._steppable()
        if value is not None:  # stepUp() and stepDown() call this whatever stepEnabled says
            self.setValue(min(value * FACTOR ** steps, self.high))

    def stepEnabled(self) -> QAbstractSpinBox.StepEnabledFlag:
        value = self._steppable()
        if value is None:
            return QAbstractSpinBox.StepEnabledFlag.StepNone
        down = QAbstractSpinBox.StepEnabledFlag.StepDownEnabled
        return down | QAbstractSpinBox.StepEnabledFlag.StepUpEnabled if value < self.high else down

    def _steppable(self) -> float | None:
        """The rate when the arrows can act on it: a number above 0 (text, 0, a negative number or nan: none)."""
        value = self.value()
        return value if isinstance(value, float) and value > 0 else None

    def sizeHint(self) -> QSize:
        return self._fitting(super().sizeHint())

    def minimumSizeHint(self) -> QSize:
        return self._fitting(super().minimumSizeHint())

    def _fitting(self, frame: QSize) -> QSize:
        """The base class sizes the box around no text (it has no value to measure): add a rate's width."""
        return QSize(frame.width() + self.fontMetrics().horizontalAdvance(WIDE), frame.height())

    def _tidy(self) -> None:
        """Editing ended: a number is shown compactly (0.000005 as 5e-06); text that is none stays as typed."""
        value = self.value()
        if isinstance(value, float):
            self.setValue(value)
