"""Trouble, pushed to the user instead of waiting to be seen: the alert rules (torch-free).

`AlertWatch` reads what a run emits (its Step, LayerStats, CompileEvent, AmpSkipped and EpochEnd events, and each
read-back's raw losses) and answers with `Alert`s: each says what happened at which step, what to do, and where the
fix is (`Alert.panel`). It runs in the run's own process, at the read-backs (instruments.alerting), so an alert is
recorded with the run, reaches a headless run's terminal and a remote run's window alike, and can be replayed
over a recorded run's events. Each rule fires once per run (per layer, where it names one): an alert is news, not
a stream. The thresholds are settings of the run (`AlertThresholds.of`)."""

from __future__ import annotations

import math
import statistics
from collections import deque
from dataclasses import dataclass
from typing import Any, Iterable

from .codec import Record

# rule → (severity, what it watches, in words). The panel an alert points at is decided where it fires.
ALERT_RULES: dict[str, tuple[str, str]] = {
    "loss_not_finite": ("error", "the loss became NaN or infinite"),
    "loss_exploded": ("error", "the loss grew far beyond the run's first loss"),
    "grad_exploding": ("warning", "the gradient norm jumped far above the run's own history"),
    "grad_vanishing": ("warning", "a layer's gradient is a tiny share of the largest layer's"),
    "dead_units": ("warning", "most of a layer's ReLU inputs never fire"),
    "loss_plateau": ("info", "the loss stopped improving"),
    "loss_scale_collapse": ("warning", "fp16's loss scale fell below 1: gradients overflow even unscaled"),
    "recompile_storm": ("warning", "many recompiles in a short stretch of steps"),
    "recompile_limit": ("warning", "a function is about to reach the recompile limit"),
    "graph_break": ("warning", "a new graph break appeared mid-run"),
    "throughput_drop": ("warning", "throughput fell well below the run's own steady rate"),
    "memory_near_limit": ("warning", "memory use came close to the device's"),
    "straggler": ("warning", "one rank is persistently slower than the others, which wait for it"),
}
SEVERITIES = ("info", "warning", "error")

# Where an alert's fix is: a setting of the setup form ("setting:<name>") or a dock of the window.
PANEL_MODEL, PANEL_COMPILE, PANEL_SYSTEM = "model", "compile", "system"

EXPLODED_FACTOR = 100.0  # a loss this many times the first has blown up: alerted, and the engine fails the run
GRAD_HISTORY = 3  # samples of the gradient norm before "far above its history" means anything
DEAD_SHARE = 0.5  # a layer whose inputs are more than half dead units
VANISH_SAMPLES = 2  # consecutive samples a layer's gradient must stay vanishingly small
RECOMPILE_WINDOW = 100  # steps: a recompile storm is `recompile_storm` recompiles within this many
THROUGHPUT_WINDOW_S = 2.0  # seconds of steady steps per throughput reading (a read-back block alone is noise)
THROUGHPUT_HISTORY = 3  # readings before a fall means anything


@dataclass(frozen=True)
class Alert(Record):
    """Something went wrong (or is about to), at a step: an event of the run, a marker on its step axis."""

    step: int
    rule: str  # a key of ALERT_RULES
    severity: str  # "info" | "warning" | "error"
    title: str  # what happened, with the figures, in one line
    advice: str  # what to do about it
    panel: str = ""  # where the fix is: "setting:lr", "model", "compile", "system"; "" when nowhere in particular
    layer: str = ""  # the layer it is about (LayerStat.name); "" when the whole run


def alert_line(alert: Alert) -> str:
    """How an alert reads in one line (a terminal, the window's Log): 'alert (warning, step 8): … — what to do'."""
    return f"alert ({alert.severity}, step {alert.step}): {alert.title} — {alert.advice}"


def divergence_hint(amp: str) -> str:
    """What to try when the loss blew up, for the run's precision: a lower learning rate always; under fp16, bf16
    (its range does not overflow); under bf16, full precision. A run without AMP is not told to turn it off."""
    lower = "lower the learning rate (10× smaller is a good first try)"
    return lower + {"fp16": ", or use bf16 instead of fp16", "bf16": ", or turn AMP off (bf16 keeps fewer digits)"
                    }.get(amp, "")


@dataclass(frozen=True)
class AlertThresholds(Record):
    """The settings the rules read (TrainConfig's alert_* fields), so a run's rules are a plain record."""

    grad_factor: float = 10.0  # exploding: this many times the median gradient norm so far; vanishing: 1/factor³
    plateau_steps: int = 0  # the loss has not improved by 1% for this many steps; 0 = off
    throughput_drop: float = 0.5  # a share: throughput below (1 - this) × the run's median
    memory_share: float = 0.9  # a share of the device's memory
    recompile_storm: int = 5  # recompiles within RECOMPILE_WINDOW steps
    amp: str = "off"  # the run's mixed precision: what a diverged run's hint offers depends on it

    @classmethod
    def of(cls, config: Any) -> AlertThresholds:
        """The thresholds of a TrainConfig (anything with its alert_* attributes)."""
        return cls(grad_factor=config.alert_grad_factor, plateau_steps=config.alert_plateau_steps,
                   throughput_drop=config.alert_throughput_drop, memory_share=config.alert_memory_share,
                   recompile_storm=config.alert_recompile_storm, amp=getattr(config, "amp", "off"))


class AlertWatch:
    """The rules' state over one run. Feed it every event the run emits (`observe`) and each read-back's raw losses
    (`losses`, before the engine fails a diverged run); each returns the alerts that fired."""

    def __init__(self, thresholds: AlertThresholds, memory_limit_mib: float | None = None,
                 memory_where: str = "the device"):
        """`memory_limit_mib`: the device's memory (the machine's on the CPU); None: the memory rule is off."""
        self.thresholds = thresholds
        self.memory_limit_mib = memory_limit_mib
        self.memory_where = memory_where
        self.fired: set[tuple[str, str]] = set()
        self.first_loss: float | None = None
        self.grad_norms: list[float] = []
        self.vanishing: dict[str, int] = {}  # layer → consecutive samples its gradient vanished
        self.recompiles: deque[int] = deque()  # steps of recent recompiles
        self.epochs_ended = 0
        self.window_samples = 0.0  # steady samples and seconds of the throughput reading being gathered
        self.window_seconds = 0.0
        self.throughputs: list[float] = []
        self.best_loss = math.inf  # the plateau rule: the best smoothed loss, and the step it was reached
        self.best_step = 0
        self.smoothed: float | None = None

    # -- the read-back's raw losses (some are never Step events: the run fails on them) --------------------------
    def losses(self, first_step: int, losses: Iterable[float]) -> list[Alert]:
        alerts: list[Alert] = []
        for i, loss in enumerate(losses):
            step = first_step + i
            if self.first_loss is None and math.isfinite(loss):
                self.first_loss = loss
            if not math.isfinite(loss):
                alerts += self._fire(step, "loss_not_finite", f"the loss is {loss} at step {step}",
                                     f"{divergence_hint(self.thresholds.amp)}; the run fails here", "setting:lr")
                break
            if self.first_loss and loss > EXPLODED_FACTOR * self.first_loss:
                alerts += self._fire(step, "loss_exploded", f"the loss went from {self.first_loss:.3g} to "
                                     f"{loss:.3g} at step {step}",
                                     f"{divergence_hint(self.thresholds.amp)}; the run fails here", "setting:lr")
                break
        return alerts

    # -- the run's events ----------------------------------------------------------------------------------------
    def observe(self, event: Any) -> list[Alert]:
        kind = type(event).__name__
        handler = getattr(self, f"_on_{kind}", None)
        return handler(event) if handler is not None else []

    def _on_Step(self, step: Any) -> list[Alert]:
        alerts = self._plateau(step.step, step.loss)
        if step.loss_scale is not None and step.loss_scale < 1.0:
            alerts += self._fire(step.step, "loss_scale_collapse", f"fp16's loss scale fell to {step.loss_scale:g} at "
                                 f"step {step.step}: the gradients overflow fp16 even unscaled",
                                 "train in bf16 (same speed on recent GPUs, no scaling needed), or lower the learning "
                                 "rate", "setting:amp")
        alerts += self._memory(step)
        if step.steady and step.step_seconds > 0:
            alerts += self._throughput(step)
        return alerts

    def _on_LayerStats(self, stats: Any) -> list[Alert]:
        alerts: list[Alert] = []
        norm = stats.grad_norm
        history = self.grad_norms
        if len(history) >= GRAD_HISTORY and math.isfinite(norm):
            median = statistics.median(history)
            if median > 0 and norm > self.thresholds.grad_factor * median:
                alerts += self._fire(stats.step, "grad_exploding", f"the gradient norm is {norm:.3g} at step "
                                     f"{stats.step}, {norm / median:.0f}× its median so far ({median:.3g})",
                                     "lower the learning rate, or clip gradients; the Model dock shows which layer "
                                     "it starts in", "setting:lr")
        history.append(norm)
        largest = max((layer.grad_norm for layer in stats.layers), default=0.0)
        vanished = []
        for layer in stats.layers:
            tiny = largest > 0 and layer.grad_norm < largest / self.thresholds.grad_factor ** 3
            self.vanishing[layer.name] = self.vanishing.get(layer.name, 0) + 1 if tiny else 0
            if self.vanishing[layer.name] >= VANISH_SAMPLES:
                vanished.append(layer)
            if layer.dead_fraction > DEAD_SHARE:
                alerts += self._fire(stats.step, "dead_units", f"{layer.dead_fraction:.0%} of the inputs of "
                                     f"{layer.name} were 0 for the whole batch at step {stats.step}: the ReLUs "
                                     f"before it never fire", "check the initialisation (biases far below 0 kill "
                                     "ReLUs), lower the learning rate, or use LeakyReLU/GELU", PANEL_MODEL,
                                     layer.name)
        if vanished:
            smallest = min(vanished, key=lambda layer: layer.grad_norm)
            size = ("0" if not smallest.grad_norm else
                    f"{smallest.grad_norm:.2g}, {largest / smallest.grad_norm:.2g}× smaller than the largest layer's")
            names = ", ".join(layer.name for layer in vanished)
            learn = "it barely learns" if len(vanished) == 1 else "they barely learn"
            alerts += self._fire(stats.step, "grad_vanishing", f"the gradient vanishes before it reaches {names}: "
                                 f"{smallest.name}'s is {size}; {learn}", "use ReLU-family activations (sigmoid and "
                                 "tanh saturate), fewer layers, residual connections or normalisation", PANEL_MODEL,
                                 smallest.name, per_layer=False)
        return alerts

    def _on_CompileEvent(self, event: Any) -> list[Alert]:
        if event.kind == "recompile_limit":
            return self._fire(event.step, "recompile_limit", event.title, "look at the recompiles' guards in the "
                              "Compile dock: mark the varying dimension dynamic, or raise the recompile limit",
                              PANEL_COMPILE)
        if event.kind == "recompile" and self._mid_run(event):
            self.recompiles.append(event.step)
            while self.recompiles and self.recompiles[0] <= event.step - RECOMPILE_WINDOW:
                self.recompiles.popleft()
            count = len(self.recompiles)
            if count >= self.thresholds.recompile_storm:
                return self._fire(event.step, "recompile_storm", f"{count} recompile{'s' if count != 1 else ''} in "
                                  f"the {RECOMPILE_WINDOW} steps before step {event.step}", "each costs a compile: the "
                                  "Compile dock names the guard that keeps failing; mark that dimension dynamic",
                                  PANEL_COMPILE)
        if event.kind == "graph_break" and self._mid_run(event):
            where = f" at {event.where}" if event.where else ""
            return self._fire(event.step, "graph_break", f"a new graph break{where} at step {event.step}: "
                              f"{event.title}", "the code after it runs eagerly: the Compile dock explains the "
                              "break and how to avoid it", PANEL_COMPILE, event.where)
        return []

    def _on_EpochEnd(self, event: Any) -> list[Alert]:
        self.epochs_ended += 1
        return []

    def _mid_run(self, event: Any) -> bool:
        """After the compiles every run has: the first step's, and the first validation's."""
        return event.step > 1 if event.phase == "train" else self.epochs_ended >= 1

    # -- the rules that need a history ---------------------------------------------------------------------------
    def _plateau(self, step: int, loss: float) -> list[Alert]:
        steps = self.thresholds.plateau_steps
        if not steps or not math.isfinite(loss):
            return []
        alpha = 2.0 / (min(steps, 200) / 4 + 1)  # an EMA over about a quarter of the window
        self.smoothed = loss if self.smoothed is None else self.smoothed + alpha * (loss - self.smoothed)
        if self.smoothed < 0.99 * self.best_loss:
            self.best_loss, self.best_step = self.smoothed, step
            return []
        if step - self.best_step >= steps:
            return self._fire(step, "loss_plateau", f"the loss has not improved by 1% in {step - self.best_step} "
                              f"steps (best {self.best_loss:.3g} at step {self.best_step})", "lower the learning "
                              "rate, or stop here: more steps at this rate teach the model nothing",
                              "setting:lr_schedule")
        return []

    def _throughput(self, step: Any) -> list[Alert]:
        self.window_samples += step.samples_per_s * step.step_seconds
        self.window_seconds += step.step_seconds
        if self.window_seconds < THROUGHPUT_WINDOW_S:
            return []
        rate = self.window_samples / self.window_seconds
        self.window_samples = self.window_seconds = 0.0
        history = self.throughputs
        alerts: list[Alert] = []
        if len(history) >= THROUGHPUT_HISTORY:
            median = statistics.median(history)
            if rate < (1.0 - self.thresholds.throughput_drop) * median:
                alerts = self._fire(step.step, "throughput_drop", f"throughput fell to {rate:,.0f} samples/s at "
                                    f"step {step.step}, {1 - rate / median:.0%} below the run's median "
                                    f"({median:,.0f})", "another process may be using the device, or it is "
                                    "throttling: the plots' System tab shows CPU and GPU use", PANEL_SYSTEM)
        history.append(rate)
        return alerts

    def _memory(self, step: Any) -> list[Alert]:
        if not self.memory_limit_mib:
            return []
        used = step.memory.held_mib
        if used is None or used < self.thresholds.memory_share * self.memory_limit_mib:
            return []
        return self._fire(step.step, "memory_near_limit", f"{used:,.0f} MiB in use at step {step.step}: "
                          f"{used / self.memory_limit_mib:.0%} of {self.memory_where}'s {self.memory_limit_mib:,.0f} "
                          "MiB", "lower the batch size or the hidden size, or use bf16, before it runs out",
                          "setting:batch_size")

    def _fire(self, step: int, rule: str, title: str, advice: str, panel: str = "", layer: str = "",
              per_layer: bool = True) -> list[Alert]:
        """The alert, unless the rule already fired in this run (for this layer, when `per_layer`)."""
        key = (rule, layer if per_layer else "")
        if key in self.fired:
            return []
        self.fired.add(key)
        return [Alert(step=step, rule=rule, severity=ALERT_RULES[rule][0], title=title, advice=advice, panel=panel,
                      layer=layer)]
