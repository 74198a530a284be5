"""A sweep as one self-contained HTML page (`workbench sweep NAME --report FILE`): the best trial against the
defaults, the Pareto front of validation accuracy against samples/s, compile seconds and peak memory, parallel
coordinates of the settings searched, and every trial with its run. Inline SVG, no scripts, no network.
"""

from __future__ import annotations

from pathlib import Path

from ...ground.atomic import write_text_atomic
from .html import esc, table
from .page import CSS
from ..naming import run_name
from .svgchart import Axis, Dot, parallel_chart, scatter_chart
from ..sweeps import Trial, axis_ends, axis_position, best_trial, pareto_front

FRONT, BEST, OTHER = "#4c78a8", "#f58518", "#b8b8b8"
# The objectives other than accuracy (history/sweeps.OBJECTIVES), each a chart against it.
X_OBJECTIVES = {"samples_per_s": "samples/s", "compile_seconds": "compile seconds",
                "peak_memory_mib": "peak memory (MiB)"}


def write_sweep_report(out: str | Path, name: str, trials: list[Trial], parameters: list[str]) -> Path:
    out = Path(out)
    write_text_atomic(out, sweep_html(name, trials, parameters))
    return out


def sweep_html(name: str, trials: list[Trial], parameters: list[str]) -> str:
    sections = [_summary(trials, parameters), _pareto(trials), _parallel(trials, parameters),
                _trials(trials, parameters)]
    title = f"Sweep {name}"
    return (f"<!DOCTYPE html><html lang=en><head><meta charset=utf-8><title>{esc(title)}</title>"
            f"<meta name=viewport content='width=device-width,initial-scale=1'><style>{CSS}</style></head>"
            f"<body><h1>{esc(title)}</h1>{''.join(sections)}</body></html>\n")


def _summary(trials: list[Trial], parameters: list[str]) -> str:
    counts = {state: sum(t.state == state for t in trials) for state in ("complete", "pruned", "failed")}
    best = best_trial(trials)
    lines = [f"<p>{len(trials)} trials over {esc(', '.join(parameters))}: {counts['complete']} complete, "
             f"{counts['pruned']} pruned (below the median at an epoch), {counts['failed']} failed or stopped.</p>"]
    if best is not None:
        lines.append(f"<p>Best: trial {best.number}, validation accuracy {best.val_accuracy:.2%} with "
                     f"{esc(_params(best))}.</p>")
        defaults = next((t for t in trials if t.number == 0 and t.val_accuracy is not None), None)
        if defaults is not None and defaults is not best:
            gain = 100 * (best.val_accuracy - defaults.val_accuracy)
            lines.append(f"<p>Trial 0 (the base settings: {esc(_params(defaults))}) reached "
                         f"{defaults.val_accuracy:.2%}: the best is {gain:+.1f} points.</p>")
    return "<section id=summary><h2>Summary</h2>" + "".join(lines) + "</section>"


def _pareto(trials: list[Trial]) -> str:
    """One chart per other objective: every complete trial, the front of accuracy against that objective joined."""
    complete = [t for t in trials if t.state == "complete" and t.val_accuracy is not None]
    best = best_trial(trials)
    charts = []
    for key, label in X_OBJECTIVES.items():
        front = {t.number for t in pareto_front(complete, ("val_accuracy", key))}
        dots = [Dot(float(getattr(t, key)), 100 * t.val_accuracy,
                    BEST if t is best else FRONT if t.number in front else OTHER, _tip(t), big=t.number in front)
                for t in complete if getattr(t, key) is not None]
        charts.append(scatter_chart(f"Validation accuracy against {label}", label, "val accuracy %", dots,
                                    [d for d in dots if d.big], FRONT))
    front = pareto_front(complete)
    rows = [[esc(t.number), esc(_params(t)), f"{t.val_accuracy:.2%}", *(_figure(t, key) for key in X_OBJECTIVES)]
            for t in front]
    return ("<section id=pareto><h2>Pareto front</h2><p class=muted>Dots are complete trials; the dashed line joins "
            "those no other trial beats on both axes (orange: the most accurate). The table: the trials no other "
            "beats on all four objectives at once.</p>" + "".join(charts)
            + table(["Trial", "Settings", "Val accuracy", *X_OBJECTIVES.values()], rows) + "</section>")


def _parallel(trials: list[Trial], parameters: list[str]) -> str:
    done = [t for t in trials if t.state in ("complete", "pruned") and t.val_accuracy is not None]
    if not done:
        return ""
    low, high = min(t.val_accuracy for t in done), max(t.val_accuracy for t in done)
    axes = [Axis(name, *axis_ends(name)) for name in parameters] + [Axis("val accuracy", f"{low:.1%}",
                                                                         f"{high:.1%}")]
    best = best_trial(trials)
    lines = [([axis_position(name, t.params[name]) for name in parameters]
              + [(t.val_accuracy - low) / ((high - low) or 1)],
              BEST if t is best else FRONT if t.state == "complete" else OTHER, _tip(t))
             for t in sorted(done, key=lambda t: t is best)]
    return ("<section id=parallel><h2>Settings against accuracy</h2><p class=muted>Each line is a trial (grey: "
            "pruned, orange: the best).</p>" + parallel_chart("Parallel coordinates", axes, lines) + "</section>")


def _trials(trials: list[Trial], parameters: list[str]) -> str:
    rows = [[esc(t.number), esc(t.state), *(esc(_value(t.params.get(name))) for name in parameters),
             "—" if t.val_accuracy is None else f"{t.val_accuracy:.2%}", *(_figure(t, key) for key in X_OBJECTIVES),
             esc(run_name(t.run_id) if t.run_id is not None else None), esc(t.note or "")] for t in trials]
    return ("<section id=trials><h2>Trials</h2>" + table(["Trial", "State", *map(esc, parameters), "Val accuracy",
                                                          *X_OBJECTIVES.values(), "Run", "Note"], rows)
            + "</section>")


def _params(trial: Trial) -> str:
    return ", ".join(f"{name} {_value(value)}" for name, value in trial.params.items())


def _value(value) -> str:
    return f"{value:.3g}" if isinstance(value, float) else str(value)


def _figure(trial: Trial, key: str) -> str:
    value = getattr(trial, key)
    return "—" if value is None else f"{value:,.1f}" if key != "samples_per_s" else f"{value:,.0f}"


def _tip(trial: Trial) -> str:
    figures = ", ".join(f"{label} {_figure(trial, key)}" for key, label in X_OBJECTIVES.items())
    accuracy = "—" if trial.val_accuracy is None else f"{trial.val_accuracy:.2%}"
    return f"trial {trial.number} ({trial.state}): {_params(trial)}; val accuracy {accuracy}; {figures}"
