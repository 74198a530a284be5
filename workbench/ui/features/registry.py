"""The window's features: one entry each, in the order they are built (a feature is built after those it names;
one it only calls later, as data insight calls compile insight, is looked up when called). A new feature is its
module and one entry here. The window builds what this lists (as `window.<name>`), puts every feature's declared
actions in its menus and toolbar, and wires nothing by hand: each feature connects the panels' signals it answers
in its own constructor."""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, Callable

from PySide6.QtCore import QObject

from ..window_settings import save_window
from .alerts import Alerts
from .checkpoints import Checkpoints
from .compile_insight import CompileInsight
from .data_insight import DataInsight
from .exports import Exports
from .hosts import Hosts
from .parts import WindowParts
from .recorded_runs import RecordedRuns
from .queue import Queue
from .search import Search
from .settings_files import SettingsFiles
from .stacks import Stacks
from .training import Training


@dataclass(frozen=True)
class FeatureEntry:
    name: str  # the window's attribute (window.training)
    build: Callable[[WindowParts, Any], QObject]  # (the window's parts, the features built before it) → the feature


FEATURES = (
    FeatureEntry("checkpoints", lambda parts, built: Checkpoints(parts)),
    FeatureEntry("exports", lambda parts, built: Exports(parts, built.checkpoints)),
    FeatureEntry("data_insight", lambda parts, built: DataInsight(
        parts, built.checkpoints, sizes_learned=lambda: built.compile_insight.update_forecast())),
    FeatureEntry("compile_insight", lambda parts, built: CompileInsight(parts, preview=built.data_insight.preview)),
    FeatureEntry("training", lambda parts, built: Training(parts, built.checkpoints,
                                                            started=lambda: save_window(parts.window))),
    FeatureEntry("hosts", lambda parts, built: Hosts(parts, built.training)),
    FeatureEntry("stacks", lambda parts, built: Stacks(parts, built.training)),
    FeatureEntry("queue", lambda parts, built: Queue(parts, built.training, built.hosts)),
    FeatureEntry("search", lambda parts, built: Search(parts, built.queue)),
    FeatureEntry("recorded_runs", lambda parts, built: RecordedRuns(parts, built.checkpoints)),
    FeatureEntry("settings_files", lambda parts, built: SettingsFiles(parts)),
    FeatureEntry("alerts", lambda parts, built: Alerts(parts, built.training,
                                                        show_compile_steps=built.compile_insight.show_steps)),
)


def build_features(parts: WindowParts) -> dict[str, QObject]:
    """Every feature, by name, in FEATURES' order. Each menu and the toolbar order actions by their own numbers."""
    built = SimpleNamespace()
    for entry in FEATURES:
        setattr(built, entry.name, entry.build(parts, built))
    return vars(built)
