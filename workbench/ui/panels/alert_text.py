"""An alert in the window's words: where its fix is (`fix_place`, from Alert.panel) and the tooltip its marker on
the loss plot and its line in the Log share (`alert_tip`). The alert's own words (title, advice) are the run's:
ground.alerts wrote them where the rule fired."""

from __future__ import annotations

from ...core.ground.alerts import PANEL_COMPILE, PANEL_MODEL, PANEL_SYSTEM, Alert
from ...core.ground.config import label_of

SETTING = "setting:"  # Alert.panel of a fix that is a setting of the run: "setting:lr"
PLACES = {PANEL_MODEL: "the Model dock", PANEL_COMPILE: "the Compile dock", PANEL_SYSTEM: "the System plot"}


def fix_place(panel: str) -> str:
    """Where the window shows the fix of an alert that names `panel`: 'Setup: Learning rate', 'the Model dock';
    "" for an alert that names none."""
    if panel.startswith(SETTING):
        return f"Setup: {label_of(panel.removeprefix(SETTING))}"
    return PLACES.get(panel, "")


def alert_tip(alert: Alert) -> str:
    """What happened and what to do, and where a click leads."""
    place = fix_place(alert.panel)
    return (f"{alert.severity.capitalize()} at step {alert.step:,}: {alert.title}\nWhat to do: {alert.advice}"
            + (f"\n(click: {place})" if place else ""))
