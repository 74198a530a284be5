"""An error as the window says it, in the form's words: shared by the setup form, the features that start work
from its settings (training, search, …) and the sweep dialog, so it lives with none of them."""

from __future__ import annotations

from ...core.ground.config import ConfigError, label_of
from ...core.ground.errors import with_hint


def form_text(exc: BaseException) -> str:
    """A ConfigError calls its setting by the form's label ("Learning rate: 0 must be greater than 0", not "lr: …");
    anything else is said with its hint."""
    if isinstance(exc, ConfigError):
        return exc.naming(label_of(exc.field))  # what it allows is in its text: a ConfigError has no hint
    return with_hint(exc)
