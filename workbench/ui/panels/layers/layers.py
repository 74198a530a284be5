"""Model dock: inside the network while it trains. *Layers*: the layer table torchinfo prints (each module under
its parent, its kind, parameters, mult-adds and output shape, and the totals), from the run's ModelSummary.
*Statistics*: each layer's gradient norm, weight norm, update-to-weight ratio or dead inputs over the sampled steps
(one curve a layer), above TensorBoard's distribution view of one layer's weights, gradients or outputs. The views
are model_views.py's; this routes the events to them and keeps the header, which says what is shown or, until a
run's statistics come, when they will.

A run samples its layers at steps 1, 2, 4 … 32, then every `stats_every` steps (LayerStats): rare, but a batch of
events is scanned for them as it comes, so the drawing waits for a ~4 Hz timer and only follows new samples. A new
run (RunStarted) empties the dock; a recorded run opened from the Runs dock brings its own back."""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QLabel, QSizePolicy, QSplitter, QTabWidget, QVBoxLayout, QWidget

from ....core.ground.alerts import Alert
from ....core.ground.config import label_of, setting_named
from ....core.ground.events import Event, RunStarted
from ....core.ground.layer_stats import EARLY_STEPS, LayerStats, ModelSummary
from .views import Distributions, LayerCurves, LayerHistory, LayerTable, totals_text
from ..plots.style import DARK, LIGHT, style_plot

REDRAW_MS = 250
EARLY = f"{', '.join(map(str, EARLY_STEPS[:3]))} … {EARLY_STEPS[-1]}"  # the steps every run samples first
DEFAULT_EVERY = setting_named("stats_every").default
ALERT_FIGURES = {"dead_units": "dead_fraction", "grad_vanishing": "grad_norm", "grad_exploding": "grad_norm"}


def waiting_text(every: int) -> str:
    """The empty state: when the statistics come, or that the run takes none."""
    if not every:
        return (f"This run takes no per-layer statistics ({label_of('stats_every')}: 0, in Setup → Statistics and "
                "alerts).")
    return f"Per-layer statistics appear here while a run trains (every {every:,} steps, and at steps {EARLY})."


class LayersPanel(QWidget):
    """`add_events` takes RunStarted, ModelSummary and LayerStats (the others are ignored); `clear()` before
    another run is shown; `show_alert` shows the layer and the figure an alert is about."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("modelPanel")
        self.every = DEFAULT_EVERY  # the run's sampling interval: the header's promise
        self.summary: ModelSummary | None = None
        self.history = LayerHistory()
        self.header = QLabel()
        self.header.setObjectName("modelHeader")
        self.header.setTextFormat(Qt.PlainText)
        self.header.setWordWrap(True)
        self.header.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Preferred)  # never widens the dock
        self.table = LayerTable()
        self.totals = QLabel()
        self.totals.setObjectName("modelTotals")
        self.totals.setWordWrap(True)
        self.totals.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Preferred)
        self.curves = LayerCurves(self.history)
        self.distributions = Distributions(self.history)
        layers = QWidget()
        column = QVBoxLayout(layers)
        column.setContentsMargins(0, 0, 0, 0)
        column.addWidget(self.table, 1)
        column.addWidget(self.totals)
        self.statistics = QSplitter(Qt.Vertical)
        self.statistics.setObjectName("modelStatistics")
        self.statistics.addWidget(self.curves)
        self.statistics.addWidget(self.distributions)
        self.tabs = QTabWidget()
        self.tabs.setObjectName("modelTabs")
        for widget, title, tip in (
                (layers, "Layers", "The model's modules as torchinfo lists them: kind, parameters, multiply-adds "
                                   "and output shape for the run's first batch"),
                (self.statistics, "Statistics", "Each layer's norms, update ratio and dead inputs over the sampled "
                                                "steps; one layer's weights, gradients or outputs as a distribution")):
            self.tabs.setTabToolTip(self.tabs.addTab(widget, title), tip)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.header)
        layout.addWidget(self.tabs, 1)
        self.timer = QTimer(self, singleShot=True, interval=REDRAW_MS)
        self.timer.timeout.connect(self.redraw)
        self.clear()
        self.set_dark(False)

    # -- events -------------------------------------------------------------------------------------------------
    def add_events(self, batch: list[Event]) -> None:
        for event in batch:
            if isinstance(event, LayerStats):
                self.history.add(event)
                if not self.timer.isActive():
                    self.timer.start()
            elif isinstance(event, ModelSummary):
                self.summary = event
                self.table.show_summary(event)
                self.totals.setText(totals_text(event))
                self._describe()
            elif isinstance(event, RunStarted):
                self.clear(event.config.stats_every)

    def clear(self, every: int | None = None) -> None:
        """Empty, as before any run; `every`: the next run's sampling interval (the header says it)."""
        self.timer.stop()
        if every is not None:
            self.every = every
        self.summary = None
        self.history.clear()
        self.table.clear()
        self.totals.setText("")
        self.curves.clear()
        self.distributions.clear()
        self._describe()

    def redraw(self) -> None:
        """Draw the samples that came since the last time (the timer calls it; a recorded run and tests may too)."""
        self.timer.stop()
        self.curves.redraw()
        self.distributions.redraw()
        self._describe()

    def _describe(self) -> None:
        history, summary = self.history, self.summary
        if not history.samples and summary is None:
            self.header.setText(waiting_text(self.every))
            return
        parts = [f"{summary.rows[0].kind if summary.rows else 'The model'}: {summary.params:,} parameters"
                 if summary is not None else "No layer table"]
        if history.samples:
            parts.append(f"statistics of {len(history.layers)} layers at {history.samples} steps, the last "
                         f"{history.last_step:,}")
        elif self.every:
            parts.append(f"statistics from step 1, then every {self.every:,} steps")
        else:
            parts.append("no per-layer statistics in this run")
        self.header.setText(" · ".join(parts))

    # -- the rest -------------------------------------------------------------------------------------------------
    def show_alert(self, alert: Alert) -> None:
        """The layer an alert is about, in the figure that shows what it saw, and its row in the table."""
        self.redraw()
        self.tabs.setCurrentWidget(self.statistics)
        self.curves.set_figure(ALERT_FIGURES.get(alert.rule, "grad_norm"))
        if alert.layer:
            self.curves.highlight(alert.layer)
            self.distributions.select(alert.layer)
            self.table.select_layer(alert.layer)

    def set_dark(self, dark: bool) -> None:
        """Follow the window's colour scheme: the plots' backgrounds, axes and legends."""
        theme = DARK if dark else LIGHT
        for plot in (self.curves.plot, self.distributions.plot):
            style_plot(plot, theme)
