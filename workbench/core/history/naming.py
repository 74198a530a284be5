"""What a run is called: '#3' everywhere (the Runs dock, legends, Predict, the report, the CLI), its model's short
name, and the label of compared runs, naming the settings that differ between them. Plain strings, no numpy: a
`workbench runs` listing needs only these."""

from __future__ import annotations


def differing_settings(configs: list[dict]) -> list[str]:
    """Config keys whose values differ between runs: what a legend should name."""
    if len(configs) < 2:
        return []
    keys = sorted(set().union(*configs))
    return [k for k in keys if len({repr(c.get(k)) for c in configs}) > 1]


LABEL_MAX = 60
# Settings whose bare value says what it is ("inductor", "bf16"); others are shown as name=value.
SELF_EXPLAINING = ("backend", "mode", "amp", "dataset", "optimizer", "device")


def run_name(run_id: int) -> str:
    """'#3': what a run is called everywhere (Runs dock, legends, Predict, report), so one run has one name."""
    return f"#{run_id}"


def model_name(spec: str) -> str:
    """'Sandwich' for the built-in network, 'net.py:Net' for a user's own (its file, not the whole path)."""
    return "Sandwich" if spec == "sandwich" else spec.rsplit("/", 1)[-1]


def run_label(run_id: int, config: dict, keys: list[str]) -> str:
    """'#3 inductor · bf16' or '#4 lr=0.01': the run's name and the settings that differ between compared runs."""
    parts = [setting_text(k, config.get(k)) for k in (keys or ["backend", "amp"])]
    label = f"{run_name(run_id)} " + " · ".join(parts)
    return label if len(label) <= LABEL_MAX else label[:LABEL_MAX - 1] + "…"


def setting_text(key: str, value) -> str:
    """"inductor" or "lr=0.01": one setting as a label shows it."""
    if key == "model" and isinstance(value, str) and ":" in value:
        value = model_name(value)
    return str(value) if key in SELF_EXPLAINING else f"{key}={value}"
