"""Compile time by stage: where each compiled graph's compile went (Dynamo, AOTAutograd, Inductor's lowering, code
generation, the kernels' C++ / Triton compile, autotuning), as a horizontal stacked bar per graph on one scale.

The data is the final compile report's `graph_times` (ground.compile_stages): a live run's at its end, a recorded
run's from its events. Hovering a segment names its stage, its seconds and its share of the graph's compile.
"""

from __future__ import annotations

from typing import Sequence

from PySide6.QtCore import QEvent, QPoint, QRectF, QSize, Qt
from PySide6.QtGui import QColor, QPainter, QPalette
from PySide6.QtWidgets import QLabel, QSizePolicy, QToolTip, QVBoxLayout, QWidget

from ....core.ground.compile_stages import STAGES, GraphCompileTime

ROW_HEIGHT = 22
BAR_HEIGHT = 14
GAP = 8  # pixels between a row's label, its bar and its total
LABEL_SHARE = 0.35  # at most this much of the width for the graphs' names
NO_TIMES = ("No compile time by stage yet: a compiled run's final report carries it (PyTorch 2.6 or later times "
            "each stage).")


def seconds_text(seconds: float) -> str:
    return f"{seconds * 1e3:.0f} ms" if seconds < 1 else f"{seconds:.2f} s"


class StageBars(QWidget):
    """The bars, painted: one row per graph (its name, its stages left to right, its total), the longest graph's
    bar the full width."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("stageBars")
        self.setAccessibleName("Compile time by stage")
        self.setMouseTracking(True)
        self.setSizePolicy(QSizePolicy.Expanding, QSizePolicy.Fixed)
        self.times: tuple[GraphCompileTime, ...] = ()

    def set_times(self, times: Sequence[GraphCompileTime]) -> None:
        self.times = tuple(times)
        self.setAccessibleDescription("; ".join(
            f"{t.label}: {seconds_text(t.total)}, " + ", ".join(
                f"{STAGES[k].name} {seconds_text(s)}" for k, s in t.seconds().items() if s > 0) for t in self.times))
        self.updateGeometry()
        self.update()

    def sizeHint(self) -> QSize:
        return QSize(360, max(1, len(self.times)) * ROW_HEIGHT + 4)

    def minimumSizeHint(self) -> QSize:
        return QSize(160, self.sizeHint().height())

    def _columns(self) -> tuple[float, float, float]:
        """(where bars start, their full width, where totals start), for the widget's width."""
        metrics = self.fontMetrics()
        label = min(max((metrics.horizontalAdvance(t.label) for t in self.times), default=0),
                    int(self.width() * LABEL_SHARE))
        total = metrics.horizontalAdvance("000.00 s")
        left = label + GAP + 2  # elidedText wants a pixel or two more than the text's advance
        return left, max(10.0, self.width() - left - total - GAP), self.width() - total

    def segments(self) -> list[tuple[QRectF, GraphCompileTime, str]]:
        """Every painted segment: (its rectangle, its graph, its stage key)."""
        if not self.times:
            return []
        left, full, _ = self._columns()
        longest = max(t.total for t in self.times) or 1.0
        out = []
        for row, time in enumerate(self.times):
            x, y = left, row * ROW_HEIGHT + (ROW_HEIGHT - BAR_HEIGHT) / 2
            for key, seconds in time.seconds().items():
                if seconds <= 0:
                    continue
                width = full * seconds / longest
                out.append((QRectF(x, y, width, BAR_HEIGHT), time, key))
                x += width
        return out

    def segment_at(self, point: QPoint) -> tuple[GraphCompileTime, str] | None:
        """The graph and stage under a point, or None (a sliver of a segment is widened to a pixel)."""
        for rect, time, key in self.segments():
            if rect.adjusted(-0.5, 0, 0.5, 0).contains(point.toPointF()):
                return time, key
        return None

    def paintEvent(self, event) -> None:
        painter = QPainter(self)
        painter.setRenderHint(QPainter.Antialiasing)
        left, _, totals = self._columns()
        text = self.palette().color(QPalette.WindowText)
        metrics = self.fontMetrics()
        for row, time in enumerate(self.times):
            top = row * ROW_HEIGHT
            painter.setPen(text)
            name = metrics.elidedText(time.label, Qt.ElideMiddle, int(left - GAP))
            painter.drawText(QRectF(0, top, left - GAP, ROW_HEIGHT), Qt.AlignVCenter | Qt.AlignLeft, name)
            painter.drawText(QRectF(totals, top, self.width() - totals, ROW_HEIGHT), Qt.AlignVCenter | Qt.AlignRight,
                             seconds_text(time.total))
        painter.setPen(Qt.NoPen)
        for rect, _, key in self.segments():
            painter.setBrush(QColor(STAGES[key].colour))
            painter.drawRect(rect)
        painter.end()

    def event(self, event: QEvent) -> bool:
        if event.type() == QEvent.ToolTip:
            found = self.segment_at(event.pos())
            if found is None:
                QToolTip.hideText()
                event.ignore()
                return True
            QToolTip.showText(event.globalPos(), self.tooltip(*found), self)
            return True
        return super().event(event)

    @staticmethod
    def tooltip(time: GraphCompileTime, key: str) -> str:
        seconds, stage = getattr(time, key), STAGES[key]
        share = seconds / time.total if time.total else 0.0
        return (f"{time.label} · {stage.name}: {seconds_text(seconds)} ({share:.0%} of {seconds_text(time.total)})\n"
                f"{stage.meaning}")


class CompileStagesView(QWidget):
    """The legend, the bars, and what is missing when there are none."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("compileStages")
        self.legend = QLabel(" ".join(
            f"<span style='color:{stage.colour}'>■</span>&nbsp;{stage.name}" for stage in STAGES.values()))
        self.legend.setObjectName("stageLegend")
        self.legend.setWordWrap(True)
        self.legend.setToolTip("\n".join(f"{stage.name}: {stage.meaning}" for stage in STAGES.values()))
        self.bars = StageBars()
        self.note = QLabel(NO_TIMES)
        self.note.setObjectName("stageNote")
        self.note.setWordWrap(True)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.legend)
        layout.addWidget(self.bars)
        layout.addWidget(self.note)
        layout.addStretch(1)
        self.show_times(())

    def show_times(self, times: Sequence[GraphCompileTime]) -> None:
        """A run's graphs (its final CompileReport's graph_times); none: say where they come from."""
        self.bars.set_times(times)
        self.bars.setVisible(bool(times))
        self.legend.setVisible(bool(times))
        self.note.setVisible(not times)

    def clear(self) -> None:
        self.show_times(())
